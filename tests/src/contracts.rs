//! The published contracts as tests check payloads against them: a JSON Schema validator for a
//! checked-in file of `schemas/json/`.

use std::path::PathBuf;

/// A validator for the checked-in JSON Schema `file` of `schemas/json/`.
///
/// # Panics
/// When the file cannot be read or is no JSON Schema.
pub fn schema_validator(file: &str) -> jsonschema::Validator {
    let path = schema_path(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{file} does not compile: {e}"))
}

/// Where the checked-in JSON Schema `file` is.
pub fn schema_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas")
        .join(ocm_edge_schemas::contracts::JSON_DIR)
        .join(file)
}
