//! Loading OCM objects from (multi-document) YAML, as the CLI reads them from files or stdin.
//! Errors name the source and the line and column, so a user can find the mistake.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A YAML document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: document {document}{}: {message}", location_suffix(*.line, *.column))]
pub struct YamlError {
    /// Where the text came from (a file name, `<stdin>`, ...).
    pub source_name: String,
    /// 1-based index of the document in the stream.
    pub document: usize,
    /// 1-based line in the whole text, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

fn location_suffix(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(", line {l} column {c}"),
        (Some(l), None) => format!(", line {l}"),
        _ => String::new(),
    }
}

impl YamlError {
    fn new(source_name: &str, document: usize, err: &serde_yaml_ng::Error) -> Self {
        let location = err.location();
        let mut message = err.to_string();
        // serde_yaml_ng appends " at line L column C"; we report the location ourselves.
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        YamlError {
            source_name: source_name.to_string(),
            document,
            line: location.as_ref().map(serde_yaml_ng::Location::line),
            column: location.as_ref().map(serde_yaml_ng::Location::column),
            message,
        }
    }
}

/// Reads every document of a YAML stream as JSON values. Empty documents (a bare `---`, or
/// comments only) are skipped.
///
/// # Errors
/// The first document that is not valid YAML or cannot be represented as JSON (e.g. a
/// non-string map key), with `source_name` and its line and column.
pub fn from_yaml_documents(text: &str, source_name: &str) -> Result<Vec<Value>, YamlError> {
    from_yaml_documents_as::<Value>(text, source_name)
        .map(|docs| docs.into_iter().filter(|v| !v.is_null()).collect())
}

/// Reads every document of a YAML stream as `T` (e.g. `ManifestWork`). Empty documents
/// become `T`'s reading of `null`; use [`from_yaml_documents`] to skip them.
///
/// # Errors
/// As [`from_yaml_documents`], plus fields of the wrong type, with their location.
pub fn from_yaml_documents_as<T: DeserializeOwned>(
    text: &str,
    source_name: &str,
) -> Result<Vec<T>, YamlError> {
    let mut out = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value =
            T::deserialize(document).map_err(|e| YamlError::new(source_name, index + 1, &e))?;
        out.push(value);
    }
    Ok(out)
}

/// Reads a single-document YAML text as `T`.
///
/// # Errors
/// As [`from_yaml_documents_as`]; also when the text has no document or more than one.
pub fn from_yaml_document<T: DeserializeOwned>(
    text: &str,
    source_name: &str,
) -> Result<T, YamlError> {
    let mut docs = from_yaml_documents_as::<T>(text, source_name)?;
    match docs.len() {
        1 => Ok(docs.remove(0)),
        n => Err(YamlError {
            source_name: source_name.to_string(),
            document: n,
            line: None,
            column: None,
            message: format!("expected exactly one YAML document, found {n}"),
        }),
    }
}
