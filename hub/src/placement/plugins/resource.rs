//! ResourceAllocatableCPU / ResourceAllocatableMemory prioritizers (OCM
//! `pkg/placement/plugins/resource/resource.go`): among the clusters that report both
//! allocatable and capacity of the resource,
//! `score = trunc(((alloc - min) / (max - min) - 0.5) * 2 * 100)`, or 100 when every cluster
//! has the same allocatable. A cluster that does not report the resource gets no score (0 in
//! the sum), as in OCM.

use ocm_edge_schemas::api::cluster::ManagedCluster;

use super::{MAX_CLUSTER_SCORE, PluginScores};

/// Which resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `cpu`.
    Cpu,
    /// `memory`.
    Memory,
}

impl Resource {
    /// The Kubernetes resource name.
    pub fn key(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
        }
    }
}

/// OCM's formula for one cluster.
pub fn allocatable_score(allocatable: f64, min: f64, max: f64) -> i64 {
    if max - min != 0.0 {
        let ratio = (allocatable - min) / (max - min);
        ((ratio - 0.5) * 2.0 * 100.0) as i64
    } else {
        MAX_CLUSTER_SCORE
    }
}

/// Allocatable of `resource`, when the cluster reports both allocatable and capacity (OCM's
/// `getClusterResource` fails otherwise) and both parse.
pub fn cluster_allocatable(cluster: &ManagedCluster, resource: Resource) -> Option<f64> {
    let allocatable = cluster.status.allocatable.get(resource.key())?;
    cluster.status.capacity.get(resource.key())?;
    allocatable.approximate_f64()
}

/// Scores `clusters`.
pub fn score(resource: Resource, clusters: &[&ManagedCluster]) -> PluginScores {
    let mut out = PluginScores::zeroed(clusters.len());
    let values: Vec<Option<f64>> = clusters
        .iter()
        .map(|c| cluster_allocatable(c, resource))
        .collect();
    let known = values.iter().flatten();
    let min = known.clone().copied().fold(f64::INFINITY, f64::min);
    let max = known.copied().fold(f64::NEG_INFINITY, f64::max);
    for (i, value) in values.iter().enumerate() {
        match value {
            Some(v) => out.scores[i] = allocatable_score(*v, min, max),
            None => {
                out.notes[i] = Some(format!(
                    "no allocatable and capacity {} reported",
                    resource.key()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use ocm_edge_schemas::api::meta::Quantity;

    use super::*;
    use crate::placement::testkit::mk_cluster;

    /// OCM `resource.go`: `int64((ratio - 0.5) * 2.0 * 100.0)`, 100 when max == min.
    #[test]
    fn allocatable_score_follows_ocms_formula() {
        let cases = [
            // (allocatable, min, max, score)
            (2.0, 2.0, 8.0, -100),
            (8.0, 2.0, 8.0, 100),
            (5.0, 2.0, 8.0, 0),
            (4.0, 2.0, 8.0, -33), // ratio 1/3 -> -33.3 truncated toward zero
            (6.0, 2.0, 8.0, 33),
            (3.0, 3.0, 3.0, 100),
        ];
        for (alloc, min, max, want) in cases {
            assert_eq!(
                allocatable_score(alloc, min, max),
                want,
                "{alloc} in [{min}, {max}]"
            );
        }
    }

    #[test]
    fn clusters_without_the_resource_score_zero_and_do_not_move_min_or_max() {
        let a = mk_cluster("a")
            .allocatable("cpu", "2")
            .allocatable("memory", "4Gi")
            .build();
        let b = mk_cluster("b").allocatable("cpu", "8").build();
        let c = mk_cluster("c").allocatable("memory", "1Gi").build();
        let mut no_capacity = mk_cluster("d").build();
        no_capacity
            .status
            .allocatable
            .insert("cpu".into(), Quantity("100".into()));
        let cpu = score(Resource::Cpu, &[&a, &b, &c, &no_capacity]);
        assert_eq!(cpu.scores, vec![-100, 100, 0, 0]);
        assert!(cpu.notes[2].as_deref().unwrap().contains("cpu"));
        let memory = score(Resource::Memory, &[&a, &b, &c]);
        assert_eq!(memory.scores, vec![100, 0, -100]);
        let one = score(Resource::Memory, &[&a]);
        assert_eq!(one.scores, vec![100]);
    }
}
