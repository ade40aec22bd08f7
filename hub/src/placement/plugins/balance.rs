//! Balance prioritizer (OCM `pkg/placement/plugins/balance/balance.go`): spreads decisions of
//! all placements over the clusters. A cluster no other placement selected scores 100; the
//! most selected one scores -100; in between
//! `score = 2 * trunc(100 * (0.5 - count / maxCount))` (Go's `int64()` truncates toward 0).
//! Decisions of the placement being scheduled are not counted.

use ocm_edge_schemas::api::cluster::ManagedCluster;

use super::{Context, MAX_CLUSTER_SCORE, PluginScores};

/// OCM's formula for a cluster named in `count` decisions of other placements, when the most
/// named cluster is in `max_count`.
pub fn balance_score(count: i64, max_count: i64) -> i64 {
    if count <= 0 || max_count <= 0 {
        return MAX_CLUSTER_SCORE;
    }
    let usage = count as f64 / max_count as f64;
    2 * ((MAX_CLUSTER_SCORE as f64 * (0.5 - usage)) as i64)
}

/// Scores `clusters`.
pub fn score(ctx: &Context<'_>, clusters: &[&ManagedCluster]) -> PluginScores {
    let max_count = ctx.other_counts.values().copied().max().unwrap_or(0);
    let mut out = PluginScores::zeroed(clusters.len());
    for (i, cluster) in clusters.iter().enumerate() {
        let count = ctx.other_counts.get(cluster.name()).copied().unwrap_or(0);
        out.scores[i] = balance_score(count, max_count);
        if count > 0 {
            out.notes[i] = Some(format!(
                "Balance: {count} of max {max_count} decisions of other placements"
            ));
        }
    }
    out
}
