//! Removal: `ocm-edge cluster remove` from the hub, and an agent's unjoin from the edge (OCM's
//! ManagedCluster deletion, and its klusterlet's cleanup).
//!
//! `cluster remove` marks the cluster removing and every work of it deleting: the deletes go to
//! its agent, which removes what each work applied per the work's `deleteOption` and confirms
//! with `Deleted`, as for `work delete`. The confirmation of the last work forgets the cluster
//! ([`HubCore::forget_cluster`]): its certificate is revoked (kept in the revocation list until
//! it ends), its record, works and statuses are dropped, and the shell drops its broker session
//! and login (`crate::process`). A cluster whose agent will never answer is forgotten at once
//! with `force`; one that is not accepted, or holds no work, is anyway (no agent would confirm).
//! While removing, a cluster is chosen by no placement and takes no new work.
//!
//! An agent's unjoin (`ocm-edge-agent unjoin`, signed with the key bound at acceptance) says the
//! agent already removed (or kept) what it applied: the hub forgets the cluster at once.
//!
//! Either way, the forgotten cluster's agent can come back only by joining again: it is then an
//! unknown cluster (a join token to log in, Pending until an operator accepts it).

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{HUB_ACCEPTED_MANAGED_CLUSTER, ManagedCluster};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, set_condition};

use super::certificates;
use super::join::RegistrationError;
use crate::core::objects::{ObjectKey, ObjectKind};
use crate::core::{Change, ClusterRecord, ClusterState, HubCore, Outbound, Record, counter, time};

impl HubCore {
    /// Starts removing `cluster` (see the module), or forgets it at once when `force` is set,
    /// it is not accepted, or it holds no work. Asked again while removing, the deletes are
    /// sent again (an agent that was away gets them on its resync anyway).
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`] when the hub does not know it (never joined, or
    /// already removed).
    pub fn remove_cluster(
        &self,
        cluster: &str,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        let has_works = self.works_of(cluster).next().is_some();
        if force || record.acceptance != ClusterState::Accepted || !has_works {
            if has_works {
                tracing::warn!(
                    %cluster,
                    works = self.works_of(cluster).count(),
                    "removing a cluster without waiting for its agent: what it applied stays on \
                     the cluster"
                );
            }
            return Ok(self.forget_cluster(&record, now));
        }
        if record.removing.is_none() {
            record.removing = Some(time(now));
            tracing::info!(
                %cluster,
                works = self.works_of(cluster).count(),
                "removing the cluster: its agent removes its works, then the hub forgets it"
            );
        }
        let mut change = Change {
            records: vec![Record::Cluster(Box::new(record))],
            outbound: vec![],
        };
        // Its add-ons' identities go at once, not when the hub forgets the cluster.
        change.records.extend(self.unbind_cluster_addons(cluster));
        for work in self.works_of(cluster) {
            // Cannot fail: the work is there and the cluster accepted.
            if let Ok(delete) = self.delete_work(&work.key, now) {
                change.extend(delete);
            }
        }
        Ok(change)
    }

    /// An accepted cluster's agent left (`ocm-edge-agent unjoin`): forgets the cluster.
    pub(crate) fn unjoin(&self, cluster: &str, kept_resources: bool, now: DateTime<Utc>) -> Change {
        let Some(record) = self.cluster(cluster) else {
            return Change::default();
        };
        tracing::info!(
            %cluster,
            works = self.works_of(cluster).count(),
            kept_resources,
            "the cluster's agent unjoined; the hub forgets the cluster"
        );
        self.forget_cluster(record, now)
    }

    /// Whether the `Deleted` status of `work_cluster`'s work ends its removal: the cluster is
    /// being removed and that was its last work. Returns the change that forgets it.
    pub(crate) fn removal_done_after_last_work(
        &self,
        work_cluster: &str,
        now: DateTime<Utc>,
    ) -> Option<Change> {
        let record = self.cluster(work_cluster)?;
        record.removing?;
        // The work being confirmed is still held: the last one leaves one.
        (self.works_of(work_cluster).nth(1).is_none()).then(|| self.forget_cluster(record, now))
    }

    /// Removals a hub stopped in the middle of, whose works are all gone (call once after a
    /// restart): their clusters are forgotten.
    pub fn unfinished_removals(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        for record in self.clusters().filter(|c| c.removing.is_some()) {
            if self.works_of(&record.name).next().is_none() {
                change.extend(self.forget_cluster(record, now));
            }
        }
        change
    }

    /// Forgets `record`'s cluster: its certificate revoked and kept with the removed clusters'
    /// (for the revocation list), its works and record dropped.
    pub(crate) fn forget_cluster(&self, record: &ClusterRecord, now: DateTime<Utc>) -> Change {
        let mut gone = record.clone();
        certificates::revoke(&mut gone, now);
        let mut change = self.count(counter::CLUSTERS_REMOVED);
        change.records.extend(
            self.works_of(&record.name)
                .map(|w| Record::ForgetWork(w.key.clone())),
        );
        // Its add-ons live in its namespace.
        change.records.extend(
            self.objects()
                .in_namespace(ObjectKind::ManagedClusterAddOn, &record.name)
                .filter_map(|o| o.as_cluster_addon())
                .map(|m| {
                    Record::ForgetObject(ObjectKey::new(
                        ObjectKind::ManagedClusterAddOn,
                        m.metadata.namespace.clone(),
                        m.metadata.name.clone(),
                    ))
                }),
        );
        change
            .records
            .push(Record::ForgetCluster(record.name.clone()));
        // Its agent (or `ocm-edge-agent unjoin` waiting for this) learns that it must join again;
        // on the hub's embedded broker its session is dropped first, and the refused key says it.
        change
            .outbound
            .push(Outbound::HubView(Box::new(unknown_view(&record.name, now))));
        if !gone.revoked_certificates.is_empty() || !self.removed_revoked().is_empty() {
            let mut revoked: Vec<_> = self
                .removed_revoked()
                .iter()
                .filter(|(_, r)| r.not_after > now)
                .cloned()
                .collect();
            revoked.extend(
                gone.revoked_certificates
                    .into_iter()
                    .map(|r| (record.name.clone(), r)),
            );
            change.records.push(Record::RemovedRevoked(revoked));
        }
        tracing::info!(cluster = %record.name, "forgot the cluster");
        change
    }
}

/// The hub's view of a cluster it does not know (removed, or never joined), for an agent that
/// asks for its works: not accepted, so the agent asks to join again (and is Pending).
pub fn unknown_view(cluster: &str, now: DateTime<Utc>) -> ManagedCluster {
    let mut view = ManagedCluster::new(cluster);
    set_condition(
        &mut view.status.conditions,
        Condition::new(
            HUB_ACCEPTED_MANAGED_CLUSTER,
            ConditionStatus::False,
            "ManagedClusterUnknown",
            "The hub does not know this cluster (removed, or never joined): ask to join again",
        ),
        time(now),
    );
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use crate::core::{AgentInput, WorkKey};
    use ocm_edge_schemas::api::meta::{Condition, ConditionStatus};
    use ocm_edge_schemas::api::work::WORK_DELETED;

    fn deleted(core: &HubCore, cluster: &str, work: &str) -> AgentInput {
        let record = core.work(&WorkKey::new(cluster, work)).unwrap();
        let mut status = applied();
        status.conditions.push(Condition::new(
            WORK_DELETED,
            ConditionStatus::True,
            "ManifestsDeleted",
            "deleted",
        ));
        status_input(
            cluster,
            &record.resource_id,
            record.resource_version,
            "2",
            status,
        )
    }

    fn remove(core: &mut HubCore, cluster: &str, force: bool, secs: i64) -> Change {
        let change = core.remove_cluster(cluster, force, t(secs)).unwrap();
        core.apply(&change.records);
        change
    }

    #[test]
    fn a_cluster_with_works_is_forgotten_only_once_its_agent_confirmed_every_work_removed() {
        let mut core = core_with_work("a", "web");
        let more = core
            .write_works(&work_input("db", 1), &clusters(&["a"]), false, t(1))
            .unwrap()
            .0;
        core.apply(&more.records);

        let change = remove(&mut core, "a", false, 2);
        let deletes = specs(&change);
        assert_eq!(deletes.len(), 2, "a delete per work goes to the agent");
        assert!(deletes.iter().all(|s| s.deletion_timestamp.is_some()));
        assert!(core.cluster("a").unwrap().removing.is_some());
        assert!(!core.cluster("a").unwrap().is_schedulable());

        let first = deleted(&core, "a", "db");
        step(&mut core, first, 3);
        assert!(core.cluster("a").is_some(), "one work is left");
        let last = deleted(&core, "a", "web");
        step(&mut core, last, 4);
        assert!(core.cluster("a").is_none(), "forgotten with its last work");
        assert_eq!(core.works().count(), 0);
        assert_eq!(core.counters().get(counter::CLUSTERS_REMOVED), 1);
    }

    #[test]
    fn a_removing_cluster_takes_no_new_work() {
        let mut core = core_with_work("a", "web");
        remove(&mut core, "a", false, 2);
        let refused = core.write_works(&work_input("db", 1), &clusters(&["a"]), false, t(3));
        let message = refused.unwrap_err().to_string();
        assert!(message.contains("being removed"), "{message}");
    }

    #[test]
    fn force_pending_and_workless_clusters_are_forgotten_at_once() {
        let mut core = core_with_work("a", "web");
        remove(&mut core, "a", true, 2);
        assert!(core.cluster("a").is_none());
        assert_eq!(core.works().count(), 0, "its works are forgotten with it");

        let mut workless = accepted_core(&["b"]);
        remove(&mut workless, "b", false, 2);
        assert!(workless.cluster("b").is_none());

        let mut pending = crate::core::testkit::core();
        step(&mut pending, join("p"), 1);
        remove(&mut pending, "p", false, 2);
        assert!(pending.cluster("p").is_none());
    }

    #[test]
    fn an_unknown_or_already_removed_cluster_is_a_clear_error_that_changes_nothing() {
        let mut core = accepted_core(&["a"]);
        remove(&mut core, "a", false, 2);
        let err = core.remove_cluster("a", false, t(3)).unwrap_err();
        assert_eq!(err, RegistrationError::UnknownCluster("a".into()));
        assert!(err.to_string().contains("not known to the hub"));
    }

    #[test]
    fn a_removed_cluster_that_comes_back_is_pending_again_and_gets_no_work() {
        let mut core = core_with_work("a", "web");
        remove(&mut core, "a", true, 2);
        let view = step(&mut core, join("a"), 3);
        assert_eq!(core.cluster("a").unwrap().acceptance, ClusterState::Pending);
        assert!(specs(&view).is_empty());
        assert_eq!(core.works().count(), 0);
    }

    #[test]
    fn a_removed_clusters_agent_asking_for_its_works_hears_it_must_join_again() {
        let mut core = core_with_work("a", "web");
        remove(&mut core, "a", true, 2);
        let resync = AgentInput::SpecResyncRequest {
            cluster: "a".into(),
            versions: Default::default(),
            transfer: None,
        };
        let answer = step(&mut core, resync, 3);
        let views = hub_views(&answer);
        assert_eq!(views.len(), 1);
        assert!(!views[0].spec.hub_accepts_client);
        assert_eq!(
            views[0].status.conditions[0].reason,
            "ManagedClusterUnknown"
        );
        assert!(specs(&answer).is_empty(), "and no work");
    }

    #[test]
    fn an_unjoin_forgets_an_accepted_cluster_but_not_a_pending_one() {
        let mut core = core_with_work("a", "web");
        step(&mut core, join("p"), 1);
        let unjoin = |cluster: &str| AgentInput::Unjoin {
            cluster: cluster.into(),
            kept_resources: false,
        };
        step(&mut core, unjoin("p"), 2);
        assert!(
            core.cluster("p").is_some(),
            "a pending cluster's events are ignored"
        );
        step(&mut core, unjoin("a"), 3);
        assert!(core.cluster("a").is_none());
        assert_eq!(core.works().count(), 0);
    }

    #[test]
    fn a_removal_the_hub_stopped_in_is_finished_after_its_restart() {
        let mut core = core_with_work("a", "web");
        remove(&mut core, "a", false, 2);
        // The last Deleted stored, the cluster not forgotten (a hub of before this change).
        let forget = Record::ForgetWork(WorkKey::new("a", "web"));
        core.apply(&[forget]);
        let change = core.unfinished_removals(t(5));
        core.apply(&change.records);
        assert!(core.cluster("a").is_none());
    }
}
