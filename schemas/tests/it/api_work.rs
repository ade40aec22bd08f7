//! ManifestWork <-> wire payloads, and the maestro vectors through our types.

use std::path::PathBuf;

use ocm_edge_schemas::api::work::{
    ManifestBundle, ManifestBundleStatus, ManifestWork, ManifestWorkSpec, ManifestWorkStatus,
};
use ocm_edge_schemas::api::yaml::from_yaml_document;
use serde_json::{Value, json};

fn vector(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vectors/maestro")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn fixture_work() -> ManifestWork {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/yaml/manifestwork.yaml");
    from_yaml_document(&std::fs::read_to_string(path).unwrap(), "manifestwork.yaml").unwrap()
}

#[test]
fn maestro_spec_bundle_round_trips_through_manifest_bundle_losslessly() {
    let data = vector("cloudevents.spec.maestro.json")["data"].clone();
    let bundle: ManifestBundle = serde_json::from_value(data.clone()).unwrap();
    assert_eq!(bundle.manifests.len(), 1);
    assert_eq!(bundle.manifests[0].name(), Some("maestro-e2e-upgrade-test"));
    assert_eq!(serde_json::to_value(&bundle).unwrap(), data);
}

#[test]
fn maestro_status_round_trips_through_manifest_bundle_status_losslessly() {
    let data = vector("cloudevents.agent.json")["data"].clone();
    let status: ManifestBundleStatus = serde_json::from_value(data.clone()).unwrap();
    assert_eq!(status.resource_status[0].resource_meta.kind, "Deployment");
    assert_eq!(serde_json::to_value(&status).unwrap(), data);
}

#[test]
fn a_work_spec_becomes_a_bundle_with_executer_and_comes_back_unchanged() {
    let work = fixture_work();
    let bundle = ManifestBundle::from(&work.spec);
    let written = serde_json::to_value(&bundle).unwrap();
    assert_eq!(
        written["executer"]["subject"]["serviceAccount"]["name"],
        "web-deployer"
    );
    assert!(written.get("executor").is_none());
    assert_eq!(
        written["manifests"],
        serde_json::to_value(&work.spec.workload.manifests).unwrap()
    );
    assert_eq!(ManifestWorkSpec::from(bundle), work.spec);
}

#[test]
fn a_work_status_becomes_a_flat_bundle_status_and_comes_back_unchanged() {
    let work = fixture_work();
    let status = ManifestBundleStatus::from(&work.status);
    let written = serde_json::to_value(&status).unwrap();
    assert_eq!(written["resourceStatus"][1]["resourceMeta"]["name"], "web");
    assert_eq!(ManifestWorkStatus::from(status), work.status);
}

#[test]
fn an_empty_work_status_is_written_with_an_empty_resource_status_like_go() {
    assert_eq!(
        serde_json::to_value(ManifestWorkStatus::default()).unwrap(),
        json!({"resourceStatus": {}})
    );
}

#[test]
fn an_empty_bundle_still_writes_manifests_and_conditions() {
    assert_eq!(
        serde_json::to_value(ManifestBundle::default()).unwrap(),
        json!({"manifests": []})
    );
    assert_eq!(
        serde_json::to_value(ManifestBundleStatus::default()).unwrap(),
        json!({"conditions": []})
    );
}

#[test]
fn manifest_accessors_read_identity_from_the_raw_object() {
    let work = fixture_work();
    let deployment = &work.spec.workload.manifests[1];
    assert_eq!(deployment.group_version(), Some(("apps", "v1")));
    assert_eq!(deployment.kind(), Some("Deployment"));
    assert_eq!(deployment.namespace(), Some("web"));
    assert_eq!(
        work.spec.workload.manifests[0].group_version(),
        Some(("", "v1"))
    );
}

#[test]
fn condition_rules_read_ocm_s_shape_and_the_earlier_names() {
    use ocm_edge_schemas::api::work::{ConditionRule, ConditionRuleType};
    let ocm: ConditionRule = serde_yaml_ng::from_str(
        "condition: Ready\ntype: CEL\ncelExpressions:\n- object.status.ready\n",
    )
    .unwrap();
    assert_eq!(ocm.type_, ConditionRuleType::Cel);
    assert_eq!(ocm.cel_expressions, ["object.status.ready"]);
    let earlier: ConditionRule = serde_json::from_value(serde_json::json!({
        "type": "WellKnownCompletions",
        "celExpressions": [{"expression": "true"}],
    }))
    .unwrap();
    assert_eq!(earlier.type_, ConditionRuleType::WellKnownConditions);
    assert_eq!(earlier.cel_expressions, ["true"]);
    assert_eq!(earlier.condition_type(), "Complete");
    assert_eq!(
        serde_json::to_value(&ocm).unwrap(),
        serde_json::json!({"condition": "Ready", "type": "CEL", "celExpressions": ["object.status.ready"]})
    );
}
