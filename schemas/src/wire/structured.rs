//! CloudEvents structured JSON (`{"specversion":..., "data": {...}}`), as in the maestro vectors and
//! the `ocm-edge-proto` tool.

use cloudevents::Event;
use cloudevents::event::ExtensionValue;

/// Errors reading a structured-JSON CloudEvent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructuredError {
    #[error("not a CloudEvent in structured JSON: {0}")]
    Json(String),
    #[error("extension name {0:?} is not allowed: CloudEvent extension names are [A-Za-z0-9] only")]
    BadExtensionName(String),
}

/// Parses a CloudEvent in structured JSON. Known integer extensions sent as strings become integers,
/// exactly as [`super::mqtt::decode`] does, so both paths give equal events.
///
/// # Errors
/// [`StructuredError`] with serde's line/column for malformed input.
pub fn parse(bytes: &[u8]) -> Result<Event, StructuredError> {
    let mut event: Event =
        serde_json::from_slice(bytes).map_err(|e| StructuredError::Json(e.to_string()))?;
    let mut retyped = Vec::new();
    for (name, value) in event.iter_extensions() {
        if !super::mqtt::is_valid_extension_name(name) {
            return Err(StructuredError::BadExtensionName(name.to_owned()));
        }
        if let ExtensionValue::String(s) = value {
            let typed = super::mqtt::typed_extension(name, s);
            if &typed != value {
                retyped.push((name.to_owned(), typed));
            }
        }
    }
    for (name, value) in retyped {
        event.set_extension(&name, value);
    }
    Ok(event)
}

/// Writes a CloudEvent as structured JSON (pretty, for people).
pub fn to_pretty_json(event: &Event) -> String {
    // Serializing an Event cannot fail: its fields are strings, numbers and a JSON value.
    serde_json::to_string_pretty(event).unwrap_or_default()
}
