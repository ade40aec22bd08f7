//! ManifestWorkReplicaSets in the core: gathers each set's placement decisions and the works it
//! owns, asks the pure rollout planner ([`crate::rollout::plan_replica_set`]) what to do at `now`,
//! and turns the plan into records: works created or updated (named as the set, labelled with
//! OCM's `manifestworkreplicaset` and `placementname` labels) on the clusters the rollout reaches,
//! works deleted on clusters no placement selects any more, and the set's status and rollout
//! table. Re-run after every batch (statuses move rollouts on) and at the plan's requeue time.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::RolloutRow;
use ocm_edge_schemas::api::cluster::ManagedClusterSet;
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::placement::LABEL_PLACEMENT;
use ocm_edge_schemas::api::replicaset::{LABEL_MANIFEST_WORK_REPLICA_SET, LABEL_PLACEMENT_NAME};
use ocm_edge_schemas::api::work::ManifestWorkSpec;

use crate::core::objects::{ObjectKey, ObjectKind, ReplicaSetRecord, StoredObject};
use crate::core::{Change, HubCore, Record, WorkKey, WorkRecord};
use crate::rollout::per_cluster::{self, ClusterFacts};
use crate::rollout::{
    ClusterDecision, ClusterWork, TemplateState, Unrenderable, plan_replica_set_with,
};
use crate::work::WorkInput;

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
        let decisions = self.decided_clusters(r);
        // What each selected cluster gets: one shared copy of the template, or (perCluster) the
        // template rendered for it.
        let shared_template = Arc::new(r.set.spec.manifest_work_template.clone());
        let mut rendered: BTreeMap<String, Arc<ManifestWorkSpec>> = BTreeMap::new();
        let mut unrenderable: BTreeMap<String, Unrenderable> = BTreeMap::new();
        if r.set.spec.per_cluster.is_some() {
            let sets = self.objects().cluster_sets();
            for d in decisions.values().flatten() {
                if rendered.contains_key(&d.cluster) || unrenderable.contains_key(&d.cluster) {
                    continue;
                }
                let Some(facts) = self.cluster_facts(&d.cluster, &sets) else {
                    continue;
                };
                match per_cluster::render(&r.set.spec, &facts) {
                    Ok(spec) => {
                        rendered.insert(d.cluster.clone(), Arc::new(spec));
                    }
                    Err(message) => {
                        let since = r
                            .unrenderable
                            .get(&d.cluster)
                            .filter(|u| u.message == message)
                            .map_or(now, |u| u.since);
                        unrenderable.insert(d.cluster.clone(), Unrenderable { since, message });
                    }
                }
            }
        }
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
        let plan = plan_replica_set_with(&r.set, &decisions, &works, &unrenderable, now);

        let mut updated = r.clone();
        updated.unrenderable = unrenderable;
        for (cluster, placement) in &plan.to_apply {
            let accepted = self.cluster(cluster).is_some_and(|c| c.is_schedulable());
            let wk = WorkKey::new(cluster.clone(), r.set.metadata.name.clone());
            let foreign = self.work(&wk).is_some() && !owned.contains_key(cluster);
            if !accepted || foreign {
                tracing::warn!(
                    set = %key, %cluster,
                    "replica set cannot place its work (cluster not accepted or being removed, or a work of that name not owned by the set)"
                );
                continue;
            }
            let mut labels = template_labels(r);
            labels.insert(LABEL_PLACEMENT_NAME.to_owned(), placement.clone());
            let input = WorkInput {
                name: r.set.metadata.name.clone(),
                labels,
                annotations: Default::default(),
                spec: template_for(cluster).clone(),
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
                message: c.message.clone().unwrap_or_default(),
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
        let mut core = core();
        for name in ["edge-1", "edge-2", "edge-3"] {
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

    #[test]
    fn deleting_a_replica_set_deletes_its_works_then_forgets_it() {
        let mut core = fleet();
        apply(&mut core, placement("web", json!({"numberOfClusters": 1})));
        apply(&mut core, replica_set("web", json!({})));
        core.reconcile_fleet(t(2));
        let key = ObjectKey::new(ObjectKind::ManifestWorkReplicaSet, "default", "web");
        let c = core.delete_object(&key, t(3)).unwrap();
        core.apply(&c.records);
        core.reconcile_fleet(t(3));
        assert!(live_works(&core).is_empty());
        assert!(
            core.objects().get(&key).is_some(),
            "kept until its works are gone"
        );
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
