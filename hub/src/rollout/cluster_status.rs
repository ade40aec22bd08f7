//! One cluster's rollout status from its ManifestWork (OCM's `clusterRolloutStatusFunc`).

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, find_condition};
use ocm_edge_schemas::api::work::{
    WORK_APPLIED, WORK_AVAILABLE, WORK_DEGRADED, WORK_HELD, WORK_PROGRESSING,
};
use serde::{Deserialize, Serialize};

/// Where a cluster is in a rollout (sdk-go's `RolloutStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RolloutStatus {
    /// The current template is not on the cluster yet.
    ToApply,
    /// Sent or applied, not yet successful.
    Progressing,
    /// Applied and successful.
    Succeeded,
    /// Applied and degraded.
    Failed,
    /// Progressing or failed for longer than progressDeadline: counted as a failure, no longer
    /// waited for.
    TimeOut,
    /// Left out of the rollout (never produced for ManifestWorkReplicaSets, as in OCM).
    Skip,
    /// The cluster stores the current template but holds it (outside its maintenance windows,
    /// or held on site: the work's `Held` condition): waited for like Progressing, but never
    /// timed out. An ocm-edge addition; OCM has no holds.
    Held,
}

impl RolloutStatus {
    /// Display name (the Go constant's name).
    pub fn as_str(&self) -> &'static str {
        match self {
            RolloutStatus::ToApply => "ToApply",
            RolloutStatus::Progressing => "Progressing",
            RolloutStatus::Succeeded => "Succeeded",
            RolloutStatus::Failed => "Failed",
            RolloutStatus::TimeOut => "TimeOut",
            RolloutStatus::Skip => "Skip",
            RolloutStatus::Held => "Held",
        }
    }
}

/// A decision group (placement `decisionGroups`): OCM orders groups by index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct GroupKey {
    /// `cluster.open-cluster-management.io/decision-group-index`.
    pub group_index: i32,
    /// `cluster.open-cluster-management.io/decision-group-name` (may be empty).
    pub group_name: String,
}

impl GroupKey {
    /// Group `index` named `name`.
    pub fn new(index: i32, name: impl Into<String>) -> Self {
        GroupKey {
            group_index: index,
            group_name: name.into(),
        }
    }
}

/// A cluster chosen by a placement, with its decision group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterDecision {
    /// Cluster name.
    pub cluster: String,
    /// Its decision group.
    pub group: GroupKey,
}

impl ClusterDecision {
    /// `cluster` in group `index` named `name`.
    pub fn new(cluster: impl Into<String>, index: i32, name: impl Into<String>) -> Self {
        ClusterDecision {
            cluster: cluster.into(),
            group: GroupKey::new(index, name),
        }
    }
}

/// Whether a cluster's ManifestWork carries the set's current template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TemplateState {
    /// The work's spec is the current template; the hub first sent it at `sent_at`.
    Current { sent_at: DateTime<Utc> },
    /// The work still has an older template.
    Outdated,
}

/// What the hub knows of the set's ManifestWork on one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterWork {
    /// Current or outdated template.
    pub template: TemplateState,
    /// The work's `metadata.generation` (the agent's conditions carry it as observedGeneration).
    pub generation: i64,
    /// The work's `status.conditions` as last reported (Applied, Available, Progressing, Degraded).
    pub conditions: Vec<Condition>,
    /// False while the cluster is unreachable (its conditions are then the last ones heard).
    pub reachable: bool,
    /// The work is being deleted (ignored, as OCM ignores works with a deletionTimestamp).
    pub deleting: bool,
}

impl ClusterWork {
    /// A work carrying the current template, sent at `sent_at`, generation 1, no status yet.
    pub fn sent(sent_at: DateTime<Utc>) -> Self {
        ClusterWork {
            template: TemplateState::Current { sent_at },
            generation: 1,
            conditions: Vec::new(),
            reachable: true,
            deleting: false,
        }
    }

    /// Whether the work carries the current template (and is not being deleted).
    pub fn is_current(&self) -> bool {
        !self.deleting && matches!(self.template, TemplateState::Current { .. })
    }
}

/// One cluster's place in a rollout (sdk-go's `ClusterRolloutStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRolloutStatus {
    /// Cluster name.
    pub cluster: String,
    /// Its decision group.
    pub group: GroupKey,
    /// Where it is.
    pub status: RolloutStatus,
    /// Since when (progressDeadline and minSuccessTime count from here).
    pub last_transition_time: Option<DateTime<Utc>>,
    /// When it must be looked at again (end of the soak time, or its deadline).
    pub recheck_time: Option<DateTime<Utc>>,
}

/// The rollout status of a work, as OCM's ManifestWorkReplicaSet controller derives it: `None`
/// for a work that does not carry the current template (OCM leaves such works out, so the cluster
/// counts as ToApply).
///
/// One deliberate difference: where OCM answers ToApply without a time (the agent has not yet
/// reported Applied for the current generation) or Progressing without a time (no Available
/// condition yet), ocm-edge answers Progressing *since the hub sent the template*. OCM's answer
/// never times out, so an unreachable cluster would hold its concurrency slot for ever; counting
/// from the send lets progressDeadline turn it into TimeOut. For the same reason no time is
/// earlier than the send: a condition left over from the previous template must neither use up
/// the new deadline nor the new soak time.
///
/// A cluster that holds the template (its `Held` condition True for this generation) is Held
/// since it said so; once it lets the template in (`Held` False for this generation) the
/// deadline counts from then, not from the send: the hold does not use up progressDeadline.
pub fn work_rollout_status(work: &ClusterWork) -> Option<(RolloutStatus, Option<DateTime<Utc>>)> {
    if work.deleting {
        return None;
    }
    let TemplateState::Current { sent_at } = work.template else {
        return None;
    };
    let held = find_condition(&work.conditions, WORK_HELD)
        .filter(|h| h.observed_generation == work.generation);
    let held_since = held
        .and_then(|h| h.last_transition_time)
        .map(|t| t.as_datetime().max(sent_at));
    if held.is_some_and(|h| h.status == ConditionStatus::True) {
        return Some((RolloutStatus::Held, held_since.or(Some(sent_at))));
    }
    // Released: the template reached the cluster when the hold ended.
    let sent_at = held_since.unwrap_or(sent_at);
    let since = |c: &Condition| {
        Some(
            c.last_transition_time
                .map_or(sent_at, |t| t.as_datetime().max(sent_at)),
        )
    };
    let generation = work.generation;
    let find = |t: &str| find_condition(&work.conditions, t);
    let (applied, progressing, available, degraded) = (
        find(WORK_APPLIED),
        find(WORK_PROGRESSING),
        find(WORK_AVAILABLE),
        find(WORK_DEGRADED),
    );
    if should_return_to_apply(generation, applied, progressing, available, degraded) {
        return Some((RolloutStatus::Progressing, Some(sent_at)));
    }
    let is_true = |c: Option<&Condition>| c.is_some_and(|c| c.status == ConditionStatus::True);
    let progressing = progressing.filter(|p| p.observed_generation == generation);
    Some(match progressing {
        None => {
            // No Progressing condition for this generation: fall back to Available.
            if let Some(d) = degraded.filter(|d| d.status == ConditionStatus::True) {
                (RolloutStatus::Failed, since(d))
            } else if let Some(a) = available {
                if a.status == ConditionStatus::True {
                    (RolloutStatus::Succeeded, since(a))
                } else {
                    (RolloutStatus::Progressing, since(a))
                }
            } else {
                (RolloutStatus::Progressing, Some(sent_at))
            }
        }
        Some(p) => match p.status {
            ConditionStatus::True if is_true(degraded) => {
                (RolloutStatus::Failed, degraded.and_then(since))
            }
            ConditionStatus::True => (RolloutStatus::Progressing, since(p)),
            ConditionStatus::False => (RolloutStatus::Succeeded, since(p)),
            ConditionStatus::Unknown => (RolloutStatus::Progressing, since(p)),
        },
    })
}

/// OCM's `shouldReturnToApply`: Applied must be True for this generation, Progressing or
/// Available must have observed it, and Degraded (when present) must have observed it too.
fn should_return_to_apply(
    generation: i64,
    applied: Option<&Condition>,
    progressing: Option<&Condition>,
    available: Option<&Condition>,
    degraded: Option<&Condition>,
) -> bool {
    let ready = |c: Option<&Condition>, require_true: bool| {
        c.is_some_and(|c| {
            c.observed_generation == generation
                && (!require_true || c.status == ConditionStatus::True)
        })
    };
    !ready(applied, true)
        || !(ready(progressing, false) || ready(available, false))
        || degraded.is_some_and(|d| d.observed_generation != generation)
}

/// Outcome of OCM's `determineRolloutStatus` for one cluster at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Determined {
    /// In the rollout window (applying, progressing, failed within the deadline, soaking).
    Rollout,
    /// Its deadline passed: now TimeOut.
    TimedOut,
    /// Done (succeeded past the soak time) or left alone (TimeOut, Skip).
    Settled,
}

/// sdk-go's `determineRolloutStatus`: updates `status` (TimeOut, recheck time) and says where the
/// cluster goes. `timeout` None is progressDeadline `None` (never times out).
pub(crate) fn determine(
    status: &mut ClusterRolloutStatus,
    min_success: Duration,
    timeout: Option<Duration>,
    now: DateTime<Utc>,
) -> Determined {
    match status.status {
        RolloutStatus::ToApply => Determined::Rollout,
        RolloutStatus::Succeeded => {
            let soak_end = recheck_time(status.last_transition_time, Some(min_success), now);
            match soak_end {
                Some(end) if now < end => {
                    status.recheck_time = Some(end);
                    Determined::Rollout
                }
                _ => Determined::Settled,
            }
        }
        RolloutStatus::TimeOut | RolloutStatus::Skip => Determined::Settled,
        // Waited for without a deadline: the cluster said why it waits and until when.
        RolloutStatus::Held => {
            status.recheck_time = None;
            Determined::Rollout
        }
        RolloutStatus::Progressing | RolloutStatus::Failed => {
            let deadline = recheck_time(status.last_transition_time, timeout, now);
            status.recheck_time = deadline;
            match deadline {
                Some(d) if now >= d => {
                    status.status = RolloutStatus::TimeOut;
                    Determined::TimedOut
                }
                _ => Determined::Rollout,
            }
        }
    }
}

/// sdk-go's `calculateRecheckTime`: start (or now) plus the duration; None for no duration.
fn recheck_time(
    start: Option<DateTime<Utc>>,
    duration: Option<Duration>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let duration = TimeDelta::from_std(duration?).unwrap_or(TimeDelta::MAX);
    start
        .unwrap_or(now)
        .checked_add_signed(duration)
        .or(Some(DateTime::<Utc>::MAX_UTC))
}
