//! ManifestWorkReplicaSets in the core: gathers each set's placement decisions and the works it
//! owns, asks the pure rollout planner ([`crate::rollout::plan_replica_set`]) what to do at `now`,
//! and turns the plan into records: works created or updated (named as the set, labelled with
//! OCM's `manifestworkreplicaset` and `placementname` labels) on the clusters the rollout reaches,
//! works deleted on clusters no placement selects any more, and the set's status and rollout
//! table. Re-run after every batch (statuses move rollouts on) and at the plan's requeue time.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::placement::{
    LABEL_DECISION_GROUP_INDEX, LABEL_DECISION_GROUP_NAME, LABEL_PLACEMENT,
};
use ocm_edge_schemas::api::replicaset::{LABEL_MANIFEST_WORK_REPLICA_SET, LABEL_PLACEMENT_NAME};

use super::objects::{ObjectKey, ObjectKind, ReplicaSetRecord, RolloutRow, StoredObject};
use super::{Acceptance, Change, HubCore, Record, WorkInput, WorkKey, WorkRecord};
use crate::rollout::{ClusterDecision, ClusterWork, TemplateState, plan_replica_set};

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

    /// Each placement's decided clusters with their decision groups; placements that do not
    /// exist are left out (the planner reports them).
    fn decided_clusters(&self, r: &ReplicaSetRecord) -> BTreeMap<String, Vec<ClusterDecision>> {
        let ns = &r.set.metadata.namespace;
        let mut out = BTreeMap::new();
        let decisions = self.objects().decisions();
        for p in &r.set.spec.placement_refs {
            let key = ObjectKey::new(ObjectKind::Placement, ns.clone(), p.name.clone());
            if self.objects().get(&key).is_none() {
                continue;
            }
            let mut clusters = Vec::new();
            for d in decisions.iter().filter(|d| {
                &d.metadata.namespace == ns
                    && d.metadata.labels.get(LABEL_PLACEMENT) == Some(&p.name)
            }) {
                let index = d
                    .metadata
                    .labels
                    .get(LABEL_DECISION_GROUP_INDEX)
                    .and_then(|i| i.parse().ok())
                    .unwrap_or(0);
                let name = d
                    .metadata
                    .labels
                    .get(LABEL_DECISION_GROUP_NAME)
                    .cloned()
                    .unwrap_or_default();
                for c in &d.status.decisions {
                    clusters.push(ClusterDecision::new(
                        c.cluster_name.clone(),
                        index,
                        name.clone(),
                    ));
                }
            }
            out.insert(p.name.clone(), clusters);
        }
        out
    }

    fn reachable(&self, cluster: &str) -> bool {
        self.cluster(cluster)
            .and_then(|c| c.availability.as_ref())
            .is_none_or(|a| a.status() != ConditionStatus::Unknown)
    }

    /// Plans every ManifestWorkReplicaSet at `now`; returns the records and spec messages.
    pub fn reconcile_replica_sets(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
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
            if owned.is_empty() {
                change.records.push(Record::ForgetObject(key));
            }
            return change;
        }
        let template = &r.set.spec.manifest_work_template;
        let works: BTreeMap<String, ClusterWork> = owned
            .iter()
            .map(|(cluster, w)| {
                let sent_at = r
                    .sent
                    .get(cluster)
                    .copied()
                    .unwrap_or_else(|| w.created.as_datetime());
                let work = ClusterWork {
                    template: if &w.spec == template {
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
        let decisions = self.decided_clusters(r);
        let plan = plan_replica_set(&r.set, &decisions, &works, now);

        let mut updated = r.clone();
        for (cluster, placement) in &plan.to_apply {
            let accepted = self
                .cluster(cluster)
                .is_some_and(|c| c.acceptance == Acceptance::Accepted);
            let wk = WorkKey::new(cluster.clone(), r.set.metadata.name.clone());
            let foreign = self.work(&wk).is_some() && !owned.contains_key(cluster);
            if !accepted || foreign {
                tracing::warn!(
                    set = %key, %cluster,
                    "replica set cannot place its work (cluster not accepted, or a work of that name not owned by the set)"
                );
                continue;
            }
            let mut labels = template_labels(r);
            labels.insert(LABEL_PLACEMENT_NAME.to_owned(), placement.clone());
            let input = WorkInput {
                name: r.set.metadata.name.clone(),
                labels,
                annotations: Default::default(),
                spec: template.clone(),
            };
            match self.write_works(&input, std::slice::from_ref(cluster), true, now) {
                Ok((c, _)) => {
                    change.extend(c);
                    updated.sent.insert(cluster.clone(), now);
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
        updated.set.status = plan.status.clone();
        updated.requeue_at = plan.requeue_at;
        updated.clusters = plan
            .clusters
            .iter()
            .map(|c| RolloutRow {
                cluster: c.cluster.clone(),
                placement: c.placement.clone(),
                group_index: c.group.group_index,
                group_name: c.group.group_name.clone(),
                status: c.status.as_str().to_owned(),
                since: c.last_transition_time,
                recheck_at: c.recheck_time,
                current_template: c.current_template,
                reachable: c.reachable,
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

    /// The earliest time a ManifestWorkReplicaSet must be evaluated again.
    pub fn replica_sets_requeue_at(&self) -> Option<DateTime<Utc>> {
        self.objects()
            .replica_sets()
            .filter_map(|r| r.requeue_at)
            .min()
    }

    /// Schedules placements, applies their decisions to `self`, then plans replica sets: the
    /// shell calls this after every batch and at [`HubCore::next_wake`]. Each step's records are
    /// applied before the next step reads them.
    pub fn reconcile_fleet(&mut self, now: DateTime<Utc>) -> Change {
        let mut change = self.reconcile_placements(now);
        self.apply(&change.records);
        let sets = self.reconcile_replica_sets(now);
        self.apply(&sets.records);
        change.extend(sets);
        change
    }

    /// When the hub must wake up for placements or replica sets (None: nothing scheduled).
    pub fn fleet_requeue_at(&self) -> Option<DateTime<Utc>> {
        match (self.placements_requeue_at(), self.replica_sets_requeue_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn template_labels(r: &ReplicaSetRecord) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert(
        LABEL_MANIFEST_WORK_REPLICA_SET.to_owned(),
        replica_set_label(r),
    );
    labels
}
