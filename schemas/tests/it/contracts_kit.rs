//! What the contract tests share: where the crate's files are, the maestro vectors, and JSON
//! Schema validation with readable errors.
#![allow(dead_code)]

use std::path::PathBuf;

use ocm_edge_schemas::contracts::JSON_DIR;
use serde_json::Value;

/// The schemas crate's directory.
pub fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `data` of a maestro vector in `tests/fixtures/vectors/maestro/`.
pub fn vector_data(name: &str) -> Value {
    let path = schemas_dir()
        .join("tests/fixtures/vectors/maestro")
        .join(name);
    let event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event["data"].clone()
}

/// A validator for the checked-in schema `file` of `schemas/json/`.
pub fn validator(file: &str) -> jsonschema::Validator {
    let path = schemas_dir().join(JSON_DIR).join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{file} does not compile: {e}"))
}

/// Every error of `doc` against `v`, with where it is.
pub fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Fails with the errors when `instance` does not match `schema`.
pub fn assert_valid(schema: &Value, instance: &Value, what: &str) {
    let validator = jsonschema::validator_for(schema).unwrap();
    let errors = errors(&validator, instance);
    assert!(errors.is_empty(), "{what}: {errors:?}");
}
