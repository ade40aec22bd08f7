//! Proofs of life (OCM's lease controller on the spoke): lease renewals every third of the lease
//! duration ([`schedule`]), and the cluster status (facts: capacity, allocatable, node count,
//! version, claims; `ManagedClusterConditionAvailable` from the API server's health) on connect,
//! on every health change, after a join request and when the facts change ([`status_report`]).
//! The periodic tick lives here too and hands on to registration and transfers.

pub mod schedule;
pub mod status_report;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{MANAGED_CLUSTER_CONDITION_AVAILABLE, ManagedCluster};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, Time};

use self::status_report::HubAnswer;
use crate::applier::Applier;
use crate::session::Agent;

impl Agent {
    /// Reads the cluster's facts; on failure keeps the last ones read (the hub keeps the status
    /// it last heard, so a status without them would wipe its capacity while the API server is
    /// away).
    pub(crate) async fn read_facts(&mut self, t: DateTime<Utc>) {
        self.status_report.read(t);
        match self.applier.facts().await {
            Ok(facts) => {
                if self.facts.as_ref() != Some(&facts) && !facts.unreadable.is_empty() {
                    // A node's quantity the API server sent that does not parse: left out of the
                    // sums, said and counted once per change, not every minute.
                    tracing::warn!(unreadable = ?facts.unreadable, "node quantities left out of the cluster's capacity");
                    let n = facts.unreadable.len() as u64;
                    self.bump(|c| c.dropped_malformed += n);
                }
                self.facts = Some(facts);
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot read the cluster's facts; keeping the last ones")
            }
        }
    }

    fn hub_answer(&self) -> HubAnswer {
        HubAnswer {
            registration: self.registration_state(),
            join_requests: self.counters.borrow().join_requests,
        }
    }

    pub(crate) async fn send_cluster_status(&mut self, t: DateTime<Utc>) {
        let mut cluster = ManagedCluster::new(self.cfg.cluster_name.clone());
        cluster.metadata.labels = self.labels();
        let operator_claims = self.claims();
        match &self.facts {
            Some(facts) => facts.write_into(&mut cluster.status, &operator_claims),
            None => {
                cluster.status.cluster_claims = operator_claims;
                if let Some(v) = self.applier.version().await {
                    cluster.status.version.kubernetes = v;
                }
            }
        }
        let healthy = self.api_healthy.unwrap_or(false);
        let sim = if self.applier.simulated() {
            " (simulated cluster)"
        } else {
            ""
        };
        let mut available = if healthy {
            Condition::new(
                MANAGED_CLUSTER_CONDITION_AVAILABLE,
                ConditionStatus::True,
                "ManagedClusterAvailable",
                format!("Managed cluster is available{sim}"),
            )
        } else {
            Condition::new(
                MANAGED_CLUSTER_CONDITION_AVAILABLE,
                ConditionStatus::False,
                "ManagedClusterKubeAPIServerUnavailable",
                format!("The kube-apiserver is not ok{sim}"),
            )
        };
        available.last_transition_time = Some(Time::new(t));
        cluster.status.conditions = vec![available];
        let hub = self.hub_answer();
        if let Ok(ev) = self.id.cluster_status(&cluster, t)
            && self.send(&ev)
        {
            self.status_report.sent(self.facts.as_ref(), hub);
            self.bump(|c| c.cluster_statuses += 1);
        }
    }

    pub(crate) fn renew_lease(&mut self, t: DateTime<Utc>) {
        if self.publisher.is_none() || !self.lease.due(t) {
            return;
        }
        if let Ok(ev) = self.id.lease_renewal(self.cfg.lease_duration_seconds, t)
            && self.send(&ev)
        {
            self.lease.renewed(t);
            self.bump(|c| c.lease_renewals += 1);
        }
    }

    pub(crate) async fn on_health_tick(&mut self, t: DateTime<Utc>) {
        let healthy = self.applier.health().await;
        if self.api_healthy != Some(healthy) {
            tracing::info!(healthy, "API server health changed");
            self.api_healthy = Some(healthy);
            self.send_cluster_status(t).await;
        }
        self.registration_tick(t);
        if self.publisher.is_some() {
            if self.status_report.read_due(t) {
                self.read_facts(t).await;
            }
            let hub = self.hub_answer();
            if self.status_report.must_send(self.facts.as_ref(), hub) {
                self.send_cluster_status(t).await;
            }
        }
        self.renew_lease(t);
        self.repair_stalled_transfer(t);
    }
}
