//! Decision groups and PlacementDecision objects (OCM's `generatePlacementDecisionsAndStatus`,
//! `generateDecisionGroups`, `generateDecision` and `calculateLength` in
//! `scheduling_controller.go`).
//!
//! - Group length: `clustersPerDecisionGroup` as an int, or `"N%"` of the selected clusters
//!   rounded up; absent, <= 0 or larger than the selection means all of them.
//! - Each `decisionGroups[i]` takes the selected clusters its selector matches that no earlier
//!   group took, sorted by name and cut into chunks of the group length, each chunk its own
//!   group with that name (a group matching nothing yields no group). The rest follow in
//!   unnamed chunks. No cluster at all still yields one empty group.
//! - Each group becomes PlacementDecisions of at most 100 clusters, named
//!   `<placement>-decision-<k>` with k counting from 1 across groups, labelled with the
//!   placement name, group index and group name, owned by the placement.

use std::collections::BTreeMap;

use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::{IntOrString, ObjectMeta, OwnerReference};
use ocm_edge_schemas::api::placement::{
    ClusterDecision, DecisionGroupStatus, GroupStrategy, LABEL_DECISION_GROUP_INDEX,
    LABEL_DECISION_GROUP_NAME, LABEL_PLACEMENT, MAX_DECISIONS_PER_PLACEMENT_DECISION, Placement,
    PlacementDecision, PlacementDecisionStatus, PlacementSortBy,
};

use super::Misconfiguration;
use super::plugins::predicate;

/// One decision group before it is cut into PlacementDecisions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterDecisionGroup {
    /// The group's name (empty for the rest).
    pub name: String,
    /// Cluster names, sorted.
    pub clusters: Vec<String>,
}

/// OCM's `calculateLength`.
///
/// # Errors
/// A string that is not a percentage (OCM's message: "<value> invalid type: string is not a
/// percentage").
pub fn group_length(
    per_group: Option<&IntOrString>,
    total: usize,
) -> Result<usize, Misconfiguration> {
    let total_i = i64::try_from(total).unwrap_or(i64::MAX);
    let length: i64 = match per_group {
        None => total_i,
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => {
            let not_a_percentage = || {
                Misconfiguration::new("", format!("{s} invalid type: string is not a percentage"))
            };
            let pct: f64 = s
                .strip_suffix('%')
                .ok_or_else(not_a_percentage)?
                .parse()
                .map_err(|_| not_a_percentage())?;
            (pct / 100.0 * total as f64).ceil() as i64
        }
    };
    Ok(if length <= 0 || length > total_i {
        total
    } else {
        usize::try_from(length).unwrap_or(total)
    })
}

/// Groups the selected clusters as the strategy says.
///
/// # Errors
/// A bad `clustersPerDecisionGroup` or an invalid group selector.
pub fn decision_groups(
    strategy: &GroupStrategy,
    selected: &[&ManagedCluster],
) -> Result<Vec<ClusterDecisionGroup>, Misconfiguration> {
    let length = group_length(
        strategy.clusters_per_decision_group.as_ref(),
        selected.len(),
    )?;
    let mut taken = vec![false; selected.len()];
    let mut groups = Vec::new();
    for group in &strategy.decision_groups {
        predicate::validate_selector(&group.group_cluster_selector)
            .map_err(|m| Misconfiguration::new("", m))?;
        let mut matched = Vec::new();
        for (i, cluster) in selected.iter().enumerate() {
            if !taken[i] && predicate::selector_matches(&group.group_cluster_selector, cluster) {
                taken[i] = true;
                matched.push(cluster.name().to_string());
            }
        }
        divide(&group.group_name, matched, length, &mut groups);
    }
    let rest = selected
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(c, _)| c.name().to_string())
        .collect();
    divide("", rest, length, &mut groups);
    if groups.is_empty() {
        groups.push(ClusterDecisionGroup::default());
    }
    Ok(groups)
}

fn divide(
    name: &str,
    mut clusters: Vec<String>,
    length: usize,
    out: &mut Vec<ClusterDecisionGroup>,
) {
    clusters.sort();
    for chunk in clusters.chunks(length.max(1)) {
        out.push(ClusterDecisionGroup {
            name: name.to_string(),
            clusters: chunk.to_vec(),
        });
    }
}

/// `<placement>-decision-<index>` (index from 1).
pub fn placement_decision_name(placement: &str, index: usize) -> String {
    format!("{placement}-decision-{index}")
}

/// The PlacementDecisions for `groups` and the placement's `status.decisionGroups`.
///
/// Each decision carries the cluster's score from `scores` (0 when absent); with
/// `sortBy: Score` the clusters of a group are ordered by score, highest first, then by name
/// (a group's members are the same either way).
pub fn placement_decisions(
    placement: &Placement,
    groups: &[ClusterDecisionGroup],
    scores: &BTreeMap<String, i64>,
) -> (Vec<PlacementDecision>, Vec<DecisionGroupStatus>) {
    let name = &placement.metadata.name;
    let score = |cluster: &str| scores.get(cluster).copied().unwrap_or(0);
    let mut decisions = Vec::new();
    let mut statuses = Vec::new();
    let mut next_index = 1;
    for (group_index, group) in groups.iter().enumerate() {
        let mut ordered = group.clusters.clone();
        if placement.spec.sort_by == Some(PlacementSortBy::Score) {
            ordered.sort_by(|a, b| score(b).cmp(&score(a)).then_with(|| a.cmp(b)));
        }
        let mut slices: Vec<&[String]> = ordered
            .chunks(MAX_DECISIONS_PER_PLACEMENT_DECISION)
            .collect();
        if slices.is_empty() {
            slices.push(&[]);
        }
        let mut names = Vec::with_capacity(slices.len());
        for slice in slices {
            let pd_name = placement_decision_name(name, next_index);
            next_index += 1;
            let mut metadata = ObjectMeta::namespaced(&placement.metadata.namespace, &pd_name);
            metadata.labels.insert(LABEL_PLACEMENT.into(), name.clone());
            metadata
                .labels
                .insert(LABEL_DECISION_GROUP_NAME.into(), group.name.clone());
            metadata
                .labels
                .insert(LABEL_DECISION_GROUP_INDEX.into(), group_index.to_string());
            metadata.owner_references.push(OwnerReference {
                api_version: Placement::API_VERSION.into(),
                kind: Placement::KIND.into(),
                name: name.clone(),
                uid: placement.metadata.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            });
            decisions.push(PlacementDecision {
                metadata,
                status: PlacementDecisionStatus {
                    decisions: slice
                        .iter()
                        .map(|c| ClusterDecision {
                            cluster_name: c.clone(),
                            reason: String::new(),
                            score: score(c),
                        })
                        .collect(),
                },
                ..Default::default()
            });
            names.push(pd_name);
        }
        statuses.push(DecisionGroupStatus {
            decision_group_index: i32::try_from(group_index).unwrap_or(i32::MAX),
            decision_group_name: group.name.clone(),
            decisions: names,
            clusters_count: i32::try_from(group.clusters.len()).unwrap_or(i32::MAX),
        });
    }
    (decisions, statuses)
}

/// The decision group `decision` belongs to, from OCM's labels: `(index, name)`. A decision
/// without them (written by an older OCM) is in group 0, unnamed.
pub fn group_of(decision: &PlacementDecision) -> (i32, String) {
    let labels = &decision.metadata.labels;
    let index = labels
        .get(LABEL_DECISION_GROUP_INDEX)
        .and_then(|i| i.parse().ok())
        .unwrap_or(0);
    let name = labels
        .get(LABEL_DECISION_GROUP_NAME)
        .cloned()
        .unwrap_or_default();
    (index, name)
}

/// Whether `decision` belongs to `placement` (same namespace, placement label).
pub fn belongs_to(decision: &PlacementDecision, placement: &Placement) -> bool {
    decision.metadata.namespace == placement.metadata.namespace
        && decision.metadata.labels.get(LABEL_PLACEMENT) == Some(&placement.metadata.name)
}

/// The existing PlacementDecisions of `placement` that `desired` no longer has: the shell
/// deletes them (OCM's `bind`).
pub fn stale_decisions<'a>(
    placement: &Placement,
    existing: &'a [PlacementDecision],
    desired: &[PlacementDecision],
) -> Vec<&'a PlacementDecision> {
    existing
        .iter()
        .filter(|pd| belongs_to(pd, placement))
        .filter(|pd| !desired.iter().any(|d| d.metadata.name == pd.metadata.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{mk_cluster, mk_decision, mk_placement};
    use ocm_edge_schemas::api::placement::DecisionGroup;

    /// OCM `calculateLength`.
    #[test]
    fn group_length_follows_ocm() {
        let s = |v: &str| IntOrString::String(v.into());
        let cases = [
            // (clustersPerDecisionGroup, total, length)
            (None, 10, Ok(10)),
            (Some(IntOrString::Int(3)), 10, Ok(3)),
            (Some(IntOrString::Int(0)), 10, Ok(10)),
            (Some(IntOrString::Int(-2)), 10, Ok(10)),
            (Some(IntOrString::Int(20)), 10, Ok(10)),
            (Some(s("25%")), 10, Ok(3)), // ceil(2.5)
            (Some(s("100%")), 10, Ok(10)),
            (Some(s("0%")), 10, Ok(10)),
            (Some(s("33.4%")), 3, Ok(2)), // ceil(1.002)
            (
                Some(s("3")),
                10,
                Err("3 invalid type: string is not a percentage".to_string()),
            ),
            (
                Some(s("x%")),
                10,
                Err("x% invalid type: string is not a percentage".to_string()),
            ),
        ];
        for (value, total, want) in cases {
            let got = group_length(value.as_ref(), total).map_err(|m| m.message);
            assert_eq!(got, want, "{value:?} of {total}");
        }
    }

    #[test]
    fn decisions_split_at_100_clusters_per_placement_decision() {
        let clusters: Vec<ManagedCluster> = (0..250)
            .map(|i| mk_cluster(&format!("c{i:03}")).build())
            .collect();
        let refs: Vec<&ManagedCluster> = clusters.iter().collect();
        let placement = mk_placement("ns", "p").build();
        let groups =
            decision_groups(&placement.spec.decision_strategy.group_strategy, &refs).unwrap();
        let (pds, status) = placement_decisions(&placement, &groups, &BTreeMap::new());
        let sizes: Vec<usize> = pds.iter().map(|pd| pd.status.decisions.len()).collect();
        assert_eq!(sizes, [100, 100, 50]);
        let names: Vec<&str> = pds.iter().map(|pd| pd.metadata.name.as_str()).collect();
        assert_eq!(names, ["p-decision-1", "p-decision-2", "p-decision-3"]);
        assert_eq!(pds[2].status.decisions[49].cluster_name, "c249");
        assert_eq!(status.len(), 1);
        assert_eq!(status[0].decisions, names);
        assert_eq!(status[0].clusters_count, 250);
        let labels = &pds[1].metadata.labels;
        assert_eq!(labels[LABEL_PLACEMENT], "p");
        assert_eq!(labels[LABEL_DECISION_GROUP_INDEX], "0");
        assert_eq!(labels[LABEL_DECISION_GROUP_NAME], "");
        let owner = &pds[0].metadata.owner_references[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("Placement", "p", "uid-p", Some(true))
        );
        assert_eq!(pds[0].metadata.namespace, "ns");
    }

    #[test]
    fn named_groups_take_their_clusters_first_and_the_rest_is_cut_by_clusters_per_group() {
        let clusters = [
            mk_cluster("e3").label("canary", "true").build(),
            mk_cluster("e1").label("canary", "true").build(),
            mk_cluster("z")
                .label("canary", "true")
                .label("prod", "true")
                .build(),
            mk_cluster("p2").label("prod", "true").build(),
            mk_cluster("p1").label("prod", "true").build(),
            mk_cluster("x").build(),
        ];
        let refs: Vec<&ManagedCluster> = clusters.iter().collect();
        let placement = mk_placement("ns", "p")
            .group("canary", &[("canary", "true")])
            .group("nothing", &[("no", "such")])
            .group("prod", &[("prod", "true")])
            .per_group(IntOrString::Int(2))
            .build();
        let groups =
            decision_groups(&placement.spec.decision_strategy.group_strategy, &refs).unwrap();
        let got: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                (
                    g.name.as_str(),
                    g.clusters.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("canary", vec!["e1", "e3"]),
                ("canary", vec!["z"]), // z matched canary first; the group is cut at 2
                ("prod", vec!["p1", "p2"]),
                ("", vec!["x"]),
            ]
        );
        let (pds, status) = placement_decisions(&placement, &groups, &BTreeMap::new());
        assert_eq!(pds.len(), 4);
        assert_eq!(status[1].decision_group_index, 1);
        assert_eq!(status[1].decision_group_name, "canary");
        assert_eq!(status[1].decisions, ["p-decision-2"]);
        assert_eq!(pds[3].metadata.labels[LABEL_DECISION_GROUP_INDEX], "3");
    }

    #[test]
    fn no_selected_cluster_still_yields_one_empty_placement_decision() {
        let placement = mk_placement("ns", "p").build();
        let groups =
            decision_groups(&placement.spec.decision_strategy.group_strategy, &[]).unwrap();
        let (pds, status) = placement_decisions(&placement, &groups, &BTreeMap::new());
        assert_eq!(pds.len(), 1);
        assert_eq!(pds[0].metadata.name, "p-decision-1");
        assert!(pds[0].status.decisions.is_empty());
        assert_eq!(status[0].clusters_count, 0);
    }

    #[test]
    fn an_invalid_group_selector_is_a_misconfiguration() {
        let c = mk_cluster("a").build();
        let mut strategy = GroupStrategy::default();
        let mut group = DecisionGroup::default();
        group
            .group_cluster_selector
            .label_selector
            .match_expressions
            .push(crate::placement::testkit::requirement(
                "k",
                ocm_edge_schemas::api::meta::LabelSelectorOperator::In,
                &[],
            ));
        strategy.decision_groups.push(group);
        assert!(decision_groups(&strategy, &[&c]).is_err());
    }

    #[test]
    fn stale_decisions_are_the_placements_own_not_in_the_desired_set() {
        let placement = mk_placement("ns", "p").build();
        let existing = vec![
            mk_decision("ns", "p", 1, &["a"]),
            mk_decision("ns", "p", 2, &["b"]),
            mk_decision("ns", "q", 3, &["c"]),
            mk_decision("other", "p", 4, &["d"]),
        ];
        let desired = vec![mk_decision("ns", "p", 1, &["a", "b"])];
        let stale: Vec<&str> = stale_decisions(&placement, &existing, &desired)
            .iter()
            .map(|pd| pd.metadata.name.as_str())
            .collect();
        assert_eq!(stale, ["p-decision-2"]);
    }
}
