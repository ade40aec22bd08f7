//! The admin's hand on a real cluster in the end-to-end tests (`e2e_`): apply a manifest with
//! server-side apply (as `e2e-admin`, forced) and read an object back, through the agent's own
//! [`KubeApplier`] with the admin kubeconfig.

use chrono::Utc;
use ocm_edge_agent::applier::Applier;
use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_agent::core::plan::{ApplyAction, ApplyStrategy};
use ocm_edge_agent::core::resource::ResourceRef;
use ocm_edge_schemas::api::work::Manifest;
use serde_json::Value;

/// Applies `manifest` as the admin; returns the object the API server holds.
///
/// # Panics
/// When the manifest names no resource or the API server refuses it.
pub async fn apply(admin: &KubeApplier, manifest: Value) -> Value {
    let m = Manifest(manifest.clone());
    let action = ApplyAction {
        ordinal: 0,
        resource: ResourceRef::from_manifest(&m, 0).unwrap(),
        manifest,
        strategy: ApplyStrategy::ServerSideApply {
            force: true,
            field_manager: "e2e-admin".into(),
            ignore_fields: vec![],
        },
    };
    admin.apply(&action, Utc::now()).await.unwrap()
}

/// The object `manifest` names (apiVersion, kind, namespace, name), if it exists.
///
/// # Panics
/// When the manifest names no resource or the API server cannot be asked.
pub async fn get(admin: &KubeApplier, manifest: &Value) -> Option<Value> {
    let r = ResourceRef::from_manifest(&Manifest(manifest.clone()), 0).unwrap();
    admin.get(&r, Utc::now()).await.unwrap()
}
