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
    format!("{}{value}:{}", taint.key, effect_name(taint.effect))
}

/// The wire name of an effect.
pub fn effect_name(effect: TaintEffect) -> &'static str {
    match effect {
        TaintEffect::NoSelect => "NoSelect",
        TaintEffect::PreferNoSelect => "PreferNoSelect",
        TaintEffect::NoSelectIfNew => "NoSelectIfNew",
    }
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
