//! Cluster sets and bindings: which clusters a placement may choose from.
//!
//! As OCM's scheduling controller (`getValidManagedClusterSetBindings`,
//! `getEligibleClusterSets`, `getAvailableClusters`) and sdk-go's `GetClustersFromClusterSet`:
//! - a ManagedClusterSet selects clusters by the label
//!   `cluster.open-cluster-management.io/clusterset=<set>` (ExclusiveClusterSetLabel, the
//!   default) or by a label selector (LabelSelector; an empty selector selects every cluster,
//!   as the `global` set does, and a missing one selects none);
//! - a ManagedClusterSetBinding in the placement's namespace is valid when a set with the
//!   binding's name exists (OCM's webhook makes the name equal `spec.clusterSet`);
//! - the eligible sets are the valid bindings' sets, intersected with `spec.clusterSets` when
//!   that is not empty;
//! - the available clusters are the members of the eligible sets that are not being deleted.

use std::collections::{BTreeMap, BTreeSet};

use ocm_edge_schemas::api::cluster::{
    LABEL_CLUSTER_SET, ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, SelectorType,
};
use ocm_edge_schemas::api::placement::Placement;

use super::plugins::predicate;

/// Whether `set` selects `cluster`.
pub fn selects(set: &ManagedClusterSet, cluster: &ManagedCluster) -> bool {
    selects_labels(set, &cluster.metadata.labels)
}

/// Whether `set` selects a cluster labelled `labels`.
pub fn selects_labels(set: &ManagedClusterSet, labels: &BTreeMap<String, String>) -> bool {
    let selector = &set.spec.cluster_selector;
    match selector.selector_type.unwrap_or_default() {
        SelectorType::ExclusiveClusterSetLabel => {
            labels.get(LABEL_CLUSTER_SET) == Some(&set.metadata.name)
        }
        // Kubernetes' LabelSelectorAsSelector: nil selects nothing, an invalid selector is an
        // error (nothing is selected here).
        SelectorType::LabelSelector => selector
            .label_selector
            .as_ref()
            .is_some_and(|s| predicate::validate_label_selector(s).is_ok() && s.matches(labels)),
    }
}

/// The members of `set` among `clusters` (deleting ones included, as in sdk-go).
pub fn clusters_of<'a>(
    set: &ManagedClusterSet,
    clusters: &'a [ManagedCluster],
) -> Vec<&'a ManagedCluster> {
    clusters.iter().filter(|c| selects(set, c)).collect()
}

/// The names of the sets that select `cluster`, sorted.
pub fn sets_of<'a>(cluster: &ManagedCluster, sets: &'a [ManagedClusterSet]) -> Vec<&'a str> {
    let mut names: Vec<&str> = sets
        .iter()
        .filter(|s| selects(s, cluster))
        .map(|s| s.metadata.name.as_str())
        .collect();
    names.sort_unstable();
    names
}

/// The bindings in `namespace` whose set exists.
pub fn valid_bindings<'a>(
    namespace: &str,
    bindings: &'a [ManagedClusterSetBinding],
    sets: &[ManagedClusterSet],
) -> Vec<&'a ManagedClusterSetBinding> {
    bindings
        .iter()
        .filter(|b| b.metadata.namespace == namespace)
        .filter(|b| sets.iter().any(|s| s.metadata.name == b.metadata.name))
        .collect()
}

/// The sets `placement` may use: bound ones, restricted to `spec.clusterSets` when given.
/// Sorted and without duplicates.
pub fn eligible_sets(placement: &Placement, valid: &[&ManagedClusterSetBinding]) -> Vec<String> {
    let bound: BTreeSet<&str> = valid.iter().map(|b| b.metadata.name.as_str()).collect();
    let wanted = &placement.spec.cluster_sets;
    bound
        .into_iter()
        .filter(|name| wanted.is_empty() || wanted.iter().any(|w| w == name))
        .map(str::to_string)
        .collect()
}

/// Why a cluster outside the eligible sets is not available, for the explanation.
pub fn unavailable_reason(
    cluster: &ManagedCluster,
    sets: &[ManagedClusterSet],
    placement: &Placement,
) -> String {
    let member_of = sets_of(cluster, sets);
    let member_of = if member_of.is_empty() {
        "no set".to_string()
    } else {
        member_of.join(", ")
    };
    let wanted = &placement.spec.cluster_sets;
    if wanted.is_empty() {
        format!("not in any bound cluster set (member of {member_of})")
    } else {
        format!(
            "not in any bound cluster set of spec.clusterSets [{}] (member of {member_of})",
            wanted.join(",")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{mk_binding, mk_cluster, mk_label_set, mk_placement, mk_set};
    use ocm_edge_schemas::api::cluster::ManagedClusterSelector;
    use ocm_edge_schemas::api::meta::LabelSelector;

    /// sdk-go `TestGetClustersFromClusterSet`, same clusters and sets.
    #[test]
    fn sets_select_clusters_as_sdk_go() {
        let clusters = vec![
            mk_cluster("c1")
                .label("vendor", "openshift")
                .set("dev")
                .build(),
            mk_cluster("c2")
                .label("cloud", "aws")
                .label("vendor", "openshift")
                .set("dev")
                .build(),
            mk_cluster("c3").label("cloud", "aws").build(),
        ];
        let mut explicit_exclusive = mk_set("dev");
        explicit_exclusive.spec.cluster_selector.selector_type =
            Some(SelectorType::ExclusiveClusterSetLabel);
        let mut global = mk_set("global");
        global.spec.cluster_selector = ManagedClusterSelector {
            selector_type: Some(SelectorType::LabelSelector),
            label_selector: Some(LabelSelector::default()),
        };
        let mut missing_selector = mk_set("broken");
        missing_selector.spec.cluster_selector.selector_type = Some(SelectorType::LabelSelector);
        let cases = [
            ("default is exclusive", mk_set("dev"), vec!["c1", "c2"]),
            ("exclusive", explicit_exclusive, vec!["c1", "c2"]),
            (
                "label selector",
                mk_label_set("openshift", &[("vendor", "openshift")]),
                vec!["c1", "c2"],
            ),
            ("global", global, vec!["c1", "c2", "c3"]),
            ("label selector missing", missing_selector, vec![]),
        ];
        for (case, set, want) in cases {
            let got: Vec<&str> = clusters_of(&set, &clusters)
                .iter()
                .map(|c| c.name())
                .collect();
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn bindings_count_only_in_the_placement_namespace_and_for_existing_sets() {
        let sets = vec![mk_set("dev"), mk_set("prod")];
        let bindings = vec![
            mk_binding("ns", "dev"),
            mk_binding("ns", "prod"),
            mk_binding("ns", "ghost"),
            mk_binding("other", "dev"),
        ];
        let valid = valid_bindings("ns", &bindings, &sets);
        let names: Vec<&str> = valid.iter().map(|b| b.metadata.name.as_str()).collect();
        assert_eq!(names, ["dev", "prod"]);
        let all = mk_placement("ns", "p").build();
        assert_eq!(eligible_sets(&all, &valid), ["dev", "prod"]);
        let only_prod = mk_placement("ns", "p")
            .cluster_sets(&["prod", "ghost"])
            .build();
        assert_eq!(eligible_sets(&only_prod, &valid), ["prod"]);
        let none = mk_placement("ns", "p").cluster_sets(&["ghost"]).build();
        assert!(eligible_sets(&none, &valid).is_empty());
    }
}
