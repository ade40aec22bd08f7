//! OCM API types, serde-compatible with Open Cluster Management's own JSON and YAML.
//!
//! - [`meta`]: ObjectMeta, Condition, Time/MicroTime, LabelSelector, IntOrString, Quantity,
//!   condition helpers.
//! - [`quantity`]: a Quantity's exact amount, sums of quantities (node capacity summed), its
//!   approximate float.
//! - [`cluster`]: ManagedCluster, ClusterClaim, ManagedClusterSet(Binding), constants.
//! - [`work`]: ManifestWork and the wire payloads ManifestBundle / ManifestBundleStatus.
//! - [`placement`]: Placement, PlacementDecision, AddOnPlacementScore.
//! - [`replicaset`]: ManifestWorkReplicaSet and rollout strategies.
//! - [`lease`]: coordination.k8s.io/v1 Lease.
//! - [`yaml`]: multi-document YAML loading with located errors; [`object`]: any OCM object by kind.
//!
//! Unknown fields are tolerated everywhere (and kept in `metadata`); optional fields are
//! omitted when empty, except where Go always writes them (noted on each type).

pub mod addon;
pub mod cluster;
pub mod lease;
pub mod meta;
pub mod object;
pub mod placement;
pub mod quantity;
pub mod replicaset;
pub mod work;
pub mod yaml;
