//! The YAML loader names the source, document, line and column of mistakes.

use ocm_edge_schemas::api::placement::Placement;
use ocm_edge_schemas::api::work::ManifestWork;
use ocm_edge_schemas::api::yaml::{
    from_yaml_document, from_yaml_documents, from_yaml_documents_as,
};

#[test]
fn multi_document_yaml_yields_one_value_per_document_and_skips_empty_ones() {
    let text = "---\na: 1\n---\n# only a comment\n---\nb: 2\n";
    let docs = from_yaml_documents(text, "two.yaml").unwrap();
    assert_eq!(
        docs,
        vec![serde_json::json!({"a": 1}), serde_json::json!({"b": 2})]
    );
}

#[test]
fn invalid_yaml_reports_source_document_line_and_column() {
    let text = "apiVersion: v1\nkind: ConfigMap\n---\nmetadata:\n  name: [unclosed\n";
    let err = from_yaml_documents(text, "work.yaml").unwrap_err();
    assert_eq!(err.source_name, "work.yaml");
    assert_eq!(err.document, 2);
    assert!(err.line.is_some(), "{err}");
    assert!(
        err.to_string().starts_with("work.yaml: document 2, line "),
        "{err}"
    );
}

#[test]
fn a_field_of_the_wrong_type_is_reported_with_its_location() {
    let text = "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: p\nspec:\n  numberOfClusters: many\n";
    let err = from_yaml_documents_as::<Placement>(text, "p.yaml").unwrap_err();
    assert_eq!(
        (err.document, err.line, err.column),
        (1, Some(6), Some(21)),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "p.yaml: document 1, line 6 column 21: spec.numberOfClusters: invalid type: string \"many\", expected i32"
    );
}

#[test]
fn a_single_document_reader_refuses_several_documents() {
    let err = from_yaml_document::<ManifestWork>(
        "kind: ManifestWork\n---\nkind: ManifestWork\n",
        "w.yaml",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "w.yaml: document 2: expected exactly one YAML document, found 2"
    );
}
