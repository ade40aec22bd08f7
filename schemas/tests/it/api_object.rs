//! Mixed YAML streams are read into the right OCM types by apiVersion group and kind.

use ocm_edge_schemas::api::object::{OcmObject, from_yaml_objects};

#[test]
fn a_mixed_stream_yields_each_known_kind_and_keeps_unknown_ones_raw() {
    let text = r#"
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: ns}
spec: {numberOfClusters: 2}
---
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: w, namespace: edge-1}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
"#;
    let objects = from_yaml_objects(text, "mixed.yaml").unwrap();
    let kinds: Vec<&str> = objects.iter().map(OcmObject::kind).collect();
    assert_eq!(kinds, ["Placement", "ManifestWork", "ConfigMap"]);
    match &objects[0] {
        OcmObject::Placement(p) => assert_eq!(p.spec.number_of_clusters, Some(2)),
        other => panic!("expected a Placement, got {other:?}"),
    }
    assert!(matches!(objects[1], OcmObject::ManifestWork(_)));
    assert!(matches!(objects[2], OcmObject::Other(_)));
}

#[test]
fn a_known_kind_with_a_wrong_field_names_source_document_kind_and_name() {
    let text = "kind: Other\n---\n---\napiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata: {name: edge-1}\nspec: {hubAcceptsClient: maybe}\n";
    let err = from_yaml_objects(text, "clusters.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "clusters.yaml: document 3: ManagedCluster \"edge-1\": invalid type: string \"maybe\", expected a boolean"
    );
}
