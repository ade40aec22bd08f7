//! ManifestWorkReplicaSets in the core: gathers each set's placement decisions and the works it
//! owns, asks the pure rollout planner ([`crate::rollout::plan_replica_set`]) what to do at `now`,
//! and turns the plan into records: works created or updated (named as the set, labelled with
//! OCM's `manifestworkreplicaset` and `placementname` labels) on the clusters the rollout reaches,
//! works deleted on clusters no placement selects any more, and the set's status and rollout
//! table. Re-run after every batch (statuses move rollouts on) and at the plan's requeue time.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::RolloutRow;
use ocm_edge_schemas::api::cluster::ManagedClusterSet;
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::meta::{
    Condition, Time, find_condition, is_condition_true, set_condition,
};
use ocm_edge_schemas::api::placement::LABEL_PLACEMENT;
use ocm_edge_schemas::api::replicaset::{
    CONDITION_PLACEMENT_ROLLED_OUT, CONDITION_PLACEMENT_VERIFIED, CONDITION_PROGRESSING,
    CascadeDeletionPolicy, FailureStrategy, LABEL_CONTROLLER_HASH, LABEL_MANIFEST_WORK_REPLICA_SET,
    LABEL_PLACEMENT_NAME, ManifestWorkReplicaSetSpec, ManifestWorkReplicaSetStatus,
    REASON_FOUND_NEW_REVISION, REASON_NEW_REVISION_AVAILABLE, REASON_NEW_REVISION_CREATED,
    REASON_PROGRESS_DEADLINE_EXCEEDED, REASON_ROLLOUT_ABORTED, REASON_ROLLOUT_DEGRADED,
};
use ocm_edge_schemas::api::work::ManifestWorkSpec;

use crate::core::objects::{ObjectError, ObjectKey, ObjectKind, ReplicaSetRecord, StoredObject};
use crate::core::{Change, HubCore, Record, WorkKey, WorkRecord};
use crate::rollout::history::{self, Aborted};
use crate::rollout::per_cluster::{self, ClusterFacts};
use crate::rollout::{
    ClusterDecision, ClusterWork, RolloutStatus, TemplateState, Unrenderable, plan_replica_set_with,
};
use crate::work::WorkInput;

/// Renders kept between fleet passes: by set (`namespace/name`), the revision they are of and,
/// by cluster, a fingerprint of what the cluster's render read (its labels, claims and sets)
/// with the outcome. A fleet pass follows every batch; rendering 10,000 clusters' templates on
/// each would cost more than the batch. Derived state: never stored, rebuilt after a restart.
#[derive(Debug, Default)]
pub struct RenderCache(Mutex<HashMap<String, SetRenders>>);

type Rendered = Result<Arc<ManifestWorkSpec>, String>;

#[derive(Debug, Default)]
struct SetRenders {
    revision: String,
    clusters: HashMap<String, (u64, Rendered)>,
}

fn fingerprint(facts: &ClusterFacts) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&facts.name, &facts.labels, &facts.claims, &facts.sets).hash(&mut h);
    h.finish()
}

/// The value of the `manifestworkreplicaset` label on a set's works: `<namespace>.<name>`.
pub fn replica_set_label(r: &ReplicaSetRecord) -> String {
    format!("{}.{}", r.set.metadata.namespace, r.set.metadata.name)
}

impl HubCore {
    /// Works owned by the set (its label), by cluster.
    fn owned_works<'a>(&'a self, r: &ReplicaSetRecord) -> BTreeMap<String, &'a WorkRecord> {
        let label = replica_set_label(r);
        self.works()
            .filter(|w| {
                w.key.name == r.set.metadata.name
                    && w.labels.get(LABEL_MANIFEST_WORK_REPLICA_SET) == Some(&label)
            })
            .map(|w| (w.key.cluster.clone(), w))
            .collect()
    }

    /// The clusters placement `namespace/name` decided on, with their decision groups, in
    /// decision order; `None` when the placement does not exist.
    pub(crate) fn placement_decisions(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Vec<ClusterDecision>> {
        let key = ObjectKey::new(ObjectKind::Placement, namespace, name);
        self.objects().get(&key)?;
        let mut clusters = Vec::new();
        for o in self
            .objects()
            .in_namespace(ObjectKind::PlacementDecision, namespace)
        {
            let StoredObject::Decision(d) = o else {
                continue;
            };
            if d.metadata.labels.get(LABEL_PLACEMENT).map(String::as_str) != Some(name) {
                continue;
            }
            let (index, group) = crate::placement::decision::group_of(d);
            for c in &d.status.decisions {
                clusters.push(ClusterDecision::new(
                    c.cluster_name.clone(),
                    index,
                    group.clone(),
                ));
            }
        }
        Some(clusters)
    }

    /// Each placement's decided clusters with their decision groups; placements that do not
    /// exist are left out (the planner reports them).
    fn decided_clusters(&self, r: &ReplicaSetRecord) -> BTreeMap<String, Vec<ClusterDecision>> {
        let ns = &r.set.metadata.namespace;
        r.set
            .spec
            .placement_refs
            .iter()
            .filter_map(|p| {
                self.placement_decisions(ns, &p.name)
                    .map(|d| (p.name.clone(), d))
            })
            .collect()
    }

    /// What a set's template may depend on for `cluster` (its labels and claims as the hub
    /// views them, the sets among `sets` that select it); `None` for an unknown cluster.
    pub(crate) fn cluster_facts(
        &self,
        cluster: &str,
        sets: &[ManagedClusterSet],
    ) -> Option<ClusterFacts> {
        let view = crate::registration::hub_view(self.cluster(cluster)?);
        Some(ClusterFacts {
            name: cluster.to_owned(),
            sets: crate::placement::clusterset::sets_of(&view, sets)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            claims: view
                .status
                .cluster_claims
                .iter()
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect(),
            labels: view.metadata.labels,
        })
    }

    /// False while the hub sees `cluster` unreachable.
    pub(crate) fn reachable(&self, cluster: &str) -> bool {
        self.cluster(cluster)
            .and_then(|c| c.availability.as_ref())
            .is_none_or(|a| a.status() != ConditionStatus::Unknown)
    }

    /// Plans every ManifestWorkReplicaSet at `now`; returns the records and spec messages.
    pub fn reconcile_replica_sets(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        {
            let live: std::collections::HashSet<String> = self
                .objects()
                .replica_sets()
                .map(|r| {
                    ObjectKey::new(
                        ObjectKind::ManifestWorkReplicaSet,
                        r.set.metadata.namespace.clone(),
                        r.set.metadata.name.clone(),
                    )
                    .to_string()
                })
                .collect();
            let mut cache = self
                .render_cache()
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            cache.retain(|k, _| live.contains(k.trim_end_matches(" (rollback)")));
        }
        for r in self.objects().replica_sets() {
            change.extend(self.reconcile_replica_set(r, now));
        }
        change
    }

    fn reconcile_replica_set(&self, r: &ReplicaSetRecord, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        let owned = self.owned_works(r);
        let key = ObjectKey::new(
            ObjectKind::ManifestWorkReplicaSet,
            r.set.metadata.namespace.clone(),
            r.set.metadata.name.clone(),
        );
        if r.deleting {
            for (cluster, w) in &owned {
                if w.deleting.is_none()
                    && let Ok(c) =
                        self.delete_work(&WorkKey::new(cluster.clone(), w.key.name.clone()), now)
                {
                    change.extend(c);
                }
            }
            // Background (OCM's default): the set goes now, its works are deleted behind it;
            // Foreground: it stays until they are gone.
            let foreground =
                r.set.spec.cascade_deletion_policy == Some(CascadeDeletionPolicy::Foreground);
            if owned.is_empty() || !foreground {
                change.records.push(Record::ForgetObject(key));
            }
            return change;
        }
        let decisions = self.decided_clusters(r);
        let mut updated = r.clone();
        // The revision being rolled out, kept with the earlier ones; a new one ends an abort.
        let hash = history::revision_hash(&r.set.spec);
        history::record(
            &mut updated.history,
            &r.set.spec,
            &r.set.status.current_revision,
            now,
        );
        let mut aborted = r.aborted.clone().filter(|a| a.revision == hash);
        let sets = self.objects().cluster_sets();
        let selected: Vec<&str> = decisions
            .values()
            .flatten()
            .map(|d| d.cluster.as_str())
            .collect();
        let (rendered, unrenderable) = self.render_for(
            (&key.to_string(), &hash),
            &r.set.spec,
            &selected,
            &sets,
            &r.unrenderable,
            now,
        );
        let shared_template = Arc::new(r.set.spec.manifest_work_template.clone());
        let template_for = |cluster: &str| rendered.get(cluster).unwrap_or(&shared_template);
        let works: BTreeMap<String, ClusterWork> = owned
            .iter()
            .map(|(cluster, w)| {
                let sent_at = r
                    .sent
                    .get(cluster)
                    .copied()
                    .unwrap_or_else(|| w.created.as_datetime());
                let work = ClusterWork {
                    template: if *w.spec == **template_for(cluster) {
                        TemplateState::Current { sent_at }
                    } else {
                        TemplateState::Outdated
                    },
                    generation: w.resource_version,
                    conditions: w
                        .status
                        .as_ref()
                        .map(|s| s.conditions.clone())
                        .unwrap_or_default(),
                    reachable: self.reachable(cluster),
                    deleting: w.deleting.is_some(),
                };
                (cluster.clone(), work)
            })
            .collect();
        let mut plan = plan_replica_set_with(&r.set, &decisions, &works, &unrenderable, now);
        updated.unrenderable = unrenderable;

        // failureStrategy AbortAll: on a maxFailures breach, stop and send the clusters that have
        // not succeeded with the update revision back to the current one (once per revision).
        let stable = updated
            .history
            .iter()
            .find(|h| h.hash == r.set.status.current_revision && h.hash != hash);
        let abort_asked = plan.max_failure_breach.iter().any(|p| {
            r.set.spec.placement_refs.iter().any(|pr| {
                pr.name == *p
                    && pr.rollout_strategy.failure_strategy == Some(FailureStrategy::AbortAll)
            })
        });
        if aborted.is_none()
            && abort_asked
            && let Some(stable) = stable
        {
            // Chosen once, here: the clusters that got the update revision and have not
            // succeeded with it. Clusters the rollout had not reached never get it.
            let clusters: std::collections::BTreeSet<String> = plan
                .clusters
                .iter()
                .filter(|c| c.current_template && c.status != RolloutStatus::Succeeded)
                .map(|c| c.cluster.clone())
                .collect();
            tracing::warn!(set = %key, revision = %hash, to = %stable.hash, clusters = clusters.len(), "rollout aborted: more clusters failed than maxFailures allows; rolling back");
            aborted = Some(Aborted {
                revision: hash.clone(),
                to: stable.hash.clone(),
                at: now,
                clusters,
            });
        }
        let mut sends: Vec<(String, String, Arc<ManifestWorkSpec>, String)> = Vec::new();
        if let Some(a) = &aborted {
            plan.to_apply.clear();
            // Sent back until their work carries the revision it went back to.
            let going_back: Vec<&str> = a
                .clusters
                .iter()
                .filter(|c| {
                    owned.get(*c).is_none_or(|w| {
                        w.deleting.is_none() && w.labels.get(LABEL_CONTROLLER_HASH) != Some(&a.to)
                    })
                })
                .map(String::as_str)
                .collect();
            match updated.history.iter().find(|h| h.hash == a.to) {
                Some(back) if !going_back.is_empty() => {
                    let back_spec = back.apply_to(&r.set.spec);
                    let (back_rendered, failing) = self.render_for(
                        (&format!("{key} (rollback)"), &a.to),
                        &back_spec,
                        &going_back,
                        &sets,
                        &BTreeMap::new(),
                        now,
                    );
                    for (cluster, u) in &failing {
                        tracing::warn!(set = %key, %cluster, reason = %u.message, "cannot roll this cluster back: the revision it goes back to no longer renders for it");
                    }
                    let shared_back = Arc::new(back_spec.manifest_work_template.clone());
                    for c in &plan.clusters {
                        if !going_back.contains(&c.cluster.as_str()) {
                            continue;
                        }
                        let spec = if back_spec.per_cluster.is_some() {
                            match back_rendered.get(&c.cluster) {
                                Some(s) => s.clone(),
                                None => continue,
                            }
                        } else {
                            shared_back.clone()
                        };
                        sends.push((c.cluster.clone(), c.placement.clone(), spec, a.to.clone()));
                    }
                }
                Some(_) => {}
                None => {
                    tracing::warn!(set = %key, to = %a.to, "the revision to roll back to is no longer kept");
                }
            }
        }
        for (cluster, placement) in &plan.to_apply {
            // With perCluster a cluster gets its render or nothing (the planner never picks one
            // that failed; one not rendered at all is not a cluster the hub knows).
            if r.set.spec.per_cluster.is_some() && !rendered.contains_key(cluster) {
                continue;
            }
            sends.push((
                cluster.clone(),
                placement.clone(),
                template_for(cluster).clone(),
                hash.clone(),
            ));
        }
        for (cluster, placement, spec, revision) in sends {
            let accepted = self.cluster(&cluster).is_some_and(|c| c.is_schedulable());
            let wk = WorkKey::new(cluster.clone(), r.set.metadata.name.clone());
            let foreign = self.work(&wk).is_some() && !owned.contains_key(&cluster);
            if !accepted || foreign {
                tracing::warn!(
                    set = %key, %cluster,
                    "replica set cannot place its work (cluster not accepted or being removed, or a work of that name not owned by the set)"
                );
                continue;
            }
            let mut labels = template_labels(r);
            labels.insert(LABEL_PLACEMENT_NAME.to_owned(), placement);
            labels.insert(LABEL_CONTROLLER_HASH.to_owned(), revision);
            let input = WorkInput {
                name: r.set.metadata.name.clone(),
                labels,
                annotations: Default::default(),
                spec,
            };
            match self.write_works(&input, std::slice::from_ref(&cluster), true, now) {
                Ok((c, _)) if c.is_empty() => {}
                Ok((c, _)) => {
                    change.extend(c);
                    updated.sent.insert(cluster, now);
                }
                Err(e) => {
                    tracing::warn!(set = %key, %cluster, error = %e, "replica set work not written")
                }
            }
        }
        for cluster in &plan.to_delete {
            if let Some(w) = owned.get(cluster)
                && let Ok(c) = self.delete_work(&w.key, now)
            {
                change.extend(c);
                updated.sent.remove(cluster);
            }
        }
        let mut status = plan.status.clone();
        revision_status(&mut status, &updated, &hash, aborted.as_ref(), now);
        updated.set.status = status;
        let back_to = aborted.as_ref().and_then(|a| {
            updated
                .history
                .iter()
                .find(|h| h.hash == a.to)
                .map(|h| (h.revision, a.at))
        });
        updated.aborted = aborted;
        updated.requeue_at = plan.requeue_at;
        updated.clusters = plan
            .clusters
            .iter()
            .map(|c| {
                let rolled_back = updated
                    .aborted
                    .as_ref()
                    .is_some_and(|a| a.clusters.contains(&c.cluster));
                let message = match (c.message.clone(), back_to) {
                    (Some(m), _) => m,
                    (None, Some((revision, at))) if rolled_back => format!(
                        "rolled back to revision {revision} at {}: the rollout was aborted \
                         (failureStrategy AbortAll)",
                        at.format("%Y-%m-%dT%H:%M:%SZ")
                    ),
                    _ => String::new(),
                };
                RolloutRow {
                    cluster: c.cluster.clone(),
                    placement: c.placement.clone(),
                    group_index: c.group.group_index,
                    group_name: c.group.group_name.clone(),
                    status: c.status.as_str().to_owned(),
                    since: c.last_transition_time,
                    recheck_at: c.recheck_time,
                    current_template: c.current_template,
                    reachable: c.reachable,
                    message,
                }
            })
            .collect();
        if &updated != r {
            change
                .records
                .push(Record::Object(Box::new(StoredObject::ReplicaSet(
                    Box::new(updated),
                ))));
        }
        change
    }

    /// Each of `clusters` rendered from `spec` (nothing to render without `perCluster`: every
    /// cluster gets the template as written), and the clusters it cannot be rendered for, failing
    /// since their entry in `failing` when the reason is the same.
    fn render_for(
        &self,
        (set, revision): (&str, &str),
        spec: &ManifestWorkReplicaSetSpec,
        clusters: &[&str],
        sets: &[ManagedClusterSet],
        failing: &BTreeMap<String, Unrenderable>,
        now: DateTime<Utc>,
    ) -> (
        BTreeMap<String, Arc<ManifestWorkSpec>>,
        BTreeMap<String, Unrenderable>,
    ) {
        let mut rendered = BTreeMap::new();
        let mut unrenderable = BTreeMap::new();
        if spec.per_cluster.is_none() {
            return (rendered, unrenderable);
        }
        let mut cache = self
            .render_cache()
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let renders = cache.entry(set.to_owned()).or_default();
        if renders.revision != revision {
            *renders = SetRenders {
                revision: revision.to_owned(),
                clusters: HashMap::new(),
            };
        }
        for cluster in clusters {
            let cluster = (*cluster).to_owned();
            if rendered.contains_key(&cluster) || unrenderable.contains_key(&cluster) {
                continue;
            }
            let Some(facts) = self.cluster_facts(&cluster, sets) else {
                continue;
            };
            let print = fingerprint(&facts);
            let outcome = match renders.clusters.get(&cluster) {
                Some((p, outcome)) if *p == print => outcome.clone(),
                _ => {
                    let outcome = per_cluster::render(spec, &facts).map(Arc::new);
                    renders
                        .clusters
                        .insert(cluster.clone(), (print, outcome.clone()));
                    outcome
                }
            };
            match outcome {
                Ok(spec) => {
                    rendered.insert(cluster, spec);
                }
                Err(message) => {
                    let since = failing
                        .get(&cluster)
                        .filter(|u| u.message == message)
                        .map_or(now, |u| u.since);
                    unrenderable.insert(cluster, Unrenderable { since, message });
                }
            }
        }
        (rendered, unrenderable)
    }

    /// Rolls the set `key` back to a kept revision (`to`, or the one before the current): its
    /// template and per-cluster values become that revision's, rolled out with its strategy.
    ///
    /// # Errors
    /// [`ObjectError`]: NotFound, or Invalid without such a revision (or when it is already the
    /// set's).
    pub fn undo_replica_set(
        &self,
        key: &ObjectKey,
        to: Option<i64>,
    ) -> Result<(Change, ReplicaSetRecord), ObjectError> {
        let Some(StoredObject::ReplicaSet(r)) = self.objects().get(key) else {
            return Err(ObjectError::NotFound(key.clone()));
        };
        let template = history::revision_hash(&r.set.spec);
        let target =
            history::undo_target(&r.history, to, &r.set.status.current_revision, &template)
                .map_err(|e| ObjectError::Invalid(key.clone(), e))?;
        if target.hash == template {
            return Err(ObjectError::Invalid(
                key.clone(),
                format!(
                    "revision {} is already its template (see ocm-edge rollout history)",
                    target.revision
                ),
            ));
        }
        let mut updated = (**r).clone();
        updated.set.spec = target.apply_to(&r.set.spec);
        updated.set.metadata.generation += 1;
        let change = Change {
            records: vec![Record::Object(Box::new(StoredObject::ReplicaSet(
                Box::new(updated.clone()),
            )))],
            outbound: vec![],
        };
        Ok((change, updated))
    }

    /// The earliest time a ManifestWorkReplicaSet must be evaluated again.
    pub fn replica_sets_requeue_at(&self) -> Option<DateTime<Utc>> {
        self.objects()
            .replica_sets()
            .filter_map(|r| r.requeue_at)
            .min()
    }
}

/// The set's revision fields and Progressing condition (OCM's rollback enhancement): the update
/// revision is the spec's; it becomes the current one once it succeeded everywhere; an abort
/// shows in `abortedTime`, Progressing RolloutAborted and PlacementRolledOut RolloutDegraded.
fn revision_status(
    status: &mut ManifestWorkReplicaSetStatus,
    record: &ReplicaSetRecord,
    hash: &str,
    aborted: Option<&Aborted>,
    now: DateTime<Utc>,
) {
    let at = Time::new(now);
    status.update_revision = hash.to_owned();
    // Rolled out everywhere in this pass: at least one cluster selected, every placement
    // verified now (a condition carried over from an earlier revision, or an empty placement,
    // proves nothing about this one).
    let complete = is_condition_true(&status.conditions, CONDITION_PLACEMENT_ROLLED_OUT)
        && is_condition_true(&status.conditions, CONDITION_PLACEMENT_VERIFIED)
        && status.summary.desired_total > 0
        && status.summary.updated == status.summary.desired_total;
    let degraded = find_condition(&status.conditions, CONDITION_PLACEMENT_ROLLED_OUT)
        .is_some_and(|c| c.reason == REASON_ROLLOUT_DEGRADED);
    if complete && aborted.is_none() {
        status.current_revision = hash.to_owned();
    }
    status.aborted_time = aborted.map(|a| Time::new(a.at));
    if aborted.is_some()
        && let Some(c) = find_condition(&status.conditions, CONDITION_PLACEMENT_ROLLED_OUT)
        && c.reason != REASON_ROLLOUT_DEGRADED
    {
        // The rolled-back clusters no longer count as failed, but the rollout stays stopped.
        let mut c = c.clone();
        c.status = ConditionStatus::False;
        c.reason = REASON_ROLLOUT_DEGRADED.to_owned();
        c.message = format!("aborted: {}", c.message);
        set_condition(&mut status.conditions, c, at);
    }
    let number = |h: &str| {
        record
            .history
            .iter()
            .find(|r| r.hash == h)
            .map_or_else(|| h.to_owned(), |r| format!("{} ({h})", r.revision))
    };
    let progressing = if let Some(a) = aborted {
        Condition::new(
            CONDITION_PROGRESSING,
            ConditionStatus::False,
            REASON_ROLLOUT_ABORTED,
            format!(
                "revision {} was aborted: more clusters failed than maxFailures allows; {} \
                 cluster(s) rolled back to revision {}",
                number(&a.revision),
                a.clusters.len(),
                number(&a.to)
            ),
        )
    } else if complete {
        Condition::new(
            CONDITION_PROGRESSING,
            ConditionStatus::False,
            REASON_NEW_REVISION_AVAILABLE,
            format!(
                "revision {} succeeded on every selected cluster",
                number(hash)
            ),
        )
    } else if degraded {
        Condition::new(
            CONDITION_PROGRESSING,
            ConditionStatus::False,
            REASON_PROGRESS_DEADLINE_EXCEEDED,
            format!(
                "revision {} stopped: more clusters failed than maxFailures allows{}",
                number(hash),
                if status.current_revision.is_empty() || status.current_revision == hash {
                    String::new()
                } else {
                    format!(
                        " (ocm-edge rollout undo returns to revision {})",
                        number(&status.current_revision)
                    )
                }
            ),
        )
    } else {
        let restored = record
            .history
            .last()
            .is_some_and(|r| r.hash == hash && r.restored);
        Condition::new(
            CONDITION_PROGRESSING,
            ConditionStatus::True,
            if restored {
                REASON_FOUND_NEW_REVISION
            } else {
                REASON_NEW_REVISION_CREATED
            },
            format!("revision {} is rolling out", number(hash)),
        )
    };
    set_condition(&mut status.conditions, progressing, at);
}

fn template_labels(r: &ReplicaSetRecord) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert(
        LABEL_MANIFEST_WORK_REPLICA_SET.to_owned(),
        replica_set_label(r),
    );
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::AgentInput;
    use crate::core::testkit::*;
    use ocm_edge_schemas::admin::WriteOutcome;
    use ocm_edge_schemas::api::cluster::ManagedCluster;
    use ocm_edge_schemas::api::object::OcmObject;
    use ocm_edge_schemas::api::work::ManifestWorkStatus;
    use serde_json::{Value, json};

    const LABEL_SET: &str = "cluster.open-cluster-management.io/clusterset";

    /// Three accepted, available clusters in set `edge`, a binding in `default`.
    fn fleet() -> HubCore {
        fleet_of(&["edge-1", "edge-2", "edge-3"])
    }

    fn fleet_of(names: &[&str]) -> HubCore {
        let mut core = core();
        for name in names.iter().copied() {
            let mut request = ManagedCluster::new(name);
            request
                .metadata
                .labels
                .insert(LABEL_SET.into(), "edge".into());
            request.spec.lease_duration_seconds = 60;
            step(
                &mut core,
                AgentInput::JoinRequest {
                    cluster: name.into(),
                    request: Box::new(request),
                },
                0,
            );
            // The operator puts it in the set at acceptance (the agent cannot choose it).
            let edit = crate::registration::LabelEdit {
                set: [(LABEL_SET.to_owned(), "edge".to_owned())].into(),
                ..Default::default()
            };
            let c = core.accept_with(name, &edit, t(0)).unwrap();
            core.apply(&c.records);
            step(&mut core, lease(name), 1);
        }
        apply(
            &mut core,
            json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSet", "metadata": {"name": "edge"}}),
        );
        apply(
            &mut core,
            json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding", "metadata": {"name": "edge", "namespace": "default"},
            "spec": {"clusterSet": "edge"}}),
        );
        core
    }

    fn apply(core: &mut HubCore, v: Value) -> WriteOutcome {
        apply_json(core, v).unwrap()
    }

    fn placement(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    fn replica_set(placement: &str, strategy: Value) -> Value {
        json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
               "kind": "ManifestWorkReplicaSet",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"placementRefs": [{"name": placement, "rolloutStrategy": strategy}],
                        "manifestWorkTemplate": {"workload": {"manifests": [
                            {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "web", "namespace": "default"}}]}}}})
    }

    fn decided(core: &HubCore, name: &str) -> Vec<String> {
        core.objects()
            .decisions()
            .iter()
            .filter(|d| d.metadata.labels.get(LABEL_PLACEMENT).map(String::as_str) == Some(name))
            .flat_map(|d| d.status.decisions.iter().map(|c| c.cluster_name.clone()))
            .collect()
    }

    fn live_works(core: &HubCore) -> Vec<String> {
        core.works()
            .filter(|w| w.deleting.is_none())
            .map(|w| w.key.cluster.clone())
            .collect()
    }

    #[test]
    fn a_replica_set_follows_its_placement_and_a_second_pass_changes_nothing() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({"numberOfClusters": 2})));
        apply(&mut core, replica_set("web", json!({"type": "All"})));
        let change = core.reconcile_fleet(t(2));
        assert!(!change.outbound.is_empty(), "works are sent");
        assert_eq!(decided(&core, "web"), vec!["edge-1", "edge-2"]);
        assert_eq!(live_works(&core), vec!["edge-1", "edge-2"]);
        let work = core.work(&WorkKey::new("edge-1", "web")).unwrap();
        assert_eq!(work.labels[LABEL_MANIFEST_WORK_REPLICA_SET], "default.web");
        assert_eq!(work.labels[LABEL_PLACEMENT_NAME], "web");
        let again = core.reconcile_fleet(t(3));
        assert!(again.is_empty(), "{again:#?}");
    }

    #[test]
    fn an_unreachable_cluster_loses_its_decision_and_its_work_moves() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({"numberOfClusters": 1})));
        apply(&mut core, replica_set("web", json!({})));
        core.reconcile_fleet(t(2));
        assert_eq!(live_works(&core), vec!["edge-1"]);
        step(&mut core, presence("edge-1", false, 0), 3);
        core.reconcile_fleet(t(3));
        assert_eq!(decided(&core, "web"), vec!["edge-2"]);
        assert_eq!(live_works(&core), vec!["edge-2"]);
        assert!(
            core.work(&WorkKey::new("edge-1", "web"))
                .unwrap()
                .deleting
                .is_some()
        );
        let set = core.objects().replica_sets().next().unwrap();
        assert_eq!(set.clusters.len(), 1);
        assert_eq!(set.clusters[0].cluster, "edge-2");
    }

    #[test]
    fn an_unreachable_cluster_does_not_stall_a_progressive_rollout_past_its_deadline() {
        let mut core = fleet();
        // The placement keeps unreachable clusters, so only the rollout's deadline can move on;
        // a timed-out cluster counts as a failure, one is allowed.
        apply(
            &mut core,
            placement(
                "web",
                json!({"tolerations": [
            {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"}]}),
            ),
        );
        apply(
            &mut core,
            replica_set(
                "web",
                json!({"type": "Progressive",
            "progressive": {"maxConcurrency": 1, "progressDeadline": "10s", "maxFailures": 1}}),
            ),
        );
        core.reconcile_fleet(t(2));
        assert_eq!(live_works(&core), vec!["edge-1"]);
        step(&mut core, presence("edge-1", false, 0), 3);
        core.reconcile_fleet(t(3));
        assert_eq!(
            live_works(&core),
            vec!["edge-1"],
            "waits while within the deadline"
        );
        assert_eq!(core.fleet_requeue_at(), Some(t(12)));
        core.reconcile_fleet(t(12));
        assert_eq!(live_works(&core), vec!["edge-1", "edge-2"]);
        let set = core.objects().replica_sets().next().unwrap();
        let row = set.clusters.iter().find(|c| c.cluster == "edge-1").unwrap();
        assert_eq!(row.status, "TimeOut");
        assert!(!row.reachable);
    }

    #[test]
    fn a_succeeded_cluster_lets_a_progressive_rollout_continue_and_the_summary_counts_it() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({})));
        apply(
            &mut core,
            replica_set(
                "web",
                json!({"type": "Progressive",
            "progressive": {"maxConcurrency": 1}}),
            ),
        );
        core.reconcile_fleet(t(2));
        let work = core.work(&WorkKey::new("edge-1", "web")).unwrap().clone();
        let mut status = ManifestWorkStatus::default();
        for c in ["Applied", "Available"] {
            let mut cond =
                ocm_edge_schemas::api::meta::Condition::new(c, ConditionStatus::True, "Done", "");
            cond.observed_generation = work.resource_version;
            status.conditions.push(cond);
        }
        step(
            &mut core,
            // No sequenceid: the order is not checked.
            status_input(
                "edge-1",
                &work.resource_id,
                work.resource_version,
                "",
                status,
            ),
            4,
        );
        core.reconcile_fleet(t(4));
        assert_eq!(live_works(&core), vec!["edge-1", "edge-2"]);
        let set = core.objects().replica_sets().next().unwrap();
        assert_eq!(set.set.status.summary.available, 1);
        assert_eq!(set.set.status.summary.desired_total, 3);
    }

    #[test]
    fn a_cluster_lacking_a_value_fails_alone_since_it_first_failed_and_catches_up_when_given_it() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({})));
        let mut set = replica_set("web", json!({"type": "All"}));
        set["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"] =
            json!({"id": "{{ .Values.id }}", "at": "{{ .ClusterName }}"});
        set["spec"]["perCluster"] =
            json!({"clusters": {"edge-1": {"id": "1"}, "edge-2": {"id": "2"}}});
        apply(&mut core, set.clone());
        core.reconcile_fleet(t(2));
        assert_eq!(live_works(&core), vec!["edge-1", "edge-2"]);
        let work = core.work(&WorkKey::new("edge-2", "web")).unwrap();
        assert_eq!(
            work.spec.workload.manifests[0].0["data"],
            json!({"id": "2", "at": "edge-2"})
        );
        let row = |core: &HubCore| {
            let r = core.objects().replica_sets().next().unwrap();
            r.clusters
                .iter()
                .find(|c| c.cluster == "edge-3")
                .cloned()
                .unwrap()
        };
        assert_eq!(row(&core).status, "Failed");
        assert_eq!(row(&core).since, Some(t(2)));
        assert!(
            row(&core)
                .message
                .contains("cluster edge-3 has no .Values.id")
        );
        core.reconcile_fleet(t(5));
        assert_eq!(
            row(&core).since,
            Some(t(2)),
            "failing since it first failed"
        );

        set["spec"]["perCluster"]["clusters"]["edge-3"] = json!({"id": "3"});
        apply(&mut core, set);
        core.reconcile_fleet(t(6));
        assert_eq!(live_works(&core), vec!["edge-1", "edge-2", "edge-3"]);
        assert!(row(&core).message.is_empty());
        let r = core.objects().replica_sets().next().unwrap();
        assert!(r.unrenderable.is_empty());
    }

    /// The agent of `cluster` reports conditions for its work `web`'s current generation.
    fn report(core: &mut HubCore, cluster: &str, conditions: &[(&str, bool)], at: i64) {
        let work = core.work(&WorkKey::new(cluster, "web")).unwrap().clone();
        let mut status = ManifestWorkStatus::default();
        for (c, value) in conditions {
            let mut cond = ocm_edge_schemas::api::meta::Condition::new(
                *c,
                ConditionStatus::from_bool(*value),
                "Reported",
                "",
            );
            cond.observed_generation = work.resource_version;
            status.conditions.push(cond);
        }
        step(
            core,
            status_input(
                cluster,
                &work.resource_id,
                work.resource_version,
                "",
                status,
            ),
            at,
        );
    }

    const SUCCEEDED: [(&str, bool); 3] = [
        ("Applied", true),
        ("Available", true),
        ("Progressing", false),
    ];
    const FAILED: [(&str, bool); 3] =
        [("Applied", true), ("Progressing", true), ("Degraded", true)];

    fn greeting(core: &HubCore, cluster: &str) -> Option<Value> {
        core.work(&WorkKey::new(cluster, "web"))
            .filter(|w| w.deleting.is_none())
            .map(|w| w.spec.workload.manifests[0].0["data"]["greeting"].clone())
    }

    fn versioned(greeting: &str) -> Value {
        let mut set = replica_set(
            "web",
            json!({"type": "Progressive", "failureStrategy": "AbortAll",
                   "progressive": {"maxConcurrency": 1, "maxFailures": 0}}),
        );
        set["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"] =
            json!({"greeting": greeting});
        set
    }

    fn set_record(core: &HubCore) -> ReplicaSetRecord {
        core.objects().replica_sets().next().unwrap().clone()
    }

    fn condition_reason(core: &HubCore, type_: &str) -> String {
        ocm_edge_schemas::api::meta::find_condition(&set_record(core).set.status.conditions, type_)
            .map(|c| c.reason.clone())
            .unwrap_or_default()
    }

    #[test]
    fn abort_all_rolls_the_clusters_that_did_not_succeed_back_to_the_last_good_revision() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({})));
        apply(&mut core, versioned("v1"));
        let mut at = 2;
        for cluster in ["edge-1", "edge-2", "edge-3"] {
            core.reconcile_fleet(t(at));
            report(&mut core, cluster, &SUCCEEDED, at);
            at += 1;
        }
        core.reconcile_fleet(t(at));
        let v1 = set_record(&core).set.status.current_revision.clone();
        assert!(
            !v1.is_empty(),
            "v1 rolled out everywhere is the current revision"
        );
        assert_eq!(
            condition_reason(&core, "Progressing"),
            "NewRevisionAvailable"
        );

        // v2 fails on the first cluster it reaches: the rollout aborts and edge-1 goes back.
        apply(&mut core, versioned("v2"));
        core.reconcile_fleet(t(10));
        assert_eq!(greeting(&core, "edge-1"), Some(json!("v2")));
        assert_eq!(greeting(&core, "edge-2"), Some(json!("v1")));
        let v2 = set_record(&core).set.status.update_revision.clone();
        assert_ne!(v1, v2);
        assert_eq!(condition_reason(&core, "Progressing"), "NewRevisionCreated");
        report(&mut core, "edge-1", &FAILED, 11);
        core.reconcile_fleet(t(11));
        for cluster in ["edge-1", "edge-2", "edge-3"] {
            assert_eq!(greeting(&core, cluster), Some(json!("v1")), "{cluster}");
        }
        let work = core.work(&WorkKey::new("edge-1", "web")).unwrap();
        assert_eq!(work.labels[LABEL_CONTROLLER_HASH], v1);
        let r = set_record(&core);
        assert_eq!(r.set.status.aborted_time, Some(Time::new(t(11))));
        assert_eq!(r.set.status.current_revision, v1);
        assert_eq!(condition_reason(&core, "Progressing"), "RolloutAborted");
        assert_eq!(
            condition_reason(&core, "PlacementRolledOut"),
            "RolloutDegraded"
        );
        let row = r.clusters.iter().find(|c| c.cluster == "edge-1").unwrap();
        assert!(row.message.contains("rolled back to revision 1"), "{row:?}");
        // Stopped: later passes send v2 nowhere, and send nothing again.
        report(&mut core, "edge-1", &SUCCEEDED, 12);
        core.reconcile_fleet(t(20));
        for cluster in ["edge-1", "edge-2", "edge-3"] {
            assert_eq!(greeting(&core, cluster), Some(json!("v1")), "{cluster}");
        }
        let quiet = core.reconcile_fleet(t(20));
        assert!(quiet.is_empty(), "{quiet:#?}");
        assert_eq!(
            set_record(&core).aborted.unwrap().clusters,
            ["edge-1".to_owned()].into(),
            "only the cluster the rollout had reached"
        );

        // A fixed template ends the abort and rolls out again.
        apply(&mut core, versioned("v3"));
        core.reconcile_fleet(t(21));
        assert_eq!(greeting(&core, "edge-1"), Some(json!("v3")));
        assert_eq!(set_record(&core).set.status.aborted_time, None);
        let numbers: Vec<i64> = set_record(&core)
            .history
            .iter()
            .map(|h| h.revision)
            .collect();
        assert_eq!(numbers, [1, 2, 3]);

        // rollout undo: back to revision 1 by hand, as a new rollout of a found revision.
        let key = ObjectKey::new(ObjectKind::ManifestWorkReplicaSet, "default", "web");
        let (c, _) = core.undo_replica_set(&key, Some(1)).unwrap();
        core.apply(&c.records);
        core.reconcile_fleet(t(22));
        assert_eq!(condition_reason(&core, "Progressing"), "FoundNewRevision");
        assert_eq!(greeting(&core, "edge-1"), Some(json!("v1")));
        let numbers: Vec<i64> = set_record(&core)
            .history
            .iter()
            .map(|h| h.revision)
            .collect();
        assert_eq!(numbers, [2, 3, 4]);
        let e = core
            .undo_replica_set(&key, Some(9))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no revision 9"), "{e}");
    }

    #[test]
    fn with_type_all_max_failures_says_when_abort_all_rolls_everyone_back() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({})));
        let all = |greeting: &str| {
            let mut set = replica_set(
                "web",
                json!({"type": "All", "failureStrategy": "AbortAll", "all": {"maxFailures": 1}}),
            );
            set["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"] =
                json!({"greeting": greeting});
            set
        };
        apply(&mut core, all("v1"));
        core.reconcile_fleet(t(2));
        for cluster in ["edge-1", "edge-2", "edge-3"] {
            report(&mut core, cluster, &SUCCEEDED, 3);
        }
        core.reconcile_fleet(t(3));
        apply(&mut core, all("v2"));
        core.reconcile_fleet(t(4));
        report(&mut core, "edge-1", &FAILED, 5);
        report(&mut core, "edge-3", &SUCCEEDED, 5);
        core.reconcile_fleet(t(5));
        assert_eq!(
            greeting(&core, "edge-1"),
            Some(json!("v2")),
            "one failure is allowed"
        );
        report(&mut core, "edge-2", &FAILED, 6);
        core.reconcile_fleet(t(6));
        assert_eq!(greeting(&core, "edge-1"), Some(json!("v1")));
        assert_eq!(greeting(&core, "edge-2"), Some(json!("v1")));
        assert_eq!(
            greeting(&core, "edge-3"),
            Some(json!("v2")),
            "it succeeded: kept"
        );
        assert_eq!(condition_reason(&core, "Progressing"), "RolloutAborted");
    }

    #[test]
    fn a_revision_no_cluster_runs_never_becomes_the_current_one() {
        let mut core = fleet();
        // Selects nothing: a whole site unreachable, say.
        apply(
            &mut core,
            placement(
                "web",
                json!({"predicates": [{"requiredClusterSelector":
                    {"labelSelector": {"matchLabels": {"site": "gone"}}}}]}),
            ),
        );
        apply(&mut core, versioned("v1"));
        core.reconcile_fleet(t(2));
        let r = set_record(&core);
        assert!(!r.set.status.update_revision.is_empty());
        assert_eq!(r.set.status.current_revision, "", "nothing ran it");
    }

    #[test]
    fn without_abort_all_a_breach_stops_and_says_how_to_go_back() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({})));
        let strategy = json!({"type": "Progressive",
                              "progressive": {"maxConcurrency": 1, "maxFailures": 0}});
        let mut set = replica_set("web", strategy.clone());
        apply(&mut core, set.clone());
        for (i, cluster) in ["edge-1", "edge-2", "edge-3"].into_iter().enumerate() {
            core.reconcile_fleet(t(2 + i as i64));
            report(&mut core, cluster, &SUCCEEDED, 2 + i as i64);
        }
        core.reconcile_fleet(t(5));
        set["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"] =
            json!({"greeting": "bad"});
        apply(&mut core, set);
        core.reconcile_fleet(t(6));
        report(&mut core, "edge-1", &FAILED, 7);
        core.reconcile_fleet(t(7));
        assert_eq!(
            greeting(&core, "edge-1"),
            Some(json!("bad")),
            "not rolled back"
        );
        assert_eq!(
            condition_reason(&core, "Progressing"),
            "ProgressDeadlineExceeded"
        );
        let r = set_record(&core);
        let progressing =
            ocm_edge_schemas::api::meta::find_condition(&r.set.status.conditions, "Progressing")
                .unwrap();
        assert!(
            progressing
                .message
                .contains("ocm-edge rollout undo returns to revision 1"),
            "{progressing:?}"
        );
        assert_eq!(r.set.status.aborted_time, None);
    }

    /// What the render cache saves on a fleet pass of a set with `perCluster`:
    /// `OCM_EDGE_BENCH_CLUSTERS=5000 cargo test --release -p ocm-edge-hub --lib
    /// per_cluster_render_bench -- --ignored --nocapture`. Prints figures, asserts nothing about
    /// time.
    #[test]
    #[ignore = "a benchmark: run it in release with --ignored --nocapture"]
    fn per_cluster_render_bench() {
        let n: usize = std::env::var("OCM_EDGE_BENCH_CLUSTERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        let names: Vec<String> = (0..n).map(|i| format!("store-{i:05}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut core = fleet_of(&refs);
        apply(&mut core, placement("web", json!({})));
        let mut set = replica_set("web", json!({"type": "All"}));
        set["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["data"] = json!({
            "store": "{{ .ClusterName }}", "set": "{{ .ClusterSet }}",
            "id": "{{ .Values.id }}", "registry": "{{ .Values.registry }}"});
        let clusters: serde_json::Map<String, Value> = names
            .iter()
            .map(|c| (c.clone(), json!({"id": c})))
            .collect();
        set["spec"]["perCluster"] = json!({"values": {"registry": "docker.io"},
            "clusterSets": {"edge": {"registry": "mirror.example.com"}}, "clusters": clusters});
        // The same pass for a set without perCluster, for comparison.
        let plain = std::env::var_os("OCM_EDGE_BENCH_PLAIN").is_some();
        if plain {
            set["spec"].as_object_mut().unwrap().remove("perCluster");
        }
        apply(&mut core, set);
        let pass = |core: &mut HubCore, at: i64| {
            let started = std::time::Instant::now();
            let change = core.reconcile_fleet(t(at));
            core.apply(&change.records);
            started.elapsed()
        };
        let first = pass(&mut core, 2);
        assert_eq!(live_works(&core).len(), n);
        let median = |mut v: Vec<std::time::Duration>| {
            v.sort();
            v[v.len() / 2].as_secs_f64() * 1e3
        };
        let cached = median((3..8).map(|at| pass(&mut core, at)).collect());
        let uncached = median(
            (8..13)
                .map(|at| {
                    core.render_cache().0.lock().unwrap().clear();
                    pass(&mut core, at)
                })
                .collect(),
        );
        println!(
            "{} set, {n} clusters: first pass (render + send) {:.0} ms; a later pass (median of \
             5) with the render cache {cached:.1} ms, without it {uncached:.1} ms",
            if plain { "plain" } else { "perCluster" },
            first.as_secs_f64() * 1e3,
        );
    }

    #[test]
    fn deleting_a_replica_set_deletes_its_works_and_foreground_keeps_it_until_they_are_gone() {
        for (policy, kept) in [
            (None, false),
            (Some("Background"), false),
            (Some("Foreground"), true),
        ] {
            let mut core = fleet();
            apply(&mut core, placement("web", json!({"numberOfClusters": 1})));
            let mut set = replica_set("web", json!({}));
            if let Some(p) = policy {
                set["spec"]["cascadeDeletionPolicy"] = json!(p);
            }
            apply(&mut core, set);
            core.reconcile_fleet(t(2));
            let key = ObjectKey::new(ObjectKind::ManifestWorkReplicaSet, "default", "web");
            let c = core.delete_object(&key, t(3)).unwrap();
            core.apply(&c.records);
            core.reconcile_fleet(t(3));
            assert!(live_works(&core).is_empty(), "{policy:?}");
            assert!(
                core.works().all(|w| w.deleting.is_some()),
                "{policy:?}: being deleted"
            );
            assert_eq!(core.objects().get(&key).is_some(), kept, "{policy:?}");
        }
    }

    #[test]
    fn applying_the_same_object_twice_is_unchanged_and_decisions_cannot_be_applied() {
        let mut core = fleet();
        let p = placement("web", json!({"numberOfClusters": 1}));
        assert_eq!(apply(&mut core, p.clone()), WriteOutcome::Created);
        assert_eq!(apply(&mut core, p), WriteOutcome::Unchanged);
        let decision = OcmObject::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "PlacementDecision", "metadata": {"name": "x", "namespace": "default"}}))
        .unwrap();
        let OcmObject::PlacementDecision(d) = decision else {
            panic!()
        };
        assert!(core.apply_object(StoredObject::Decision(d), t(1)).is_err());
    }
}
