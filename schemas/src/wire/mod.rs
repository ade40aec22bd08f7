//! The wire protocol: OCM's CloudEvents binding over MQTT 5 (docs/reference/protocol.md), independent of any
//! MQTT client library. `cloudevents::Event` (CloudEvents SDK 0.9) is the event type everywhere.
//!
//! - [`event_type`]: `<group>.<version>.<resource>.<spec|status>.<action>` and the data types we use.
//! - [`mqtt`]: an Event to and from an MQTT 5 PUBLISH in binary content mode ([`mqtt::MqttMessage`]).
//! - [`structured`]: an Event to and from CloudEvents structured JSON (vectors, the proto tool).
//! - [`extensions`]: typed getters and setters for `resourceid`, `resourceversion`, `clustername`, ...
//! - [`topic`]: topic builders, subscriptions and the parsed [`topic::Topic`].
//! - [`resync`]: `ResourceVersionList` and `StatusHashList` payloads.
//! - [`sequence`]: the snowflake `sequenceid` generator and ordering.
//! - [`status_hash`]: the status hash exactly as Go peers compute it.
//! - [`works`]: build and parse every work event (`WorkEvent`).
//! - [`login`]: the proofs ocm-edge's clients log in to the embedded broker with.
//! - [`signature`]: what the hub's signature on its events covers, and where it travels.
//! - [`chunks`]: large messages split into a head and chunks for agents that offer it.
//! - [`addon_identity`]: add-on agents' own MQTT identities (registration over MQTT).
//! - [`cluster_events`]: ocm-edge's registration, hub view, cluster status, lease and presence events.

pub mod addon_identity;
pub mod chunks;
pub mod cluster_events;
pub mod event_type;
pub mod extensions;
mod go_json;
pub mod login;
pub mod mqtt;
pub mod resync;
pub mod sequence;
pub mod signature;
pub mod status_hash;
pub mod structured;
pub mod topic;
pub mod works;

pub use mqtt::{MqttMessage, WireError, decode, encode};

use cloudevents::{AttributesReader, Data, Event};

/// Errors reading an event's data as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    #[error("event {ty} has no data")]
    Missing { ty: String },
    #[error("data of event {ty} is not valid JSON: {reason}")]
    NotJson { ty: String, reason: String },
    #[error("data of event {ty} is not a valid {what}: {reason}")]
    Shape {
        ty: String,
        what: &'static str,
        reason: String,
    },
}

/// The event's data as JSON, whichever form the SDK holds it in. `None` when the event has no data.
///
/// # Errors
/// [`DataError::NotJson`] when the bytes or string are not JSON.
pub fn data_json(event: &Event) -> Result<Option<serde_json::Value>, DataError> {
    let not_json = |e: serde_json::Error| DataError::NotJson {
        ty: event.ty().to_owned(),
        reason: e.to_string(),
    };
    match event.data() {
        None => Ok(None),
        Some(Data::Json(v)) => Ok(Some(v.clone())),
        Some(Data::Binary(b)) => serde_json::from_slice(b).map(Some).map_err(not_json),
        Some(Data::String(s)) => serde_json::from_str(s).map(Some).map_err(not_json),
    }
}

/// The event's data decoded into `T`.
///
/// # Errors
/// [`DataError`] when data is missing, not JSON, or not shaped like `what`.
pub fn data_as<T: serde::de::DeserializeOwned>(
    event: &Event,
    what: &'static str,
) -> Result<T, DataError> {
    let value = data_json(event)?.ok_or_else(|| DataError::Missing {
        ty: event.ty().to_owned(),
    })?;
    serde_json::from_value(value).map_err(|e| DataError::Shape {
        ty: event.ty().to_owned(),
        what,
        reason: e.to_string(),
    })
}
