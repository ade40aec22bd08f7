//! [`AdminResponse`]: the hub's answer to one request, `{"ok":{...}}` or `{"error":{...}}`.

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::AdminRequest;
use super::fleet_views::{
    AddOnView, ClusterSetView, ObjectApplied, ObjectDeleted, PlacementView, ReplicaSetView,
};
use super::views::{ClusterView, HubStats, WorkView, WorkWritten};

/// The hub's answer to one [`AdminRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum AdminResponse {
    /// The command succeeded.
    Ok(AdminPayload),
    /// The command failed and changed nothing.
    Error {
        /// What kind of failure (lets the CLI pick an exit code and a hint).
        kind: AdminErrorKind,
        /// What went wrong and how to fix it, for a human.
        message: String,
    },
}

impl AdminResponse {
    /// An error response.
    pub fn error(kind: AdminErrorKind, message: impl Into<String>) -> Self {
        AdminResponse::Error {
            kind,
            message: message.into(),
        }
    }
}

/// Why a command failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum AdminErrorKind {
    /// The cluster or work does not exist.
    NotFound,
    /// A work of that name already exists (use `overwrite`).
    AlreadyExists,
    /// The request is malformed or the work fails validation.
    Invalid,
    /// The cluster exists but is not accepted (pending or denied).
    NotAccepted,
    /// The hub failed (e.g. its store); the request may be retried.
    Internal,
    /// The hub does not know the command (the client is newer than the hub): upgrade the hub or
    /// use a client of the hub's version.
    Unsupported,
    /// The answer is larger than the broker carries in one message: ask for a smaller page
    /// (`limit`).
    TooLarge,
    /// The request carries no credential the hub accepts (none, not signed by the hub's CA,
    /// expired, a bad signature, or signed at a time too far from the hub's clock): the message
    /// says which and how to fix it.
    Unauthenticated,
    /// The sender's role may not send this command (see [`crate::admin::Role`]).
    Forbidden,
    /// A kind this client does not know (sent by a newer hub).
    #[serde(other)]
    Unknown,
}

impl std::fmt::Display for AdminErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            AdminErrorKind::NotFound => "NotFound",
            AdminErrorKind::AlreadyExists => "AlreadyExists",
            AdminErrorKind::Invalid => "Invalid",
            AdminErrorKind::NotAccepted => "NotAccepted",
            AdminErrorKind::Internal => "Internal",
            AdminErrorKind::Unsupported => "Unsupported",
            AdminErrorKind::TooLarge => "TooLarge",
            AdminErrorKind::Unauthenticated => "Unauthenticated",
            AdminErrorKind::Forbidden => "Forbidden",
            AdminErrorKind::Unknown => "Unknown",
        };
        f.write_str(s)
    }
}

/// The successful result of a command; which variant answers which command is documented on
/// [`AdminRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AdminPayload {
    /// Answer to ListClusters, sorted by name.
    Clusters(Vec<ClusterView>),
    /// Answer to GetCluster, AcceptCluster, DenyCluster.
    Cluster(Box<ClusterView>),
    /// Answer to CreateWork and ApplyManifestWork.
    Written(Vec<WorkWritten>),
    /// Answer to ListWorks.
    Works(Vec<WorkView>),
    /// Answer to GetWork and DeleteWork.
    Work(Box<WorkView>),
    /// Answer to Stats.
    Stats(HubStats),
    /// Answer to ApplyObject.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Applied(ObjectApplied),
    /// Answer to ListClusterSets.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    ClusterSets(Vec<ClusterSetView>),
    /// Answer to GetClusterSet.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    ClusterSet(Box<ClusterSetView>),
    /// Answer to ListPlacements.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    Placements(Vec<PlacementView>),
    /// Answer to GetPlacement.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Placement(Box<PlacementView>),
    /// Answer to ListReplicaSets.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    ReplicaSets(Vec<ReplicaSetView>),
    /// Answer to GetReplicaSet.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    ReplicaSet(Box<ReplicaSetView>),
    /// Answer to RenderReplicaSet: the ManifestWork the cluster would get.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Rendered(Box<crate::api::work::ManifestWork>),
    /// Answer to DeleteObject.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Deleted(ObjectDeleted),
    /// Answer to ListAddOns, EnableAddOn and DisableAddOn.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    AddOns(Vec<AddOnView>),
    /// Answer to GetAddOn.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    AddOn(Box<AddOnView>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_ok_or_error_objects() {
        let ok = AdminResponse::Ok(AdminPayload::Clusters(vec![]));
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"ok":{"clusters":[]}}"#
        );
        let err = AdminResponse::error(AdminErrorKind::NotFound, "cluster \"x\" is not known");
        let text = serde_json::to_string(&err).unwrap();
        assert_eq!(
            text,
            r#"{"error":{"kind":"NotFound","message":"cluster \"x\" is not known"}}"#
        );
        assert_eq!(serde_json::from_str::<AdminResponse>(&text).unwrap(), err);
    }

    #[test]
    fn an_error_kind_from_a_newer_hub_reads_as_unknown() {
        let r: AdminResponse =
            serde_json::from_str(r#"{"error":{"kind":"Throttled","message":"m"}}"#).unwrap();
        assert_eq!(r, AdminResponse::error(AdminErrorKind::Unknown, "m"));
    }
}
