//! Time precision, conditions and selectors behave as Kubernetes' apimachinery does.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::meta::{
    Condition, ConditionStatus, IntOrString, LabelSelector, MicroTime, Time, find_condition,
    is_condition_true, remove_condition, set_condition,
};
use serde_json::json;

fn at(text: &str) -> Time {
    Time::parse(text).unwrap()
}

#[test]
fn time_is_written_at_second_precision_like_go_metav1_time() {
    let t: DateTime<Utc> = "2025-12-16T06:00:17.921082037Z".parse().unwrap();
    assert_eq!(
        serde_json::to_value(Time::new(t)).unwrap(),
        json!("2025-12-16T06:00:17Z")
    );
}

#[test]
fn time_parses_fractional_seconds_and_offsets_then_normalises_to_utc_seconds() {
    let t: Time = serde_json::from_value(json!("2025-12-16T08:00:17.5+02:00")).unwrap();
    assert_eq!(t.to_string(), "2025-12-16T06:00:17Z");
    assert_eq!(
        t,
        at("2025-12-16T06:00:17Z"),
        "fractions are dropped so equal seconds compare equal"
    );
}

#[test]
fn time_rejects_text_that_is_not_rfc3339_with_the_text_in_the_error() {
    let err = serde_json::from_value::<Time>(json!("yesterday")).unwrap_err();
    assert!(
        err.to_string().contains("invalid time \"yesterday\""),
        "{err}"
    );
}

#[test]
fn micro_time_is_written_with_exactly_six_fraction_digits() {
    let t: DateTime<Utc> = "2026-11-21T10:01:41.123456789Z".parse().unwrap();
    assert_eq!(MicroTime::new(t).to_string(), "2026-11-21T10:01:41.123456Z");
    let whole: DateTime<Utc> = "2026-11-21T10:01:41Z".parse().unwrap();
    assert_eq!(
        MicroTime::new(whole).to_string(),
        "2026-11-21T10:01:41.000000Z"
    );
}

#[test]
fn condition_status_round_trips_as_the_kubernetes_strings() {
    for (status, text) in [
        (ConditionStatus::True, "True"),
        (ConditionStatus::False, "False"),
        (ConditionStatus::Unknown, "Unknown"),
    ] {
        assert_eq!(serde_json::to_value(status).unwrap(), json!(text));
        assert_eq!(
            serde_json::from_value::<ConditionStatus>(json!(text)).unwrap(),
            status
        );
    }
    assert!(serde_json::from_value::<ConditionStatus>(json!("true")).is_err());
}

#[test]
fn condition_always_writes_reason_and_message_like_go() {
    let c = Condition::new("Deleted", ConditionStatus::True, "ManifestsDeleted", "");
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        json!({"type": "Deleted", "status": "True", "reason": "ManifestsDeleted", "message": ""})
    );
}

#[test]
fn set_condition_stamps_now_on_a_new_condition() {
    let mut conds = Vec::new();
    let changed = set_condition(
        &mut conds,
        Condition::new("Applied", ConditionStatus::True, "Done", "applied"),
        at("2026-01-01T00:00:00Z"),
    );
    assert!(changed);
    assert_eq!(
        conds[0].last_transition_time,
        Some(at("2026-01-01T00:00:00Z"))
    );
}

#[test]
fn set_condition_keeps_last_transition_time_when_the_status_is_unchanged() {
    let mut conds = Vec::new();
    set_condition(
        &mut conds,
        Condition::new("Applied", ConditionStatus::True, "A", "first"),
        at("2026-01-01T00:00:00Z"),
    );
    let changed = set_condition(
        &mut conds,
        Condition::new("Applied", ConditionStatus::True, "B", "second").with_observed_generation(2),
        at("2026-01-02T00:00:00Z"),
    );
    assert!(changed, "reason, message and generation changed");
    assert_eq!(conds.len(), 1);
    assert_eq!(
        conds[0].last_transition_time,
        Some(at("2026-01-01T00:00:00Z"))
    );
    assert_eq!(
        (conds[0].reason.as_str(), conds[0].message.as_str()),
        ("B", "second")
    );
    assert_eq!(conds[0].observed_generation, 2);
}

#[test]
fn set_condition_moves_last_transition_time_when_the_status_changes() {
    let mut conds = Vec::new();
    set_condition(
        &mut conds,
        Condition::new("Available", ConditionStatus::True, "Up", ""),
        at("2026-01-01T00:00:00Z"),
    );
    set_condition(
        &mut conds,
        Condition::new("Available", ConditionStatus::Unknown, "LeaseExpired", ""),
        at("2026-01-01T00:05:00Z"),
    );
    assert_eq!(conds[0].status, ConditionStatus::Unknown);
    assert_eq!(
        conds[0].last_transition_time,
        Some(at("2026-01-01T00:05:00Z"))
    );
}

#[test]
fn set_condition_reports_no_change_when_nothing_changed() {
    let mut conds = Vec::new();
    let c = Condition::new("Joined", ConditionStatus::True, "Joined", "ok");
    set_condition(&mut conds, c.clone(), at("2026-01-01T00:00:00Z"));
    assert!(!set_condition(&mut conds, c, at("2026-01-03T00:00:00Z")));
    assert_eq!(
        conds[0].last_transition_time,
        Some(at("2026-01-01T00:00:00Z"))
    );
}

#[test]
fn find_and_remove_condition_look_up_by_type() {
    let mut conds = Vec::new();
    set_condition(
        &mut conds,
        Condition::new("A", ConditionStatus::True, "r", ""),
        at("2026-01-01T00:00:00Z"),
    );
    set_condition(
        &mut conds,
        Condition::new("B", ConditionStatus::False, "r", ""),
        at("2026-01-01T00:00:00Z"),
    );
    assert_eq!(
        find_condition(&conds, "B").map(|c| c.status),
        Some(ConditionStatus::False)
    );
    assert!(is_condition_true(&conds, "A"));
    assert!(!is_condition_true(&conds, "B"));
    assert!(find_condition(&conds, "C").is_none());
    assert!(remove_condition(&mut conds, "A"));
    assert!(!remove_condition(&mut conds, "A"));
    assert_eq!(conds.len(), 1);
}

#[test]
fn int_or_string_round_trips_both_forms_and_scales_percentages() {
    let n: IntOrString = serde_json::from_value(json!(3)).unwrap();
    let p: IntOrString = serde_json::from_value(json!("25%")).unwrap();
    assert_eq!(n, IntOrString::Int(3));
    assert_eq!(serde_json::to_value(&p).unwrap(), json!("25%"));
    assert_eq!(p.scaled_value(10, true), Some(3));
    assert_eq!(p.scaled_value(10, false), Some(2));
    assert_eq!(n.scaled_value(10, true), Some(3));
    assert_eq!(
        IntOrString::String("lots".into()).scaled_value(10, true),
        None
    );
}

#[test]
fn label_selector_matches_labels_and_expressions() {
    let selector: LabelSelector = serde_json::from_value(json!({
        "matchLabels": {"region": "eu"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["gold", "silver"]},
            {"key": "retired", "operator": "DoesNotExist"}
        ]
    }))
    .unwrap();
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert!(selector.matches(&labels(&[("region", "eu"), ("tier", "gold")])));
    assert!(!selector.matches(&labels(&[("region", "eu"), ("tier", "bronze")])));
    assert!(!selector.matches(&labels(&[
        ("region", "eu"),
        ("tier", "gold"),
        ("retired", "")
    ])));
    assert!(LabelSelector::default().matches(&labels(&[])));
}
