//! The admin API's published schemas (`schemas/json/admin-request.schema.json` and
//! `admin-response.schema.json`) are generated from `hub/src/admin/messages.rs` and kept in sync:
//! `OCM_EDGE_BLESS=1 cargo test -p ocm-edge-hub --test contracts_admin` rewrites them.

use std::path::PathBuf;

use ocm_edge_hub::admin::messages::{
    ADMIN_API_VERSION, ADMIN_API_VERSION_PROPERTY, AdminErrorKind, AdminPayload, AdminRequest,
    AdminResponse, HubStats,
};
use ocm_edge_schemas::contracts::{
    self, BLESS_ENV, ContractFile, REGENERATE_ADMIN, asyncapi, schema_file, schema_files,
};
use ocm_edge_schemas::wire::topic;
use serde_json::{Value, json};

fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas")
}

fn admin_files() -> Vec<ContractFile> {
    vec![
        schema_file::<AdminRequest>(schema_files::ADMIN_REQUEST),
        schema_file::<AdminResponse>(schema_files::ADMIN_RESPONSE),
    ]
}

fn validator(file: &str) -> jsonschema::Validator {
    let file = admin_files()
        .into_iter()
        .find(|f| f.path.ends_with(file))
        .unwrap();
    let schema: Value = serde_json::from_str(&file.contents).unwrap();
    jsonschema::validator_for(&schema).expect("admin schema compiles")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn checked_in_admin_schemas_match_the_admin_messages() {
    let files = admin_files();
    let root = schemas_dir();
    if std::env::var_os(BLESS_ENV).is_some() {
        let changed = contracts::bless(&root, &files, None).expect("admin schemas written");
        eprintln!("{BLESS_ENV}: rewrote {changed:?}");
    }
    let problems = contracts::check(&root, &files, None, REGENERATE_ADMIN);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_asyncapi_document_names_the_admin_version_property_the_hub_uses() {
    assert_eq!(asyncapi::ADMIN_VERSION_PROPERTY, ADMIN_API_VERSION_PROPERTY);
    assert_eq!(asyncapi::ADMIN_VERSION, ADMIN_API_VERSION);
    let response_topic = topic::admin_responses("ocm-edge", "cli-1a2B_3").unwrap();
    let doc = asyncapi::asyncapi(&contracts::catalog::catalog());
    let pattern = doc["components"]["messages"]["adminRequest"]["headers"]["properties"]
        [asyncapi::RESPONSE_TOPIC_HEADER]
        .clone();
    assert!(jsonschema::is_valid(&pattern, &json!(response_topic)));
}

#[test]
fn every_request_the_cli_sends_validates_against_the_request_schema() {
    let v = validator(schema_files::ADMIN_REQUEST);
    let requests = [
        AdminRequest::ListClusters,
        AdminRequest::GetCluster {
            name: "edge-1".into(),
        },
        AdminRequest::AcceptCluster {
            name: "edge-1".into(),
        },
        AdminRequest::DenyCluster {
            name: "edge-1".into(),
        },
        AdminRequest::CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into(), "edge-2".into()],
            manifests: vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
            ],
            delete_option: None,
            manifest_configs: vec![],
            overwrite: true,
        },
        AdminRequest::ListWorks { cluster: None },
        AdminRequest::ListWorks {
            cluster: Some("edge-1".into()),
        },
        AdminRequest::GetWork {
            cluster: "edge-1".into(),
            name: "web".into(),
        },
        AdminRequest::DeleteWork {
            cluster: "edge-1".into(),
            name: "web".into(),
        },
        AdminRequest::Stats,
    ];
    for r in &requests {
        let doc = serde_json::to_value(r).unwrap();
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{doc}");
    }
    let apply: AdminRequest = serde_json::from_value(json!({
        "command": "applyManifestWork",
        "work": {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
                 "metadata": {"name": "web", "namespace": "edge-1"},
                 "spec": {"workload": {"manifests": [
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}]}}}
    }))
    .unwrap();
    let doc = serde_json::to_value(&apply).unwrap();
    assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{doc}");
}

#[test]
fn an_unknown_or_incomplete_command_is_refused_by_the_request_schema() {
    let v = validator(schema_files::ADMIN_REQUEST);
    assert!(!errors(&v, &json!({"command": "dropTables"})).is_empty());
    assert!(!errors(&v, &json!({"command": "getWork", "cluster": "edge-1"})).is_empty());
    assert!(!errors(&v, &json!({"name": "edge-1"})).is_empty());
}

#[test]
fn hub_answers_validate_against_the_response_schema() {
    let v = validator(schema_files::ADMIN_RESPONSE);
    let stats = HubStats {
        clusters_accepted: 2,
        works: 3,
        counters: [("eventsReceived".to_owned(), 10)].into(),
        ..HubStats::default()
    };
    for r in [
        AdminResponse::Ok(AdminPayload::Clusters(vec![])),
        AdminResponse::Ok(AdminPayload::Works(vec![])),
        AdminResponse::Ok(AdminPayload::Stats(stats)),
        AdminResponse::error(AdminErrorKind::NotFound, "cluster \"edge-9\" is not known"),
    ] {
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{doc}");
    }
    assert!(!errors(&v, &json!({"ok": {"clusters": "none"}})).is_empty());
    assert!(!errors(&v, &json!({"error": {"kind": "NotFound"}})).is_empty());
}
