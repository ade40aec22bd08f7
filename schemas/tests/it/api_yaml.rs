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

mod never_panics {
    use ocm_edge_schemas::api::object::from_yaml_objects;
    use ocm_edge_schemas::api::yaml::from_yaml_documents;
    use proptest::prelude::*;

    const FIXTURE: &str = include_str!("../fixtures/yaml/manifestwork.yaml");

    proptest! {
        // 2,000 random texts and 2,000 fixtures with a byte range replaced: the loader returns
        // Ok or a located error, never panics.
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn on_random_text(text in "\\PC{0,200}") {
            let _ = from_yaml_objects(&text, "random.yaml");
        }

        #[test]
        fn on_a_mutated_fixture(start in 0usize..FIXTURE.len(), len in 0usize..40, junk in "[ \\-:\\[\\]{}'\"#&*!|>%@`a-z0-9\\n]{0,12}") {
            let mut bytes = FIXTURE.as_bytes().to_vec();
            let end = (start + len).min(bytes.len());
            bytes.splice(start..end, junk.bytes());
            let text = String::from_utf8_lossy(&bytes);
            let _ = from_yaml_documents(&text, "mutated.yaml");
            let _ = from_yaml_objects(&text, "mutated.yaml");
        }
    }
}
