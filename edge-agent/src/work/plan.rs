//! The apply plan: desired bundle + applied inventory → ordered actions. Pure.
//!
//! Namespaces are applied first, then CustomResourceDefinitions, then everything else in manifest
//! order, so objects find what they need. Objects the agent applied earlier that are no longer in
//! the bundle are removed (like OCM's AppliedManifestWork), honouring the bundle's deleteOption;
//! removals run in the reverse order (namespaces last).

use ocm_edge_schemas::api::work::{
    DeleteOption, IgnoreFieldsCondition, ManifestBundle, ManifestConfigOption, PropagationPolicy,
    UpdateStrategyType,
};
use ocm_edge_schemas::jsonpath::{self, KubeJsonPath, PathUse};
use ocm_edge_schemas::validate;
use serde_json::Value;

use crate::applier::ApplyError;

use super::resource::{ManifestError, ResourceRef};

/// How one object is written to the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyStrategy {
    /// Create, or update the whole object when it differs (OCM's default).
    Update,
    /// Create when missing, never change it afterwards.
    CreateOnly,
    /// Server-side apply with a field manager; `force` takes conflicting fields. With
    /// `ignore_fields`, OCM's rules ([`ApplyStrategy::effective_manifest`]).
    ServerSideApply {
        force: bool,
        field_manager: String,
        ignore_fields: Vec<IgnoredField>,
    },
    /// Only read it (it must exist), for status feedback.
    ReadOnly,
}

/// One entry of OCM's `ignoreFields` (`.spec.replicas`, `/spec/replicas`) and when it is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredField {
    pub selector: FieldSelector,
    pub condition: IgnoreFieldsCondition,
}

/// How an ignored field is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldSelector {
    /// A Kubernetes JSONPath (`jsonPaths`).
    JsonPath(String),
    /// An RFC 6901 JSON Pointer (`jsonPointers`).
    JsonPointer(String),
    /// A jq path expression (`jqPathExpressions`): refused, see [`validate::JQ_REFUSED`].
    Jq(String),
}

impl IgnoredField {
    /// A JSONPath ignored under `condition`.
    pub fn json_path(path: &str, condition: IgnoreFieldsCondition) -> Self {
        IgnoredField {
            selector: FieldSelector::JsonPath(path.to_owned()),
            condition,
        }
    }

    /// Removes the field from `object`, as OCM's work agent does before it applies; with
    /// `object` `None`, only checks that the entry can be used.
    fn remove_from(&self, object: Option<&mut Value>) -> Result<(), ApplyError> {
        let failed = |what: &str, expression: &str, why: String| {
            ApplyError::IgnoreFields(format!("{what} error in '{expression}': {why}"))
        };
        match &self.selector {
            FieldSelector::JsonPath(path) => {
                let path = KubeJsonPath::parse(path, PathUse::IgnoreFields)
                    .map_err(|e| failed("JSONPath", path, e.to_string()))?;
                if let Some(object) = object {
                    path.remove_fields(object);
                }
            }
            FieldSelector::JsonPointer(pointer) => match object {
                Some(object) => {
                    jsonpath::remove_pointer(object, pointer)
                        .map_err(|e| failed("JSON Pointer", pointer, e.to_string()))?;
                }
                None => jsonpath::validate_pointer(pointer)
                    .map_err(|e| failed("JSON Pointer", pointer, e.to_string()))?,
            },
            FieldSelector::Jq(expression) => {
                return Err(failed(
                    "JQ expression",
                    expression,
                    validate::JQ_REFUSED.to_owned(),
                ));
            }
        }
        Ok(())
    }
}

impl From<&str> for IgnoredField {
    /// A JSONPath ignored OnSpokePresent (OCM's default).
    fn from(path: &str) -> Self {
        IgnoredField::json_path(path, IgnoreFieldsCondition::OnSpokePresent)
    }
}

/// OCM's annotation on an object applied with ignoreFields: the hash of what the work asks for,
/// less the OnSpokePresent fields. The same hash on the cluster's object means the work has not
/// changed since it was applied, and the object is left as the cluster has it.
pub const CONFIG_SPEC_HASH_ANNOTATION: &str = "open-cluster-management.io/config-spec-hash";

/// Deletion propagation sent to the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletePropagation {
    Foreground,
    Background,
}

/// One object to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyAction {
    pub ordinal: usize,
    pub resource: ResourceRef,
    pub manifest: Value,
    pub strategy: ApplyStrategy,
    /// Whom the agent applies it as (OCM's `executor`): the Kubernetes user
    /// `system:serviceaccount:<namespace>:<name>` it impersonates; `None`: itself.
    pub executor: Option<String>,
}

/// The Kubernetes user a bundle's `executor` names (`system:serviceaccount:NS:NAME`), `None`
/// without one.
///
/// # Errors
/// An executor whose service account is missing or has no valid namespace or name.
pub fn executor_user(bundle: &ManifestBundle) -> Result<Option<String>, String> {
    let Some(executor) = &bundle.executer else {
        return Ok(None);
    };
    let Some(sa) = &executor.subject.service_account else {
        return Err(
            "the work's executor names no service account (executor.subject.serviceAccount)"
                .to_owned(),
        );
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !valid(&sa.namespace) || !valid(&sa.name) {
        return Err(format!(
            "the work's executor service account {:?}/{:?} is not a valid namespace and name",
            sa.namespace, sa.name
        ));
    }
    Ok(Some(format!(
        "system:serviceaccount:{}:{}",
        sa.namespace, sa.name
    )))
}

/// What happens to an object leaving the cluster's desired state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveAction {
    /// Delete it with this propagation.
    Delete {
        resource: ResourceRef,
        propagation: DeletePropagation,
    },
    /// Leave it on the cluster and stop tracking it.
    Orphan { resource: ResourceRef },
}

impl RemoveAction {
    /// The object concerned.
    pub fn resource(&self) -> &ResourceRef {
        match self {
            RemoveAction::Delete { resource, .. } | RemoveAction::Orphan { resource } => resource,
        }
    }
}

/// The plan for one bundle.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// In apply order.
    pub applies: Vec<ApplyAction>,
    /// Objects dropped from the bundle, in removal order.
    pub removals: Vec<RemoveAction>,
    /// Manifests that cannot be applied as written (reported as not applied).
    pub invalid: Vec<(usize, ManifestError)>,
}

/// Plans applying `bundle` on a cluster where `applied` (the inventory) was applied before.
pub fn plan_apply(
    bundle: &ManifestBundle,
    applied: &[ResourceRef],
    default_field_manager: &str,
) -> Plan {
    let mut plan = Plan::default();
    let executor = executor_user(bundle);
    for (ordinal, manifest) in bundle.manifests.iter().enumerate() {
        match (ResourceRef::from_manifest(manifest, ordinal), &executor) {
            (Ok(resource), Ok(executor)) => {
                let strategy =
                    strategy_for(&resource, &bundle.manifest_configs, default_field_manager);
                plan.applies.push(ApplyAction {
                    ordinal,
                    resource,
                    manifest: manifest.0.clone(),
                    strategy,
                    executor: executor.clone(),
                });
            }
            (Err(e), _) => plan.invalid.push((ordinal, e)),
            (Ok(_), Err(why)) => plan
                .invalid
                .push((ordinal, ManifestError::Executor(why.clone()))),
        }
    }
    plan.applies
        .sort_by_key(|a| (apply_rank(&a.resource), a.ordinal));
    let stale: Vec<ResourceRef> = applied
        .iter()
        .filter(|old| !plan.applies.iter().any(|a| same_object(&a.resource, old)))
        .cloned()
        .collect();
    plan.removals = plan_removal(bundle.delete_option.as_ref(), &stale);
    plan
}

/// Plans removing `applied` when the whole bundle is deleted, per its deleteOption.
pub fn plan_delete(bundle: &ManifestBundle, applied: &[ResourceRef]) -> Vec<RemoveAction> {
    plan_removal(bundle.delete_option.as_ref(), applied)
}

fn plan_removal(option: Option<&DeleteOption>, objects: &[ResourceRef]) -> Vec<RemoveAction> {
    let policy = option.map(|o| o.propagation_policy).unwrap_or_default();
    let mut ordered: Vec<(usize, &ResourceRef)> = objects.iter().enumerate().collect();
    // Reverse of the apply order: dependants first, namespaces last.
    ordered.sort_by_key(|(i, r)| (std::cmp::Reverse(apply_rank(r)), std::cmp::Reverse(*i)));
    ordered
        .into_iter()
        .map(|(_, resource)| {
            let orphan = match policy {
                PropagationPolicy::Foreground => false,
                PropagationPolicy::Orphan => true,
                PropagationPolicy::SelectivelyOrphan => option
                    .and_then(|o| o.selectively_orphans.as_ref())
                    .is_some_and(|s| s.orphaning_rules.iter().any(|rule| resource.matches(rule))),
            };
            if orphan {
                RemoveAction::Orphan {
                    resource: resource.clone(),
                }
            } else {
                RemoveAction::Delete {
                    resource: resource.clone(),
                    propagation: DeletePropagation::Foreground,
                }
            }
        })
        .collect()
}

/// The strategy manifestConfigs give `resource` (Update when none matches).
pub fn strategy_for(
    resource: &ResourceRef,
    configs: &[ManifestConfigOption],
    default_field_manager: &str,
) -> ApplyStrategy {
    let Some(strategy) = configs
        .iter()
        .find(|c| resource.matches(&c.resource_identifier))
        .and_then(|c| c.update_strategy.as_ref())
    else {
        return ApplyStrategy::Update;
    };
    match strategy.type_ {
        UpdateStrategyType::Update => ApplyStrategy::Update,
        UpdateStrategyType::CreateOnly => ApplyStrategy::CreateOnly,
        UpdateStrategyType::ReadOnly => ApplyStrategy::ReadOnly,
        UpdateStrategyType::ServerSideApply => {
            let ssa = strategy.server_side_apply.clone().unwrap_or_default();
            ApplyStrategy::ServerSideApply {
                force: ssa.force,
                field_manager: if ssa.field_manager.is_empty() {
                    default_field_manager.to_owned()
                } else {
                    ssa.field_manager
                },
                ignore_fields: ssa
                    .ignore_fields
                    .into_iter()
                    .flat_map(|f| {
                        let selectors = f
                            .json_paths
                            .into_iter()
                            .map(FieldSelector::JsonPath)
                            .chain(f.json_pointers.into_iter().map(FieldSelector::JsonPointer))
                            .chain(f.jq_path_expressions.into_iter().map(FieldSelector::Jq));
                        selectors.map(move |selector| IgnoredField {
                            selector,
                            condition: f.condition,
                        })
                    })
                    .collect(),
            }
        }
    }
}

impl ApplyStrategy {
    /// What to send for `manifest`, without its status; `None`: leave the object as it is.
    ///
    /// Server-side apply with ignoreFields follows OCM's work agent: the manifest less its
    /// OnSpokePresent fields is hashed into [`CONFIG_SPEC_HASH_ANNOTATION`]; a missing object is
    /// created whole; an object carrying the same hash (the work has not changed since) is left
    /// alone, so changes made on the cluster stay; otherwise the manifest is applied less its
    /// OnSpokePresent fields, so OnSpokeChange fields take the work's values again when the work
    /// changes, and OnSpokePresent fields are never applied after creation.
    ///
    /// # Errors
    /// [`ApplyError::IgnoreFields`] when an entry cannot be used (a JSONPath or
    /// JSON Pointer that does not read, a jq expression), OnSpokeChange ones included: nothing
    /// of the object is applied, as OCM's `AppliedManifestSSAIgnoreFieldError`.
    pub fn effective_manifest(
        &self,
        manifest: &Value,
        existing: Option<&Value>,
    ) -> Result<Option<Value>, ApplyError> {
        let mut whole = manifest.clone();
        if let Some(map) = whole.as_object_mut() {
            map.remove("status");
        }
        let ApplyStrategy::ServerSideApply { ignore_fields, .. } = self else {
            return Ok(Some(whole));
        };
        if ignore_fields.is_empty() {
            return Ok(Some(whole));
        }
        // The hub refuses what cannot be used, OnSpokeChange entries too; so does the agent,
        // whatever the hub let through.
        for field in ignore_fields {
            field.remove_from(None)?;
        }
        let mut required = whole.clone();
        for field in ignore_fields
            .iter()
            .filter(|f| f.condition == IgnoreFieldsCondition::OnSpokePresent)
        {
            field.remove_from(Some(&mut required))?;
        }
        let hash = config_spec_hash(&required);
        for object in [&mut whole, &mut required] {
            set_annotation(object, CONFIG_SPEC_HASH_ANNOTATION, &hash);
        }
        Ok(match existing {
            None => Some(whole),
            Some(obj) if annotation(obj, CONFIG_SPEC_HASH_ANNOTATION) == Some(hash.as_str()) => {
                None
            }
            Some(_) => Some(required),
        })
    }

    /// Whether applying needs to know first if the object exists.
    pub fn needs_existence_check(&self) -> bool {
        matches!(self, ApplyStrategy::ServerSideApply { ignore_fields, .. } if !ignore_fields.is_empty())
    }
}

fn config_spec_hash(required: &Value) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(required.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(metadata) = metadata.as_object_mut() {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }
}

/// The same object regardless of the API version it was written in.
pub fn same_object(a: &ResourceRef, b: &ResourceRef) -> bool {
    a.group == b.group && a.kind == b.kind && a.namespace == b.namespace && a.name == b.name
}

fn apply_rank(r: &ResourceRef) -> u8 {
    if r.is_namespace() {
        0
    } else if r.is_crd() {
        1
    } else {
        2
    }
}
