//! Every OCM API type reads the OCM-style YAML in `fixtures/yaml/` and writes it back without
//! losing or adding a field.

use std::path::PathBuf;

use ocm_edge_schemas::api::cluster::{
    ClusterClaim, ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding,
};
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::placement::{AddOnPlacementScore, Placement, PlacementDecision};
use ocm_edge_schemas::api::replicaset::ManifestWorkReplicaSet;
use ocm_edge_schemas::api::work::ManifestWork;
use ocm_edge_schemas::api::yaml::{from_yaml_documents, from_yaml_documents_as};
use serde::Serialize;
use serde::de::DeserializeOwned;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/yaml")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses each document of `name` as `T`, writes it back, and compares with the document.
/// Returns the typed documents for further checks.
fn assert_round_trips<T: DeserializeOwned + Serialize + std::fmt::Debug + PartialEq>(
    name: &str,
    kind: &str,
) -> Vec<T> {
    let text = fixture(name);
    let originals = from_yaml_documents(&text, name).expect("fixture is valid YAML");
    assert!(!originals.is_empty(), "{name} has documents");
    let typed: Vec<T> = from_yaml_documents_as(&text, name).expect("fixture parses as the type");
    assert_eq!(typed.len(), originals.len());
    for (i, (original, object)) in originals.iter().zip(&typed).enumerate() {
        assert_eq!(original["kind"], kind, "{name} document {i} kind");
        let written = serde_json::to_value(object).expect("serialises");
        assert_eq!(
            &written, original,
            "{name} document {i} changed in a round trip"
        );
        let again: T = serde_json::from_value(written).expect("reads its own output");
        assert_eq!(&again, object, "{name} document {i} is stable");
    }
    typed
}

#[test]
fn managed_cluster_yaml_round_trips_exactly() {
    let clusters = assert_round_trips::<ManagedCluster>("managedcluster.yaml", "ManagedCluster");
    let c = &clusters[0];
    assert!(c.spec.hub_accepts_client);
    assert_eq!(
        c.spec.taints[0].key,
        "cluster.open-cluster-management.io/unreachable"
    );
    assert_eq!(c.status.capacity["cpu"].0, "4");
    assert_eq!(c.status.cluster_claims.len(), 3);
}

#[test]
fn manifest_work_yaml_with_every_spec_and_status_field_round_trips_exactly() {
    let works = assert_round_trips::<ManifestWork>("manifestwork.yaml", "ManifestWork");
    let w = &works[0];
    assert_eq!(w.spec.workload.manifests.len(), 3);
    assert_eq!(w.spec.manifest_configs.len(), 2);
    assert_eq!(
        w.status.resource_status.manifests[1]
            .status_feedback
            .values
            .len(),
        4
    );
}

#[test]
fn placement_yaml_with_every_spec_field_round_trips_exactly() {
    let placements = assert_round_trips::<Placement>("placement.yaml", "Placement");
    assert_eq!(placements.len(), 2);
}

#[test]
fn placement_decision_yaml_round_trips_exactly() {
    assert_round_trips::<PlacementDecision>("placementdecision.yaml", "PlacementDecision");
}

#[test]
fn managed_cluster_set_yaml_with_both_selector_types_round_trips_exactly() {
    let sets =
        assert_round_trips::<ManagedClusterSet>("managedclusterset.yaml", "ManagedClusterSet");
    assert_eq!(sets.len(), 2);
}

#[test]
fn managed_cluster_set_binding_yaml_round_trips_exactly() {
    assert_round_trips::<ManagedClusterSetBinding>(
        "managedclustersetbinding.yaml",
        "ManagedClusterSetBinding",
    );
}

#[test]
fn manifest_work_replica_set_yaml_with_every_rollout_type_round_trips_exactly() {
    let sets = assert_round_trips::<ManifestWorkReplicaSet>(
        "manifestworkreplicaset.yaml",
        "ManifestWorkReplicaSet",
    );
    assert_eq!(sets[0].spec.placement_refs.len(), 4);
}

#[test]
fn addon_placement_score_yaml_round_trips_exactly() {
    assert_round_trips::<AddOnPlacementScore>("addonplacementscore.yaml", "AddOnPlacementScore");
}

#[test]
fn cluster_claim_yaml_round_trips_exactly() {
    assert_round_trips::<ClusterClaim>("clusterclaim.yaml", "ClusterClaim");
}

#[test]
fn lease_yaml_round_trips_exactly_with_microsecond_times() {
    let leases = assert_round_trips::<Lease>("lease.yaml", "Lease");
    let renew = leases[0].spec.renew_time.expect("renewTime");
    assert_eq!(renew.to_string(), "2026-11-21T10:01:41.123456Z");
}

#[test]
fn unknown_fields_are_tolerated_and_metadata_extras_are_kept() {
    let text = r#"
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: w1
  namespace: c1
  selfLink: /apis/work/w1
  managedFields:
  - manager: kubectl
spec:
  futureField: 1
  workload:
    manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cm
  manifestConfigs:
  - resourceIdentifier:
      group: ""
      resource: configmaps
      name: cm
      namespace: default
    somethingNew: true
status:
  futureStatus: x
"#;
    let work: ManifestWork =
        ocm_edge_schemas::api::yaml::from_yaml_document(text, "inline").unwrap();
    let written = serde_json::to_value(&work).unwrap();
    assert_eq!(written["metadata"]["selfLink"], "/apis/work/w1");
    assert_eq!(
        written["metadata"]["managedFields"][0]["manager"],
        "kubectl"
    );
    assert_eq!(
        written["spec"].get("futureField"),
        None,
        "unknown spec fields are dropped, not kept"
    );
    assert_eq!(
        work.spec.manifest_configs[0].resource_identifier.resource,
        "configmaps"
    );
}

#[test]
fn objects_built_in_code_carry_api_version_and_kind() {
    let written = serde_json::to_value(ManifestWork::new("c1", "w1")).unwrap();
    assert_eq!(written["apiVersion"], "work.open-cluster-management.io/v1");
    assert_eq!(written["kind"], "ManifestWork");
    assert_eq!(
        written["metadata"],
        serde_json::json!({"name": "w1", "namespace": "c1"})
    );
    let lease = serde_json::to_value(Lease::default()).unwrap();
    assert_eq!(lease["apiVersion"], "coordination.k8s.io/v1");
}
