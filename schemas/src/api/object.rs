//! [`OcmObject`]: any OCM object ocm-edge understands, chosen by `apiVersion` group and `kind`,
//! for readers of mixed YAML streams such as the CLI's `apply -f`.

use serde_json::Value;

use super::addon::{
    ADDON_GROUP, AddOnDeploymentConfig, AddOnTemplate, ClusterManagementAddOn, ManagedClusterAddOn,
    convert_v1alpha1,
};
use super::cluster::{ClusterClaim, ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding};
use super::lease::Lease;
use super::placement::{AddOnPlacementScore, Placement, PlacementDecision};
use super::replicaset::ManifestWorkReplicaSet;
use super::work::ManifestWork;
use super::yaml::{YamlError, from_yaml_documents_as};

const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";
const WORK_GROUP: &str = "work.open-cluster-management.io";
const COORDINATION_GROUP: &str = "coordination.k8s.io";

/// One OCM object of a known kind, or the raw document for any other kind.
#[derive(Debug, Clone, PartialEq)]
pub enum OcmObject {
    /// cluster.open-cluster-management.io ManagedCluster.
    ManagedCluster(Box<ManagedCluster>),
    /// cluster.open-cluster-management.io ClusterClaim.
    ClusterClaim(Box<ClusterClaim>),
    /// cluster.open-cluster-management.io ManagedClusterSet.
    ManagedClusterSet(Box<ManagedClusterSet>),
    /// cluster.open-cluster-management.io ManagedClusterSetBinding.
    ManagedClusterSetBinding(Box<ManagedClusterSetBinding>),
    /// cluster.open-cluster-management.io Placement.
    Placement(Box<Placement>),
    /// cluster.open-cluster-management.io PlacementDecision.
    PlacementDecision(Box<PlacementDecision>),
    /// cluster.open-cluster-management.io AddOnPlacementScore.
    AddOnPlacementScore(Box<AddOnPlacementScore>),
    /// work.open-cluster-management.io ManifestWork.
    ManifestWork(Box<ManifestWork>),
    /// work.open-cluster-management.io ManifestWorkReplicaSet.
    ManifestWorkReplicaSet(Box<ManifestWorkReplicaSet>),
    /// coordination.k8s.io Lease.
    Lease(Box<Lease>),
    /// addon.open-cluster-management.io ClusterManagementAddOn (v1alpha1 read as converted).
    ClusterManagementAddOn(Box<ClusterManagementAddOn>),
    /// addon.open-cluster-management.io ManagedClusterAddOn (v1alpha1 read as converted).
    ManagedClusterAddOn(Box<ManagedClusterAddOn>),
    /// addon.open-cluster-management.io AddOnTemplate.
    AddOnTemplate(Box<AddOnTemplate>),
    /// addon.open-cluster-management.io AddOnDeploymentConfig.
    AddOnDeploymentConfig(Box<AddOnDeploymentConfig>),
    /// Any other kind, kept as written (the caller decides whether that is an error).
    Other(Value),
}

/// A document has a known kind but does not fit its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {name:?}: {message}")]
pub struct ObjectError {
    /// The document's kind.
    pub kind: String,
    /// Its metadata.name (empty when absent).
    pub name: String,
    /// What is wrong (from the JSON reader).
    pub message: String,
}

impl OcmObject {
    /// Picks the type from `apiVersion`'s group and `kind` (any version of the group is read
    /// with the one version ocm-edge models) and reads the document as that type.
    ///
    /// # Errors
    /// When the document has a known kind but a field of the wrong type.
    pub fn from_value(value: Value) -> Result<Self, ObjectError> {
        let group = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.split_once('/').map(|(g, _)| g.to_string()));
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let name = value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let fail = |e: serde_json::Error| ObjectError {
            kind: kind.clone(),
            name: name.clone(),
            message: e.to_string(),
        };
        Ok(match (group.as_deref(), kind.as_str()) {
            (Some(CLUSTER_GROUP), "ManagedCluster") => {
                OcmObject::ManagedCluster(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(CLUSTER_GROUP), "ClusterClaim") => {
                OcmObject::ClusterClaim(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(CLUSTER_GROUP), "ManagedClusterSet") => {
                OcmObject::ManagedClusterSet(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(CLUSTER_GROUP), "ManagedClusterSetBinding") => {
                OcmObject::ManagedClusterSetBinding(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(CLUSTER_GROUP), "Placement") => {
                OcmObject::Placement(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(CLUSTER_GROUP), "PlacementDecision") => {
                OcmObject::PlacementDecision(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(CLUSTER_GROUP), "AddOnPlacementScore") => {
                OcmObject::AddOnPlacementScore(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(WORK_GROUP), "ManifestWork") => {
                OcmObject::ManifestWork(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(WORK_GROUP), "ManifestWorkReplicaSet") => {
                OcmObject::ManifestWorkReplicaSet(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(COORDINATION_GROUP), "Lease") => {
                OcmObject::Lease(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(ADDON_GROUP), "ClusterManagementAddOn") => OcmObject::ClusterManagementAddOn(
                serde_json::from_value(convert_v1alpha1(value)).map_err(fail)?,
            ),
            (Some(ADDON_GROUP), "ManagedClusterAddOn") => OcmObject::ManagedClusterAddOn(
                serde_json::from_value(convert_v1alpha1(value)).map_err(fail)?,
            ),
            (Some(ADDON_GROUP), "AddOnTemplate") => {
                OcmObject::AddOnTemplate(serde_json::from_value(value).map_err(fail)?)
            }
            (Some(ADDON_GROUP), "AddOnDeploymentConfig") => {
                OcmObject::AddOnDeploymentConfig(serde_json::from_value(value).map_err(fail)?)
            }
            _ => OcmObject::Other(value),
        })
    }

    /// The object's kind, e.g. `ManifestWork` (for `Other`, whatever the document says).
    pub fn kind(&self) -> &str {
        match self {
            OcmObject::ManagedCluster(o) => &o.kind,
            OcmObject::ClusterClaim(o) => &o.kind,
            OcmObject::ManagedClusterSet(o) => &o.kind,
            OcmObject::ManagedClusterSetBinding(o) => &o.kind,
            OcmObject::Placement(o) => &o.kind,
            OcmObject::PlacementDecision(o) => &o.kind,
            OcmObject::AddOnPlacementScore(o) => &o.kind,
            OcmObject::ManifestWork(o) => &o.kind,
            OcmObject::ManifestWorkReplicaSet(o) => &o.kind,
            OcmObject::Lease(o) => &o.kind,
            OcmObject::ClusterManagementAddOn(o) => &o.kind,
            OcmObject::ManagedClusterAddOn(o) => &o.kind,
            OcmObject::AddOnTemplate(o) => &o.kind,
            OcmObject::AddOnDeploymentConfig(o) => &o.kind,
            OcmObject::Other(v) => v.get("kind").and_then(Value::as_str).unwrap_or_default(),
        }
    }
}

/// Reads a multi-document YAML stream as OCM objects, skipping empty documents (document
/// numbers in errors still count them, as an editor would).
///
/// # Errors
/// A [`YamlError`] naming the source and document: for invalid YAML with line and column, for
/// a known kind with a field of the wrong type with the kind, name and field.
pub fn from_yaml_objects(text: &str, source_name: &str) -> Result<Vec<OcmObject>, YamlError> {
    from_yaml_documents_as::<Value>(text, source_name)?
        .into_iter()
        .enumerate()
        .filter(|(_, value)| !value.is_null())
        .map(|(index, value)| {
            OcmObject::from_value(value).map_err(|e| YamlError {
                source_name: source_name.to_string(),
                document: index + 1,
                line: None,
                column: None,
                message: e.to_string(),
            })
        })
        .collect()
}
