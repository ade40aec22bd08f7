//! Admin API for cluster sets, bindings, placements, add-on scores and ManifestWorkReplicaSets:
//! the server side of their requests (pure, like [`super::server`]), building the views
//! `ocm_edge_schemas::admin::fleet_views` defines.
//!
//! # JSON shapes
//! ```json
//! {"command":"applyObject","object":{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"Placement",...}}
//! {"command":"getPlacement","namespace":"default","name":"web"}
//! {"command":"getReplicaSet","namespace":"default","name":"web"}
//! {"command":"deleteObject","kind":"Placement","namespace":"default","name":"web"}
//! ```

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{
    ManagedClusterSetBinding, ManagedClusterSetBindingSpec, SelectorType,
};
use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::object::OcmObject;
use serde_json::Value;

use super::scope::Access;
use crate::core::objects::{
    DEFAULT_NAMESPACE, ObjectError, ObjectKey, ObjectKind, PlacementRecord, ReplicaSetRecord,
    StoredObject,
};
use crate::core::{Change, HubCore};
use crate::placement::{clusterset, decision};
use ocm_edge_schemas::admin::{
    AdminErrorKind, AdminPayload, AdminResponse, ClusterSetView, DecisionView, ObjectApplied,
    ObjectDeleted, PlacementView, ReplicaSetView,
};

type Planned = Result<(Change, AdminPayload), AdminResponse>;

pub(crate) fn object_error(e: ObjectError) -> AdminResponse {
    let kind = match e {
        ObjectError::NotFound(_) => AdminErrorKind::NotFound,
        ObjectError::InvalidName(_)
        | ObjectError::HubOwned { .. }
        | ObjectError::BuiltIn(_)
        | ObjectError::Invalid(..) => AdminErrorKind::Invalid,
    };
    AdminResponse::error(kind, e.to_string())
}

fn invalid(message: String) -> AdminResponse {
    AdminResponse::error(AdminErrorKind::Invalid, message)
}

/// ApplyObject: any OCM object but ManifestWork (which has its own request).
pub fn apply_object(core: &HubCore, object: Value, now: DateTime<Utc>) -> Planned {
    let parsed = OcmObject::from_value(object).map_err(|e| invalid(e.to_string()))?;
    let stored = StoredObject::from_applied(parsed).map_err(|other| {
        invalid(format!(
            "kind {:?} cannot be applied here: ocm-edge applies ManifestWork, \
             ManagedClusterSet, ManagedClusterSetBinding, Placement, AddOnPlacementScore, \
             ManifestWorkReplicaSet, ClusterManagementAddOn, ManagedClusterAddOn, AddOnTemplate \
             and AddOnDeploymentConfig",
            other.kind()
        ))
    })?;
    stored_object(core, stored, now)
}

/// Applies `stored`; the answer says what was written.
fn stored_object(core: &HubCore, stored: StoredObject, now: DateTime<Utc>) -> Planned {
    let (change, key, outcome) = core.apply_object(stored, now).map_err(object_error)?;
    Ok((
        change,
        AdminPayload::Applied(ObjectApplied {
            kind: key.kind.to_string(),
            namespace: key.namespace,
            name: key.name,
            outcome,
        }),
    ))
}

/// DeleteObject.
pub fn delete_object(
    core: &HubCore,
    kind: &str,
    namespace: Option<String>,
    name: String,
    now: DateTime<Utc>,
) -> Planned {
    let kind = ObjectKind::parse(kind).ok_or_else(|| {
        invalid(format!(
            "unknown kind {kind:?}: use clusterset, clustersetbinding, placement, \
             addonplacementscore or manifestworkreplicaset (works: `ocm-edge work delete`)"
        ))
    })?;
    let namespace = if kind.is_namespaced() {
        namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
    } else {
        String::new()
    };
    forgotten_object(core, ObjectKey::new(kind, namespace, name), now)
}

/// Deletes the object of `key`; the answer names it.
fn forgotten_object(core: &HubCore, key: ObjectKey, now: DateTime<Utc>) -> Planned {
    let change = core.delete_object(&key, now).map_err(object_error)?;
    Ok((
        change,
        AdminPayload::Deleted(ObjectDeleted {
            kind: key.kind.to_string(),
            namespace: key.namespace,
            name: key.name,
        }),
    ))
}

/// BindClusterSet: a ManagedClusterSetBinding named after the set, in `namespace`.
pub fn bind_cluster_set(
    core: &HubCore,
    set: String,
    namespace: Option<String>,
    now: DateTime<Utc>,
) -> Planned {
    let set_key = ObjectKey::new(ObjectKind::ManagedClusterSet, "", set.clone());
    if core.objects().get(&set_key).is_none() {
        return Err(AdminResponse::error(
            AdminErrorKind::NotFound,
            format!(
                "cluster set {set:?} does not exist, so it cannot be bound: create it \
                 (`ocm-edge apply -f` a ManagedClusterSet) or bind `default` or `global`"
            ),
        ));
    }
    let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    let binding = ManagedClusterSetBinding {
        metadata: ObjectMeta::namespaced(namespace, set.clone()),
        spec: ManagedClusterSetBindingSpec { cluster_set: set },
        ..Default::default()
    };
    stored_object(core, StoredObject::Binding(Box::new(binding)), now)
}

/// UnbindClusterSet: deletes the set's binding in `namespace`.
pub fn unbind_cluster_set(
    core: &HubCore,
    set: String,
    namespace: Option<String>,
    now: DateTime<Utc>,
) -> Planned {
    let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    let key = ObjectKey::new(ObjectKind::ManagedClusterSetBinding, namespace, set);
    if core.objects().get(&key).is_none() {
        return Err(AdminResponse::error(
            AdminErrorKind::NotFound,
            format!(
                "cluster set {:?} is not bound in namespace {:?}: nothing to unbind \
                 (`ocm-edge clusterset list` shows where each set is bound)",
                key.name, key.namespace
            ),
        ));
    }
    forgotten_object(core, key, now)
}

/// Every cluster set `access` sees, with its accepted members and the namespaces it is bound
/// into that `access` sees.
pub fn cluster_sets(core: &HubCore, access: &Access) -> Vec<ClusterSetView> {
    let clusters = core.managed_clusters();
    let bindings = core.objects().bindings();
    core.objects()
        .cluster_sets()
        .into_iter()
        .filter(|s| access.sees_set(&s.metadata.name))
        .map(|s| {
            let mut members: Vec<String> = clusterset::clusters_of(&s, &clusters)
                .into_iter()
                .map(|c| c.metadata.name.clone())
                .collect();
            members.sort();
            let mut bound: Vec<String> = bindings
                .iter()
                .filter(|b| b.spec.cluster_set == s.metadata.name)
                .filter(|b| access.sees_namespace(&b.metadata.namespace))
                .map(|b| b.metadata.namespace.clone())
                .collect();
            bound.sort();
            bound.dedup();
            ClusterSetView {
                name: s.metadata.name.clone(),
                selector_type: match s.spec.cluster_selector.selector_type.unwrap_or_default() {
                    SelectorType::ExclusiveClusterSetLabel => "ExclusiveClusterSetLabel",
                    SelectorType::LabelSelector => "LabelSelector",
                }
                .to_owned(),
                clusters: members,
                bound_namespaces: bound,
                conditions: s.status.conditions.clone(),
            }
        })
        .collect()
}

/// One placement's view.
pub fn placement_view(core: &HubCore, record: &PlacementRecord) -> PlacementView {
    let mut decisions = Vec::new();
    for d in core.objects().decisions() {
        if !decision::belongs_to(&d, &record.placement) {
            continue;
        }
        let (index, group_name) = decision::group_of(&d);
        for c in &d.status.decisions {
            decisions.push(DecisionView {
                cluster: c.cluster_name.clone(),
                group_index: index,
                group_name: group_name.clone(),
                decision: d.metadata.name.clone(),
            });
        }
    }
    PlacementView {
        placement: record.placement.clone(),
        decisions,
        explanation: record.explanation.clone(),
        requeue_at: record.requeue_at,
    }
}

/// Placements, of one namespace or all that `access` sees.
pub fn placements(core: &HubCore, access: &Access, namespace: Option<&str>) -> Vec<PlacementView> {
    core.objects()
        .placements()
        .filter(|p| namespace.is_none_or(|ns| p.placement.metadata.namespace == ns))
        .filter(|p| access.sees_namespace(&p.placement.metadata.namespace))
        .map(|p| placement_view(core, p))
        .collect()
}

/// One placement.
pub fn get_placement(core: &HubCore, namespace: Option<String>, name: String) -> Planned {
    let key = ObjectKey::new(
        ObjectKind::Placement,
        namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
        name,
    );
    match core.objects().get(&key) {
        Some(StoredObject::Placement(p)) => Ok((
            Change::default(),
            AdminPayload::Placement(Box::new(placement_view(core, p))),
        )),
        _ => Err(object_error(ObjectError::NotFound(key))),
    }
}

fn replica_set_view(r: &ReplicaSetRecord) -> ReplicaSetView {
    ReplicaSetView {
        set: r.set.clone(),
        clusters: r.clusters.clone(),
        deleting: r.deleting,
        requeue_at: r.requeue_at,
        revisions: r
            .history
            .iter()
            .map(|h| ocm_edge_schemas::admin::RevisionRow {
                revision: h.revision,
                hash: h.hash.clone(),
                created: h.created,
                manifests: h
                    .template
                    .workload
                    .manifests
                    .iter()
                    .map(|m| format!("{} {}", m.kind().unwrap_or("?"), m.name().unwrap_or("?")))
                    .collect(),
            })
            .collect(),
    }
}

/// UndoRollout: the set back on a kept revision.
pub fn undo_rollout(
    core: &HubCore,
    namespace: Option<String>,
    name: String,
    to_revision: Option<i64>,
) -> Planned {
    let key = ObjectKey::new(
        ObjectKind::ManifestWorkReplicaSet,
        namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
        name,
    );
    let (change, record) = core
        .undo_replica_set(&key, to_revision)
        .map_err(object_error)?;
    Ok((
        change,
        AdminPayload::ReplicaSet(Box::new(replica_set_view(&record))),
    ))
}

/// ManifestWorkReplicaSets, of one namespace or all that `access` sees.
pub fn replica_sets(
    core: &HubCore,
    access: &Access,
    namespace: Option<&str>,
) -> Vec<ReplicaSetView> {
    core.objects()
        .replica_sets()
        .filter(|r| namespace.is_none_or(|ns| r.set.metadata.namespace == ns))
        .filter(|r| access.sees_namespace(&r.set.metadata.namespace))
        .map(replica_set_view)
        .collect()
}

/// One ManifestWorkReplicaSet.
pub fn get_replica_set(core: &HubCore, namespace: Option<String>, name: String) -> Planned {
    let key = ObjectKey::new(
        ObjectKind::ManifestWorkReplicaSet,
        namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
        name,
    );
    match core.objects().get(&key) {
        Some(StoredObject::ReplicaSet(r)) => Ok((
            Change::default(),
            AdminPayload::ReplicaSet(Box::new(replica_set_view(r))),
        )),
        _ => Err(object_error(ObjectError::NotFound(key))),
    }
}

/// RenderReplicaSet: the ManifestWork `cluster` would get from the stored set (or `object`),
/// rendered as the hub renders it before sending; nothing is stored or sent.
pub fn render_replica_set(
    core: &HubCore,
    namespace: Option<String>,
    name: String,
    cluster: String,
    object: Option<Value>,
) -> Planned {
    use ocm_edge_schemas::api::replicaset::ManifestWorkReplicaSet;
    use ocm_edge_schemas::api::work::ManifestWork;
    let set: ManifestWorkReplicaSet = match object {
        Some(object) => match OcmObject::from_value(object).map_err(|e| invalid(e.to_string()))? {
            OcmObject::ManifestWorkReplicaSet(mut s) => {
                if s.metadata.namespace.is_empty() {
                    s.metadata.namespace = DEFAULT_NAMESPACE.to_owned();
                }
                let key = ObjectKey::new(
                    ObjectKind::ManifestWorkReplicaSet,
                    s.metadata.namespace.clone(),
                    s.metadata.name.clone(),
                );
                crate::rollout::per_cluster::check(&s.spec)
                    .map_err(|e| object_error(ObjectError::Invalid(key, e)))?;
                *s
            }
            other => {
                return Err(invalid(format!(
                    "{} is not a ManifestWorkReplicaSet: only those are rendered per cluster",
                    other.kind()
                )));
            }
        },
        None => {
            let key = ObjectKey::new(
                ObjectKind::ManifestWorkReplicaSet,
                namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
                name,
            );
            match core.objects().get(&key) {
                Some(StoredObject::ReplicaSet(r)) => r.set.clone(),
                _ => return Err(object_error(ObjectError::NotFound(key))),
            }
        }
    };
    let facts = core
        .cluster_facts(&cluster, &core.objects().cluster_sets())
        .ok_or_else(|| {
            AdminResponse::error(
                AdminErrorKind::NotFound,
                format!("cluster {cluster:?} not found (see `ocm-edge cluster list`)"),
            )
        })?;
    let spec = crate::rollout::per_cluster::render(&set.spec, &facts).map_err(|e| {
        invalid(format!(
            "ManifestWorkReplicaSet {}/{} cannot be rendered for cluster {cluster}: {e}",
            set.metadata.namespace, set.metadata.name
        ))
    })?;
    let mut work = ManifestWork::new(cluster, &set.metadata.name);
    work.metadata.labels.insert(
        ocm_edge_schemas::api::replicaset::LABEL_MANIFEST_WORK_REPLICA_SET.to_owned(),
        format!("{}.{}", set.metadata.namespace, set.metadata.name),
    );
    work.spec = spec;
    Ok((Change::default(), AdminPayload::Rendered(Box::new(work))))
}

/// One cluster set (its bindings as `access` sees them).
pub fn get_cluster_set(core: &HubCore, access: &Access, name: String) -> Planned {
    match cluster_sets(core, access)
        .into_iter()
        .find(|s| s.name == name)
    {
        Some(s) => Ok((Change::default(), AdminPayload::ClusterSet(Box::new(s)))),
        None => Err(object_error(ObjectError::NotFound(ObjectKey::new(
            ObjectKind::ManagedClusterSet,
            "",
            name,
        )))),
    }
}
