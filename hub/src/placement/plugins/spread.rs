//! Spread prioritizer: the one OCM's API names (`spreadPolicy.spreadConstraints`, built-in
//! prioritizer `Spread`) but OCM does not implement. ocm-edge's design:
//!
//! Selection becomes greedy. Clusters are picked one at a time; before each pick every
//! remaining candidate gets a Spread score from how many clusters already picked share its
//! topology value, and the candidate with the highest `static score + weight x spread` wins
//! (ties: cluster name, as OCM). So the score of a cluster depends on the clusters chosen
//! before it, which is what spreading means.
//!
//! For one constraint (`topologyKey`, a label or a claim; `maxSkew` m, default 1):
//! - the domains are the values of the key among the candidates; `count(v)` is how many
//!   picked clusters have value `v` and `min` is the smallest count over all domains;
//! - a candidate with value `v` scores `clamp(100 - 200 x (count(v) - min) / m, -100, 100)`
//!   (integer division): 100 where picking it keeps the spread even, -100 where picking it
//!   would make the skew `count(v) + 1 - min` exceed m;
//! - `whenUnsatisfiable: DoNotSchedule` makes that a hard rule: a candidate whose pick would
//!   exceed m is not picked in that round, and a candidate without the key is never picked.
//!   Fewer clusters than numberOfClusters may then be selected (PlacementSatisfied False).
//!   `ScheduleAnyway` (default) only scores; a candidate without the key scores 0.
//!
//! Several constraints (at most 8) combine into one score with weights 2^(n-1-i), so the
//! first constraint counts most, as the API asks ("smaller index first"):
//! `spread = sum(w_i x s_i) / sum(w_i)`.
//!
//! Candidates sharing all topology values are interchangeable for Spread, so each round only
//! looks at the best candidate of each such group: a round costs O(groups), not O(clusters).

use std::collections::{BTreeMap, VecDeque};

use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::placement::{
    SpreadConstraintsTerm, TopologyKeyType, UnsatisfiableMaxSkewAction,
};

use super::{MAX_CLUSTER_SCORE, MIN_CLUSTER_SCORE};

/// The value of a constraint's topology key on a cluster (a label, or a claim in
/// `status.clusterClaims`).
pub fn topology_value<'c>(
    cluster: &'c ManagedCluster,
    term: &SpreadConstraintsTerm,
) -> Option<&'c str> {
    match term.topology_key_type {
        TopologyKeyType::Label => cluster
            .metadata
            .labels
            .get(&term.topology_key)
            .map(String::as_str),
        TopologyKeyType::Claim => cluster
            .status
            .cluster_claims
            .iter()
            .find(|c| c.name == term.topology_key)
            .map(|c| c.value.as_str()),
    }
}

/// `maxSkew`, defaulted to 1 and never below 1.
pub fn max_skew(term: &SpreadConstraintsTerm) -> i64 {
    i64::from(term.max_skew.unwrap_or(1).max(1))
}

fn do_not_schedule(term: &SpreadConstraintsTerm) -> bool {
    term.when_unsatisfiable == Some(UnsatisfiableMaxSkewAction::DoNotSchedule)
}

/// The score of a candidate whose domain already has `count` picked clusters, when the
/// least picked domain has `min`.
pub fn constraint_score(count: i64, min: i64, max_skew: i64) -> i64 {
    let diff = count - min;
    (MAX_CLUSTER_SCORE - 2 * MAX_CLUSTER_SCORE * diff / max_skew.max(1))
        .clamp(MIN_CLUSTER_SCORE, MAX_CLUSTER_SCORE)
}

/// Combines per-constraint scores, the first weighing most (2^(n-1-i)).
pub fn combine(scores: &[i64]) -> i64 {
    let n = scores.len().min(30);
    if n == 0 {
        return 0;
    }
    let (mut sum, mut weights) = (0i64, 0i64);
    for (i, s) in scores.iter().take(n).enumerate() {
        let w = 1i64 << (n - 1 - i);
        sum += w * s;
        weights += w;
    }
    sum / weights
}

/// The result of a greedy spread selection over `candidates`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpreadSelection {
    /// Indices into the candidates, in the order they were picked.
    pub order: Vec<usize>,
    /// Spread score per candidate: at its pick, or after the last pick for the others.
    pub spread: Vec<i64>,
    /// Why a candidate could not be picked (a DoNotSchedule constraint), if so.
    pub blocked: Vec<Option<String>>,
}

struct Round<'a> {
    terms: &'a [SpreadConstraintsTerm],
    counts: Vec<BTreeMap<&'a str, i64>>,
    /// The least count per constraint, kept current by [`Round::pick`].
    mins: Vec<i64>,
}

impl<'a> Round<'a> {
    fn pick(&mut self, key: &[Option<&'a str>]) {
        for (k, v) in key.iter().enumerate() {
            if let Some(v) = v {
                *self.counts[k].entry(v).or_insert(0) += 1;
                self.mins[k] = self.counts[k].values().copied().min().unwrap_or(0);
            }
        }
    }

    /// The spread score of a candidate with topology values `key`, or why it is blocked.
    fn evaluate(&self, key: &[Option<&'a str>]) -> Result<i64, String> {
        let mut scores = Vec::with_capacity(self.terms.len());
        for (k, term) in self.terms.iter().enumerate() {
            let Some(v) = key[k] else {
                if do_not_schedule(term) {
                    return Err(format!(
                        "no topology {:?} {} (DoNotSchedule)",
                        term.topology_key_type, term.topology_key
                    ));
                }
                scores.push(0);
                continue;
            };
            let count = self.counts[k].get(v).copied().unwrap_or(0);
            let min = self.mins[k];
            let skew = max_skew(term);
            if do_not_schedule(term) && count + 1 - min > skew {
                return Err(format!(
                    "{}={v} would exceed maxSkew {skew} (DoNotSchedule)",
                    term.topology_key
                ));
            }
            scores.push(constraint_score(count, min, skew));
        }
        Ok(combine(&scores))
    }
}

/// Picks up to `limit` candidates greedily by `base[i] + weight x spread`, ties by name.
pub fn select(
    candidates: &[&ManagedCluster],
    base: &[i64],
    weight: i32,
    terms: &[SpreadConstraintsTerm],
    limit: usize,
) -> SpreadSelection {
    let n = candidates.len();
    let keys: Vec<Vec<Option<&str>>> = candidates
        .iter()
        .map(|c| terms.iter().map(|t| topology_value(c, t)).collect())
        .collect();
    let mut result = SpreadSelection {
        order: Vec::new(),
        spread: vec![0; n],
        blocked: vec![None; n],
    };
    let mut round = Round {
        terms,
        counts: vec![BTreeMap::new(); terms.len()],
        mins: vec![0; terms.len()],
    };
    // Candidates lacking a DoNotSchedule key can never be picked and do not make domains.
    let mut sorted: Vec<usize> = Vec::with_capacity(n);
    for (i, key) in keys.iter().enumerate() {
        let missing = terms
            .iter()
            .enumerate()
            .find(|(k, t)| key[*k].is_none() && do_not_schedule(t));
        if let Some((_, t)) = missing {
            result.blocked[i] = Some(format!(
                "no topology {:?} {} (DoNotSchedule)",
                t.topology_key_type, t.topology_key
            ));
            continue;
        }
        for (k, v) in key.iter().enumerate() {
            if let Some(v) = v {
                round.counts[k].entry(v).or_insert(0);
            }
        }
        sorted.push(i);
    }
    sorted.sort_by(|&a, &b| {
        base[b]
            .cmp(&base[a])
            .then_with(|| candidates[a].name().cmp(candidates[b].name()))
    });
    let mut groups: BTreeMap<&[Option<&str>], VecDeque<usize>> = BTreeMap::new();
    for &i in &sorted {
        groups.entry(keys[i].as_slice()).or_default().push_back(i);
    }

    let weight = i64::from(weight);
    while result.order.len() < limit {
        let mut best: Option<(i64, usize, i64)> = None; // (total, candidate, spread)
        for (key, queue) in &groups {
            let Some(&head) = queue.front() else { continue };
            let Ok(spread) = round.evaluate(key) else {
                continue;
            };
            let total = base[head] + weight * spread;
            let better = match best {
                None => true,
                Some((bt, bi, _)) => {
                    total > bt || (total == bt && candidates[head].name() < candidates[bi].name())
                }
            };
            if better {
                best = Some((total, head, spread));
            }
        }
        let Some((_, picked, spread)) = best else {
            break;
        };
        if let Some(queue) = groups.get_mut(keys[picked].as_slice()) {
            queue.pop_front();
        }
        result.spread[picked] = spread;
        result.order.push(picked);
        round.pick(&keys[picked]);
    }
    // What the rest would score now, and why any of them cannot be picked.
    for (key, queue) in &groups {
        let evaluated = round.evaluate(key);
        for &i in queue {
            match &evaluated {
                Ok(spread) => result.spread[i] = *spread,
                Err(why) => result.blocked[i] = Some(why.clone()),
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::mk_cluster;
    use TopologyKeyType::{Claim, Label};
    use UnsatisfiableMaxSkewAction::{DoNotSchedule, ScheduleAnyway};

    fn term(
        key: &str,
        kind: TopologyKeyType,
        skew: Option<i32>,
        when: Option<UnsatisfiableMaxSkewAction>,
    ) -> SpreadConstraintsTerm {
        SpreadConstraintsTerm {
            topology_key: key.into(),
            topology_key_type: kind,
            max_skew: skew,
            when_unsatisfiable: when,
        }
    }

    fn names(candidates: &[&ManagedCluster], order: &[usize]) -> Vec<String> {
        order
            .iter()
            .map(|&i| candidates[i].name().to_string())
            .collect()
    }

    #[test]
    fn constraint_score_is_100_when_even_and_minus_100_when_past_max_skew() {
        let cases = [
            // (count, min, maxSkew, score)
            (0, 0, 1, 100),
            (1, 0, 1, -100),
            (2, 0, 1, -100),
            (1, 0, 2, 0),
            (2, 0, 2, -100),
            (1, 0, 4, 50),
            (3, 3, 1, 100),
        ];
        for (count, min, skew, want) in cases {
            assert_eq!(
                constraint_score(count, min, skew),
                want,
                "{count} {min} {skew}"
            );
        }
        assert_eq!(combine(&[]), 0);
        assert_eq!(combine(&[100]), 100);
        assert_eq!(combine(&[100, -100]), 33); // (2*100 - 100) / 3
        assert_eq!(combine(&[-100, 100]), -33);
    }

    #[test]
    fn clusters_are_spread_evenly_over_zones_before_doubling_up() {
        let cs: Vec<ManagedCluster> = [
            ("a1", "a"),
            ("a2", "a"),
            ("a3", "a"),
            ("b1", "b"),
            ("b2", "b"),
            ("c1", "c"),
        ]
        .iter()
        .map(|(n, z)| mk_cluster(n).label("zone", z).build())
        .collect();
        let refs: Vec<&ManagedCluster> = cs.iter().collect();
        // a* clusters have the best static scores; spreading must still go a, b, c first.
        let base = vec![300, 290, 280, 100, 90, 0];
        let sel = select(&refs, &base, 3, &[term("zone", Label, None, None)], 4);
        assert_eq!(names(&refs, &sel.order), ["a1", "b1", "c1", "a2"]);
        // The 5th pick would be b2 (b has 1, min is 1 -> even), a3 would double up a.
        assert_eq!(sel.spread[4], 100);
        assert_eq!(sel.spread[2], -100);
    }

    #[test]
    fn do_not_schedule_stops_at_max_skew_and_skips_clusters_without_the_key() {
        let cs = [
            mk_cluster("a1").claim("region", "eu").build(),
            mk_cluster("a2").claim("region", "eu").build(),
            mk_cluster("a3").claim("region", "eu").build(),
            mk_cluster("b1").claim("region", "us").build(),
            mk_cluster("nokey").build(),
        ];
        let refs: Vec<&ManagedCluster> = cs.iter().collect();
        let base = vec![0; 5];
        let sel = select(
            &refs,
            &base,
            1,
            &[term("region", Claim, Some(1), Some(DoNotSchedule))],
            5,
        );
        // eu, us, eu (skew 1) -> a third eu would make skew 2.
        assert_eq!(names(&refs, &sel.order), ["a1", "b1", "a2"]);
        assert_eq!(
            sel.blocked[2].as_deref(),
            Some("region=eu would exceed maxSkew 1 (DoNotSchedule)")
        );
        assert_eq!(
            sel.blocked[4].as_deref(),
            Some("no topology Claim region (DoNotSchedule)")
        );
        // ScheduleAnyway keeps going.
        let sel = select(
            &refs,
            &base,
            1,
            &[term("region", Claim, Some(1), Some(ScheduleAnyway))],
            5,
        );
        assert_eq!(sel.order.len(), 5);
    }

    #[test]
    fn the_first_constraint_weighs_more_than_the_second() {
        let cs = [
            mk_cluster("x")
                .label("zone", "a")
                .label("rack", "r1")
                .build(),
            mk_cluster("y")
                .label("zone", "a")
                .label("rack", "r2")
                .build(),
            mk_cluster("z")
                .label("zone", "b")
                .label("rack", "r1")
                .build(),
        ];
        let refs: Vec<&ManagedCluster> = cs.iter().collect();
        let terms = [
            term("zone", Label, None, None),
            term("rack", Label, None, None),
        ];
        let sel = select(&refs, &[0, 0, 0], 1, &terms, 2);
        // After x (zone a, rack r1): y keeps racks even but doubles zone a; z evens zones.
        assert_eq!(names(&refs, &sel.order), ["x", "z"]);
    }
}
