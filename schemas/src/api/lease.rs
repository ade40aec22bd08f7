//! [`Lease`] (coordination.k8s.io/v1): the agent renews its cluster's lease; the hub reads
//! `renewTime` to tell a live cluster from a silent one. Times are [`MicroTime`]s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::meta::{MicroTime, ObjectMeta, resource};

/// Name of the lease an OCM agent renews for its cluster (in the cluster's namespace on the hub).
pub const CLUSTER_LEASE_NAME: &str = "managed-cluster-lease";

/// A Kubernetes Lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// `coordination.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Lease`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Holder and times.
    #[serde(default)]
    pub spec: LeaseSpec,
}
resource!(Lease, "coordination.k8s.io/v1", "Lease", [metadata, spec]);

/// Spec of a [`Lease`]; every field optional, as in Kubernetes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaseSpec {
    /// Who holds the lease (ocm-edge: the agent id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    /// How long the holder may go without renewing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<MicroTime>,
    /// When the holder last renewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<MicroTime>,
    /// How many times the holder changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
}
