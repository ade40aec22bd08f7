//! The OCM objects the hub keeps besides clusters and works: ManagedClusterSets,
//! ManagedClusterSetBindings, Placements (with their scheduling explanation), PlacementDecisions,
//! AddOnPlacementScores and ManifestWorkReplicaSets (with their rollout view).
//!
//! Operators create them with `ocm-edge apply -f` (OCM's YAML); the hub writes decisions, scores
//! from agents and statuses. Every object is one [`StoredObject`] keyed by [`ObjectKey`]; applying
//! one keeps the hub-owned parts (status, explanation) of an existing object.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::{RolloutRow, WriteOutcome};
use ocm_edge_schemas::api::addon::{
    AddOnDeploymentConfig, AddOnTemplate, ClusterManagementAddOn, ManagedClusterAddOn,
};
use ocm_edge_schemas::api::cluster::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::object::OcmObject;
use ocm_edge_schemas::api::placement::{AddOnPlacementScore, Placement, PlacementDecision};
use ocm_edge_schemas::api::replicaset::ManifestWorkReplicaSet;
use ocm_edge_schemas::wire::topic::is_valid_name;
use serde::{Deserialize, Serialize};

use super::{Change, HubCore, Record, time};
use crate::placement::Explanation;

/// Namespace of namespaced objects applied without one (as kubectl).
pub const DEFAULT_NAMESPACE: &str = "default";

/// The kinds the hub stores here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ObjectKind {
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    AddOnPlacementScore,
    ManifestWorkReplicaSet,
    ClusterManagementAddOn,
    ManagedClusterAddOn,
    AddOnTemplate,
    AddOnDeploymentConfig,
}

impl ObjectKind {
    /// Every kind.
    pub const ALL: [ObjectKind; 10] = [
        ObjectKind::ManagedClusterSet,
        ObjectKind::ManagedClusterSetBinding,
        ObjectKind::Placement,
        ObjectKind::PlacementDecision,
        ObjectKind::AddOnPlacementScore,
        ObjectKind::ManifestWorkReplicaSet,
        ObjectKind::ClusterManagementAddOn,
        ObjectKind::ManagedClusterAddOn,
        ObjectKind::AddOnTemplate,
        ObjectKind::AddOnDeploymentConfig,
    ];

    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::ManagedClusterSet => "ManagedClusterSet",
            ObjectKind::ManagedClusterSetBinding => "ManagedClusterSetBinding",
            ObjectKind::Placement => "Placement",
            ObjectKind::PlacementDecision => "PlacementDecision",
            ObjectKind::AddOnPlacementScore => "AddOnPlacementScore",
            ObjectKind::ManifestWorkReplicaSet => "ManifestWorkReplicaSet",
            ObjectKind::ClusterManagementAddOn => "ClusterManagementAddOn",
            ObjectKind::ManagedClusterAddOn => "ManagedClusterAddOn",
            ObjectKind::AddOnTemplate => "AddOnTemplate",
            ObjectKind::AddOnDeploymentConfig => "AddOnDeploymentConfig",
        }
    }

    /// Whether objects of this kind live in a namespace (cluster sets, add-ons and add-on
    /// templates do not).
    pub fn is_namespaced(self) -> bool {
        !matches!(
            self,
            ObjectKind::ManagedClusterSet
                | ObjectKind::ClusterManagementAddOn
                | ObjectKind::AddOnTemplate
        )
    }

    /// Reads a kind as a user types it: the kind, lower case, plural or OCM's short names.
    pub fn parse(text: &str) -> Option<ObjectKind> {
        let t = text.to_ascii_lowercase();
        let t = t.trim_end_matches('s');
        Some(match t {
            "managedclusterset" | "clusterset" => ObjectKind::ManagedClusterSet,
            "managedclustersetbinding" | "clustersetbinding" | "binding" => {
                ObjectKind::ManagedClusterSetBinding
            }
            "placement" => ObjectKind::Placement,
            "placementdecision" => ObjectKind::PlacementDecision,
            "addonplacementscore" => ObjectKind::AddOnPlacementScore,
            "manifestworkreplicaset" | "mwr" | "replicaset" => ObjectKind::ManifestWorkReplicaSet,
            "clustermanagementaddon" | "cma" | "addon" => ObjectKind::ClusterManagementAddOn,
            "managedclusteraddon" | "mca" => ObjectKind::ManagedClusterAddOn,
            "addontemplate" => ObjectKind::AddOnTemplate,
            "addondeploymentconfig" => ObjectKind::AddOnDeploymentConfig,
            _ => return None,
        })
    }
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identity of a stored object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    pub kind: ObjectKind,
    /// Empty for cluster-scoped kinds.
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: ObjectKind, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// A Placement with what the hub's scheduler last said about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementRecord {
    pub placement: Placement,
    /// Why each cluster was or was not selected (last scheduling pass).
    pub explanation: Option<Explanation>,
    /// Schedule again at this time (a toleration expires, a score goes stale).
    pub requeue_at: Option<DateTime<Utc>>,
}

/// A ManifestWorkReplicaSet with its rollout state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaSetRecord {
    pub set: ManifestWorkReplicaSet,
    /// When the hub sent the current template to each cluster (progressDeadline counts from it).
    pub sent: BTreeMap<String, DateTime<Utc>>,
    /// Every selected cluster's rollout status (last evaluation).
    pub clusters: Vec<RolloutRow>,
    /// Evaluate again at this time (a deadline or a soak time ends).
    pub requeue_at: Option<DateTime<Utc>>,
    /// Deletion requested: the set's works are being deleted; forgotten once they are gone.
    #[serde(default)]
    pub deleting: bool,
    /// Clusters the template cannot be rendered for (`spec.perCluster`), since when and why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unrenderable: BTreeMap<String, crate::rollout::Unrenderable>,
    /// The template's kept revisions, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<crate::rollout::history::Revision>,
    /// The rollout of the spec's revision was aborted and rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<crate::rollout::history::Aborted>,
}

/// One stored object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoredObject {
    ClusterSet(Box<ManagedClusterSet>),
    Binding(Box<ManagedClusterSetBinding>),
    Placement(Box<PlacementRecord>),
    Decision(Box<PlacementDecision>),
    Score(Box<AddOnPlacementScore>),
    ReplicaSet(Box<ReplicaSetRecord>),
    AddOn(Box<ClusterManagementAddOn>),
    ClusterAddOn(Box<ManagedClusterAddOn>),
    AddOnTemplate(Box<AddOnTemplate>),
    AddOnConfig(Box<AddOnDeploymentConfig>),
}

impl StoredObject {
    /// A freshly applied object as the hub stores it (no scheduling or rollout state yet), or the
    /// object back when its kind is not applied as a stored object (ManifestWork, clusters,
    /// decisions, ...).
    ///
    /// # Errors
    /// The object itself, for a kind that cannot be stored this way.
    pub fn from_applied(object: OcmObject) -> Result<Self, OcmObject> {
        Ok(match object {
            OcmObject::ManagedClusterSet(o) => StoredObject::ClusterSet(o),
            OcmObject::ManagedClusterSetBinding(o) => StoredObject::Binding(o),
            OcmObject::Placement(o) => StoredObject::Placement(Box::new(PlacementRecord {
                placement: *o,
                explanation: None,
                requeue_at: None,
            })),
            OcmObject::AddOnPlacementScore(o) => StoredObject::Score(o),
            OcmObject::ClusterManagementAddOn(o) => StoredObject::AddOn(o),
            OcmObject::ManagedClusterAddOn(o) => StoredObject::ClusterAddOn(o),
            OcmObject::AddOnTemplate(o) => StoredObject::AddOnTemplate(o),
            OcmObject::AddOnDeploymentConfig(o) => StoredObject::AddOnConfig(o),
            OcmObject::ManifestWorkReplicaSet(o) => {
                StoredObject::ReplicaSet(Box::new(ReplicaSetRecord {
                    set: *o,
                    sent: Default::default(),
                    clusters: vec![],
                    requeue_at: None,
                    deleting: false,
                    unrenderable: Default::default(),
                    history: Vec::new(),
                    aborted: None,
                }))
            }
            other => return Err(other),
        })
    }

    pub fn kind(&self) -> ObjectKind {
        match self {
            StoredObject::ClusterSet(_) => ObjectKind::ManagedClusterSet,
            StoredObject::Binding(_) => ObjectKind::ManagedClusterSetBinding,
            StoredObject::Placement(_) => ObjectKind::Placement,
            StoredObject::Decision(_) => ObjectKind::PlacementDecision,
            StoredObject::Score(_) => ObjectKind::AddOnPlacementScore,
            StoredObject::ReplicaSet(_) => ObjectKind::ManifestWorkReplicaSet,
            StoredObject::AddOn(_) => ObjectKind::ClusterManagementAddOn,
            StoredObject::ClusterAddOn(_) => ObjectKind::ManagedClusterAddOn,
            StoredObject::AddOnTemplate(_) => ObjectKind::AddOnTemplate,
            StoredObject::AddOnConfig(_) => ObjectKind::AddOnDeploymentConfig,
        }
    }

    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            StoredObject::ClusterSet(o) => &o.metadata,
            StoredObject::Binding(o) => &o.metadata,
            StoredObject::Placement(o) => &o.placement.metadata,
            StoredObject::Decision(o) => &o.metadata,
            StoredObject::Score(o) => &o.metadata,
            StoredObject::ReplicaSet(o) => &o.set.metadata,
            StoredObject::AddOn(o) => &o.metadata,
            StoredObject::ClusterAddOn(o) => &o.metadata,
            StoredObject::AddOnTemplate(o) => &o.metadata,
            StoredObject::AddOnConfig(o) => &o.metadata,
        }
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            StoredObject::ClusterSet(o) => &mut o.metadata,
            StoredObject::Binding(o) => &mut o.metadata,
            StoredObject::Placement(o) => &mut o.placement.metadata,
            StoredObject::Decision(o) => &mut o.metadata,
            StoredObject::Score(o) => &mut o.metadata,
            StoredObject::ReplicaSet(o) => &mut o.set.metadata,
            StoredObject::AddOn(o) => &mut o.metadata,
            StoredObject::ClusterAddOn(o) => &mut o.metadata,
            StoredObject::AddOnTemplate(o) => &mut o.metadata,
            StoredObject::AddOnConfig(o) => &mut o.metadata,
        }
    }

    /// The add-on, when this is one.
    pub fn as_addon(&self) -> Option<&ClusterManagementAddOn> {
        match self {
            StoredObject::AddOn(a) => Some(a),
            _ => None,
        }
    }

    /// The cluster's add-on, when this is one.
    pub fn as_cluster_addon(&self) -> Option<&ManagedClusterAddOn> {
        match self {
            StoredObject::ClusterAddOn(a) => Some(a),
            _ => None,
        }
    }

    pub fn key(&self) -> ObjectKey {
        let m = self.metadata();
        ObjectKey::new(self.kind(), m.namespace.clone(), m.name.clone())
    }
}

/// Why an object cannot be applied or deleted. Not retryable as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    #[error("{0} has an invalid name: names must match [a-z0-9-]+ (also used in MQTT topics)")]
    InvalidName(ObjectKey),
    #[error("{0} does not exist")]
    NotFound(ObjectKey),
    /// An object the hub refuses as it is (an add-on whose config does not exist, ...).
    #[error("{0}: {1}; nothing was changed")]
    Invalid(ObjectKey, String),
    #[error("{kind} objects are written by the hub, not applied: {why}")]
    HubOwned { kind: ObjectKind, why: &'static str },
    #[error(
        "{0} is built in: the hub keeps the `default` set (accepted clusters put in no other set) \
         and the `global` set (every cluster); to stop placing on it, delete its \
         ManagedClusterSetBindings (`ocm-edge clusterset unbind`)"
    )]
    BuiltIn(ObjectKey),
}

/// The objects, by key.
#[derive(Debug, Default)]
pub struct Objects {
    pub(crate) by_key: BTreeMap<ObjectKey, StoredObject>,
}

impl Objects {
    pub fn get(&self, key: &ObjectKey) -> Option<&StoredObject> {
        self.by_key.get(key)
    }

    /// Objects of one kind, sorted by (namespace, name).
    pub fn of_kind(&self, kind: ObjectKind) -> impl Iterator<Item = &StoredObject> {
        let start = ObjectKey::new(kind, "", "");
        self.by_key
            .range(start..)
            .take_while(move |(k, _)| k.kind == kind)
            .map(|(_, o)| o)
    }

    /// Objects of one kind in one namespace, sorted by name.
    pub fn in_namespace<'a>(
        &'a self,
        kind: ObjectKind,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a StoredObject> + 'a {
        let start = ObjectKey::new(kind, namespace, "");
        self.by_key
            .range(start..)
            .take_while(move |(k, _)| k.kind == kind && k.namespace == namespace)
            .map(|(_, o)| o)
    }

    /// Whether `cluster` has add-on `addon` installed by a placement (whose rollout a status
    /// of its work may move on).
    pub fn placed_addon(&self, cluster: &str, addon: &str) -> bool {
        self.get(&ObjectKey::new(
            ObjectKind::ManagedClusterAddOn,
            cluster,
            addon,
        ))
        .and_then(StoredObject::as_cluster_addon)
        .is_some_and(|m| {
            m.metadata
                .annotations
                .contains_key(crate::addon::INSTALLED_BY_PLACEMENT_ANNOTATION)
        })
    }

    /// Whether any cluster has an add-on.
    pub fn has_cluster_addons(&self) -> bool {
        self.of_kind(ObjectKind::ManagedClusterAddOn)
            .next()
            .is_some()
    }

    pub fn cluster_sets(&self) -> Vec<ManagedClusterSet> {
        self.of_kind(ObjectKind::ManagedClusterSet)
            .filter_map(|o| match o {
                StoredObject::ClusterSet(s) => Some((**s).clone()),
                _ => None,
            })
            .collect()
    }

    pub fn bindings(&self) -> Vec<ManagedClusterSetBinding> {
        self.of_kind(ObjectKind::ManagedClusterSetBinding)
            .filter_map(|o| match o {
                StoredObject::Binding(b) => Some((**b).clone()),
                _ => None,
            })
            .collect()
    }

    pub fn placements(&self) -> impl Iterator<Item = &PlacementRecord> {
        self.of_kind(ObjectKind::Placement).filter_map(|o| match o {
            StoredObject::Placement(p) => Some(p.as_ref()),
            _ => None,
        })
    }

    pub fn decisions(&self) -> Vec<PlacementDecision> {
        self.of_kind(ObjectKind::PlacementDecision)
            .filter_map(|o| match o {
                StoredObject::Decision(d) => Some((**d).clone()),
                _ => None,
            })
            .collect()
    }

    pub fn scores(&self) -> Vec<AddOnPlacementScore> {
        self.of_kind(ObjectKind::AddOnPlacementScore)
            .filter_map(|o| match o {
                StoredObject::Score(s) => Some((**s).clone()),
                _ => None,
            })
            .collect()
    }

    pub fn replica_sets(&self) -> impl Iterator<Item = &ReplicaSetRecord> {
        self.of_kind(ObjectKind::ManifestWorkReplicaSet)
            .filter_map(|o| match o {
                StoredObject::ReplicaSet(r) => Some(r.as_ref()),
                _ => None,
            })
    }

    pub(crate) fn apply(&mut self, record: &Record) {
        match record {
            Record::Object(o) => {
                self.by_key.insert(o.key(), (**o).clone());
            }
            Record::ForgetObject(key) => {
                self.by_key.remove(key);
            }
            _ => {}
        }
    }
}

impl HubCore {
    /// An AddOnPlacementScore from an accepted cluster: stored in the cluster's namespace (the
    /// topic says which cluster sent it, whatever the payload claims).
    pub(crate) fn addon_score(&self, cluster: &str, mut score: AddOnPlacementScore) -> Change {
        score.metadata.namespace = cluster.to_owned();
        if !is_valid_name(&score.metadata.name) {
            tracing::warn!(%cluster, name = %score.metadata.name, "AddOnPlacementScore with an invalid name dropped");
            return self.count(super::counter::MALFORMED);
        }
        let key = ObjectKey::new(
            ObjectKind::AddOnPlacementScore,
            cluster,
            score.metadata.name.clone(),
        );
        if matches!(self.objects().get(&key), Some(StoredObject::Score(old)) if old.status == score.status)
        {
            return Change::default();
        }
        Change {
            records: vec![Record::Object(Box::new(StoredObject::Score(Box::new(
                score,
            ))))],
            outbound: vec![],
        }
    }

    /// Creates or updates an object an operator applied (`ocm-edge apply -f`), like
    /// `kubectl apply`: the spec, labels and annotations are the operator's, the status and the
    /// hub's bookkeeping are kept.
    ///
    /// # Errors
    /// [`ObjectError`] for a bad name or a hub-owned kind (PlacementDecision).
    pub fn apply_object(
        &self,
        mut object: StoredObject,
        now: DateTime<Utc>,
    ) -> Result<(Change, ObjectKey, WriteOutcome), ObjectError> {
        let kind = object.kind();
        if kind == ObjectKind::PlacementDecision {
            return Err(ObjectError::HubOwned {
                kind,
                why: "the hub's scheduler writes PlacementDecisions for each Placement",
            });
        }
        {
            let m = object.metadata_mut();
            if kind.is_namespaced() && m.namespace.is_empty() {
                m.namespace = DEFAULT_NAMESPACE.to_owned();
            }
            if !kind.is_namespaced() {
                m.namespace.clear();
            }
        }
        let key = object.key();
        if !is_valid_name(&key.name) || (kind.is_namespaced() && !is_valid_name(&key.namespace)) {
            return Err(ObjectError::InvalidName(key));
        }
        self.check_addon_object(&object)?;
        if let StoredObject::ReplicaSet(r) = &object {
            crate::rollout::per_cluster::check(&r.set.spec)
                .map_err(|e| ObjectError::Invalid(key.clone(), e))?;
        }
        if let StoredObject::Placement(p) = &object {
            check_cel_selectors(&key, &p.placement)?;
            p.placement
                .spec
                .score_rate_limit()
                .map_err(|e| ObjectError::Invalid(key.clone(), e))?;
        }
        let existing = self.objects().get(&key);
        let mut merged = match (object, existing) {
            (StoredObject::Placement(mut new), Some(StoredObject::Placement(old))) => {
                new.placement.status = old.placement.status.clone();
                new.explanation = old.explanation.clone();
                new.requeue_at = old.requeue_at;
                StoredObject::Placement(new)
            }
            (StoredObject::ReplicaSet(mut new), Some(StoredObject::ReplicaSet(old))) => {
                new.set.status = old.set.status.clone();
                new.sent = old.sent.clone();
                new.clusters = old.clusters.clone();
                new.requeue_at = old.requeue_at;
                new.unrenderable = old.unrenderable.clone();
                new.history = old.history.clone();
                new.aborted = old.aborted.clone();
                StoredObject::ReplicaSet(new)
            }
            // A set's and a binding's conditions are the hub's.
            (StoredObject::ClusterSet(mut new), Some(StoredObject::ClusterSet(old))) => {
                new.status = old.status.clone();
                StoredObject::ClusterSet(new)
            }
            (StoredObject::Binding(mut new), Some(StoredObject::Binding(old))) => {
                new.status = old.status.clone();
                StoredObject::Binding(new)
            }
            // An add-on's status and a cluster's add-on status are the hub's.
            (StoredObject::AddOn(mut new), Some(StoredObject::AddOn(old))) => {
                new.status = old.status.clone();
                StoredObject::AddOn(new)
            }
            (StoredObject::ClusterAddOn(mut new), Some(StoredObject::ClusterAddOn(old))) => {
                if old.metadata.deletion_timestamp.is_some() {
                    return Err(ObjectError::Invalid(
                        key,
                        "it is being removed (its pre-delete hooks run): apply it again once \
                         it is gone"
                            .into(),
                    ));
                }
                new.status = old.status.clone();
                // The hub's own annotations (who installed it, when its rollout sent it) stay.
                for hub_owned in crate::addon::HUB_OWNED_ANNOTATIONS {
                    match old.metadata.annotations.get(hub_owned) {
                        Some(v) => {
                            new.metadata
                                .annotations
                                .insert(hub_owned.to_owned(), v.clone());
                        }
                        None => {
                            new.metadata.annotations.remove(hub_owned);
                        }
                    }
                }
                StoredObject::ClusterAddOn(new)
            }
            (StoredObject::AddOn(mut new), None) => {
                new.status = Default::default();
                StoredObject::AddOn(new)
            }
            (StoredObject::ClusterAddOn(mut new), None) => {
                new.status = Default::default();
                for hub_owned in crate::addon::HUB_OWNED_ANNOTATIONS {
                    new.metadata.annotations.remove(hub_owned);
                }
                StoredObject::ClusterAddOn(new)
            }
            (StoredObject::ClusterSet(mut new), None) => {
                new.status = Default::default();
                StoredObject::ClusterSet(new)
            }
            (StoredObject::Binding(mut new), None) => {
                new.status = Default::default();
                StoredObject::Binding(new)
            }
            (StoredObject::Placement(mut new), None) => {
                new.placement.status = Default::default();
                StoredObject::Placement(new)
            }
            (StoredObject::ReplicaSet(mut new), None) => {
                new.set.status = Default::default();
                StoredObject::ReplicaSet(new)
            }
            (o, _) => o,
        };
        // Keep identity and creation time across applies; drop what a client must not set.
        let keep = existing.map(|e| e.metadata().clone());
        {
            let m = merged.metadata_mut();
            m.deletion_timestamp = None;
            m.resource_version.clear();
            match &keep {
                Some(old) => {
                    m.uid = old.uid.clone();
                    m.creation_timestamp = old.creation_timestamp;
                    m.generation = old.generation;
                }
                None => {
                    m.uid = uuid::Uuid::new_v4().to_string();
                    m.creation_timestamp = Some(time(now));
                    m.generation = 1;
                }
            }
        }
        let outcome = match existing {
            None => WriteOutcome::Created,
            Some(old) if *old == merged => WriteOutcome::Unchanged,
            Some(_) => {
                merged.metadata_mut().generation += 1;
                WriteOutcome::Updated
            }
        };
        let change = if outcome == WriteOutcome::Unchanged {
            Change::default()
        } else {
            Change {
                records: vec![Record::Object(Box::new(merged))],
                outbound: vec![],
            }
        };
        Ok((change, key, outcome))
    }

    /// Deletes an object. A ManifestWorkReplicaSet deletes its works (with
    /// `cascadeDeletionPolicy: Foreground` it is forgotten only once they are gone); a Placement
    /// takes its PlacementDecisions with it.
    ///
    /// # Errors
    /// [`ObjectError::NotFound`].
    pub fn delete_object(
        &self,
        key: &ObjectKey,
        now: DateTime<Utc>,
    ) -> Result<Change, ObjectError> {
        let object = self
            .objects()
            .get(key)
            .ok_or_else(|| ObjectError::NotFound(key.clone()))?;
        if key.kind == ObjectKind::ManagedClusterSet
            && crate::placement::set_status::is_builtin_set(&key.name)
        {
            return Err(ObjectError::BuiltIn(key.clone()));
        }
        let mut change = Change::default();
        match object {
            StoredObject::ReplicaSet(r) => {
                let mut r = r.clone();
                r.deleting = true;
                r.set.metadata.deletion_timestamp = Some(time(now));
                change
                    .records
                    .push(Record::Object(Box::new(StoredObject::ReplicaSet(r))));
            }
            StoredObject::Placement(p) => {
                for d in self.objects().decisions() {
                    if crate::placement::decision::belongs_to(&d, &p.placement) {
                        change.records.push(Record::ForgetObject(ObjectKey::new(
                            ObjectKind::PlacementDecision,
                            d.metadata.namespace.clone(),
                            d.metadata.name.clone(),
                        )));
                    }
                }
                change.records.push(Record::ForgetObject(key.clone()));
            }
            // A cluster's add-on takes its agent's work with it; an add-on, every cluster's.
            StoredObject::ClusterAddOn(mca) => {
                self.check_disable(mca)?;
                change.extend(self.disable_addon(mca, now));
            }
            StoredObject::AddOnTemplate(_) | StoredObject::AddOnConfig(_) => {
                self.check_config_unused(key)?;
                change.records.push(Record::ForgetObject(key.clone()));
            }
            StoredObject::AddOn(_) => {
                for mca in self
                    .cluster_addons()
                    .filter(|m| m.metadata.name == key.name)
                {
                    change.extend(self.disable_addon(mca, now));
                }
                change.records.push(Record::ForgetObject(key.clone()));
            }
            _ => change.records.push(Record::ForgetObject(key.clone())),
        }
        Ok(change)
    }
}

/// A Placement whose celSelector expressions do not compile is refused at apply, with the
/// expression and the position in it (the scheduler would report it Misconfigured).
fn check_cel_selectors(key: &ObjectKey, placement: &Placement) -> Result<(), ObjectError> {
    let predicates = placement.spec.predicates.iter().enumerate().map(|(i, p)| {
        (
            format!("spec.predicates[{i}].requiredClusterSelector"),
            &p.required_cluster_selector,
        )
    });
    let groups = placement
        .spec
        .decision_strategy
        .group_strategy
        .decision_groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            (
                format!(
                    "spec.decisionStrategy.groupStrategy.decisionGroups[{i}].groupClusterSelector"
                ),
                &g.group_cluster_selector,
            )
        });
    for (place, selector) in predicates.chain(groups) {
        crate::placement::plugins::predicate::validate_cel_selector(&selector.cel_selector)
            .map_err(|e| ObjectError::Invalid(key.clone(), format!("{place}: {e}")))?;
    }
    Ok(())
}
