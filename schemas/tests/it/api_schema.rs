//! The JSON Schemas generated from the API types accept the OCM documents the types accept,
//! so the published schemas describe what ocm-edge really reads.

use crate::contracts_kit;

use contracts_kit::vector_data;
use std::path::PathBuf;

use ocm_edge_schemas::api::cluster::{
    ClusterClaim, ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding,
};
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::placement::{AddOnPlacementScore, Placement, PlacementDecision};
use ocm_edge_schemas::api::replicaset::ManifestWorkReplicaSet;
use ocm_edge_schemas::api::work::{ManifestBundle, ManifestBundleStatus, ManifestWork};
use ocm_edge_schemas::api::yaml::from_yaml_documents;
use schemars::{JsonSchema, schema_for};
use serde_json::{Value, json};

fn assert_schema_accepts<T: JsonSchema>(documents: &[Value]) {
    let schema = serde_json::to_value(schema_for!(T)).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("generated schema compiles");
    for doc in documents {
        let errors: Vec<String> = validator
            .iter_errors(doc)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{} schema refuses a valid document: {errors:?}",
            T::schema_name()
        );
    }
}

fn fixture(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/yaml")
        .join(name);
    from_yaml_documents(&std::fs::read_to_string(path).unwrap(), name).unwrap()
}

#[test]
fn generated_schemas_accept_every_yaml_fixture() {
    assert_schema_accepts::<ManagedCluster>(&fixture("managedcluster.yaml"));
    assert_schema_accepts::<ManifestWork>(&fixture("manifestwork.yaml"));
    assert_schema_accepts::<Placement>(&fixture("placement.yaml"));
    assert_schema_accepts::<PlacementDecision>(&fixture("placementdecision.yaml"));
    assert_schema_accepts::<ManagedClusterSet>(&fixture("managedclusterset.yaml"));
    assert_schema_accepts::<ManagedClusterSetBinding>(&fixture("managedclustersetbinding.yaml"));
    assert_schema_accepts::<ManifestWorkReplicaSet>(&fixture("manifestworkreplicaset.yaml"));
    assert_schema_accepts::<AddOnPlacementScore>(&fixture("addonplacementscore.yaml"));
    assert_schema_accepts::<ClusterClaim>(&fixture("clusterclaim.yaml"));
    assert_schema_accepts::<Lease>(&fixture("lease.yaml"));
}

#[test]
fn generated_schemas_accept_the_maestro_payloads() {
    assert_schema_accepts::<ManifestBundle>(&[vector_data("cloudevents.spec.maestro.json")]);
    assert_schema_accepts::<ManifestBundleStatus>(&[vector_data("cloudevents.agent.json")]);
}

#[test]
fn generated_schemas_refuse_an_unknown_condition_status() {
    let schema = serde_json::to_value(schema_for!(ManifestBundleStatus)).unwrap();
    let bad = json!({"conditions": [{"type": "Applied", "status": "Maybe", "reason": "", "message": ""}]});
    assert!(!jsonschema::is_valid(&schema, &bad));
}
