//! TaintToleration filter (OCM `pkg/placement/plugins/tainttoleration/taint_toleration.go`).
//!
//! A cluster passes when every taint is tolerated:
//! - `PreferNoSelect` never filters (OCM lets it through and no prioritizer reads it either);
//! - `NoSelectIfNew` is tolerated for a cluster already in this placement's decisions;
//! - otherwise the first toleration that matches (effect: empty matches all; key: empty
//!   matches all; operator Equal compares values, Exists does not) decides, and with
//!   `tolerationSeconds` it holds while `now < timeAdded + tolerationSeconds`: a cluster is
//!   kept at `timeAdded + N - 1s` and dropped at exactly `timeAdded + N`. A taint without
//!   timeAdded counts from Go's zero time, so a timed toleration of it has already expired.
//!
//! The expiry of every timed toleration that kept a cluster is returned so the shell can
//! re-schedule at exactly that instant (OCM's `RequeueAfter`).

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::cluster::{ManagedCluster, Taint, TaintEffect};
use ocm_edge_schemas::api::meta::Time;
use ocm_edge_schemas::api::placement::{Toleration, TolerationOperator};

use crate::placement::Misconfiguration;

/// OCM's plugin name.
pub const NAME: &str = "TaintToleration";

/// OCM's toleration validation.
///
/// # Errors
/// Misconfigured (plugin `TaintToleration`) with OCM's messages.
pub fn validate(tolerations: &[Toleration]) -> Result<(), Misconfiguration> {
    for t in tolerations {
        let op = t.operator.unwrap_or_default();
        if t.key.is_empty() && op != TolerationOperator::Exists {
            return Err(Misconfiguration::new(
                NAME,
                "If the key is empty, operator must be Exists.",
            ));
        }
        if op == TolerationOperator::Exists && !t.value.is_empty() {
            return Err(Misconfiguration::new(
                NAME,
                "If the operator is Exists, the value should be empty.",
            ));
        }
    }
    Ok(())
}

/// The outcome of the filter for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaintVerdict {
    /// Every taint is tolerated.
    Tolerated {
        /// The earliest instant a timed toleration stops holding (re-evaluate then).
        until: Option<DateTime<Utc>>,
        /// One line per taint saying why it did not filter.
        notes: Vec<String>,
    },
    /// A taint is not tolerated; the text says which and why.
    NotTolerated(String),
}

/// `key[=value]:Effect`, as `kubectl` prints taints.
pub fn describe_taint(taint: &Taint) -> String {
    let value = if taint.value.is_empty() {
        String::new()
    } else {
        format!("={}", taint.value)
    };
    format!("{}{value}:{}", taint.key, taint.effect.as_str())
}

/// Filters one cluster (`in_decision`: the cluster is in this placement's current decisions).
pub fn filter(
    cluster: &ManagedCluster,
    tolerations: &[Toleration],
    in_decision: bool,
    now: DateTime<Utc>,
) -> TaintVerdict {
    let mut until: Option<DateTime<Utc>> = None;
    let mut notes = Vec::new();
    for taint in &cluster.spec.taints {
        match taint_tolerated(taint, tolerations, in_decision, now) {
            TaintCheck::Ignored(note) => notes.push(note),
            TaintCheck::Tolerated(None) => {
                notes.push(format!("taint {} tolerated", describe_taint(taint)));
            }
            TaintCheck::Tolerated(Some(expiry)) => {
                notes.push(format!(
                    "taint {} tolerated until {}",
                    describe_taint(taint),
                    Time::new(expiry)
                ));
                until = Some(until.map_or(expiry, |u| u.min(expiry)));
            }
            TaintCheck::NotTolerated(why) => return TaintVerdict::NotTolerated(why),
        }
    }
    TaintVerdict::Tolerated { until, notes }
}

enum TaintCheck {
    Ignored(String),
    Tolerated(Option<DateTime<Utc>>),
    NotTolerated(String),
}

/// OCM's `isTaintTolerated`.
fn taint_tolerated(
    taint: &Taint,
    tolerations: &[Toleration],
    in_decision: bool,
    now: DateTime<Utc>,
) -> TaintCheck {
    let described = describe_taint(taint);
    if taint.effect == TaintEffect::PreferNoSelect {
        return TaintCheck::Ignored(format!(
            "taint {described} does not filter (PreferNoSelect, as in OCM)"
        ));
    }
    if taint.effect == TaintEffect::NoSelectIfNew && in_decision {
        return TaintCheck::Ignored(format!(
            "taint {described} does not filter: already selected"
        ));
    }
    let mut expired_at: Option<Option<DateTime<Utc>>> = None;
    for toleration in tolerations {
        if !matches(taint, toleration) {
            continue;
        }
        match expiry(taint, toleration) {
            None => return TaintCheck::Tolerated(None),
            Some(at) if at.is_some_and(|at| now < at) => return TaintCheck::Tolerated(at),
            Some(at) => {
                expired_at.get_or_insert(at);
            }
        }
    }
    let why = match expired_at {
        Some(Some(at)) => format!("taint {described} toleration expired at {}", Time::new(at)),
        Some(None) => format!("taint {described} toleration expired (taint has no timeAdded)"),
        None if taint.effect == TaintEffect::NoSelectIfNew => {
            format!("taint {described} not tolerated (cluster is not already selected)")
        }
        None => format!("taint {described} not tolerated"),
    };
    TaintCheck::NotTolerated(why)
}

/// OCM's `isTolerated` without the time check: effect, key, then operator.
pub fn matches(taint: &Taint, toleration: &Toleration) -> bool {
    if toleration.effect.is_some_and(|e| e != taint.effect) {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration.operator.unwrap_or_default() {
        TolerationOperator::Equal => toleration.value == taint.value,
        TolerationOperator::Exists => true,
    }
}

/// `None`: tolerated forever. `Some(Some(t))`: tolerated while `now < t`. `Some(None)`: the
/// toleration is timed but the taint has no timeAdded (Go's zero time: long expired).
pub fn expiry(taint: &Taint, toleration: &Toleration) -> Option<Option<DateTime<Utc>>> {
    let seconds = toleration.toleration_seconds?;
    let Some(added) = taint.time_added else {
        return Some(None);
    };
    // Beyond chrono's range the toleration cannot expire in practice: treat it as forever
    // rather than panic on hostile input.
    TimeDelta::try_seconds(seconds)
        .and_then(|d| added.as_datetime().checked_add_signed(d))
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{TolerationExt, equal, exists, mk_cluster, t};
    use TaintEffect::{NoSelect, NoSelectIfNew, PreferNoSelect};
    use ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE;

    /// (case, taint (key, value, effect), tolerations, in decision, tolerated)
    type Case = (
        &'static str,
        (&'static str, &'static str, TaintEffect),
        Vec<Toleration>,
        bool,
        bool,
    );

    fn tolerated(v: &TaintVerdict) -> bool {
        matches!(v, TaintVerdict::Tolerated { .. })
    }

    /// Cases from OCM `taint_toleration.go` (`isTaintTolerated`, `isTolerated`,
    /// `isTolerationTimeExpired`).
    #[test]
    fn taints_are_tolerated_as_ocm_decides() {
        let key = TAINT_UNREACHABLE;
        let cases: Vec<Case> = vec![
            // (case, taint (key, value, effect), tolerations, in decision, tolerated)
            ("no toleration", (key, "", NoSelect), vec![], false, false),
            (
                "Exists on the key",
                (key, "", NoSelect),
                vec![exists(key)],
                false,
                true,
            ),
            (
                "Exists on every key",
                (key, "", NoSelect),
                vec![exists("")],
                false,
                true,
            ),
            (
                "Exists on another key",
                (key, "", NoSelect),
                vec![exists("other")],
                false,
                false,
            ),
            (
                "Equal with the value",
                ("gpu", "a100", NoSelect),
                vec![equal("gpu", "a100")],
                false,
                true,
            ),
            (
                "Equal with another value",
                ("gpu", "a100", NoSelect),
                vec![equal("gpu", "t4")],
                false,
                false,
            ),
            (
                "Equal empty value",
                (key, "", NoSelect),
                vec![equal(key, "")],
                false,
                true,
            ),
            (
                "effect matches",
                (key, "", NoSelect),
                vec![exists(key).effect(NoSelect)],
                false,
                true,
            ),
            (
                "effect differs",
                (key, "", NoSelect),
                vec![exists(key).effect(NoSelectIfNew)],
                false,
                false,
            ),
            (
                "PreferNoSelect never filters",
                (key, "", PreferNoSelect),
                vec![],
                false,
                true,
            ),
            (
                "NoSelectIfNew filters a new cluster",
                (key, "", NoSelectIfNew),
                vec![],
                false,
                false,
            ),
            (
                "NoSelectIfNew keeps a selected one",
                (key, "", NoSelectIfNew),
                vec![],
                true,
                true,
            ),
            (
                "NoSelect removes a selected one",
                (key, "", NoSelect),
                vec![],
                true,
                false,
            ),
            (
                "NoSelectIfNew tolerated",
                (key, "", NoSelectIfNew),
                vec![exists(key)],
                false,
                true,
            ),
            (
                "second toleration matches",
                (key, "", NoSelect),
                vec![exists("x"), exists(key)],
                false,
                true,
            ),
        ];
        for (case, (k, v, effect), tolerations, in_decision, want) in cases {
            let cluster = mk_cluster("c")
                .taint_value(k, v, effect, Some(t(0)))
                .build();
            let got = filter(&cluster, &tolerations, in_decision, t(10));
            assert_eq!(tolerated(&got), want, "{case}: {got:?}");
        }
    }

    #[test]
    fn a_timed_toleration_keeps_the_cluster_until_exactly_time_added_plus_seconds() {
        let cluster = mk_cluster("c")
            .taint(TAINT_UNREACHABLE, NoSelect, Some(t(100)))
            .build();
        let tolerations = [exists(TAINT_UNREACHABLE).seconds(30)];
        let at = |secs| filter(&cluster, &tolerations, true, t(secs));
        assert_eq!(
            at(129),
            TaintVerdict::Tolerated {
                until: Some(t(130)),
                notes: vec![format!(
                    "taint {TAINT_UNREACHABLE}:NoSelect tolerated until {}",
                    Time::new(t(130))
                )],
            }
        );
        assert_eq!(
            at(130),
            TaintVerdict::NotTolerated(format!(
                "taint {TAINT_UNREACHABLE}:NoSelect toleration expired at {}",
                Time::new(t(130))
            ))
        );
    }

    #[test]
    fn the_first_matching_toleration_decides_and_an_expired_one_falls_through() {
        let cluster = mk_cluster("c")
            .taint(TAINT_UNREACHABLE, NoSelect, Some(t(0)))
            .build();
        // First match is timed and still valid: its expiry is used even though a later
        // toleration would hold forever (OCM returns on the first match).
        let v = filter(
            &cluster,
            &[exists("").seconds(60), exists(TAINT_UNREACHABLE)],
            false,
            t(10),
        );
        assert!(matches!(v, TaintVerdict::Tolerated { until: Some(u), .. } if u == t(60)));
        // First match expired: the next one is tried.
        let v = filter(
            &cluster,
            &[exists("").seconds(5), exists(TAINT_UNREACHABLE)],
            false,
            t(10),
        );
        assert!(matches!(v, TaintVerdict::Tolerated { until: None, .. }));
    }

    #[test]
    fn the_earliest_expiry_over_all_taints_is_returned() {
        let cluster = mk_cluster("c")
            .taint("a", NoSelect, Some(t(0)))
            .taint("b", NoSelect, Some(t(20)))
            .build();
        let v = filter(
            &cluster,
            &[exists("a").seconds(100), exists("b").seconds(50)],
            false,
            t(1),
        );
        assert!(matches!(v, TaintVerdict::Tolerated { until: Some(u), .. } if u == t(70)));
    }

    #[test]
    fn a_timed_toleration_of_a_taint_without_time_added_has_expired() {
        let cluster = mk_cluster("c").taint("a", NoSelect, None).build();
        let v = filter(&cluster, &[exists("a").seconds(1_000_000)], false, t(0));
        assert!(matches!(v, TaintVerdict::NotTolerated(ref why) if why.contains("no timeAdded")));
        let forever = filter(&cluster, &[exists("a")], false, t(0));
        assert!(tolerated(&forever));
    }

    #[test]
    fn invalid_tolerations_are_misconfigurations_with_ocms_messages() {
        let empty_key_equal = Toleration::default();
        assert_eq!(
            validate(&[empty_key_equal]).unwrap_err().to_string(),
            "TaintToleration:If the key is empty, operator must be Exists."
        );
        let mut exists_with_value = exists("a");
        exists_with_value.value = "x".into();
        assert_eq!(
            validate(&[exists_with_value]).unwrap_err().to_string(),
            "TaintToleration:If the operator is Exists, the value should be empty."
        );
        assert!(validate(&[exists(""), equal("a", "b")]).is_ok());
    }
}
