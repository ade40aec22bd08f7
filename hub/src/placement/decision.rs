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

use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::{IntOrString, ObjectMeta, OwnerReference};
use ocm_edge_schemas::api::placement::{
    ClusterDecision, DecisionGroupStatus, GroupStrategy, LABEL_DECISION_GROUP_INDEX,
    LABEL_DECISION_GROUP_NAME, LABEL_PLACEMENT, MAX_DECISIONS_PER_PLACEMENT_DECISION, Placement,
    PlacementDecision, PlacementDecisionStatus,
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
pub fn placement_decisions(
    placement: &Placement,
    groups: &[ClusterDecisionGroup],
) -> (Vec<PlacementDecision>, Vec<DecisionGroupStatus>) {
    let name = &placement.metadata.name;
    let mut decisions = Vec::new();
    let mut statuses = Vec::new();
    let mut next_index = 1;
    for (group_index, group) in groups.iter().enumerate() {
        let mut slices: Vec<&[String]> = group
            .clusters
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
