//! Kubernetes objects and work options used across tests.

use serde_json::{Value, json};

/// A Deployment `name` in `namespace` with `replicas` and one nginx container of `image`.
pub fn deployment(namespace: &str, name: &str, replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]}
            }
        }
    })
}

/// A ConfigMap `name` in `namespace` with `data`.
pub fn config_map(namespace: &str, name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data
    })
}

/// A Namespace.
pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// The image of the first container of a Deployment object, as found on a (simulated) cluster.
pub fn deployment_image(object: &Value) -> Option<&str> {
    object
        .pointer("/spec/template/spec/containers/0/image")
        .and_then(Value::as_str)
}

/// A manifest config asking for OCM's WellKnownStatus feedback of one resource
/// (e.g. `("apps", "deployments", "web", "web")` for a Deployment's replica counts).
///
/// # Panics
/// Never for valid names: the JSON is OCM's documented shape.
pub fn well_known_status_feedback(
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> ocm_edge_schemas::api::work::ManifestConfigOption {
    serde_json::from_value(json!({
        "resourceIdentifier": {"group": group, "resource": resource, "namespace": namespace, "name": name},
        "feedbackRules": [{"type": "WellKnownStatus"}]
    }))
    .expect("OCM's ManifestConfigOption shape")
}

/// The integer feedback value `name` (e.g. `ReadyReplicas`) of manifest `ordinal` in a work status.
pub fn feedback_integer(
    resource_status: &[ocm_edge_schemas::api::work::ManifestCondition],
    ordinal: i32,
    name: &str,
) -> Option<i64> {
    resource_status
        .iter()
        .find(|m| m.resource_meta.ordinal == ordinal)?
        .status_feedback
        .values
        .iter()
        .find(|v| v.name == name)?
        .field_value
        .integer
}

/// Work `web` on `clusters`: namespace `web` and Deployment `web/web` with `replicas`, whose
/// `ReadyReplicas` comes back as status feedback; `overwrite` to update it.
pub fn web_with_feedback(
    clusters: &[&str],
    replicas: i64,
    overwrite: bool,
) -> ocm_edge_schemas::admin::CreateWork {
    ocm_edge_schemas::admin::CreateWork {
        name: "web".into(),
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        manifests: vec![
            namespace("web"),
            deployment("web", "web", replicas, "nginx:1.27"),
        ],
        manifest_configs: vec![well_known_status_feedback(
            "apps",
            "deployments",
            "web",
            "web",
        )],
        overwrite,
        ..Default::default()
    }
}

/// Work `big` on `clusters`, of about `kib` KiB: namespace `big` and ConfigMap `big/payload`
/// whose `data.blob` is text that starts with `tag` and does not compress (every line differs).
pub fn large_work(
    clusters: &[&str],
    kib: usize,
    tag: &str,
    overwrite: bool,
) -> ocm_edge_schemas::admin::CreateWork {
    let lines: String = (0..kib * 16)
        .map(|i| format!("{tag}-{i:08}-{:048x}\n", i * 7919))
        .collect();
    ocm_edge_schemas::admin::CreateWork {
        name: "big".into(),
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        manifests: vec![
            namespace("big"),
            config_map("big", "payload", serde_json::json!({ "blob": lines })),
        ],
        overwrite,
        ..Default::default()
    }
}
