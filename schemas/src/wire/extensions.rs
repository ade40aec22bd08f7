//! Typed access to the CloudEvent extensions of OCM's work protocol (docs/reference/protocol.md section 4).
//!
//! Getters say clearly when an extension is missing or has the wrong type; setters write the type
//! Go peers expect (integer `resourceversion`, strings for everything else).

use chrono::{DateTime, SecondsFormat, Utc};
use cloudevents::Event;
use cloudevents::event::ExtensionValue;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub const RESOURCE_ID: &str = "resourceid";
pub const RESOURCE_VERSION: &str = "resourceversion";
pub const CLUSTER_NAME: &str = "clustername";
pub const ORIGINAL_SOURCE: &str = "originalsource";
pub const METADATA: &str = "metadata";
pub const DELETION_TIMESTAMP: &str = "deletiontimestamp";
pub const LOG_TRACING: &str = "logtracing";
pub const SEQUENCE_ID: &str = "sequenceid";
pub const STATUS_HASH: &str = "statushash";

/// Errors reading or writing an extension. Not retryable: the event is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtensionError {
    #[error("extension {0:?} is missing")]
    Missing(&'static str),
    #[error("extension {name:?} should be {expected} but is {found}")]
    WrongType {
        name: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error(
        "extension {name:?} = {value} is outside the int32 range Go peers accept (0..={max})",
        max = i32::MAX
    )]
    OutOfRange { name: &'static str, value: i64 },
    #[error("extension {name:?} has a bad value {value:?}: {reason}")]
    BadValue {
        name: &'static str,
        value: String,
        reason: String,
    },
}

fn describe(v: &ExtensionValue) -> String {
    match v {
        ExtensionValue::String(s) => format!("the string {s:?}"),
        ExtensionValue::Boolean(b) => format!("the boolean {b}"),
        ExtensionValue::Integer(i) => format!("the integer {i}"),
    }
}

/// A string extension, borrowed from the event.
///
/// # Errors
/// [`ExtensionError::Missing`] or [`ExtensionError::WrongType`].
pub fn string<'e>(event: &'e Event, name: &'static str) -> Result<&'e str, ExtensionError> {
    match event.extension(name) {
        Some(ExtensionValue::String(s)) => Ok(s),
        Some(other) => Err(ExtensionError::WrongType {
            name,
            expected: "a string",
            found: describe(other),
        }),
        None => Err(ExtensionError::Missing(name)),
    }
}

fn optional_string<'e>(
    event: &'e Event,
    name: &'static str,
) -> Result<Option<&'e str>, ExtensionError> {
    match string(event, name) {
        Ok(s) => Ok(Some(s)),
        Err(ExtensionError::Missing(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn resource_id(event: &Event) -> Result<&str, ExtensionError> {
    string(event, RESOURCE_ID)
}
pub fn set_resource_id(event: &mut Event, id: impl Into<String>) {
    event.set_extension(RESOURCE_ID, id.into());
}

/// `resourceversion`: an integer (or a decimal string, as Go peers send it) within int32.
///
/// # Errors
/// Missing, not an integer, or outside `0..=i32::MAX` (Go peers narrow it to int32).
pub fn resource_version(event: &Event) -> Result<i64, ExtensionError> {
    let v = match event.extension(RESOURCE_VERSION) {
        Some(ExtensionValue::Integer(i)) => *i,
        Some(ExtensionValue::String(s)) => {
            s.parse::<i64>().map_err(|e| ExtensionError::BadValue {
                name: RESOURCE_VERSION,
                value: s.clone(),
                reason: format!("not a decimal integer ({e})"),
            })?
        }
        Some(other) => {
            return Err(ExtensionError::WrongType {
                name: RESOURCE_VERSION,
                expected: "an integer",
                found: describe(other),
            });
        }
        None => return Err(ExtensionError::Missing(RESOURCE_VERSION)),
    };
    check_version(v)
}

fn check_version(v: i64) -> Result<i64, ExtensionError> {
    if (0..=i64::from(i32::MAX)).contains(&v) {
        Ok(v)
    } else {
        Err(ExtensionError::OutOfRange {
            name: RESOURCE_VERSION,
            value: v,
        })
    }
}

/// Sets `resourceversion` as an integer.
///
/// # Errors
/// [`ExtensionError::OutOfRange`] outside `0..=i32::MAX`: Go peers would misread it.
pub fn set_resource_version(event: &mut Event, version: i64) -> Result<(), ExtensionError> {
    check_version(version)?;
    event.set_extension(RESOURCE_VERSION, version);
    Ok(())
}

pub fn cluster_name(event: &Event) -> Result<&str, ExtensionError> {
    string(event, CLUSTER_NAME)
}
pub fn set_cluster_name(event: &mut Event, cluster: impl Into<String>) {
    event.set_extension(CLUSTER_NAME, cluster.into());
}

/// `originalsource`: empty on agent-to-hub events from clusters and resync requests, the source id
/// on status events.
pub fn original_source(event: &Event) -> Result<&str, ExtensionError> {
    string(event, ORIGINAL_SOURCE)
}
pub fn set_original_source(event: &mut Event, source: impl Into<String>) {
    event.set_extension(ORIGINAL_SOURCE, source.into());
}

/// The raw `metadata` extension (ObjectMeta as a JSON string).
pub fn metadata_json(event: &Event) -> Result<&str, ExtensionError> {
    string(event, METADATA)
}

/// `metadata` decoded into `T` (normally `api::meta::ObjectMeta`).
///
/// # Errors
/// Missing, not a string, or not valid JSON for `T`.
pub fn metadata<T: DeserializeOwned>(event: &Event) -> Result<T, ExtensionError> {
    let raw = metadata_json(event)?;
    serde_json::from_str(raw).map_err(|e| ExtensionError::BadValue {
        name: METADATA,
        value: raw.to_owned(),
        reason: format!("not an ObjectMeta JSON object ({e})"),
    })
}

/// Sets `metadata` to `meta` as compact JSON.
///
/// # Errors
/// [`ExtensionError::BadValue`] if `meta` cannot be serialized (a map with non-string keys).
pub fn set_metadata<T: Serialize>(event: &mut Event, meta: &T) -> Result<(), ExtensionError> {
    let raw = serde_json::to_string(meta).map_err(|e| ExtensionError::BadValue {
        name: METADATA,
        value: String::new(),
        reason: e.to_string(),
    })?;
    event.set_extension(METADATA, raw);
    Ok(())
}

/// `deletiontimestamp`, present only on delete events.
///
/// # Errors
/// Present but not a string or not RFC 3339.
pub fn deletion_timestamp(event: &Event) -> Result<Option<DateTime<Utc>>, ExtensionError> {
    let Some(raw) = optional_string(event, DELETION_TIMESTAMP)? else {
        return Ok(None);
    };
    DateTime::parse_from_rfc3339(raw)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|e| ExtensionError::BadValue {
            name: DELETION_TIMESTAMP,
            value: raw.to_owned(),
            reason: format!("not an RFC 3339 time ({e})"),
        })
}
pub fn set_deletion_timestamp(event: &mut Event, at: DateTime<Utc>) {
    event.set_extension(
        DELETION_TIMESTAMP,
        at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
    );
}

pub fn log_tracing(event: &Event) -> Result<&str, ExtensionError> {
    string(event, LOG_TRACING)
}
pub fn set_log_tracing(event: &mut Event, tracing_json: impl Into<String>) {
    event.set_extension(LOG_TRACING, tracing_json.into());
}

/// `sequenceid`: a snowflake id as a decimal string (see [`super::sequence`]).
pub fn sequence_id(event: &Event) -> Result<&str, ExtensionError> {
    string(event, SEQUENCE_ID)
}
pub fn set_sequence_id(event: &mut Event, id: impl Into<String>) {
    event.set_extension(SEQUENCE_ID, id.into());
}

pub fn status_hash(event: &Event) -> Result<&str, ExtensionError> {
    string(event, STATUS_HASH)
}
pub fn set_status_hash(event: &mut Event, hash: impl Into<String>) {
    event.set_extension(STATUS_HASH, hash.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_version_reads_integers_and_decimal_strings() {
        let mut e = Event::default();
        set_resource_version(&mut e, 7).unwrap();
        assert_eq!(resource_version(&e), Ok(7));
        e.set_extension(RESOURCE_VERSION, "8");
        assert_eq!(resource_version(&e), Ok(8));
    }

    #[test]
    fn resource_versions_go_cannot_hold_are_refused() {
        let mut e = Event::default();
        assert!(matches!(
            set_resource_version(&mut e, i64::from(i32::MAX) + 1),
            Err(ExtensionError::OutOfRange { .. })
        ));
        e.set_extension(RESOURCE_VERSION, -1i64);
        let err = resource_version(&e).unwrap_err();
        assert!(err.to_string().contains("int32"), "{err}");
    }

    #[test]
    fn missing_and_mistyped_extensions_say_which() {
        let mut e = Event::default();
        assert_eq!(cluster_name(&e), Err(ExtensionError::Missing(CLUSTER_NAME)));
        e.set_extension(CLUSTER_NAME, 3i64);
        let err = cluster_name(&e).unwrap_err();
        assert!(err.to_string().contains("clustername"), "{err}");
        assert!(err.to_string().contains("integer 3"), "{err}");
    }

    #[test]
    fn deletion_timestamp_is_optional_and_round_trips() {
        let mut e = Event::default();
        assert_eq!(deletion_timestamp(&e), Ok(None));
        let t = DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
            .unwrap()
            .with_timezone(&Utc);
        set_deletion_timestamp(&mut e, t);
        assert_eq!(string(&e, DELETION_TIMESTAMP), Ok("2026-01-02T03:04:05Z"));
        assert_eq!(deletion_timestamp(&e), Ok(Some(t)));
    }
}
