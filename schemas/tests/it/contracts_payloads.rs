//! The checked-in JSON Schemas (`schemas/json/`) accept what real peers send and refuse what no peer
//! may send: maestro's own events, OCM YAML documents, and broken payloads.

use crate::contracts_kit;

use contracts_kit::{errors, schemas_dir, validator, vector_data};

use ocm_edge_schemas::api::yaml::from_yaml_documents;
use ocm_edge_schemas::contracts::schema_files;
use serde_json::json;

#[test]
fn maestro_spec_data_is_a_valid_manifest_bundle() {
    let v = validator(schema_files::MANIFEST_BUNDLE);
    let data = vector_data("cloudevents.spec.maestro.json");
    assert_eq!(errors(&v, &data), Vec::<String>::new());
}

#[test]
fn maestro_status_data_is_a_valid_manifest_bundle_status() {
    let v = validator(schema_files::MANIFEST_BUNDLE_STATUS);
    let data = vector_data("cloudevents.agent.json");
    assert_eq!(errors(&v, &data), Vec::<String>::new());
}

#[test]
fn a_bundle_whose_manifests_are_not_a_list_is_refused() {
    let v = validator(schema_files::MANIFEST_BUNDLE);
    let mut data = vector_data("cloudevents.spec.maestro.json");
    data["manifests"] = json!({"apiVersion": "v1"});
    assert!(!errors(&v, &data).is_empty());
    let mut data = vector_data("cloudevents.spec.maestro.json");
    data["manifestConfigs"][0]["updateStrategy"]["type"] = json!("Overwrite");
    assert!(!errors(&v, &data).is_empty(), "unknown update strategy");
}

#[test]
fn a_status_with_an_unknown_condition_status_is_refused() {
    let v = validator(schema_files::MANIFEST_BUNDLE_STATUS);
    let mut data = vector_data("cloudevents.agent.json");
    data["conditions"][0]["status"] = json!("Maybe");
    let errs = errors(&v, &data);
    assert!(!errs.is_empty());
    assert!(
        errs.iter().any(|e| e.contains("/conditions/0/status")),
        "{errs:?}"
    );
}

#[test]
fn resync_lists_accept_go_nulls_and_refuse_wrong_types() {
    let versions = validator(schema_files::RESOURCE_VERSION_LIST);
    for ok in [
        json!({"resourceVersions": [{"resourceID": "r1", "resourceVersion": 3}]}),
        json!({"resourceVersions": null}),
        json!({}),
    ] {
        assert_eq!(errors(&versions, &ok), Vec::<String>::new(), "{ok}");
    }
    let bad = json!({"resourceVersions": [{"resourceID": "r1", "resourceVersion": "3"}]});
    assert!(!errors(&versions, &bad).is_empty());

    let hashes = validator(schema_files::STATUS_HASH_LIST);
    assert!(
        errors(
            &hashes,
            &json!({"statusHashes": [{"resourceID": "r1", "statusHash": "ab"}]})
        )
        .is_empty()
    );
    assert!(!errors(&hashes, &json!({"statusHashes": [{"resourceID": "r1"}]})).is_empty());
}

#[test]
fn presence_must_say_online_or_offline_with_a_sequence_number() {
    let v = validator(schema_files::PRESENCE);
    assert!(errors(&v, &json!({"state": "online", "connectionSeq": 1})).is_empty());
    assert!(errors(&v, &json!({"state": "offline", "connectionSeq": 0})).is_empty());
    assert!(!errors(&v, &json!({"state": "asleep", "connectionSeq": 1})).is_empty());
    assert!(!errors(&v, &json!({"state": "online"})).is_empty());
    assert!(!errors(&v, &json!({"state": "online", "connectionSeq": -1})).is_empty());
}

#[test]
fn ocm_yaml_documents_validate_against_the_published_schemas() {
    use schema_files::*;
    for (fixture, file) in [
        ("managedcluster.yaml", MANAGED_CLUSTER),
        ("manifestwork.yaml", MANIFEST_WORK),
        ("placement.yaml", PLACEMENT),
        ("placementdecision.yaml", PLACEMENT_DECISION),
        ("managedclusterset.yaml", MANAGED_CLUSTER_SET),
        ("managedclustersetbinding.yaml", MANAGED_CLUSTER_SET_BINDING),
        ("manifestworkreplicaset.yaml", MANIFEST_WORK_REPLICA_SET),
        ("addonplacementscore.yaml", ADD_ON_PLACEMENT_SCORE),
        ("clusterclaim.yaml", CLUSTER_CLAIM),
        ("lease.yaml", LEASE),
    ] {
        let path = schemas_dir().join("tests/fixtures/yaml").join(fixture);
        let docs = from_yaml_documents(&std::fs::read_to_string(path).unwrap(), fixture).unwrap();
        let v = validator(file);
        for doc in &docs {
            assert_eq!(
                errors(&v, doc),
                Vec::<String>::new(),
                "{fixture} against {file}"
            );
        }
    }
}
