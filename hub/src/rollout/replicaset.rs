//! A whole ManifestWorkReplicaSet: every placement's rollout, the works to create, update and
//! delete, the status summary and the conditions (ocm's deploy and status reconcilers).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::meta::{
    Condition, ConditionStatus, Time, find_condition, is_condition_true, set_condition,
};
use ocm_edge_schemas::api::replicaset::{
    CONDITION_MANIFESTWORK_APPLIED, CONDITION_PLACEMENT_ROLLED_OUT, CONDITION_PLACEMENT_VERIFIED,
    ManifestWorkReplicaSet, ManifestWorkReplicaSetStatus, ManifestWorkReplicaSetSummary,
    PlacementSummary, REASON_AS_EXPECTED, REASON_COMPLETE, REASON_NOT_AS_EXPECTED,
    REASON_PLACEMENT_DECISION_EMPTY, REASON_PLACEMENT_DECISION_NOT_FOUND, REASON_PROCESSING,
    REASON_PROGRESSING, REASON_ROLLOUT_DEGRADED,
};
use ocm_edge_schemas::api::work::{WORK_APPLIED, WORK_AVAILABLE, WORK_DEGRADED, WORK_PROGRESSING};

use super::RolloutError;
use super::cluster_status::{
    ClusterDecision, ClusterRolloutStatus, ClusterWork, GroupKey, RolloutStatus,
    work_rollout_status,
};
use super::strategy::rollout_clusters;

/// One selected cluster as `ocm-edge rollout status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRolloutView {
    /// Cluster name.
    pub cluster: String,
    /// The placement that selected it (the first one, when several do).
    pub placement: String,
    /// Its decision group.
    pub group: GroupKey,
    /// Its rollout status at `now`.
    pub status: RolloutStatus,
    /// Since when.
    pub last_transition_time: Option<DateTime<Utc>>,
    /// Its deadline or end of soak time, when it has one.
    pub recheck_time: Option<DateTime<Utc>>,
    /// Whether its work carries (or is being sent) the current template.
    pub current_template: bool,
    /// False while the hub sees the cluster unreachable.
    pub reachable: bool,
    /// Why the template cannot be rendered for it (it counts as Failed), when it cannot.
    pub message: Option<String>,
}

/// A cluster the set's template cannot be rendered for (`spec.perCluster`): since when, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unrenderable {
    /// First seen failing (progressDeadline counts from here, as for a degraded cluster).
    pub since: DateTime<Utc>,
    /// Why, with where and how to fix it.
    pub message: String,
}

/// What to do for a ManifestWorkReplicaSet at `now`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplicaSetPlan {
    /// `(cluster, placement)`: send the current template to these clusters now (create or update
    /// their work, labelled with the placement). Clusters not listed keep what they have.
    pub to_apply: Vec<(String, String)>,
    /// Clusters whose work of this set must be deleted: no placement selects them any more.
    pub to_delete: Vec<String>,
    /// Every selected cluster, by name.
    pub clusters: Vec<ClusterRolloutView>,
    /// The set's status: conditions merged into the previous ones at `now`, summaries.
    pub status: ManifestWorkReplicaSetStatus,
    /// Evaluate again at this time if nothing else happens first (a deadline or a soak ends).
    pub requeue_at: Option<DateTime<Utc>>,
    /// Placements whose strategy cannot be used, with why.
    pub errors: Vec<(String, RolloutError)>,
    /// Placements whose rollout stopped because more clusters failed than maxFailures allows.
    pub max_failure_breach: Vec<String>,
}

#[derive(Default)]
struct Counts {
    applied: i64,
    available: i64,
    progressing: i64,
    degraded: i64,
}

impl Counts {
    fn add(&mut self, work: &ClusterWork) {
        let t = |c: &str| i64::from(is_condition_true(&work.conditions, c));
        self.applied += t(WORK_APPLIED);
        self.available += t(WORK_AVAILABLE);
        self.progressing += t(WORK_PROGRESSING);
        self.degraded += t(WORK_DEGRADED);
    }

    fn summary(
        &self,
        total: i64,
        desired_total: i64,
        updated: i64,
    ) -> ManifestWorkReplicaSetSummary {
        ManifestWorkReplicaSetSummary {
            total,
            progressing: self.progressing,
            available: self.available,
            degraded: self.degraded,
            applied: self.applied,
            desired_total,
            updated,
        }
    }
}

/// Plans a ManifestWorkReplicaSet.
///
/// - `decisions`: each placement's clusters by placement name; a placement of the set missing
///   here does not exist (PlacementVerified False, PlacementDecisionNotFound, nothing else done).
/// - `works`: the set's works by cluster.
///
/// Summary counts follow OCM: `total` counts works carrying the current template (including the
/// ones sent now), applied/available/progressing/degraded count selected clusters' works whose
/// condition is True (any template, not being deleted); `desiredTotal` is the number of selected
/// clusters and `updated` the works whose agent applied the current template's generation.
pub fn plan_replica_set(
    set: &ManifestWorkReplicaSet,
    decisions: &BTreeMap<String, Vec<ClusterDecision>>,
    works: &BTreeMap<String, ClusterWork>,
    now: DateTime<Utc>,
) -> ReplicaSetPlan {
    plan_replica_set_with(set, decisions, works, &BTreeMap::new(), now)
}

/// [`plan_replica_set`] where the template cannot be rendered for the clusters in `unrenderable`
/// (ocm-edge's `spec.perCluster`): each counts as Failed since its `since` (toward maxFailures,
/// timing out at progressDeadline), is never sent the template, keeps the work it has, and shows
/// why in its view.
pub fn plan_replica_set_with(
    set: &ManifestWorkReplicaSet,
    decisions: &BTreeMap<String, Vec<ClusterDecision>>,
    works: &BTreeMap<String, ClusterWork>,
    unrenderable: &BTreeMap<String, Unrenderable>,
    now: DateTime<Utc>,
) -> ReplicaSetPlan {
    let at = Time::new(now);
    let mut plan = ReplicaSetPlan {
        status: set.status.clone(),
        ..ReplicaSetPlan::default()
    };
    let conditions = &mut plan.status.conditions;

    if let Some(missing) = set
        .spec
        .placement_refs
        .iter()
        .find(|p| !decisions.contains_key(&p.name))
    {
        set_condition(
            conditions,
            condition(
                CONDITION_PLACEMENT_VERIFIED,
                false,
                REASON_PLACEMENT_DECISION_NOT_FOUND,
                format!("Placement {} not found", missing.name),
            ),
            at,
        );
        return plan;
    }

    let live = |cluster: &str| works.get(cluster).filter(|w| !w.deleting);
    let mut selected: BTreeSet<String> = BTreeSet::new();
    let mut applying: BTreeSet<String> = BTreeSet::new();
    let mut views: BTreeMap<String, ClusterRolloutView> = BTreeMap::new();
    let mut summaries = Vec::new();
    // Clusters selected by several placements are counted once.
    let mut holding: BTreeSet<String> = BTreeSet::new();
    let mut succeeded: BTreeSet<String> = BTreeSet::new();

    for placement in &set.spec.placement_refs {
        let decided = &decisions[&placement.name];
        let mut existing: Vec<ClusterRolloutStatus> = Vec::new();
        for d in decided {
            if let Some(u) = unrenderable.get(&d.cluster) {
                existing.push(ClusterRolloutStatus {
                    cluster: d.cluster.clone(),
                    group: d.group.clone(),
                    status: RolloutStatus::Failed,
                    last_transition_time: Some(u.since),
                    recheck_time: None,
                });
            } else if let Some((status, since)) = live(&d.cluster).and_then(work_rollout_status) {
                existing.push(ClusterRolloutStatus {
                    cluster: d.cluster.clone(),
                    group: d.group.clone(),
                    status,
                    last_transition_time: since,
                    recheck_time: None,
                });
            }
        }
        let result = match rollout_clusters(&placement.rollout_strategy, decided, &existing, now) {
            Ok(r) => r,
            Err(e) => {
                plan.errors.push((placement.name.clone(), e));
                continue;
            }
        };
        if result.max_failure_breach {
            plan.max_failure_breach.push(placement.name.clone());
        }
        if let Some(t) = result.recheck_at {
            plan.requeue_at = Some(plan.requeue_at.map_or(t, |r| r.min(t)));
        }
        let mut current: BTreeSet<String> = existing
            .iter()
            .filter(|s| !unrenderable.contains_key(&s.cluster))
            .map(|s| s.cluster.clone())
            .collect();
        for c in &result.clusters_to_rollout {
            if c.status == RolloutStatus::ToApply {
                current.insert(c.cluster.clone());
                if applying.insert(c.cluster.clone()) {
                    plan.to_apply
                        .push((c.cluster.clone(), placement.name.clone()));
                }
            }
        }
        succeeded.extend(
            existing
                .iter()
                .filter(|s| s.status == RolloutStatus::Succeeded)
                .map(|s| s.cluster.clone()),
        );
        holding.extend(current.iter().cloned());

        let mut counts = Counts::default();
        let mut updated = 0i64;
        for s in &result.statuses {
            selected.insert(s.cluster.clone());
            let work = live(&s.cluster);
            if let Some(w) = work {
                counts.add(w);
                updated += i64::from(runs_current_generation(w));
            }
            views
                .entry(s.cluster.clone())
                .or_insert_with(|| ClusterRolloutView {
                    cluster: s.cluster.clone(),
                    placement: placement.name.clone(),
                    group: s.group.clone(),
                    status: s.status,
                    last_transition_time: s.last_transition_time,
                    recheck_time: s.recheck_time,
                    current_template: current.contains(&s.cluster),
                    reachable: work.is_none_or(|w| w.reachable),
                    message: unrenderable.get(&s.cluster).map(|u| u.message.clone()),
                });
        }
        let groups: BTreeSet<&GroupKey> = decided.iter().map(|d| &d.group).collect();
        summaries.push(PlacementSummary {
            name: placement.name.clone(),
            // ocm's getAvailableDecisionGroupProgressMessage.
            available_decision_groups: format!(
                "{} ({} / {} clusters applied)",
                groups.len(),
                current.len(),
                decided.len()
            ),
            summary: counts.summary(current.len() as i64, decided.len() as i64, updated),
        });
    }

    for (cluster, work) in works {
        if !work.deleting && !selected.contains(cluster) {
            plan.to_delete.push(cluster.clone());
        }
    }

    let mut counts = Counts::default();
    let mut updated = 0i64;
    for cluster in &selected {
        if let Some(w) = live(cluster) {
            counts.add(w);
            updated += i64::from(runs_current_generation(w));
        }
    }
    let count = holding.len();
    let summary = counts.summary(count as i64, selected.len() as i64, updated);
    plan.status.placements_summary = summaries;
    plan.clusters = views.into_values().collect();

    let verified = if let Some((name, e)) = plan.errors.first() {
        condition(
            CONDITION_PLACEMENT_VERIFIED,
            false,
            REASON_NOT_AS_EXPECTED,
            format!("placement {name}: {e}"),
        )
    } else if count == 0 {
        condition(
            CONDITION_PLACEMENT_VERIFIED,
            false,
            REASON_PLACEMENT_DECISION_EMPTY,
            String::new(),
        )
    } else {
        condition(
            CONDITION_PLACEMENT_VERIFIED,
            true,
            REASON_AS_EXPECTED,
            String::new(),
        )
    };
    let verified_reason = verified.reason.clone();
    let conditions = &mut plan.status.conditions;
    set_condition(conditions, verified, at);

    let with_status = |status| plan.clusters.iter().filter(|c| c.status == status).count();
    let (failed, timed_out, held) = (
        with_status(RolloutStatus::Failed),
        with_status(RolloutStatus::TimeOut),
        with_status(RolloutStatus::Held),
    );
    let (succeeded, total_selected) = (succeeded.len(), selected.len());
    let mut message = format!("{succeeded}/{total_selected} clusters succeeded");
    if failed > 0 {
        message.push_str(&format!(", {failed} failed"));
    }
    if held > 0 {
        message.push_str(&format!(", {held} held by the cluster"));
    }
    if timed_out > 0 {
        message.push_str(&format!(", {timed_out} timed out"));
    }
    if !plan.max_failure_breach.is_empty() {
        message.push_str(&format!(
            "; stopped: more failures than maxFailures allows ({})",
            plan.max_failure_breach.join(", ")
        ));
    }
    let rolled_out = if total_selected == succeeded {
        condition(
            CONDITION_PLACEMENT_ROLLED_OUT,
            true,
            REASON_COMPLETE,
            message,
        )
    } else if !plan.max_failure_breach.is_empty() {
        // OCM's rollback enhancement: a rollout stopped on failures is degraded.
        condition(
            CONDITION_PLACEMENT_ROLLED_OUT,
            false,
            REASON_ROLLOUT_DEGRADED,
            message,
        )
    } else {
        condition(
            CONDITION_PLACEMENT_ROLLED_OUT,
            false,
            REASON_PROGRESSING,
            message,
        )
    };
    set_condition(conditions, rolled_out, at);

    // ocm's status reconciler.
    let applied = if summary.total == 0 {
        let reason = if verified_reason == REASON_PLACEMENT_DECISION_EMPTY {
            REASON_PLACEMENT_DECISION_EMPTY
        } else {
            REASON_NOT_AS_EXPECTED
        };
        condition(CONDITION_MANIFESTWORK_APPLIED, false, reason, String::new())
    } else if summary.available == summary.total
        && summary.progressing == 0
        && summary.degraded == 0
    {
        condition(
            CONDITION_MANIFESTWORK_APPLIED,
            true,
            REASON_AS_EXPECTED,
            String::new(),
        )
    } else if summary.progressing > 0 && summary.degraded == 0 {
        condition(
            CONDITION_MANIFESTWORK_APPLIED,
            false,
            REASON_PROCESSING,
            String::new(),
        )
    } else {
        condition(
            CONDITION_MANIFESTWORK_APPLIED,
            false,
            REASON_NOT_AS_EXPECTED,
            String::new(),
        )
    };
    set_condition(conditions, applied, at);
    plan.status.summary = summary;
    plan
}

/// The agent applied the current template's generation.
fn runs_current_generation(work: &ClusterWork) -> bool {
    work.is_current()
        && find_condition(&work.conditions, WORK_APPLIED)
            .is_some_and(|c| c.is_true() && c.observed_generation == work.generation)
}

fn condition(type_: &str, status: bool, reason: &str, message: String) -> Condition {
    Condition::new(type_, ConditionStatus::from_bool(status), reason, message)
}
