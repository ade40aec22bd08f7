//! Steady prioritizer (OCM `pkg/placement/plugins/steady/steady.go`): a cluster in this
//! placement's current decisions scores 100, any other 0, so decisions do not churn.

use ocm_edge_schemas::api::cluster::ManagedCluster;

use super::{Context, MAX_CLUSTER_SCORE, PluginScores};

/// Scores `clusters`.
pub fn score(ctx: &Context<'_>, clusters: &[&ManagedCluster]) -> PluginScores {
    let mut out = PluginScores::zeroed(clusters.len());
    for (i, cluster) in clusters.iter().enumerate() {
        if ctx.current.contains(cluster.name()) {
            out.scores[i] = MAX_CLUSTER_SCORE;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::placement::testkit::{World, mk_cluster, mk_decision, mk_placement, t};

    /// OCM `steady.go`: clusters in existing decisions score MaxClusterScore, others 0.
    #[test]
    fn steady_gives_100_to_current_decisions_and_0_to_the_rest() {
        let mut world = World::bound("ns", "s", vec![mk_cluster("a"), mk_cluster("b")]);
        world.decisions = vec![
            mk_decision("ns", "p", 1, &["b"]),
            mk_decision("ns", "q", 1, &["a"]),
        ];
        let outcome = world.schedule(&mk_placement("ns", "p").build(), t(0));
        for (cluster, want) in [("a", 0), ("b", 100)] {
            let term = outcome
                .explanation
                .cluster(cluster)
                .unwrap()
                .terms
                .iter()
                .find(|t| t.prioritizer == "Steady")
                .unwrap()
                .clone();
            assert_eq!(term.score, want, "{cluster}");
        }
    }
}
