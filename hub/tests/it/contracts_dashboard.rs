//! The hub's retained dashboard payloads are what `schemas/json/dashboard-*.schema.json` publish:
//! each view the hub builds validates against its schema and reads back as the schemas crate's type.

use ocm_edge_tests::contracts::schema_validator as validator;
use std::path::PathBuf;

use ocm_edge_hub::core::{ClusterRecord, CoreConfig, Counters, HubCore, Record, WorkRecord};
use ocm_edge_hub::dashboard;
use ocm_edge_schemas::contracts::dashboard::{
    DashboardAddOn, DashboardCluster, DashboardClusterAddOn, DashboardSummary, DashboardWork,
};
use ocm_edge_schemas::contracts::{JSON_DIR, schema_files};
use serde_json::{Value, json};

/// Validates `payload` and checks that every field the hub writes is documented in the schema, so a
/// field added to the hub's views fails here until the schemas crate's dashboard types have it.
fn assert_valid(file: &str, payload: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas")
        .join(JSON_DIR)
        .join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in payload.as_object().unwrap().keys() {
        assert!(
            schema["properties"].get(key).is_some(),
            "the hub writes {key:?}, which {file} does not document: add it to \
             ocm_edge_schemas::contracts::dashboard and regenerate the contracts"
        );
    }
    let v = validator(file);
    let errors: Vec<String> = v
        .iter_errors(payload)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{payload} against {file}: {errors:?}");
}

// Records are built from JSON so a new field in the hub's records fails this test with a message
// instead of breaking the hub crate's build.
fn cluster(name: &str, acceptance: &str, available: Option<&str>) -> ClusterRecord {
    let conditions: Vec<Value> = available
        .map(|s| {
            json!({"type": "ManagedClusterConditionAvailable", "status": s,
                   "lastTransitionTime": "2026-11-21T12:00:00Z", "reason": "Leased", "message": ""})
        })
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "name": name,
        "acceptance": acceptance,
        "labels": {"env": "edge"},
        "claims": [],
        "lease_duration_seconds": 60,
        "conditions": conditions,
        "taints": [],
        "last_lease": available.map(|_| "2026-11-21T12:00:00Z"),
        "reported": {},
        "presence": null,
        "requested_at": "2026-11-21T11:59:00Z",
    }))
    .expect("a ClusterRecord (update this test if the record changed)")
}

fn work(cluster: &str, name: &str, applied: Option<&str>, deleting: bool) -> WorkRecord {
    let status = applied.map(|s| {
        json!({"conditions": [{"type": "Applied", "status": s,
            "lastTransitionTime": "2026-11-21T12:00:01Z", "reason": "AppliedManifestWorkComplete",
            "message": ""}], "resourceStatus": {}})
    });
    serde_json::from_value(json!({
        "key": {"cluster": cluster, "name": name},
        "resource_id": "2f0c8f6e-0000-5000-8000-000000000001",
        "resource_version": 2,
        "spec": {"workload": {"manifests": []}},
        "labels": {},
        "annotations": {},
        "created": "2026-11-21T12:00:00Z",
        "deleting": if deleting { json!("2026-11-21T12:00:02Z") } else { Value::Null },
        "status": status,
        "status_hash": null,
        "last_sequence_id": null,
        "status_updated": applied.map(|_| "2026-11-21T12:00:01Z"),
    }))
    .expect("a WorkRecord (update this test if the record changed)")
}

fn core() -> (HubCore, Vec<Record>) {
    let clusters = vec![
        cluster("edge-1", "Accepted", Some("True")),
        cluster("edge-2", "Pending", None),
    ];
    let works = vec![
        work("edge-1", "web", Some("True"), false),
        work("edge-1", "old", None, true),
    ];
    let records: Vec<Record> = clusters
        .iter()
        .cloned()
        .map(|c| Record::Cluster(c.into()))
        .chain(works.iter().cloned().map(|w| Record::Work(w.into())))
        .collect();
    let cfg = CoreConfig {
        source_id: "ocm-edge".into(),
        availability: ocm_edge_hub::availability::AvailabilityConfig::default(),
        status_resync_batch: 1000,
    };
    (
        HubCore::restore(cfg, clusters, works, Counters::default(), None),
        records,
    )
}

fn payloads(prefix: &str) -> Vec<(String, Value)> {
    let (core, records) = core();
    dashboard::messages_for(&core, &records)
        .into_iter()
        .filter(|m| m.topic.starts_with(prefix))
        .map(|m| {
            let v = serde_json::from_slice(&m.payload)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", m.topic));
            (m.topic, v)
        })
        .collect()
}

#[test]
fn the_summary_view_matches_its_published_schema() {
    let views = payloads("ocm-edge/ocm-edge/dashboard/summary");
    assert_eq!(views.len(), 1);
    let (_, summary) = &views[0];
    assert_valid(schema_files::DASHBOARD_SUMMARY, summary);
    let typed: DashboardSummary = serde_json::from_value(summary.clone()).unwrap();
    assert_eq!(
        (
            typed.clusters.accepted,
            typed.clusters.pending,
            typed.works.total,
            typed.works.deleting
        ),
        (1, 1, 2, 1)
    );
}

#[test]
fn cluster_views_match_their_published_schema() {
    let views = payloads("ocm-edge/ocm-edge/dashboard/clusters/");
    assert_eq!(views.len(), 2, "{views:?}");
    for (topic, view) in &views {
        assert_valid(schema_files::DASHBOARD_CLUSTER, view);
        let typed: DashboardCluster = serde_json::from_value(view.clone()).unwrap();
        assert!(topic.ends_with(&typed.name));
    }
}

#[test]
fn work_views_match_their_published_schema() {
    let views = payloads("ocm-edge/ocm-edge/dashboard/works/");
    assert_eq!(views.len(), 2, "{views:?}");
    for (topic, view) in &views {
        assert_valid(schema_files::DASHBOARD_WORK, view);
        let typed: DashboardWork = serde_json::from_value(view.clone()).unwrap();
        assert!(topic.ends_with(&format!("{}/{}", typed.cluster, typed.name)));
    }
}

/// A core with an add-on (its template) enabled on the accepted cluster, after a fleet pass,
/// and every record the hub stored for it.
fn core_with_addon() -> (HubCore, Vec<Record>) {
    let (mut core, mut records) = core();
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z")
        .unwrap()
        .to_utc();
    for v in [
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
            "metadata": {"name": "probe"},
            "spec": {"addonName": "probe", "registration": [{"type": "KubeClient"}],
                "agentSpec": {"workload": {"manifests": [
                    {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "probe", "namespace": "{{INSTALL_NAMESPACE}}"}}]}}}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "probe"},
            "spec": {"defaultConfigs": [{"group": "addon.open-cluster-management.io",
                "resource": "addontemplates", "name": "probe"}]}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn", "metadata": {"name": "probe", "namespace": "edge-1"}}),
    ] {
        let object = ocm_edge_schemas::api::object::OcmObject::from_value(v).unwrap();
        let stored = ocm_edge_hub::core::objects::StoredObject::from_applied(object).unwrap();
        let (change, _, _) = core.apply_object(stored, now).unwrap();
        core.apply(&change.records);
        records.extend(change.records);
    }
    records.extend(core.reconcile_fleet(now).records);
    (core, records)
}

#[test]
fn addon_views_match_their_published_schemas() {
    let (core, records) = core_with_addon();
    let msgs = dashboard::messages_for(&core, &records);
    let view = |topic: &str| -> Value {
        let m = msgs
            .iter()
            .find(|m| m.topic == topic)
            .unwrap_or_else(|| panic!("no {topic}"));
        serde_json::from_slice(&m.payload).unwrap()
    };
    let addon = view("ocm-edge/ocm-edge/dashboard/addons/probe");
    assert_valid(schema_files::DASHBOARD_ADDON, &addon);
    let typed: DashboardAddOn = serde_json::from_value(addon).unwrap();
    assert_eq!(
        (typed.install.as_str(), typed.enabled, typed.registered),
        ("Manual", 1, 0),
        "enabled on edge-1, its identity not bound yet"
    );
    let on_cluster = view("ocm-edge/ocm-edge/dashboard/addons/probe/clusters/edge-1");
    assert_valid(schema_files::DASHBOARD_CLUSTER_ADDON, &on_cluster);
    let typed: DashboardClusterAddOn = serde_json::from_value(on_cluster).unwrap();
    assert_eq!(
        (typed.addon.as_str(), typed.cluster.as_str()),
        ("probe", "edge-1")
    );
    assert_eq!(
        typed.conditions.get("RegistrationApplied"),
        Some(&ocm_edge_schemas::api::meta::ConditionStatus::False)
    );
    assert!(!typed.deleting);
}
