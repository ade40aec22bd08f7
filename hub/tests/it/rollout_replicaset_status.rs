//! The ManifestWorkReplicaSet status a plan writes: summary counts, per-placement summaries and
//! the PlacementVerified / PlacementRolledOut / ManifestworkApplied conditions, as OCM.

use std::collections::BTreeMap;

use crate::rollout_kit::*;
use ocm_edge_hub::rollout::plan_replica_set;
use ocm_edge_schemas::api::meta::{
    Condition, ConditionStatus, ConditionStatus::True, Time, find_condition,
};
use ocm_edge_schemas::api::replicaset::{
    CONDITION_MANIFESTWORK_APPLIED, CONDITION_PLACEMENT_ROLLED_OUT, CONDITION_PLACEMENT_VERIFIED,
    LocalPlacementReference, ManifestWorkReplicaSetSummary, REASON_AS_EXPECTED, REASON_COMPLETE,
    REASON_NOT_AS_EXPECTED, REASON_PLACEMENT_DECISION_EMPTY, REASON_PLACEMENT_DECISION_NOT_FOUND,
    REASON_PROCESSING, REASON_PROGRESSING,
};

fn cond<'a>(conditions: &'a [Condition], type_: &str) -> (ConditionStatus, &'a str) {
    let c = find_condition(conditions, type_).expect(type_);
    (c.status, c.reason.as_str())
}

#[test]
fn a_missing_placement_is_reported_and_nothing_is_done() {
    let s = set(all(Cfg::default()));
    let works = BTreeMap::from([("c1".to_owned(), sent(0).0)]);
    let plan = plan_replica_set(&s, &BTreeMap::new(), &works, t(10));
    assert_eq!(
        cond(&plan.status.conditions, CONDITION_PLACEMENT_VERIFIED),
        (ConditionStatus::False, REASON_PLACEMENT_DECISION_NOT_FOUND)
    );
    assert!(
        plan.to_apply.is_empty() && plan.to_delete.is_empty(),
        "no work is touched"
    );
}

#[test]
fn an_empty_placement_is_verified_false_and_trivially_rolled_out() {
    let mut fleet = Fleet::new(all(Cfg::default()), vec![]);
    let plan = fleet.step(0);
    let c = &plan.status.conditions;
    assert_eq!(
        cond(c, CONDITION_PLACEMENT_VERIFIED),
        (ConditionStatus::False, REASON_PLACEMENT_DECISION_EMPTY)
    );
    assert_eq!(
        cond(c, CONDITION_MANIFESTWORK_APPLIED),
        (ConditionStatus::False, REASON_PLACEMENT_DECISION_EMPTY)
    );
    assert_eq!(
        cond(c, CONDITION_PLACEMENT_ROLLED_OUT),
        (True, REASON_COMPLETE)
    );
    assert_eq!(
        plan.status.summary,
        ManifestWorkReplicaSetSummary::default()
    );
}

#[test]
fn the_summary_counts_works_by_condition_as_ocm_does() {
    let mut fleet = Fleet::new(all(Cfg::default()), flat(5));
    fleet.works = BTreeMap::from([
        ("c1".to_owned(), sent(0).succeeded(10).0),
        (
            "c2".to_owned(),
            sent(0).applied(10).progressing(ConditionStatus::True, 10).0,
        ),
        (
            "c3".to_owned(),
            sent(0)
                .applied(10)
                .available(ConditionStatus::False, 10)
                .degraded(11)
                .0,
        ),
        ("c4".to_owned(), sent(0).0),
        ("c5".to_owned(), outdated().succeeded(0).0),
    ]);
    let plan = fleet.step(20);
    assert_eq!(
        applied_now(&plan),
        ["c5"],
        "the outdated work gets the new template"
    );
    assert_eq!(
        plan.status.summary,
        ManifestWorkReplicaSetSummary {
            total: 5,
            progressing: 1,
            available: 2,
            degraded: 1,
            applied: 4,
            desired_total: 5,
            updated: 3,
        }
    );
    let c = &plan.status.conditions;
    assert_eq!(
        cond(c, CONDITION_PLACEMENT_VERIFIED),
        (True, REASON_AS_EXPECTED)
    );
    assert_eq!(
        cond(c, CONDITION_PLACEMENT_ROLLED_OUT),
        (ConditionStatus::False, REASON_PROGRESSING)
    );
    assert_eq!(
        find_condition(c, CONDITION_PLACEMENT_ROLLED_OUT)
            .unwrap()
            .message,
        "1/5 clusters succeeded, 1 failed"
    );
    assert_eq!(
        cond(c, CONDITION_MANIFESTWORK_APPLIED),
        (ConditionStatus::False, REASON_NOT_AS_EXPECTED),
        "a degraded work"
    );
    let placement = &plan.status.placements_summary[0];
    assert_eq!(placement.name, "pl");
    assert_eq!(
        placement.available_decision_groups,
        "1 (5 / 5 clusters applied)"
    );
    assert_eq!(placement.summary.total, 5);
}

#[test]
fn manifestwork_applied_follows_ocms_status_reconciler() {
    // (works of two clusters, expected status and reason)
    let rows = [
        (
            [sent(0).succeeded(1), sent(0).succeeded(1)],
            (True, REASON_AS_EXPECTED),
        ),
        (
            [
                sent(0).succeeded(1),
                sent(0).applied(1).progressing(ConditionStatus::True, 1),
            ],
            (ConditionStatus::False, REASON_PROCESSING),
        ),
        (
            [
                sent(0).applied(1).progressing(ConditionStatus::True, 1),
                sent(0)
                    .applied(1)
                    .progressing(ConditionStatus::True, 1)
                    .degraded(2),
            ],
            (ConditionStatus::False, REASON_NOT_AS_EXPECTED),
        ),
        (
            [sent(0), sent(0)],
            (ConditionStatus::False, REASON_NOT_AS_EXPECTED),
        ),
    ];
    for (i, ([w1, w2], expected)) in rows.into_iter().enumerate() {
        let mut fleet = Fleet::new(all(Cfg::default()), flat(2));
        fleet.works = BTreeMap::from([("c1".to_owned(), w1.0), ("c2".to_owned(), w2.0)]);
        let plan = fleet.step(10);
        assert_eq!(
            cond(&plan.status.conditions, CONDITION_MANIFESTWORK_APPLIED),
            expected,
            "row {i}"
        );
    }
}

#[test]
fn a_finished_rollout_is_complete_and_its_conditions_keep_their_transition_time() {
    let mut fleet = Fleet::new(all(Cfg::default()), flat(2));
    fleet.step(0);
    fleet.succeed("c1", 5);
    fleet.succeed("c2", 6);
    let plan = fleet.step(100);
    let c = &plan.status.conditions;
    assert_eq!(
        cond(c, CONDITION_PLACEMENT_ROLLED_OUT),
        (True, REASON_COMPLETE)
    );
    assert_eq!(
        cond(c, CONDITION_MANIFESTWORK_APPLIED),
        (True, REASON_AS_EXPECTED)
    );
    let ltt = |plan: &ocm_edge_hub::rollout::ReplicaSetPlan| {
        find_condition(&plan.status.conditions, CONDITION_PLACEMENT_ROLLED_OUT)
            .unwrap()
            .last_transition_time
    };
    assert_eq!(ltt(&plan), Some(Time::new(t(100))));
    let again = fleet.step(200);
    assert_eq!(ltt(&again), Some(Time::new(t(100))));
    assert_eq!(again.status.summary.updated, 2);
}

#[test]
fn two_placements_share_clusters_and_deletions_spare_any_selected_cluster() {
    let mut fleet = Fleet::new(
        progressive(Cfg::deadline("1m"), Some(int(1)), vec![]),
        flat(2),
    );
    fleet.set.spec.placement_refs.push(LocalPlacementReference {
        name: "edge".into(),
        rollout_strategy: all(Cfg::default().soak("10s")),
    });
    fleet
        .decisions
        .insert("edge".into(), decisions(&[("c2", 0, ""), ("e1", 0, "")]));
    fleet.works.insert("old".into(), outdated().0);
    fleet
        .works
        .insert("leaving".into(), outdated().deleting().0);
    let plan = fleet.step(0);
    assert_eq!(
        plan.to_apply,
        [
            ("c1".to_owned(), "pl".to_owned()),
            ("c2".to_owned(), "edge".to_owned()),
            ("e1".to_owned(), "edge".to_owned())
        ]
    );
    assert_eq!(
        plan.to_delete,
        ["old"],
        "a work already being deleted is left alone"
    );
    assert_eq!(plan.status.placements_summary.len(), 2);
    assert_eq!(plan.status.summary.desired_total, 3);
    assert_eq!(plan.clusters.len(), 3);
    assert_eq!(
        plan.requeue_at,
        Some(t(60)),
        "c1 is sent now: its deadline counts from now"
    );
    let plan = fleet.step(1);
    assert_eq!(plan.requeue_at, Some(t(60)), "c1's deadline under pl");
    assert_eq!(plan.status.summary.total, 3);
}

#[test]
fn a_malformed_strategy_marks_placement_verified_not_as_expected() {
    let mut fleet = Fleet::new(all(Cfg::deadline("soon")), flat(2));
    let plan = fleet.step(0);
    let c = find_condition(&plan.status.conditions, CONDITION_PLACEMENT_VERIFIED).unwrap();
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::False, REASON_NOT_AS_EXPECTED)
    );
    assert!(c.message.contains("progressDeadline"), "{}", c.message);
}
