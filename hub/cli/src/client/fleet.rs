//! The admin client's calls for cluster sets, placements, replica sets and generic objects
//! (the views are in `ocm_edge_schemas::admin`).

use serde_json::Value;

use super::error::unexpected;
use super::{AdminClient, Result};
use ocm_edge_schemas::admin::{
    AdminPayload, AdminRequest, ClusterSetView, ObjectApplied, ObjectDeleted, PlacementView,
    ReplicaSetView,
};

impl AdminClient {
    /// Creates or updates a ManagedClusterSet, ManagedClusterSetBinding, Placement,
    /// AddOnPlacementScore or ManifestWorkReplicaSet (OCM's JSON).
    ///
    /// # Errors
    /// Invalid for another kind or a bad name; see [`AdminClient::request`].
    pub async fn apply_object(&self, object: Value) -> Result<ObjectApplied> {
        match self.request(&AdminRequest::ApplyObject { object }).await? {
            AdminPayload::Applied(a) => Ok(a),
            other => Err(unexpected("applyObject", &other)),
        }
    }

    /// Every cluster set with its members.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn list_cluster_sets(&self) -> Result<Vec<ClusterSetView>> {
        match self.request(&AdminRequest::ListClusterSets).await? {
            AdminPayload::ClusterSets(s) => Ok(s),
            other => Err(unexpected("listClusterSets", &other)),
        }
    }

    /// One cluster set.
    ///
    /// # Errors
    /// NotFound; see [`AdminClient::request`].
    pub async fn get_cluster_set(&self, name: &str) -> Result<ClusterSetView> {
        let req = AdminRequest::GetClusterSet {
            name: name.to_owned(),
        };
        match self.request(&req).await? {
            AdminPayload::ClusterSet(s) => Ok(*s),
            other => Err(unexpected("getClusterSet", &other)),
        }
    }

    /// Placements of one namespace, or all.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn list_placements(&self, namespace: Option<&str>) -> Result<Vec<PlacementView>> {
        let req = AdminRequest::ListPlacements {
            namespace: namespace.map(str::to_owned),
        };
        match self.request(&req).await? {
            AdminPayload::Placements(p) => Ok(p),
            other => Err(unexpected("listPlacements", &other)),
        }
    }

    /// One placement with its decisions and explanation.
    ///
    /// # Errors
    /// NotFound; see [`AdminClient::request`].
    pub async fn get_placement(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<PlacementView> {
        let req = AdminRequest::GetPlacement {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        };
        match self.request(&req).await? {
            AdminPayload::Placement(p) => Ok(*p),
            other => Err(unexpected("getPlacement", &other)),
        }
    }

    /// ManifestWorkReplicaSets of one namespace, or all.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn list_replica_sets(&self, namespace: Option<&str>) -> Result<Vec<ReplicaSetView>> {
        let req = AdminRequest::ListReplicaSets {
            namespace: namespace.map(str::to_owned),
        };
        match self.request(&req).await? {
            AdminPayload::ReplicaSets(r) => Ok(r),
            other => Err(unexpected("listReplicaSets", &other)),
        }
    }

    /// One ManifestWorkReplicaSet with its rollout table.
    ///
    /// # Errors
    /// NotFound; see [`AdminClient::request`].
    pub async fn get_replica_set(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<ReplicaSetView> {
        let req = AdminRequest::GetReplicaSet {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        };
        match self.request(&req).await? {
            AdminPayload::ReplicaSet(r) => Ok(*r),
            other => Err(unexpected("getReplicaSet", &other)),
        }
    }

    /// Deletes a cluster set, binding, placement, score or replica set.
    ///
    /// # Errors
    /// NotFound, or Invalid for an unknown kind; see [`AdminClient::request`].
    pub async fn delete_object(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<ObjectDeleted> {
        let req = AdminRequest::DeleteObject {
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        };
        match self.request(&req).await? {
            AdminPayload::Deleted(d) => Ok(d),
            other => Err(unexpected("deleteObject", &other)),
        }
    }
}
