//! The admin API's published schemas (`schemas/json/admin-request.schema.json` and
//! `admin-response.schema.json`, generated from `ocm_edge_schemas::admin` and kept in sync by
//! `contracts_in_sync`) accept what clients and hubs send and refuse what they must not.
//! The hub's own `contracts_admin` test checks the answers its server really builds.

use crate::contracts_kit;

use contracts_kit::errors;
use ocm_edge_schemas::admin::{
    AdminErrorKind, AdminPayload, AdminRequest, AdminResponse, CreateWork, HubStats,
};
use ocm_edge_schemas::contracts::{self, asyncapi, schema_files};
use ocm_edge_schemas::wire::topic;
use serde_json::{Value, json};

fn validator(file: &str) -> jsonschema::Validator {
    let file = contracts::json_schema_files()
        .into_iter()
        .find(|f| f.path.ends_with(file))
        .unwrap();
    let schema: Value = serde_json::from_str(&file.contents).unwrap();
    jsonschema::validator_for(&schema).expect("admin schema compiles")
}

#[test]
fn the_asyncapi_response_topic_pattern_accepts_the_topics_clients_use() {
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
        AdminRequest::ListClusters {
            after: None,
            limit: None,
        },
        AdminRequest::ListClusters {
            after: Some("edge-1".into()),
            limit: Some(500),
        },
        AdminRequest::GetCluster {
            name: "edge-1".into(),
        },
        AdminRequest::accept_cluster("edge-1"),
        AdminRequest::AcceptCluster {
            name: "edge-1".into(),
            labels: [(
                "cluster.open-cluster-management.io/clusterset".into(),
                "eu".into(),
            )]
            .into(),
            remove_labels: vec!["tier".into()],
            drop_agent_labels: true,
        },
        AdminRequest::SetClusterSet {
            set: "eu".into(),
            clusters: vec!["edge-1".into(), "edge-2".into()],
        },
        AdminRequest::BindClusterSet {
            set: "eu".into(),
            namespace: Some("team-a".into()),
        },
        AdminRequest::UnbindClusterSet {
            set: "eu".into(),
            namespace: None,
        },
        AdminRequest::DenyCluster {
            name: "edge-1".into(),
        },
        AdminRequest::CreateWork(CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into(), "edge-2".into()],
            manifests: vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
            ],
            delete_option: None,
            manifest_configs: vec![],
            overwrite: true,
            per_cluster: Some(ocm_edge_schemas::api::replicaset::PerCluster {
                values: json!({"storeId": "0001"}),
                ..Default::default()
            }),
        }),
        AdminRequest::ListWorks {
            cluster: None,
            after: None,
            limit: None,
        },
        AdminRequest::ListWorks {
            cluster: Some("edge-1".into()),
            after: Some(ocm_edge_schemas::admin::WorkRef {
                cluster: "edge-1".into(),
                name: "web".into(),
            }),
            limit: Some(500),
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
    // A hub decodes an unknown command (to answer Unsupported), but it is no valid request.
    assert!(!errors(&v, &json!({"command": "dropTables"})).is_empty());
    let unknown = AdminRequest::Unknown {
        command: "dropTables".into(),
    };
    assert!(!errors(&v, &serde_json::to_value(&unknown).unwrap()).is_empty());
    assert!(!errors(&v, &json!({"command": "getWork", "cluster": "edge-1"})).is_empty());
    assert!(!errors(&v, &json!({"name": "edge-1"})).is_empty());
}

#[test]
fn answers_validate_against_the_response_schema() {
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
        AdminResponse::error(
            AdminErrorKind::Unsupported,
            "this hub does not support drainCluster",
        ),
    ] {
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{doc}");
    }
    assert!(!errors(&v, &json!({"ok": {"clusters": "none"}})).is_empty());
    assert!(!errors(&v, &json!({"error": {"kind": "NotFound"}})).is_empty());
}
