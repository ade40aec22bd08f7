//! Work and manifest validation: what is wrong, where, and how to fix it.

use ocm_edge_schemas::api::work::{Manifest, ManifestBundle, ManifestWork};
use ocm_edge_schemas::validate::{
    MAX_MANIFESTS_BYTES, ValidationError, validate_bundle, validate_manifest_work,
    validate_manifests,
};
use serde_json::json;

fn work_with(manifests: Vec<serde_json::Value>) -> ManifestWork {
    let mut work = ManifestWork::new("edge-1", "web");
    work.spec.workload.manifests = manifests.into_iter().map(Manifest).collect();
    work
}

fn deployment(name: &str) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"}})
}

#[test]
fn a_well_formed_work_is_accepted() {
    assert_eq!(
        validate_manifest_work(&work_with(vec![deployment("web"), deployment("api")])),
        Ok(())
    );
}

#[test]
fn a_manifest_without_a_name_is_refused_with_its_index_and_identity() {
    let work = work_with(vec![
        deployment("a"),
        deployment("b"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "default"}}),
    ]);
    assert_eq!(
        validate_manifest_work(&work).unwrap_err().to_string(),
        "manifests[2] (apps/v1 Deployment): metadata.name is missing: set it, every manifest needs a fixed name so the agent can find the object again"
    );
}

#[test]
fn generate_name_is_refused_and_named_as_the_problem() {
    let work = work_with(vec![
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "job-"}}),
    ]);
    assert_eq!(
        validate_manifest_work(&work).unwrap_err().to_string(),
        "manifests[0] (v1 Pod): metadata.generateName is not supported: use metadata.name instead, so the agent can find the object again"
    );
}

#[test]
fn missing_api_version_and_kind_are_each_named() {
    let no_version = work_with(vec![
        json!({"kind": "ConfigMap", "metadata": {"name": "cm"}}),
    ]);
    assert_eq!(
        validate_manifest_work(&no_version).unwrap_err().to_string(),
        "manifests[0] (ConfigMap cm): apiVersion is missing: set it, e.g. apiVersion: apps/v1"
    );
    let no_kind = work_with(vec![
        json!({"apiVersion": "v1", "metadata": {"name": "cm"}}),
    ]);
    assert_eq!(
        validate_manifest_work(&no_kind).unwrap_err().to_string(),
        "manifests[0] (v1 cm): kind is missing: set it, e.g. kind: Deployment"
    );
}

#[test]
fn a_manifest_that_is_not_a_map_is_refused() {
    let work = work_with(vec![json!("just a string")]);
    assert_eq!(
        validate_manifest_work(&work).unwrap_err().to_string(),
        "manifests[0]: is not a Kubernetes object: write each manifest as a map with apiVersion, kind and metadata"
    );
}

#[test]
fn a_work_without_manifests_is_refused() {
    assert_eq!(
        validate_manifest_work(&work_with(vec![])),
        Err(ValidationError::NoManifests)
    );
}

#[test]
fn manifests_over_500_kib_in_total_are_refused_with_their_size() {
    let big = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
               "data": {"blob": "x".repeat(200 * 1024)}})
    };
    let manifests: Vec<Manifest> = ["a", "b", "c"].iter().map(|n| Manifest(big(n))).collect();
    let total: usize = manifests
        .iter()
        .map(|m| serde_json::to_vec(&m.0).unwrap().len())
        .sum();
    let err = validate_manifests(&manifests).unwrap_err();
    assert_eq!(
        err,
        ValidationError::TooLarge {
            total_bytes: total,
            limit: MAX_MANIFESTS_BYTES
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the manifests are {total} bytes in total, over the limit of 512000 bytes (500 KiB): split them over several works or make them smaller"
        )
    );
}

#[test]
fn manifests_of_exactly_500_kib_are_accepted() {
    let skeleton = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"blob": ""}});
    let pad = MAX_MANIFESTS_BYTES - serde_json::to_vec(&skeleton).unwrap().len();
    let exact = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"blob": "x".repeat(pad)}});
    assert_eq!(
        serde_json::to_vec(&exact).unwrap().len(),
        MAX_MANIFESTS_BYTES
    );
    assert_eq!(validate_manifests(&[Manifest(exact)]), Ok(()));
}

#[test]
fn bundles_are_checked_like_works() {
    let bundle = ManifestBundle {
        manifests: vec![Manifest(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {}}),
        )],
        ..Default::default()
    };
    assert_eq!(
        validate_bundle(&bundle).unwrap_err().to_string(),
        "manifests[0] (v1 Secret): metadata.name is missing: set it, every manifest needs a fixed name so the agent can find the object again"
    );
}

#[test]
fn a_work_in_an_invalid_cluster_namespace_is_refused() {
    let mut work = work_with(vec![deployment("web")]);
    work.metadata.namespace = "Edge_1".into();
    assert!(
        validate_manifest_work(&work)
            .unwrap_err()
            .to_string()
            .starts_with("cluster name \"Edge_1\" is invalid: it contains 'E'")
    );
}

fn work_with_rules(rules: serde_json::Value) -> ManifestWork {
    let mut work = work_with(vec![deployment("web")]);
    work.spec.manifest_configs = serde_json::from_value(json!([{
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
        "conditionRules": rules,
    }]))
    .unwrap();
    work
}

#[test]
fn a_cel_condition_rule_that_does_not_compile_is_refused_with_its_place_and_position() {
    let work = work_with_rules(json!([
        {"condition": "Ready", "type": "CEL", "celExpressions": ["object.status.readyReplicas > 0"]},
        {"condition": "Done", "type": "CEL", "celExpressions": ["true", "object.status.phase == "]},
    ]));
    let err = validate_manifest_work(&work).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "spec.manifestConfigs[0].conditionRules[1].celExpressions[1]: ERROR: <input>:1:"
        ),
        "{err}"
    );
    let work = work_with_rules(json!([
        {"condition": "Ready", "type": "CEL", "celExpressions": ["true"], "messageExpression": "'is ' + state"},
    ]));
    assert_eq!(
        validate_manifest_work(&work).unwrap_err().to_string(),
        "spec.manifestConfigs[0].conditionRules[0].messageExpression: ERROR: <input>:1:9: \
         undeclared reference to 'state' (this expression may read object, result)"
    );
}

#[test]
fn a_cel_condition_rule_must_name_its_condition_as_ocm_requires() {
    let work = work_with_rules(json!([{"type": "CEL", "celExpressions": ["true"]}]));
    assert_eq!(
        validate_manifest_work(&work).unwrap_err().to_string(),
        "spec.manifestConfigs[0].conditionRules[0].condition: condition is required for CEL rules: name the condition to set"
    );
    let ok = work_with_rules(json!([
        {"condition": "Complete", "type": "WellKnownConditions"},
        {"condition": "Ready", "type": "CEL", "celExpressions": ["hasConditions(object.status)"],
         "messageExpression": "result ? 'ready' : 'waiting'"},
    ]));
    assert_eq!(validate_manifest_work(&ok), Ok(()));
}

fn work_with_config(config: serde_json::Value) -> ManifestWork {
    let mut work = work_with(vec![deployment("web")]);
    let mut config = config;
    config["resourceIdentifier"] = json!({"group": "apps", "resource": "deployments",
                                          "name": "web", "namespace": "default"});
    work.spec.manifest_configs = serde_json::from_value(json!([config])).unwrap();
    work
}

fn ignoring(field: serde_json::Value) -> ManifestWork {
    work_with_config(json!({"updateStrategy": {"type": "ServerSideApply",
        "serverSideApply": {"ignoreFields": [{"condition": "OnSpokePresent", "jsonPaths": [".spec.replicas"]}, field]}}}))
}

#[test]
fn ignore_fields_and_feedback_paths_that_do_not_read_are_refused_with_their_place() {
    let ok = ignoring(json!({"condition": "OnSpokeChange",
        "jsonPaths": [".spec.template.spec.containers[?(@.name==\"app\")].image"],
        "jsonPointers": ["/metadata/annotations/example.com~1owner"]}));
    assert_eq!(validate_manifest_work(&ok), Ok(()));

    let err = validate_manifest_work(&ignoring(
        json!({"jsonPaths": [".spec", ".spec.containers[0"]}),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[1].jsonPaths[1]: \
             invalid JSONPath \".spec.containers[0\": the [ at character 17 is never closed"
        ),
        "{err}"
    );
    let err = validate_manifest_work(&ignoring(json!({"jsonPointers": ["spec/replicas"]})))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[1].jsonPointers[0]: \
         invalid JSON Pointer \"spec/replicas\": a JSON Pointer starts with /, e.g. /spec/replicas"
    );
    let err = validate_manifest_work(&ignoring(json!({"jqPathExpressions": [".spec.replicas"]})))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions: \
             ocm-edge does not run jq expressions"
        ) && err.contains("jsonPointers (/spec/replicas) instead"),
        "{err}"
    );

    let feedback = |path: &str| {
        work_with_config(json!({"feedbackRules": [{"type": "JSONPaths",
            "jsonPaths": [{"name": "ready", "path": ".status.readyReplicas"}, {"name": "x", "path": path}]}]}))
    };
    assert_eq!(
        validate_manifest_work(&feedback(
            ".status.conditions[?(@.type==\"Available\")].status"
        )),
        Ok(())
    );
    let err = validate_manifest_work(&feedback("{.a}{.b}"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "spec.manifestConfigs[0].feedbackRules[0].jsonPaths[1].path: invalid JSONPath"
        ),
        "{err}"
    );
}
