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
