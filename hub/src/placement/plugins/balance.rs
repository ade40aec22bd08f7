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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{World, mk_cluster, mk_decision, mk_placement, t};

    /// Cases computed by hand from OCM `balance.go`:
    /// `scores[c] = 2 * int64(float64(MaxClusterScore)*(0.5-usage))`, usage = count/maxCount.
    #[test]
    fn balance_score_follows_ocms_formula_with_go_truncation() {
        let cases = [
            // (count, maxCount, score)
            (0, 0, 100),
            (0, 3, 100),
            (1, 1, -100),
            (1, 2, 0),
            (1, 3, 32),  // 100*(0.5-0.333) = 16.67 -> 16, x2
            (2, 3, -32), // -16.67 -> -16 (toward zero), x2
            (1, 4, 50),
            (3, 4, -50),
            (1, 6, 66),
            (5, 6, -66),
            (2, 5, 18), // 0.5 - 0.4 is 0.0999.. in f64, so 9.99.. -> 9, as Go computes
        ];
        for (count, max, want) in cases {
            assert_eq!(balance_score(count, max), want, "count {count} max {max}");
        }
    }

    #[test]
    fn balance_counts_other_placements_decisions_but_not_its_own() {
        let mut world = World::bound(
            "ns",
            "s",
            vec![mk_cluster("a"), mk_cluster("b"), mk_cluster("c")],
        );
        world.decisions = vec![
            mk_decision("ns", "other", 1, &["a", "b"]),
            mk_decision("ns2", "third", 1, &["a"]),
            // The placement's own decisions do not count, even in another namespace's name.
            mk_decision("ns", "p", 1, &["c", "a"]),
        ];
        let placement = mk_placement("ns", "p").build();
        let outcome = world.schedule(&placement, t(0));
        let score = |c: &str| {
            outcome
                .explanation
                .cluster(c)
                .unwrap()
                .terms
                .iter()
                .find(|t| t.prioritizer == "Balance")
                .unwrap()
                .score
        };
        // a: 2 of max 2 -> -100; b: 1 of 2 -> 0; c: none -> 100.
        assert_eq!((score("a"), score("b"), score("c")), (-100, 0, 100));
    }
}
