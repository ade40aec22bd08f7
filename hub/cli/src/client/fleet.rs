//! The admin client's calls for cluster sets, placements, replica sets and generic objects
//! (the views are in `ocm_edge_schemas::admin`).

use serde_json::Value;

use super::error::unexpected;
use super::{AdminClient, Result};
use ocm_edge_schemas::admin::{
    AddOnView, AdminPayload, AdminRequest, ClusterAddOnRow, ClusterSetView, ClusterView,
    ObjectApplied, ObjectDeleted, PlacementView, ReplicaSetView,
};

impl AdminClient {
    /// Creates or updates a ManagedClusterSet, ManagedClusterSetBinding, Placement,
    /// AddOnPlacementScore or ManifestWorkReplicaSet (OCM's JSON).
    ///
    /// # Errors
    /// Invalid for another kind or a bad name; see [`AdminClient::request`].
    pub async fn apply_object(&self, object: Value) -> Result<ObjectApplied> {
        self.applied_call(AdminRequest::ApplyObject { object })
            .await
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

    /// Rolls a ManifestWorkReplicaSet back to a kept revision (the previous one when `to` is
    /// absent); returns the set.
    ///
    /// # Errors
    /// NotFound, Invalid (no such revision); see [`AdminClient::request`].
    pub async fn undo_rollout(
        &self,
        namespace: Option<&str>,
        name: &str,
        to: Option<i64>,
    ) -> Result<ReplicaSetView> {
        let req = AdminRequest::UndoRollout {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            to_revision: to,
        };
        match self.request(&req).await? {
            AdminPayload::ReplicaSet(r) => Ok(*r),
            other => Err(unexpected("undoRollout", &other)),
        }
    }

    /// The work a ManifestWorkReplicaSet (the stored one, or `object`) gives `cluster`.
    ///
    /// # Errors
    /// NotFound, Invalid (why the cluster cannot get it); see [`AdminClient::request`].
    pub async fn render_replica_set(
        &self,
        namespace: Option<&str>,
        name: &str,
        cluster: &str,
        object: Option<serde_json::Value>,
    ) -> Result<ocm_edge_schemas::api::work::ManifestWork> {
        let req = AdminRequest::RenderReplicaSet {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            cluster: cluster.to_owned(),
            object,
        };
        match self.request(&req).await? {
            AdminPayload::Rendered(w) => Ok(*w),
            other => Err(unexpected("renderReplicaSet", &other)),
        }
    }

    /// Puts accepted clusters in an ExclusiveClusterSetLabel set; returns their new views.
    ///
    /// # Errors
    /// NotFound (set or cluster), NotAccepted, Invalid (a LabelSelector set); nothing changes
    /// then; see [`AdminClient::request`].
    pub async fn set_cluster_set(
        &self,
        set: &str,
        clusters: Vec<String>,
    ) -> Result<Vec<ClusterView>> {
        let req = AdminRequest::SetClusterSet {
            set: set.to_owned(),
            clusters,
        };
        match self.request(&req).await? {
            AdminPayload::Clusters(c) => Ok(c),
            other => Err(unexpected("setClusterSet", &other)),
        }
    }

    /// Binds a cluster set to a namespace (`default` when `None`).
    ///
    /// # Errors
    /// NotFound when the set does not exist; see [`AdminClient::request`].
    pub async fn bind_cluster_set(
        &self,
        set: &str,
        namespace: Option<&str>,
    ) -> Result<ObjectApplied> {
        let req = AdminRequest::BindClusterSet {
            set: set.to_owned(),
            namespace: namespace.map(str::to_owned),
        };
        self.applied_call(req).await
    }

    /// Removes a cluster set's binding from a namespace (`default` when `None`).
    ///
    /// # Errors
    /// NotFound when the set is not bound there; see [`AdminClient::request`].
    pub async fn unbind_cluster_set(
        &self,
        set: &str,
        namespace: Option<&str>,
    ) -> Result<ObjectDeleted> {
        let req = AdminRequest::UnbindClusterSet {
            set: set.to_owned(),
            namespace: namespace.map(str::to_owned),
        };
        self.deleted_call(req).await
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
        self.deleted_call(req).await
    }

    async fn applied_call(&self, req: AdminRequest) -> Result<ObjectApplied> {
        let command = req.command();
        match self.request(&req).await? {
            AdminPayload::Applied(a) => Ok(a),
            other => Err(unexpected(command, &other)),
        }
    }

    async fn deleted_call(&self, req: AdminRequest) -> Result<ObjectDeleted> {
        let command = req.command();
        match self.request(&req).await? {
            AdminPayload::Deleted(d) => Ok(d),
            other => Err(unexpected(command, &other)),
        }
    }
}

impl AdminClient {
    /// Every add-on with the clusters it is enabled on.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn list_addons(&self) -> Result<Vec<AddOnView>> {
        match self.request(&AdminRequest::ListAddOns).await? {
            AdminPayload::AddOns(a) => Ok(a),
            other => Err(unexpected("listAddOns", &other)),
        }
    }

    /// One add-on (only `cluster`'s row when given).
    ///
    /// # Errors
    /// NotFound; see [`AdminClient::request`].
    pub async fn get_addon(&self, name: &str, cluster: Option<&str>) -> Result<AddOnView> {
        let ask = |after: Option<String>, limit: Option<u32>| AdminRequest::GetAddOn {
            name: name.to_owned(),
            cluster: cluster.map(str::to_owned),
            after,
            limit,
        };
        let take = |payload| match payload {
            AdminPayload::AddOn(a) => Ok(*a),
            other => Err(unexpected("getAddOn", &other)),
        };
        // The add-on and its first page of rows, then the rest a page at a time.
        let mut view = take(self.request(&ask(None, Some(0))).await?)?;
        view.clusters = self
            .list_paged(
                |last: Option<&ClusterAddOnRow>, limit| {
                    ask(last.map(|r| r.cluster.clone()), Some(limit))
                },
                |payload| take(payload).map(|v| v.clusters),
            )
            .await?;
        Ok(view)
    }

    /// Enables (`enable`) or disables add-ons on clusters; returns the add-ons' views.
    ///
    /// # Errors
    /// NotFound for an unknown add-on or cluster, Invalid when an add-on's checks refuse it;
    /// see [`AdminClient::request`].
    /// Approves the MQTT identities the agents of `clusters` asked for `names` (add-ons whose
    /// approval is Manual).
    ///
    /// # Errors
    /// NotFound for an unknown add-on or one not enabled on a cluster, Invalid when a cluster's
    /// agent has not asked yet; see [`AdminClient::request`].
    pub async fn approve_addons(
        &self,
        names: Vec<String>,
        clusters: Vec<String>,
    ) -> Result<Vec<AddOnView>> {
        match self
            .request(&AdminRequest::ApproveAddOn { names, clusters })
            .await?
        {
            AdminPayload::AddOns(a) => Ok(a),
            other => Err(unexpected("approveAddOn", &other)),
        }
    }

    pub async fn switch_addons(
        &self,
        enable: bool,
        names: Vec<String>,
        clusters: Vec<String>,
        namespace: Option<String>,
    ) -> Result<Vec<AddOnView>> {
        let (req, command) = if enable {
            (
                AdminRequest::EnableAddOn {
                    names,
                    clusters,
                    namespace,
                },
                "enableAddOn",
            )
        } else {
            (
                AdminRequest::DisableAddOn { names, clusters },
                "disableAddOn",
            )
        };
        match self.request(&req).await? {
            AdminPayload::AddOns(a) => Ok(a),
            other => Err(unexpected(command, &other)),
        }
    }
}
