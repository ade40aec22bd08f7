//! Registration: an agent asks to join, an operator accepts or denies, the hub publishes its view.
//!
//! Mirrors OCM's hub-side registration controller: the hub owns `spec.hubAcceptsClient` and the
//! conditions `HubAcceptedManagedCluster`, `HubDeniedManagedCluster` and `ManagedClusterJoined`.
//! Here the join request itself proves the agent reached the hub, so the cluster counts as joined as
//! soon as it is accepted (OCM waits for the spoke to report; our agent has nothing else to report).

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{
    HUB_ACCEPTED_MANAGED_CLUSTER, HUB_DENIED_MANAGED_CLUSTER, MANAGED_CLUSTER_JOINED,
    ManagedCluster, ManagedClusterStatus,
};
use ocm_edge_schemas::api::meta::{
    Condition, ConditionStatus, ObjectMeta, remove_condition, set_condition,
};

use super::certificates::{self, Asked};
use super::labels::LabelEdit;
use crate::core::{Change, ClusterRecord, ClusterState, HubCore, Outbound, Record, counter, time};

/// Lease period assumed when a join request does not say (OCM's default).
pub const DEFAULT_LEASE_DURATION_SECONDS: i32 = 60;

/// Errors of accept / deny. Not retryable: the operator named a cluster the hub does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    #[error(
        "cluster {0:?} is not known to the hub: it has not asked to join yet (start its agent, then run `ocm-edge cluster list`)"
    )]
    UnknownCluster(String),
    #[error(
        "cluster {name:?} is already known to the hub ({state}): `ocm-edge cluster accept {name}` or `ocm-edge cluster deny {name}` it instead"
    )]
    AlreadyKnown { name: String, state: String },
    #[error("{0} (a cluster added by hand must be a valid ManagedCluster name)")]
    InvalidName(String),
    /// A label or taint the hub refuses (`cluster label`, `cluster taint`).
    #[error("{0}; nothing was changed")]
    InvalidChange(String),
    #[error(
        "cluster {0:?} is not accepted: a pending cluster's labels are set when it is accepted \
         (`ocm-edge cluster accept {0} --label k=v` or `--clusterset SET`); nothing was changed"
    )]
    NotAccepted(String),
    #[error(
        "cluster set {0:?} does not exist: create it (`ocm-edge apply -f` a ManagedClusterSet) \
         or use `default`; `ocm-edge clusterset list` shows the sets"
    )]
    UnknownClusterSet(String),
}

impl HubCore {
    /// A join request (`managedclusters.spec.create_request`). Unknown clusters become Pending;
    /// known ones get their claims and lease period refreshed, and their labels while they are
    /// not accepted, but for the set label (a cluster never chooses its set): an accepted
    /// cluster's labels stay as accepted (the labels it sends are kept as reported labels, a
    /// change logged and counted), so a cluster holding its own key cannot label itself into
    /// another cluster set. The hub's view is published either way so a waiting agent learns
    /// where it stands.
    pub fn join_request(
        &self,
        cluster: &str,
        request: &ManagedCluster,
        now: DateTime<Utc>,
    ) -> Change {
        if !request.metadata.name.is_empty() && request.metadata.name != cluster {
            // A join request for another cluster's name on this cluster's topic: refuse it
            // rather than let one agent register (or overwrite) another.
            tracing::warn!(
                topic_cluster = cluster,
                requested = %request.metadata.name,
                "join request names a different cluster than its topic; dropped"
            );
            return self.count(counter::MALFORMED);
        }
        if let Err(e) = ocm_edge_schemas::validate::validate_cluster_name(cluster) {
            // The topic grammar allows names Kubernetes does not (a leading '-', 64 characters):
            // such a cluster could never be a ManagedCluster, so it is never registered.
            tracing::warn!(%cluster, error = %e, "join request with an invalid cluster name dropped");
            return self.count(counter::MALFORMED);
        }
        let lease = match request.spec.lease_duration_seconds {
            s if s > 0 => s,
            _ => DEFAULT_LEASE_DURATION_SECONDS,
        };
        let mut record = self
            .cluster(cluster)
            .cloned()
            .unwrap_or_else(|| self.new_record(cluster, lease, now));
        let carried = request
            .metadata
            .annotations
            .get(ocm_edge_schemas::wire::signature::AGENT_KEY_ANNOTATION);
        if record.acceptance == ClusterState::Accepted {
            if carried.is_some() && carried != record.agent_key.as_ref() {
                // Bound at acceptance: only `cluster deny` then `cluster accept` binds another.
                tracing::warn!(
                    %cluster,
                    "join request carries another agent key than the one bound at acceptance; \
                     kept the bound one (if the agent was reinstalled: `ocm-edge cluster deny`, \
                     then compare its key and `ocm-edge cluster accept` it again)"
                );
            }
        } else {
            record.agent_key = carried.cloned();
        }
        let sent = &request.metadata.labels;
        let mut ignored = Change::default();
        if record.acceptance != ClusterState::Accepted {
            // Shown to the operator, who takes them at `cluster accept`; never the set label.
            record.labels = super::labels::from_agent(sent);
        } else if *sent != record.labels && *sent != record.reported_labels {
            tracing::warn!(
                %cluster,
                sent = ?sent,
                kept = ?record.labels,
                "an accepted cluster's agent sent other labels; the hub kept the labels it accepted \
                 (an agent cannot change its cluster's labels or cluster sets once accepted)"
            );
            ignored = self.count(counter::AGENT_LABELS_IGNORED);
        }
        record.reported_labels = sent.clone();
        record.claims = request.status.cluster_claims.clone();
        record.lease_duration_seconds = lease;
        // An accepted cluster's join request (signed with its bound key) is also how its agent
        // asks for a new certificate.
        self.refresh_certificate(&mut record, Asked::ByAgent, now);
        // The counter first: the cluster's change below applies after it in the same batch.
        ignored.extend(self.publish_cluster(record));
        ignored
    }

    /// Accepts a cluster with the labels its agent sent (idempotent; also re-accepts a denied
    /// one). Publishes the hub's view and every work already waiting for the cluster.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`] when the cluster never asked to join.
    pub fn accept(&self, cluster: &str, now: DateTime<Utc>) -> Result<Change, RegistrationError> {
        self.accept_with(cluster, &LabelEdit::default(), now)
    }

    /// Accepts a cluster as [`HubCore::accept`] does, with the operator's edit of its labels
    /// (those its agent sent, but for the set label, unless the edit drops them). A cluster
    /// accepted into no set goes to `default`.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`] when the cluster never asked to join,
    /// [`RegistrationError::InvalidChange`] for an invalid label (nothing changes then).
    pub fn accept_with(
        &self,
        cluster: &str,
        edit: &LabelEdit,
        now: DateTime<Utc>,
    ) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        edit.apply_to(&mut record.labels)?;
        Ok(self.accept_record(record, now))
    }

    /// Registers and accepts a cluster whose agent never asks to join (OCM's or maestro's own work
    /// agent): accepted at once with no agent key, so its events are taken unsigned (on the hub's
    /// embedded broker it logs in with the password `ocm-edge cluster broker-config` writes).
    ///
    /// # Errors
    /// [`RegistrationError::AlreadyKnown`] for a cluster the hub knows (joined, accepted, denied),
    /// [`RegistrationError::InvalidName`] for a name that can be no ManagedCluster.
    pub fn add_cluster(
        &self,
        cluster: &str,
        now: DateTime<Utc>,
    ) -> Result<Change, RegistrationError> {
        ocm_edge_schemas::validate::validate_cluster_name(cluster)
            .map_err(|e| RegistrationError::InvalidName(e.to_string()))?;
        if let Some(known) = self.cluster(cluster) {
            return Err(RegistrationError::AlreadyKnown {
                name: cluster.to_owned(),
                state: format!("{:?}", known.acceptance).to_lowercase(),
            });
        }
        let record = self.new_record(cluster, DEFAULT_LEASE_DURATION_SECONDS, now);
        Ok(self.accept_record(record, now))
    }

    /// A cluster the hub has just heard of: pending, no labels, claims, key or lease yet.
    fn new_record(&self, cluster: &str, lease: i32, now: DateTime<Utc>) -> ClusterRecord {
        ClusterRecord {
            name: cluster.to_owned(),
            acceptance: ClusterState::Pending,
            labels: Default::default(),
            reported_labels: Default::default(),
            claims: vec![],
            lease_duration_seconds: lease,
            conditions: vec![],
            taints: vec![],
            last_lease: None,
            reported: ManagedClusterStatus::default(),
            presence: self.unknown_presence(cluster),
            requested_at: time(now),
            availability: None,
            agent_key: None,
            certificate: None,
            revoked_certificates: vec![],
            removing: None,
            maintenance_windows: vec![],
        }
    }

    /// Accepts `record` (known or new): conditions, availability grace, the hub's view, and every
    /// work already waiting for the cluster.
    fn accept_record(&self, mut record: ClusterRecord, now: DateTime<Utc>) -> Change {
        let cluster = record.name.clone();
        let cluster = cluster.as_str();
        let was_accepted = record.acceptance == ClusterState::Accepted;
        record.acceptance = ClusterState::Accepted;
        super::labels::put_in_default_set(&mut record.labels);
        let at = time(now);
        set_condition(
            &mut record.conditions,
            Condition::new(
                HUB_ACCEPTED_MANAGED_CLUSTER,
                ConditionStatus::True,
                "HubClusterAdminAccepted",
                "Accepted by hub cluster admin",
            ),
            at,
        );
        remove_condition(&mut record.conditions, HUB_DENIED_MANAGED_CLUSTER);
        set_condition(
            &mut record.conditions,
            Condition::new(
                MANAGED_CLUSTER_JOINED,
                ConditionStatus::True,
                "ManagedClusterJoined",
                "Managed cluster joined",
            ),
            at,
        );
        if !was_accepted {
            // The grace period starts now: a cluster that never proves alive goes Unknown.
            self.start_availability(&mut record, now);
        }
        self.refresh_certificate(&mut record, Asked::ByOperator, now);
        let mut change = self.publish_cluster(record);
        if !was_accepted {
            // Its add-ons' identities are asked for again by the agent accepted now.
            change.records.extend(self.unbind_cluster_addons(cluster));
        }
        if !was_accepted {
            for work in self.works_of(cluster) {
                change
                    .outbound
                    .push(Outbound::Spec(Box::new(self.spec_event(work, None, now))));
            }
        }
        change
    }

    /// Denies a cluster (idempotent; also revokes an accepted one: its works stay stored, its
    /// events are ignored).
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`] when the cluster never asked to join.
    pub fn deny(&self, cluster: &str, now: DateTime<Utc>) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        record.acceptance = ClusterState::Denied;
        certificates::revoke(&mut record, now);
        let at = time(now);
        set_condition(
            &mut record.conditions,
            Condition::new(
                HUB_ACCEPTED_MANAGED_CLUSTER,
                ConditionStatus::False,
                "HubClusterAdminDenied",
                "Denied by hub cluster admin",
            ),
            at,
        );
        set_condition(
            &mut record.conditions,
            Condition::new(
                HUB_DENIED_MANAGED_CLUSTER,
                ConditionStatus::True,
                "HubClusterAdminDenied",
                "Denied by hub cluster admin",
            ),
            at,
        );
        let mut change = self.publish_cluster(record);
        // Its add-ons' identities go with it: sessions dropped, certificates revoked.
        change.records.extend(self.unbind_cluster_addons(cluster));
        Ok(change)
    }

    /// A copy of `cluster`'s record to change.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`] when the hub does not know it.
    pub(crate) fn known_cluster(&self, cluster: &str) -> Result<ClusterRecord, RegistrationError> {
        self.cluster(cluster)
            .cloned()
            .ok_or_else(|| RegistrationError::UnknownCluster(cluster.to_owned()))
    }

    /// Stores the record and publishes the hub's view of it.
    pub(crate) fn publish_cluster(&self, record: ClusterRecord) -> Change {
        let view = hub_view(&record);
        Change {
            records: vec![Record::Cluster(Box::new(record))],
            outbound: vec![Outbound::HubView(Box::new(view))],
        }
    }

    /// The hub's view of every cluster that is not pending (republished after a restart).
    pub fn all_hub_views(&self) -> Change {
        Change {
            records: vec![],
            outbound: self
                .clusters()
                .filter(|c| c.acceptance != ClusterState::Pending)
                .map(|c| Outbound::HubView(Box::new(hub_view(c))))
                .collect(),
        }
    }
}

/// The hub's view of a cluster, as published to its agent.
pub fn hub_view(record: &ClusterRecord) -> ManagedCluster {
    // The cluster's certificate, for its agent to log in to a broker that takes certificates
    // as identities; an accepted cluster's only (the view is signed: the agent trusts it).
    let mut annotations: std::collections::BTreeMap<String, String> = record
        .current_certificate()
        .map(|c| {
            [(
                ocm_edge_schemas::wire::signature::CLUSTER_CERTIFICATE_ANNOTATION.to_owned(),
                c.pem.clone(),
            )]
            .into_iter()
            .collect()
        })
        .unwrap_or_default();
    // The windows set on the hub: the agent applies new versions only when one is open.
    if !record.maintenance_windows.is_empty() {
        annotations.insert(
            ocm_edge_schemas::maintenance::HUB_WINDOWS_ANNOTATION.to_owned(),
            record.maintenance_windows.join("\n"),
        );
    }
    ManagedCluster {
        metadata: ObjectMeta {
            name: record.name.clone(),
            labels: record.labels.clone(),
            annotations,
            creation_timestamp: Some(record.requested_at),
            ..ObjectMeta::default()
        },
        spec: ocm_edge_schemas::api::cluster::ManagedClusterSpec {
            hub_accepts_client: record.acceptance == ClusterState::Accepted,
            lease_duration_seconds: record.lease_duration_seconds,
            taints: record.taints.clone(),
            ..Default::default()
        },
        status: ManagedClusterStatus {
            conditions: record.conditions.clone(),
            capacity: record.reported.capacity.clone(),
            allocatable: record.reported.allocatable.clone(),
            version: record.reported.version.clone(),
            cluster_claims: record.claims.clone(),
        },
        ..ManagedCluster::default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::core::testkit::*;
    use crate::core::{AgentInput, Presence};
    use ocm_edge_schemas::api::meta::{find_condition, is_condition_true};

    #[test]
    fn a_join_request_from_an_unknown_cluster_makes_it_pending_and_answers_with_the_hub_view() {
        let mut core = core();
        let change = core.handle_agent(join("edge-1"), t(0));
        core.apply(&change.records);
        assert_eq!(
            core.cluster("edge-1").unwrap().acceptance,
            ClusterState::Pending
        );
        let views = hub_views(&change);
        assert_eq!(views.len(), 1);
        assert!(!views[0].spec.hub_accepts_client);
        assert_eq!(views[0].metadata.labels.get("env").unwrap(), "test");
    }

    #[test]
    fn a_join_request_whose_name_is_not_a_dns_label_registers_nothing_and_is_counted() {
        let too_long = "a".repeat(64);
        for name in ["-edge", "edge-", too_long.as_str(), "ocm-edge-hub"] {
            let mut core = core();
            let change = core.handle_agent(join(name), t(0));
            core.apply(&change.records);
            assert!(core.cluster(name).is_none(), "{name} was registered");
            assert!(hub_views(&change).is_empty(), "{name} got an answer");
            assert_eq!(core.counters().get(counter::MALFORMED), 1, "{name}");
        }
    }

    #[test]
    fn an_accepted_cluster_cannot_change_its_labels_or_sets_with_a_join_request() {
        const SET: &str = "cluster.open-cluster-management.io/clusterset";
        let mut core = core();
        // Until it is accepted, the cluster's labels follow its join requests, but for its set:
        // the set it asks for is only reported.
        step(
            &mut core,
            join_labelled("edge-1", &[(SET, "shop"), ("site", "a")]),
            0,
        );
        let sent = [(SET, "eu"), ("site", "b")];
        step(&mut core, join_labelled("edge-1", &sent), 1);
        let pending = core.cluster("edge-1").unwrap();
        assert_eq!(
            pending.labels,
            BTreeMap::from([("site".to_owned(), "b".to_owned())])
        );
        assert_eq!(pending.reported_labels.get(SET).unwrap(), "eu");
        // The operator puts it in that set at acceptance.
        let edit = LabelEdit {
            set: BTreeMap::from([(SET.to_owned(), "eu".to_owned())]),
            ..LabelEdit::default()
        };
        let c = core.accept_with("edge-1", &edit, t(2)).unwrap();
        core.apply(&c.records);
        let accepted = BTreeMap::from([
            (SET.to_owned(), "eu".to_owned()),
            ("site".to_owned(), "b".to_owned()),
        ]);
        assert_eq!(core.cluster("edge-1").unwrap().labels, accepted);

        // Accepted, it asks to be in another set (as at a certificate renewal, signed with its
        // own key): the hub keeps the labels it accepted and publishes them.
        let rogue = [(SET, "payments"), ("tier", "canary")];
        let change = step(&mut core, join_labelled("edge-1", &rogue), 3);
        let record = core.cluster("edge-1").unwrap();
        assert_eq!(record.labels, accepted);
        assert_eq!(record.reported_labels.get(SET).unwrap(), "payments");
        assert_eq!(hub_views(&change)[0].metadata.labels, accepted);
        assert_eq!(core.counters().get(counter::AGENT_LABELS_IGNORED), 1);
        // The same labels again are counted once; the accepted ones are not counted.
        step(&mut core, join_labelled("edge-1", &rogue), 4);
        step(&mut core, join_labelled("edge-1", &sent), 5);
        assert_eq!(core.counters().get(counter::AGENT_LABELS_IGNORED), 1);
        assert_eq!(core.cluster("edge-1").unwrap().labels, accepted);
    }

    #[test]
    fn accepting_sets_the_accepted_and_joined_conditions_and_publishes_them() {
        let mut core = core();
        step(&mut core, join("edge-1"), 0);
        let change = core.accept("edge-1", t(5)).unwrap();
        core.apply(&change.records);
        let view = &hub_views(&change)[0];
        assert!(view.spec.hub_accepts_client);
        assert!(is_condition_true(
            &view.status.conditions,
            HUB_ACCEPTED_MANAGED_CLUSTER
        ));
        assert!(is_condition_true(
            &view.status.conditions,
            MANAGED_CLUSTER_JOINED
        ));
        assert_eq!(
            core.cluster("edge-1").unwrap().acceptance,
            ClusterState::Accepted
        );
    }

    #[test]
    fn denying_an_accepted_cluster_revokes_it() {
        let mut core = core();
        step(&mut core, join("edge-1"), 0);
        let c = core.accept("edge-1", t(1)).unwrap();
        core.apply(&c.records);
        let c = core.deny("edge-1", t(2)).unwrap();
        core.apply(&c.records);
        let view = &hub_views(&c)[0];
        assert!(!view.spec.hub_accepts_client);
        let accepted = find_condition(&view.status.conditions, HUB_ACCEPTED_MANAGED_CLUSTER);
        assert_eq!(accepted.unwrap().status, ConditionStatus::False);
        assert!(is_condition_true(
            &view.status.conditions,
            HUB_DENIED_MANAGED_CLUSTER
        ));
    }

    #[test]
    fn accepting_or_denying_an_unknown_cluster_is_an_error_that_changes_nothing() {
        let core = core();
        assert_eq!(
            core.accept("ghost", t(0)),
            Err(RegistrationError::UnknownCluster("ghost".into()))
        );
        assert!(core.deny("ghost", t(0)).is_err());
    }

    #[test]
    fn events_from_pending_denied_or_unknown_clusters_are_ignored_and_counted() {
        let mut core = core();
        step(&mut core, join("pending"), 0);
        step(&mut core, join("denied"), 0);
        let c = core.deny("denied", t(1)).unwrap();
        core.apply(&c.records);
        for cluster in ["pending", "denied", "unknown"] {
            let change = core.handle_agent(lease(cluster), t(2));
            assert!(change.outbound.is_empty(), "{cluster}");
            core.apply(&change.records);
        }
        assert_eq!(core.counters().get(counter::IGNORED_NOT_ACCEPTED), 3);
        assert!(core.cluster("denied").unwrap().last_lease.is_none());
    }

    #[test]
    fn a_cluster_not_accepted_that_asks_for_its_works_hears_where_it_stands_and_gets_none() {
        let mut core = core_with_work("a", "web");
        let c = core.deny("a", t(5)).unwrap();
        core.apply(&c.records);
        step(&mut core, join("pending"), 0);
        for (cluster, denied) in [("a", true), ("pending", false)] {
            let change = core.handle_agent(
                AgentInput::SpecResyncRequest {
                    cluster: cluster.into(),
                    versions: Default::default(),
                    transfer: None,
                },
                t(6),
            );
            let views = hub_views(&change);
            assert_eq!(views.len(), 1, "{cluster}: {:?}", change.outbound);
            assert_eq!(
                change.outbound.len(),
                1,
                "{cluster}: no work, only its view"
            );
            assert_eq!(
                is_condition_true(&views[0].status.conditions, HUB_DENIED_MANAGED_CLUSTER),
                denied
            );
        }
        let unknown = core.handle_agent(
            AgentInput::SpecResyncRequest {
                cluster: "ghost".into(),
                versions: Default::default(),
                transfer: None,
            },
            t(6),
        );
        // An unknown (e.g. removed) cluster hears that the hub does not know it, and no work.
        let views = hub_views(&unknown);
        assert_eq!(unknown.outbound.len(), 1, "{:?}", unknown.outbound);
        assert!(!views[0].spec.hub_accepts_client);
        assert!(!is_condition_true(
            &views[0].status.conditions,
            HUB_ACCEPTED_MANAGED_CLUSTER
        ));
    }

    #[test]
    fn a_join_request_naming_another_cluster_is_dropped_and_counted() {
        let mut core = core();
        let mut request = ManagedCluster::new("victim");
        request.spec.lease_duration_seconds = 60;
        let change = core.handle_agent(
            AgentInput::JoinRequest {
                cluster: "attacker".into(),
                request: Box::new(request),
            },
            t(0),
        );
        core.apply(&change.records);
        assert!(core.cluster("victim").is_none());
        assert!(core.cluster("attacker").is_none());
        assert_eq!(core.counters().get(counter::MALFORMED), 1);
    }

    #[test]
    fn a_will_older_than_the_latest_birth_is_ignored() {
        let mut core = accepted_core(&["edge-1"]);
        step(&mut core, presence("edge-1", true, 2), 1);
        step(&mut core, presence("edge-1", false, 1), 2);
        assert_eq!(
            core.cluster("edge-1").unwrap().presence,
            Some(Presence {
                online: true,
                connection_seq: 2
            })
        );
        step(&mut core, presence("edge-1", false, 2), 3);
        assert!(!core.cluster("edge-1").unwrap().presence.unwrap().online);
    }
}
