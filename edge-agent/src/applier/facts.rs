//! What the agent reports about its cluster besides health, as OCM's registration agent does in
//! `ManagedCluster.status`: capacity and allocatable summed over the nodes, the node count, the
//! Kubernetes version and OCM's well-known claims. Pure: an applier reads the nodes, this sums
//! and names them, and [`ClusterFacts::write_into`] puts them in a status.

use std::collections::BTreeMap;

use ocm_edge_schemas::api::cluster::{
    CAPACITY_NODES, CLAIM_ID, CLAIM_KUBE_VERSION, CLAIM_PLATFORM, CLAIM_PRODUCT,
    ManagedClusterClaim, ManagedClusterStatus,
};
use ocm_edge_schemas::api::meta::Quantity;
use ocm_edge_schemas::api::quantity::Amount;

/// The node resources summed into the cluster's capacity and allocatable (what OCM's
/// prioritizers and a person compare; extended resources stay out, as in OCM).
pub const SUMMED_RESOURCES: [&str; 3] = ["cpu", "memory", "pods"];

/// One node as the API server describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeFacts {
    /// `metadata.name`.
    pub name: String,
    /// `spec.providerID` (`kind://docker/kind/kind-control-plane`, `aws:///eu-west-1a/i-0abc`).
    pub provider_id: String,
    /// `status.capacity`.
    pub capacity: BTreeMap<String, Quantity>,
    /// `status.allocatable`.
    pub allocatable: BTreeMap<String, Quantity>,
}

/// The cluster's facts, as last read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterFacts {
    /// [`SUMMED_RESOURCES`] summed over the nodes' `status.capacity`.
    pub capacity: BTreeMap<String, Quantity>,
    /// The same over `status.allocatable`.
    pub allocatable: BTreeMap<String, Quantity>,
    /// How many nodes the cluster has.
    pub nodes: u64,
    /// The Kubernetes git version (`v1.31.2+k3s1`), when known.
    pub version: Option<String>,
    /// The well-known claims detected (`id.k8s.io`, `kubeversion...`, `platform...`,
    /// `product...`); the operator's `--claim`s override them.
    pub claims: BTreeMap<String, String>,
    /// Node quantities that did not parse, left out of the sums (`node/resource: why`).
    pub unreadable: Vec<String>,
}

/// The distribution a cluster runs (`product.open-cluster-management.io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    K3s,
    KinD,
    Other,
}

impl Product {
    /// The claim's value, spelled as OCM spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Product::K3s => "K3s",
            Product::KinD => "KinD",
            Product::Other => "Other",
        }
    }
}

/// The distribution, from the git version and the nodes: K3s stamps `+k3s` on its version;
/// KinD gives every node a `kind://` providerID. Node names are not used: KinD's
/// `<cluster>-control-plane` is also what a kubeadm host may be called.
pub fn detect_product(version: Option<&str>, nodes: &[NodeFacts]) -> Product {
    if version.is_some_and(|v| v.contains("+k3s")) {
        Product::K3s
    } else if nodes.iter().any(|n| n.provider_id.starts_with("kind://")) {
        Product::KinD
    } else {
        Product::Other
    }
}

/// The infrastructure (`platform.open-cluster-management.io`), from the scheme of the nodes'
/// providerID, which each cloud's controller sets (`aws://`, `gce://`, ...); `Other` without one
/// (bare metal, K3s on a device, KinD).
pub fn detect_platform(nodes: &[NodeFacts]) -> &'static str {
    let scheme = nodes
        .iter()
        .find_map(|n| n.provider_id.split_once("://").map(|(scheme, _)| scheme));
    match scheme {
        Some("aws") => "AWS",
        Some("gce") => "GCP",
        Some("azure") => "Azure",
        Some("ibm") => "IBM",
        Some("vsphere") => "VSphere",
        Some("openstack") => "OpenStack",
        _ => "Other",
    }
}

/// Sums [`SUMMED_RESOURCES`] of `pick(node)` over `nodes`. A resource no node reports is left
/// out; a quantity that does not parse is left out of its sum and described in `unreadable`.
pub fn sum_resources(
    nodes: &[NodeFacts],
    pick: impl Fn(&NodeFacts) -> &BTreeMap<String, Quantity>,
    unreadable: &mut Vec<String>,
) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    for resource in SUMMED_RESOURCES {
        let mut total: Option<Amount> = None;
        for node in nodes {
            let Some(q) = pick(node).get(resource) else {
                continue;
            };
            match q
                .amount()
                .map(|a| total.unwrap_or(Amount::ZERO).checked_add(a))
            {
                Ok(Some(sum)) => total = Some(sum),
                Ok(None) => unreadable.push(format!("{}/{resource}: the sum overflows", node.name)),
                Err(e) => unreadable.push(format!("{}/{resource}: {e}", node.name)),
            }
        }
        if let Some(total) = total {
            out.insert(resource.to_owned(), total.to_quantity());
        }
    }
    out
}

impl ClusterFacts {
    /// The facts of a cluster with `nodes`, running `version`, whose kube-system namespace has
    /// the uid `cluster_id` (OCM's `id.k8s.io`: it lives as long as the cluster).
    pub fn from_nodes(
        nodes: &[NodeFacts],
        version: Option<&str>,
        cluster_id: Option<&str>,
    ) -> Self {
        let mut unreadable = Vec::new();
        let capacity = sum_resources(nodes, |n| &n.capacity, &mut unreadable);
        let allocatable = sum_resources(nodes, |n| &n.allocatable, &mut unreadable);
        let mut claims = BTreeMap::new();
        if let Some(id) = cluster_id {
            claims.insert(CLAIM_ID.to_owned(), id.to_owned());
        }
        if let Some(v) = version {
            claims.insert(CLAIM_KUBE_VERSION.to_owned(), v.to_owned());
        }
        claims.insert(CLAIM_PLATFORM.to_owned(), detect_platform(nodes).to_owned());
        claims.insert(
            CLAIM_PRODUCT.to_owned(),
            detect_product(version, nodes).as_str().to_owned(),
        );
        ClusterFacts {
            capacity,
            allocatable,
            nodes: nodes.len() as u64,
            version: version.map(str::to_owned),
            claims,
            unreadable,
        }
    }

    /// Puts the facts in `status`: capacity (with the node count), allocatable, version, and the
    /// detected claims under `operator_claims`, which win on the same name.
    pub fn write_into(
        &self,
        status: &mut ManagedClusterStatus,
        operator_claims: &[ManagedClusterClaim],
    ) {
        status.capacity = self.capacity.clone();
        // ManagedClusterStatus has no field for the node count (OCM's API: conditions,
        // capacity, allocatable, version, clusterClaims). OCM's own add-ons count what nodes
        // hold in capacity (`socket_worker`, `core_worker`), so the count is a quantity there,
        // where a person reads it beside cpu and memory; a claim would be a string that
        // placements can only match by equality.
        status
            .capacity
            .insert(CAPACITY_NODES.to_owned(), Quantity(self.nodes.to_string()));
        status.allocatable = self.allocatable.clone();
        if let Some(v) = &self.version {
            status.version.kubernetes = v.clone();
        }
        let mut claims = self.claims.clone();
        for c in operator_claims {
            claims.insert(c.name.clone(), c.value.clone());
        }
        status.cluster_claims = claims
            .into_iter()
            .map(|(name, value)| ManagedClusterClaim { name, value })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, provider_id: &str, resources: &[(&str, &str)]) -> NodeFacts {
        let map: BTreeMap<String, Quantity> = resources
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect();
        NodeFacts {
            name: name.to_owned(),
            provider_id: provider_id.to_owned(),
            capacity: map.clone(),
            allocatable: map,
        }
    }

    fn q(s: &str) -> Quantity {
        Quantity(s.to_owned())
    }

    #[test]
    fn capacity_is_the_sum_over_the_nodes_of_cpu_memory_and_pods_only() {
        let nodes = [
            node(
                "a",
                "",
                &[
                    ("cpu", "4"),
                    ("memory", "8Gi"),
                    ("pods", "110"),
                    ("nvidia.com/gpu", "1"),
                ],
            ),
            node(
                "b",
                "",
                &[("cpu", "1500m"), ("memory", "4194304Ki"), ("pods", "110")],
            ),
        ];
        let facts = ClusterFacts::from_nodes(&nodes, Some("v1.31.0"), None);
        assert_eq!(facts.capacity["cpu"], q("5500m"));
        assert_eq!(facts.capacity["memory"], q("12Gi"));
        assert_eq!(facts.capacity["pods"], q("220"));
        assert!(!facts.capacity.contains_key("nvidia.com/gpu"));
        assert_eq!(facts.nodes, 2);
        assert!(facts.unreadable.is_empty());
    }

    #[test]
    fn a_node_quantity_that_does_not_parse_is_left_out_and_named() {
        let nodes = [
            node("a", "", &[("cpu", "4")]),
            node("b", "", &[("cpu", "lots"), ("pods", "10")]),
        ];
        let facts = ClusterFacts::from_nodes(&nodes, None, None);
        assert_eq!(facts.capacity["cpu"], q("4"));
        assert_eq!(facts.capacity["pods"], q("10"));
        assert!(
            !facts.capacity.contains_key("memory"),
            "no node reports memory"
        );
        assert_eq!(
            facts.unreadable.len(),
            2,
            "capacity and allocatable: {:?}",
            facts.unreadable
        );
        assert!(
            facts.unreadable[0].starts_with("b/cpu: "),
            "{:?}",
            facts.unreadable
        );
    }

    #[test]
    fn k3s_is_known_by_its_version_and_kind_by_its_provider_ids() {
        let plain = [node("n1", "", &[])];
        let kind = [node(
            "kind-control-plane",
            "kind://docker/kind/kind-control-plane",
            &[],
        )];
        assert_eq!(detect_product(Some("v1.31.2+k3s1"), &plain), Product::K3s);
        assert_eq!(detect_product(Some("v1.31.0"), &kind), Product::KinD);
        assert_eq!(detect_product(Some("v1.31.0"), &plain), Product::Other);
        assert_eq!(detect_product(None, &[]), Product::Other);
        // A kubeadm host named like a KinD node is not KinD.
        let named = [node("kind-control-plane", "", &[])];
        assert_eq!(detect_product(Some("v1.31.0"), &named), Product::Other);
    }

    #[test]
    fn the_platform_comes_from_the_cloud_in_the_provider_id() {
        assert_eq!(
            detect_platform(&[node("n", "aws:///eu-west-1a/i-0abc", &[])]),
            "AWS"
        );
        assert_eq!(detect_platform(&[node("n", "gce://p/z/i", &[])]), "GCP");
        assert_eq!(
            detect_platform(&[node("n", "azure:///subscriptions/x", &[])]),
            "Azure"
        );
        assert_eq!(
            detect_platform(&[node("n", "kind://docker/kind/n", &[])]),
            "Other"
        );
        assert_eq!(detect_platform(&[node("n", "", &[])]), "Other");
    }

    #[test]
    fn the_status_carries_the_facts_and_the_operators_claims_win() {
        let nodes = [node("a", "", &[("cpu", "2"), ("memory", "1Gi")])];
        let facts = ClusterFacts::from_nodes(&nodes, Some("v1.30.1+k3s1"), Some("uid-1"));
        let mut status = ManagedClusterStatus::default();
        let operator = [
            ManagedClusterClaim {
                name: CLAIM_PLATFORM.to_owned(),
                value: "BareMetal".to_owned(),
            },
            ManagedClusterClaim {
                name: "region".to_owned(),
                value: "north".to_owned(),
            },
        ];
        facts.write_into(&mut status, &operator);
        assert_eq!(status.capacity[CAPACITY_NODES], q("1"));
        assert_eq!(status.capacity["cpu"], q("2"));
        assert_eq!(status.allocatable["memory"], q("1Gi"));
        assert_eq!(status.version.kubernetes, "v1.30.1+k3s1");
        let claims: BTreeMap<&str, &str> = status
            .cluster_claims
            .iter()
            .map(|c| (c.name.as_str(), c.value.as_str()))
            .collect();
        assert_eq!(claims[CLAIM_ID], "uid-1");
        assert_eq!(claims[CLAIM_KUBE_VERSION], "v1.30.1+k3s1");
        assert_eq!(claims[CLAIM_PRODUCT], "K3s");
        assert_eq!(
            claims[CLAIM_PLATFORM], "BareMetal",
            "the operator's claim wins"
        );
        assert_eq!(claims["region"], "north");
    }
}
