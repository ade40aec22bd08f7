//! Proofs of life (OCM's lease controller on the spoke): lease renewals every third of the lease
//! duration ([`schedule`]), and the cluster status (claims, version,
//! `ManagedClusterConditionAvailable` from the API server's health) on connect and on every
//! health change. The periodic tick lives here too and hands on to registration and transfers.

pub mod schedule;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{MANAGED_CLUSTER_CONDITION_AVAILABLE, ManagedCluster};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, Time};

use crate::applier::Applier;
use crate::session::Agent;

impl Agent {
    pub(crate) async fn send_cluster_status(&mut self, t: DateTime<Utc>) {
        let mut cluster = ManagedCluster::new(self.cfg.cluster_name.clone());
        cluster.metadata.labels = self.labels();
        cluster.status.cluster_claims = self.claims();
        if let Some(v) = self.applier.version().await {
            cluster.status.version.kubernetes = v;
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
        if let Ok(ev) = self.id.cluster_status(&cluster, t)
            && self.send(&ev)
        {
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
        self.renew_lease(t);
        self.repair_stalled_transfer(t);
    }
}
