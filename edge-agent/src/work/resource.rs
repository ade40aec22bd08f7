//! Identity of a manifest on the cluster: group, version, kind, plural resource, namespace, name.

use ocm_edge_schemas::api::work::{Manifest, ResourceIdentifier, ResourceMeta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A manifest that cannot be applied as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("manifest {ordinal} is not a JSON object")]
    NotAnObject { ordinal: usize },
    #[error("manifest {ordinal} has no {field}")]
    Missing { ordinal: usize, field: &'static str },
    /// The work's executor cannot be used: nothing of the work is applied.
    #[error("{0}")]
    Executor(String),
}

/// Where one object lives. `namespace` is empty for cluster-scoped objects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceRef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl ResourceRef {
    /// Reads the identity of manifest number `ordinal`.
    ///
    /// # Errors
    /// [`ManifestError`] when apiVersion, kind or metadata.name is missing.
    pub fn from_manifest(manifest: &Manifest, ordinal: usize) -> Result<Self, ManifestError> {
        if !manifest.0.is_object() {
            return Err(ManifestError::NotAnObject { ordinal });
        }
        let missing = |field| ManifestError::Missing { ordinal, field };
        let (group, version) = manifest.group_version().ok_or(missing("apiVersion"))?;
        let kind = manifest.kind().ok_or(missing("kind"))?;
        let name = manifest.name().ok_or(missing("metadata.name"))?;
        Ok(ResourceRef {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            resource: plural(kind),
            namespace: manifest.namespace().unwrap_or_default().to_owned(),
            name: name.to_owned(),
        })
    }

    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// A stable key: `group/version/kind/namespace/name`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            self.group, self.version, self.kind, self.namespace, self.name
        )
    }

    /// Whether an OCM resource identifier (manifestConfigs, orphaning rules) names this object.
    pub fn matches(&self, id: &ResourceIdentifier) -> bool {
        id.group == self.group
            && id.resource == self.resource
            && id.name == self.name
            && id.namespace == self.namespace
    }

    /// The `resourceMeta` of a status entry.
    pub fn resource_meta(&self, ordinal: usize) -> ResourceMeta {
        ResourceMeta {
            ordinal: i32::try_from(ordinal).unwrap_or(i32::MAX),
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            resource: self.resource.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
        }
    }

    /// Whether this is a Namespace.
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.kind == "Namespace"
    }

    /// Whether this is a CustomResourceDefinition.
    pub fn is_crd(&self) -> bool {
        self.group == "apiextensions.k8s.io" && self.kind == "CustomResourceDefinition"
    }
}

/// The plural resource name Kubernetes uses for a kind (the hub needs it too).
pub use ocm_edge_schemas::api::work::plural;

/// Whether every field of `desired` has the same value in `actual` (extra fields in `actual`, such
/// as status or server-set metadata, are ignored). Decides whether an Update is needed.
pub fn is_subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(d), Value::Object(a)) => d.iter().all(|(k, dv)| match a.get(k) {
            Some(av) => is_subset(dv, av),
            None => is_empty_value(dv),
        }),
        (Value::Array(d), Value::Array(a)) => {
            d.len() == a.len() && d.iter().zip(a).all(|(dv, av)| is_subset(dv, av))
        }
        (d, a) => d == a,
    }
}

// `status: {}` or `resources: {}` in a manifest matches an absent field.
fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty_value),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plurals_follow_kubernetes_guessing_rules() {
        assert_eq!(plural("Deployment"), "deployments");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("Gateway"), "gateways");
        assert_eq!(plural("Endpoints"), "endpoints");
    }

    #[test]
    fn a_manifest_without_a_name_is_refused_with_its_ordinal() {
        let m = Manifest(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{}}));
        let e = ResourceRef::from_manifest(&m, 3).unwrap_err();
        assert_eq!(e.to_string(), "manifest 3 has no metadata.name");
    }

    #[test]
    fn status_and_server_fields_do_not_count_as_drift_but_a_changed_field_does() {
        let desired = json!({"spec":{"replicas":2,"template":{}},"status":{}});
        let actual = json!({"spec":{"replicas":2,"template":{},"x":1},"metadata":{"uid":"u"}});
        assert!(is_subset(&desired, &actual));
        let drifted = json!({"spec":{"replicas":5,"template":{}}});
        assert!(!is_subset(&desired, &drifted));
    }
}
