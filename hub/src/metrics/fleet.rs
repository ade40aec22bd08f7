//! What the fleet looks like now, counted from the hub's state when Prometheus scrapes (the hub
//! task answers [`FleetGauges::of`]): clusters by state and availability, works by phase,
//! rollouts by cluster status, placements' selected clusters. Pure: the core in, figures out.
//!
//! Nothing here has a label per cluster or per work: at 10,000 clusters the series stay a few
//! dozen, plus a few per ManifestWorkReplicaSet and per Placement.

use std::collections::BTreeMap;

use ocm_edge_schemas::admin::{ClusterState, HubStats, WorkPhase};
use ocm_edge_schemas::api::cluster::MANAGED_CLUSTER_CONDITION_AVAILABLE;
use ocm_edge_schemas::api::meta::{ConditionStatus, find_condition};

use crate::core::{ClusterRecord, HubCore};

/// A cluster's registration state as the metrics tell it: the hub's three, and `Removing`
/// (an accepted cluster whose removal started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClusterStage {
    Pending,
    Accepted,
    Denied,
    Removing,
}

impl ClusterStage {
    pub const ALL: [ClusterStage; 4] = [
        ClusterStage::Pending,
        ClusterStage::Accepted,
        ClusterStage::Denied,
        ClusterStage::Removing,
    ];

    pub fn of(c: &ClusterRecord) -> Self {
        match c.acceptance {
            _ if c.removing.is_some() => ClusterStage::Removing,
            ClusterState::Pending => ClusterStage::Pending,
            ClusterState::Accepted => ClusterStage::Accepted,
            ClusterState::Denied => ClusterStage::Denied,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ClusterStage::Pending => "Pending",
            ClusterStage::Accepted => "Accepted",
            ClusterStage::Denied => "Denied",
            ClusterStage::Removing => "Removing",
        }
    }
}

/// The status of `ManagedClusterConditionAvailable`; a cluster without it (before its first
/// lease) counts as Unknown.
pub fn availability(c: &ClusterRecord) -> ConditionStatus {
    find_condition(&c.conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE)
        .map_or(ConditionStatus::Unknown, |a| a.status)
}

/// Every availability, in the order the metrics list them.
pub const AVAILABILITIES: [ConditionStatus; 3] = [
    ConditionStatus::True,
    ConditionStatus::False,
    ConditionStatus::Unknown,
];

/// One ManifestWorkReplicaSet's selected clusters by rollout status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutGauge {
    pub namespace: String,
    pub name: String,
    /// OCM's rollout statuses (ToApply, Progressing, Succeeded, Failed, TimeOut) and Held,
    /// each with its clusters; every status is present.
    pub clusters: BTreeMap<String, u64>,
}

/// Rollout statuses the hub reports, OCM's and ocm-edge's Held.
pub const ROLLOUT_STATUSES: [&str; 6] = [
    "ToApply",
    "Progressing",
    "Succeeded",
    "Failed",
    "TimeOut",
    "Held",
];

/// The fleet's figures at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FleetGauges {
    /// Clusters by stage and availability; every pair present.
    pub clusters: BTreeMap<(ClusterStage, &'static str), u64>,
    /// Works by phase; every phase present.
    pub works: BTreeMap<WorkPhase, u64>,
    pub rollouts: Vec<RolloutGauge>,
    /// `(namespace, name)` of each Placement and the clusters it selects.
    pub placements: Vec<(String, String, u64)>,
    /// The hub's named counters (`ocm-edge stats`), as stored.
    pub counters: BTreeMap<String, u64>,
}

impl FleetGauges {
    /// Counts everything from `core`: O(clusters + works + rollout rows).
    pub fn of(core: &HubCore) -> Self {
        let mut g = FleetGauges::default();
        for stage in ClusterStage::ALL {
            for a in AVAILABILITIES {
                g.clusters.insert((stage, a.as_str()), 0);
            }
        }
        for c in core.clusters() {
            *g.clusters
                .entry((ClusterStage::of(c), availability(c).as_str()))
                .or_default() += 1;
        }
        g.works = WorkPhase::ALL.iter().map(|p| (*p, 0)).collect();
        for w in core.works() {
            let conditions = w
                .status
                .as_ref()
                .map_or(&[][..], |s| s.conditions.as_slice());
            let phase = WorkPhase::of(
                w.deleting.is_some(),
                w.resource_version,
                w.status_version,
                conditions,
            );
            *g.works.entry(phase).or_default() += 1;
        }
        for r in core.objects().replica_sets() {
            let mut clusters: BTreeMap<String, u64> = ROLLOUT_STATUSES
                .iter()
                .map(|s| ((*s).to_owned(), 0))
                .collect();
            for row in &r.clusters {
                *clusters.entry(row.status.clone()).or_default() += 1;
            }
            g.rollouts.push(RolloutGauge {
                namespace: r.set.metadata.namespace.clone(),
                name: r.set.metadata.name.clone(),
                clusters,
            });
        }
        for p in core.objects().placements() {
            let meta = &p.placement.metadata;
            let selected =
                u64::try_from(p.placement.status.number_of_selected_clusters).unwrap_or(0);
            g.placements
                .push((meta.namespace.clone(), meta.name.clone(), selected));
        }
        g.counters = core.counters().0.clone();
        g
    }

    /// What `ocm-edge stats` shows, from the same count: accepted clusters include those being
    /// removed.
    pub fn hub_stats(self) -> HubStats {
        let accepted = [ClusterStage::Accepted, ClusterStage::Removing];
        HubStats {
            clusters_pending: self.clusters_in(ClusterStage::Pending),
            clusters_accepted: accepted.iter().map(|s| self.clusters_in(*s)).sum(),
            clusters_denied: self.clusters_in(ClusterStage::Denied),
            clusters_available: accepted
                .iter()
                .map(|s| self.clusters_with(*s, ConditionStatus::True))
                .sum(),
            works: self.works.values().sum(),
            counters: self.counters,
        }
    }

    /// Clusters in `stage`, whatever their availability.
    pub fn clusters_in(&self, stage: ClusterStage) -> u64 {
        self.clusters
            .iter()
            .filter(|((s, _), _)| *s == stage)
            .map(|(_, n)| n)
            .sum()
    }

    /// Clusters in `stage` whose availability is `available`.
    pub fn clusters_with(&self, stage: ClusterStage, available: ConditionStatus) -> u64 {
        self.clusters
            .get(&(stage, available.as_str()))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;

    #[test]
    fn clusters_are_counted_by_stage_and_availability_with_every_pair_present() {
        let mut core = accepted_core(&["a", "b"]);
        step(&mut core, join("p"), 0);
        let g = FleetGauges::of(&core);
        assert_eq!(g.clusters.len(), 12, "{g:?}");
        assert_eq!(g.clusters_in(ClusterStage::Accepted), 2);
        assert_eq!(g.clusters_in(ClusterStage::Pending), 1);
        assert_eq!(g.clusters_in(ClusterStage::Denied), 0);
        assert_eq!(
            g.clusters_with(ClusterStage::Pending, ConditionStatus::Unknown),
            1
        );
        assert_eq!(g.works.len(), WorkPhase::ALL.len());
        assert!(g.works.values().all(|n| *n == 0));
    }

    /// What a scrape costs the hub task (counting the fleet) and the endpoint (the text):
    /// `OCM_EDGE_BENCH_CLUSTERS=10000 cargo test --release -p ocm-edge-hub --lib
    /// fleet_gauges_bench -- --ignored --nocapture`. Prints figures, asserts nothing about time.
    #[test]
    #[ignore = "a benchmark: run it in release with --ignored --nocapture"]
    fn fleet_gauges_bench() {
        let n: usize = std::env::var("OCM_EDGE_BENCH_CLUSTERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        let names: Vec<String> = (0..n).map(|i| format!("store-{i:05}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut core = accepted_core(&refs);
        let (c, _) = core
            .write_works(&work_input("web", 1), &clusters(&refs), false, t(0))
            .unwrap();
        core.apply(&c.records);
        let metrics = crate::metrics::HubMetrics::new("ocm-edge");
        let mut count = Vec::new();
        let mut render = Vec::new();
        let mut bytes = 0;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            let g = FleetGauges::of(&core);
            count.push(started.elapsed());
            let started = std::time::Instant::now();
            bytes = metrics.render(Some(&g), None).len();
            render.push(started.elapsed());
        }
        assert_eq!(
            FleetGauges::of(&core).clusters_in(ClusterStage::Accepted),
            n as u64
        );
        count.sort();
        render.sort();
        println!(
            "RESULT clusters={n} works={n} count_ms={:.2} render_ms={:.2} bytes={bytes}",
            count[2].as_secs_f64() * 1e3,
            render[2].as_secs_f64() * 1e3
        );
    }
}
