//! ocm-edge's published contracts: the JSON Schemas of every payload (`schemas/json/`), the AsyncAPI 3
//! document of every topic (`schemas/asyncapi.yaml`) and a short guide (`schemas/CONTRACTS.md`), all
//! generated from the types and the wire module so they cannot drift from what is sent.
//!
//! - [`catalog`]: channels, messages and operations as data, built from the wire constants.
//! - [`asyncapi`]: the AsyncAPI document rendered from the catalog.
//! - [`dashboard`]: payload types of the retained dashboard topics.
//! - [`schema_files`]: the file name of each payload schema.
//! - [`files`] gives every checked-in file; [`check`] and [`bless`] compare them with (or write them
//!   to) the `schemas/` directory. The test `contracts_in_sync` runs them.
//!
//! Every file is deterministic: JSON keys sorted at every level, two-space indentation, one trailing
//! newline, so a diff shows exactly what changed in a contract.

pub mod asyncapi;
pub mod catalog;
pub mod dashboard;
mod guide;

use std::path::Path;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::admin::{AdminRequest, AdminResponse, CredentialScope};
use crate::api::addon::{
    AddOnDeploymentConfig, AddOnTemplate, ClusterManagementAddOn, ManagedClusterAddOn,
};
use crate::api::cluster::{
    ClusterClaim, ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding,
};
use crate::api::lease::Lease;
use crate::api::placement::{AddOnPlacementScore, Placement, PlacementDecision};
use crate::api::replicaset::ManifestWorkReplicaSet;
use crate::api::work::{ManifestBundle, ManifestBundleStatus, ManifestWork};
use crate::wire::cluster_events::Presence;
use crate::wire::resync::{ResourceVersionList, StatusHashList};
use dashboard::{
    DashboardAddOn, DashboardCluster, DashboardClusterAddOn, DashboardSummary, DashboardWork,
};

/// Directory of the JSON Schemas, relative to `schemas/`.
pub const JSON_DIR: &str = "json";
/// The AsyncAPI document, relative to `schemas/`.
pub const ASYNCAPI_FILE: &str = "asyncapi.yaml";
/// The human guide, relative to `schemas/`.
pub const GUIDE_FILE: &str = "CONTRACTS.md";
/// Environment variable that makes the drift tests rewrite the files instead of failing.
pub const BLESS_ENV: &str = "OCM_EDGE_BLESS";
/// The command that regenerates every contract file.
pub const REGENERATE_SCHEMAS: &str =
    "OCM_EDGE_BLESS=1 cargo test -p ocm-edge-schemas --test it contracts_in_sync";
/// The JSON Schema dialect of every file (the one AsyncAPI 3 tools support everywhere).
pub const SCHEMA_FORMAT: &str = "application/schema+json;version=draft-07";

/// File names of the payload schemas under [`JSON_DIR`].
pub mod schema_files {
    pub const MANIFEST_BUNDLE: &str = "manifest-bundle.schema.json";
    pub const MANIFEST_BUNDLE_STATUS: &str = "manifest-bundle-status.schema.json";
    pub const RESOURCE_VERSION_LIST: &str = "resource-version-list.schema.json";
    pub const STATUS_HASH_LIST: &str = "status-hash-list.schema.json";
    pub const MANAGED_CLUSTER: &str = "managed-cluster.schema.json";
    pub const LEASE: &str = "lease.schema.json";
    pub const PRESENCE: &str = "presence.schema.json";
    pub const MANIFEST_WORK: &str = "manifest-work.schema.json";
    pub const MANAGED_CLUSTER_SET: &str = "managed-cluster-set.schema.json";
    pub const MANAGED_CLUSTER_SET_BINDING: &str = "managed-cluster-set-binding.schema.json";
    pub const PLACEMENT: &str = "placement.schema.json";
    pub const PLACEMENT_DECISION: &str = "placement-decision.schema.json";
    pub const MANIFEST_WORK_REPLICA_SET: &str = "manifest-work-replica-set.schema.json";
    pub const ADD_ON_PLACEMENT_SCORE: &str = "add-on-placement-score.schema.json";
    pub const CLUSTER_CLAIM: &str = "cluster-claim.schema.json";
    pub const CLUSTER_MANAGEMENT_ADD_ON: &str = "cluster-management-add-on.schema.json";
    pub const MANAGED_CLUSTER_ADD_ON: &str = "managed-cluster-add-on.schema.json";
    pub const ADD_ON_TEMPLATE: &str = "add-on-template.schema.json";
    pub const ADD_ON_DEPLOYMENT_CONFIG: &str = "add-on-deployment-config.schema.json";
    pub const ADMIN_REQUEST: &str = "admin-request.schema.json";
    pub const ADMIN_RESPONSE: &str = "admin-response.schema.json";
    pub const CREDENTIAL_SCOPE: &str = "credential-scope.schema.json";
    pub const DASHBOARD_SUMMARY: &str = "dashboard-summary.schema.json";
    pub const DASHBOARD_CLUSTER: &str = "dashboard-cluster.schema.json";
    pub const DASHBOARD_WORK: &str = "dashboard-work.schema.json";
    pub const DASHBOARD_ADDON: &str = "dashboard-addon.schema.json";
    pub const DASHBOARD_CLUSTER_ADDON: &str = "dashboard-cluster-addon.schema.json";
}

/// Errors producing or syncing contract files.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    #[error("cannot render the AsyncAPI document as YAML: {0}")]
    Yaml(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One generated file, `path` relative to the `schemas/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractFile {
    pub path: String,
    pub contents: String,
}

/// `value` with the keys of every object sorted (whatever map order serde_json was built with).
pub fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Pretty JSON, keys sorted, one trailing newline.
pub fn canonical_json(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(value.clone()))
        .unwrap_or_else(|_| unreachable!("a serde_json::Value always serializes"));
    text.push('\n');
    text
}

/// The draft-07 JSON Schema of `T` (draft-07 is what AsyncAPI 3 tools read everywhere).
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>();
    sorted(schema.to_value())
}

/// The checked-in file `json/<file_name>` holding `T`'s schema.
pub fn schema_file<T: JsonSchema>(file_name: &str) -> ContractFile {
    ContractFile {
        path: format!("{JSON_DIR}/{file_name}"),
        contents: canonical_json(&schema_of::<T>()),
    }
}

/// Every payload schema.
pub fn json_schema_files() -> Vec<ContractFile> {
    use schema_files::*;
    vec![
        schema_file::<ManifestBundle>(MANIFEST_BUNDLE),
        schema_file::<ManifestBundleStatus>(MANIFEST_BUNDLE_STATUS),
        schema_file::<ResourceVersionList>(RESOURCE_VERSION_LIST),
        schema_file::<StatusHashList>(STATUS_HASH_LIST),
        schema_file::<ManagedCluster>(MANAGED_CLUSTER),
        schema_file::<Lease>(LEASE),
        schema_file::<Presence>(PRESENCE),
        schema_file::<ManifestWork>(MANIFEST_WORK),
        schema_file::<ManagedClusterSet>(MANAGED_CLUSTER_SET),
        schema_file::<ManagedClusterSetBinding>(MANAGED_CLUSTER_SET_BINDING),
        schema_file::<Placement>(PLACEMENT),
        schema_file::<PlacementDecision>(PLACEMENT_DECISION),
        schema_file::<ManifestWorkReplicaSet>(MANIFEST_WORK_REPLICA_SET),
        schema_file::<AddOnPlacementScore>(ADD_ON_PLACEMENT_SCORE),
        schema_file::<ClusterClaim>(CLUSTER_CLAIM),
        schema_file::<ClusterManagementAddOn>(CLUSTER_MANAGEMENT_ADD_ON),
        schema_file::<ManagedClusterAddOn>(MANAGED_CLUSTER_ADD_ON),
        schema_file::<AddOnTemplate>(ADD_ON_TEMPLATE),
        schema_file::<AddOnDeploymentConfig>(ADD_ON_DEPLOYMENT_CONFIG),
        schema_file::<AdminRequest>(ADMIN_REQUEST),
        schema_file::<AdminResponse>(ADMIN_RESPONSE),
        schema_file::<CredentialScope>(CREDENTIAL_SCOPE),
        schema_file::<DashboardSummary>(DASHBOARD_SUMMARY),
        schema_file::<DashboardCluster>(DASHBOARD_CLUSTER),
        schema_file::<DashboardWork>(DASHBOARD_WORK),
        schema_file::<DashboardAddOn>(DASHBOARD_ADDON),
        schema_file::<DashboardClusterAddOn>(DASHBOARD_CLUSTER_ADDON),
    ]
}

/// Every file this crate checks in under `schemas/`: the schemas, the AsyncAPI document, the guide.
///
/// # Errors
/// [`ContractError::Yaml`] if the AsyncAPI document cannot be rendered.
pub fn files() -> Result<Vec<ContractFile>, ContractError> {
    let catalog = catalog::catalog();
    let mut files = json_schema_files();
    files.push(ContractFile {
        path: ASYNCAPI_FILE.to_owned(),
        contents: asyncapi::asyncapi_yaml(&catalog)?,
    });
    files.push(ContractFile {
        path: GUIDE_FILE.to_owned(),
        contents: guide::guide(&catalog),
    });
    Ok(files)
}

/// What is wrong with the checked-in files under `root` (the `schemas/` directory, or another
/// directory of generated files such as `docs/`) compared with `expected`: each entry says which
/// file (as `<root's name>/<path>`) and how to fix it with `regenerate`. When `owned_dir` is
/// given, files in that directory that are not expected are reported too.
pub fn check(
    root: &Path,
    expected: &[ContractFile],
    owned_dir: Option<&str>,
    regenerate: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    let shown = |path: &str| shown(root, path);
    for file in expected {
        let shown = shown(&file.path);
        match std::fs::read_to_string(root.join(&file.path)) {
            Ok(found) if found == file.contents => {}
            Ok(_) => problems.push(format!("{shown} is out of date: run `{regenerate}`")),
            Err(_) => problems.push(format!("{shown} is missing: run `{regenerate}`")),
        }
    }
    for extra in extra_files(root, expected, owned_dir) {
        problems.push(format!(
            "{} is not generated by any contract (renamed or removed?): run `{regenerate}`",
            shown(&extra)
        ));
    }
    problems
}

/// Writes every expected file under `root` and removes the extra ones [`check`] would report.
/// Returns the paths it changed.
///
/// # Errors
/// [`ContractError::Write`] naming the file.
pub fn bless(
    root: &Path,
    expected: &[ContractFile],
    owned_dir: Option<&str>,
) -> Result<Vec<String>, ContractError> {
    let mut changed = Vec::new();
    let write_err = |path: &str| {
        let path = shown(root, path);
        move |source| ContractError::Write { path, source }
    };
    for file in expected {
        let target = root.join(&file.path);
        if std::fs::read_to_string(&target).ok().as_deref() == Some(file.contents.as_str()) {
            continue;
        }
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(write_err(&file.path))?;
        }
        std::fs::write(&target, &file.contents).map_err(write_err(&file.path))?;
        changed.push(file.path.clone());
    }
    for extra in extra_files(root, expected, owned_dir) {
        std::fs::remove_file(root.join(&extra)).map_err(write_err(&extra))?;
        changed.push(extra);
    }
    Ok(changed)
}

/// `path` under `root` as messages show it: `<root's name>/<path>` (`schemas/json/...`).
fn shown(root: &Path, path: &str) -> String {
    let dir = root.file_name().map_or_else(
        || root.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!("{dir}/{path}")
}

fn extra_files(root: &Path, expected: &[ContractFile], owned_dir: Option<&str>) -> Vec<String> {
    let Some(dir) = owned_dir else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut extra: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|name| format!("{dir}/{name}"))
        .filter(|path| !expected.iter().any(|f| &f.path == path))
        .collect();
    extra.sort();
    extra
}
