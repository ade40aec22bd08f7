//! What the hub's admin server really answers matches the published admin schemas
//! (`schemas/json/admin-{request,response}.schema.json`, generated in the schemas crate): a script of
//! requests, sent as the JSON a client writes, goes through `parse_request` and `handle_request`
//! on a core, and every request and answer is validated.

use ocm_edge_tests::contracts::schema_validator as validator;

use chrono::{DateTime, Utc};
use ocm_edge_hub::admin::scope::Access;
use ocm_edge_hub::admin::server::{handle_request, parse_request};
use ocm_edge_hub::core::{ClusterRecord, CoreConfig, Counters, HubCore};
use ocm_edge_schemas::admin::{AdminErrorKind, AdminResponse};
use ocm_edge_schemas::contracts::schema_files;
use serde_json::{Value, json};

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

// Built from JSON so a new field in the hub's records fails this test with a message instead of
// breaking the hub crate's build.
fn accepted_cluster(name: &str) -> ClusterRecord {
    serde_json::from_value(json!({
        "name": name,
        "acceptance": "Accepted",
        "labels": {"env": "edge"},
        "claims": [],
        "lease_duration_seconds": 60,
        "conditions": [{"type": "ManagedClusterConditionAvailable", "status": "True",
            "lastTransitionTime": "2026-11-21T12:00:00Z", "reason": "Leased", "message": ""}],
        "taints": [],
        "last_lease": "2026-11-21T12:00:00Z",
        "reported": {},
        "presence": null,
        "requested_at": "2026-11-21T11:59:00Z",
    }))
    .expect("a ClusterRecord (update this test if the record changed)")
}

fn core() -> HubCore {
    let cfg = CoreConfig {
        source_id: "ocm-edge".into(),
        availability: ocm_edge_hub::availability::AvailabilityConfig::default(),
        status_resync_batch: 1000,
    };
    HubCore::restore(
        cfg,
        vec![accepted_cluster("edge-1")],
        vec![],
        Counters::default(),
        None,
    )
}

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

/// Sends `request` through the server as a client would and returns the answer as JSON.
fn answer(core: &mut HubCore, request: &Value) -> Value {
    let response = match parse_request(request.to_string().as_bytes()) {
        Ok(parsed) => {
            let (change, response) = handle_request(core, &Access::Everything, parsed, now());
            core.apply(&change.records);
            response
        }
        Err(response) => response,
    };
    serde_json::to_value(&response).unwrap()
}

#[test]
fn every_answer_the_hub_sends_validates_against_the_response_schema() {
    let requests = validator(schema_files::ADMIN_REQUEST);
    let responses = validator(schema_files::ADMIN_RESPONSE);
    let script = [
        json!({"command": "createWork", "name": "web", "clusters": ["edge-1"], "overwrite": false,
               "manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "cm", "namespace": "default"}}]}),
        json!({"command": "applyManifestWork", "work": {
               "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
               "metadata": {"name": "db", "namespace": "edge-1"},
               "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "c", "namespace": "default"}}]}}}}),
        json!({"command": "listClusters"}),
        json!({"command": "getCluster", "name": "edge-1"}),
        json!({"command": "acceptCluster", "name": "edge-1"}),
        json!({"command": "listWorks"}),
        json!({"command": "getWork", "cluster": "edge-1", "name": "web"}),
        json!({"command": "deleteWork", "cluster": "edge-1", "name": "db"}),
        json!({"command": "stats"}),
        json!({"command": "applyObject", "object": {
               "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
               "metadata": {"name": "edge"}, "spec": {}}}),
        json!({"command": "applyObject", "object": {
               "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "web", "namespace": "default"}, "spec": {}}}),
        json!({"command": "listClusterSets"}),
        json!({"command": "getPlacement", "name": "web"}),
        json!({"command": "listReplicaSets"}),
        json!({"command": "deleteObject", "kind": "placement", "name": "web"}),
        json!({"command": "getCluster", "name": "edge-9"}),
    ];
    let mut core = core();
    for (i, request) in script.iter().enumerate() {
        assert_eq!(
            errors(&requests, request),
            Vec::<String>::new(),
            "{request}"
        );
        let answer = answer(&mut core, request);
        // Only the last request (an unknown cluster) is meant to fail.
        let last = i + 1 == script.len();
        assert_eq!(answer.get("error").is_some(), last, "{request} -> {answer}");
        assert_eq!(
            errors(&responses, &answer),
            Vec::<String>::new(),
            "{request} -> {answer}"
        );
    }
}

#[test]
fn the_answer_to_an_unknown_or_malformed_request_validates_too() {
    let requests = validator(schema_files::ADMIN_REQUEST);
    let responses = validator(schema_files::ADMIN_RESPONSE);
    let mut core = core();
    for (request, kind) in [
        (
            json!({"command": "drainCluster", "name": "edge-1"}),
            AdminErrorKind::Unsupported,
        ),
        (
            json!({"command": "getWork", "cluster": "edge-1"}),
            AdminErrorKind::Invalid,
        ),
    ] {
        assert!(!errors(&requests, &request).is_empty(), "{request}");
        let answer = answer(&mut core, &request);
        assert_eq!(
            errors(&responses, &answer),
            Vec::<String>::new(),
            "{answer}"
        );
        let typed: AdminResponse = serde_json::from_value(answer).unwrap();
        assert!(
            matches!(typed, AdminResponse::Error { kind: k, .. } if k == kind),
            "{request} -> {typed:?}"
        );
    }
}
