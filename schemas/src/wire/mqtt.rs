//! A CloudEvent on an MQTT 5 PUBLISH, binary content mode (docs/reference/protocol.md section 2).
//!
//! Built on the CloudEvents SDK's binding traits: [`encode`] drives the SDK's `BinaryDeserializer` for
//! `Event` into our [`BinarySerializer`] that writes `ce-` user properties; [`decode`] implements
//! [`BinaryDeserializer`] for an MQTT message and lets the SDK build the `Event`.
//!
//! No MQTT client types here: transports copy topic, payload, content type and user properties in and out.

use chrono::SecondsFormat;
use cloudevents::event::{ExtensionValue, SpecVersion};
use cloudevents::message::{
    BinaryDeserializer, BinarySerializer, Error as SdkError, MessageAttributeValue,
};
use cloudevents::{Data, Event};

/// The user property prefix of CloudEvent attributes.
pub const CE_PREFIX: &str = "ce-";
/// Where Go peers before Sep 2024 put `datacontenttype`.
pub const LEGACY_CONTENT_TYPE_PROPERTY: &str = "Content-Type";
/// The content type of every OCM payload.
pub const APPLICATION_JSON: &str = "application/json";

/// Extensions whose values are integers on the wire. Everything else is a string.
const INTEGER_EXTENSIONS: &[&str] = &[super::extensions::RESOURCE_VERSION];

/// What ocm-edge needs of an MQTT 5 PUBLISH, independent of the client library.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MqttMessage {
    pub topic: String,
    pub payload: Vec<u8>,
    /// The MQTT 5 Content Type property.
    pub content_type: Option<String>,
    /// MQTT 5 user properties, in order (names may repeat in MQTT; the last `ce-` one wins here).
    pub user_properties: Vec<(String, String)>,
}

impl MqttMessage {
    /// Builds a message from raw parts as a client library hands them over (topic as bytes).
    ///
    /// # Errors
    /// [`WireError::TopicNotUtf8`] when the topic is not UTF-8 (MQTT requires it).
    pub fn from_raw_parts(
        topic: &[u8],
        payload: Vec<u8>,
        content_type: Option<String>,
        user_properties: Vec<(String, String)>,
    ) -> Result<Self, WireError> {
        let topic = std::str::from_utf8(topic)
            .map_err(|e| WireError::TopicNotUtf8(e.to_string()))?
            .to_owned();
        Ok(Self {
            topic,
            payload,
            content_type,
            user_properties,
        })
    }

    /// The value of a user property (the last one with that name).
    pub fn user_property(&self, name: &str) -> Option<&str> {
        self.user_properties
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Errors mapping CloudEvents to and from MQTT messages. None is retryable: the message is bad.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error(
        "not a CloudEvent in binary content mode: the user property ce-specversion is missing (the sender must set ce-specversion=1.0)"
    )]
    NotBinaryMode,
    #[error("unsupported ce-specversion {0:?}: expected \"1.0\"")]
    UnsupportedSpecVersion(String),
    #[error("required attribute ce-{0} is missing")]
    MissingAttribute(&'static str),
    #[error(
        "extension name {0:?} is not allowed: CloudEvent extension names are [A-Za-z0-9] only (Go peers drop the whole message otherwise)"
    )]
    BadExtensionName(String),
    #[error("attribute ce-{name} has a bad value {value:?}: {reason}")]
    BadAttribute {
        name: String,
        value: String,
        reason: String,
    },
    #[error("payload is not valid JSON although the content type is {content_type:?}: {reason}")]
    BadJsonPayload {
        content_type: String,
        reason: String,
    },
    #[error("topic is not UTF-8: {0}")]
    TopicNotUtf8(String),
    #[error("CloudEvents SDK refused the event: {0}")]
    Sdk(String),
}

impl From<SdkError> for WireError {
    fn from(e: SdkError) -> Self {
        match e {
            SdkError::Other { source } => match source.downcast::<WireError>() {
                Ok(ours) => *ours,
                Err(other) => WireError::Sdk(other.to_string()),
            },
            other => WireError::Sdk(other.to_string()),
        }
    }
}

fn ours(e: WireError) -> SdkError {
    SdkError::Other {
        source: Box::new(e),
    }
}

/// Whether `name` is a valid extension name for Go peers: `[A-Za-z0-9]+`.
pub fn is_valid_extension_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Whether a content type carries JSON (same rule as the CloudEvents SDK).
pub fn is_json_content_type(ct: &str) -> bool {
    ct.starts_with("application/json") || ct.starts_with("text/json") || ct.ends_with("+json")
}

/// Maps a CloudEvent to an MQTT 5 message in binary content mode.
///
/// # Errors
/// [`WireError::BadExtensionName`] when an extension name would make Go peers drop the message.
pub fn encode(event: &Event, topic: impl Into<String>) -> Result<MqttMessage, WireError> {
    let out = MqttMessage {
        topic: topic.into(),
        ..MqttMessage::default()
    };
    Ok(event.clone().deserialize_binary(MqttSerializer(out))?)
}

/// Maps an MQTT 5 message in binary content mode back to a CloudEvent.
///
/// Reads `datacontenttype` from the Content Type property, or from the legacy `Content-Type` user
/// property. JSON payloads become `Data::Json`; integer-valued known extensions (`resourceversion`)
/// become integers.
///
/// # Errors
/// A [`WireError`] saying which property or payload is wrong. Never panics on any input.
pub fn decode(msg: &MqttMessage) -> Result<Event, WireError> {
    let mut event = MqttDeserializer(msg).into_event()?;
    let (content_type, dataschema, data) = event.take_data();
    match data {
        // Binary-mode data arrives as bytes; JSON payloads are parsed so events compare equal to
        // their structured-JSON form and callers read `Data::Json`.
        Some(Data::Binary(bytes)) => {
            let ct = content_type
                .clone()
                .unwrap_or_else(|| APPLICATION_JSON.to_owned());
            if is_json_content_type(&ct) {
                let value: serde_json::Value =
                    serde_json::from_slice(&bytes).map_err(|e| WireError::BadJsonPayload {
                        content_type: ct,
                        reason: e.to_string(),
                    })?;
                event.set_data_unchecked(Data::Json(value));
            } else {
                event.set_data_unchecked(Data::Binary(bytes));
            }
        }
        Some(other) => {
            event.set_data_unchecked(other);
        }
        None => {}
    }
    // take_data cleared datacontenttype and dataschema; put them back as they were on the wire.
    use cloudevents::AttributesWriter;
    event.set_datacontenttype(content_type);
    event.set_dataschema(dataschema);
    Ok(event)
}

/// Writes an event into an [`MqttMessage`] (the SDK calls this while walking the event).
#[derive(Debug)]
struct MqttSerializer(MqttMessage);

impl MqttSerializer {
    fn push(&mut self, name: &str, value: &MessageAttributeValue) {
        let v = match value {
            // RFC 3339, UTC with `Z`, nanoseconds kept when present (what Go's RFC3339Nano reads).
            MessageAttributeValue::DateTime(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            other => other.to_string(),
        };
        self.0
            .user_properties
            .push((format!("{CE_PREFIX}{name}"), v));
    }
}

impl BinarySerializer<MqttMessage> for MqttSerializer {
    fn set_spec_version(mut self, spec_version: SpecVersion) -> cloudevents::message::Result<Self> {
        self.push(
            "specversion",
            &MessageAttributeValue::String(spec_version.to_string()),
        );
        Ok(self)
    }

    fn set_attribute(
        mut self,
        name: &str,
        value: MessageAttributeValue,
    ) -> cloudevents::message::Result<Self> {
        if name == "datacontenttype" {
            self.0.content_type = Some(value.to_string());
        } else {
            self.push(name, &value);
        }
        Ok(self)
    }

    fn set_extension(
        mut self,
        name: &str,
        value: MessageAttributeValue,
    ) -> cloudevents::message::Result<Self> {
        if !is_valid_extension_name(name) {
            return Err(ours(WireError::BadExtensionName(name.to_owned())));
        }
        self.push(name, &value);
        Ok(self)
    }

    fn end_with_data(mut self, bytes: Vec<u8>) -> cloudevents::message::Result<MqttMessage> {
        self.0.payload = bytes;
        Ok(self.0)
    }

    fn end(self) -> cloudevents::message::Result<MqttMessage> {
        Ok(self.0)
    }
}

/// Reads an [`MqttMessage`] as a binary-mode CloudEvent.
#[derive(Debug)]
struct MqttDeserializer<'a>(&'a MqttMessage);

const ATTRIBUTES: &[&str] = &["id", "type", "source", "subject", "time", "dataschema"];

impl BinaryDeserializer for MqttDeserializer<'_> {
    fn deserialize_binary<R: Sized, V: BinarySerializer<R>>(
        self,
        mut visitor: V,
    ) -> cloudevents::message::Result<R> {
        let msg = self.0;
        let spec = msg
            .user_property("ce-specversion")
            .ok_or_else(|| ours(WireError::NotBinaryMode))?;
        let spec_version = SpecVersion::try_from(spec)
            .map_err(|_| ours(WireError::UnsupportedSpecVersion(spec.to_owned())))?;
        for required in ["id", "source", "type"] {
            if msg
                .user_property(&format!("{CE_PREFIX}{required}"))
                .is_none()
            {
                return Err(ours(WireError::MissingAttribute(required)));
            }
        }
        visitor = visitor.set_spec_version(spec_version)?;

        // MQTT 5 Content Type first, then the legacy user property of older Go peers, then a stray
        // ce-datacontenttype some other binding may have written.
        let content_type = msg
            .content_type
            .as_deref()
            .or_else(|| msg.user_property(LEGACY_CONTENT_TYPE_PROPERTY))
            .or_else(|| msg.user_property("ce-datacontenttype"));
        if let Some(ct) = content_type {
            visitor = visitor.set_attribute(
                "datacontenttype",
                MessageAttributeValue::String(ct.to_owned()),
            )?;
        }

        for (key, value) in &msg.user_properties {
            let Some(name) = key.strip_prefix(CE_PREFIX) else {
                continue;
            };
            match name {
                "specversion" => {}
                // Already read above, with the MQTT Content Type property taking precedence.
                "datacontenttype" => {}
                _ if ATTRIBUTES.contains(&name) => {
                    let bad = |reason: String| {
                        ours(WireError::BadAttribute {
                            name: name.to_owned(),
                            value: value.clone(),
                            reason,
                        })
                    };
                    if name == "time" {
                        chrono::DateTime::parse_from_rfc3339(value)
                            .map_err(|e| bad(format!("not an RFC 3339 time ({e})")))?;
                    }
                    if name == "dataschema" {
                        url::Url::parse(value).map_err(|e| bad(format!("not a URL ({e})")))?;
                    }
                    visitor = visitor
                        .set_attribute(name, MessageAttributeValue::String(value.clone()))?;
                }
                _ => {
                    if !is_valid_extension_name(name) {
                        return Err(ours(WireError::BadExtensionName(name.to_owned())));
                    }
                    visitor = visitor.set_extension(name, typed_extension(name, value).into())?;
                }
            }
        }

        if msg.payload.is_empty() {
            visitor.end()
        } else {
            visitor.end_with_data(msg.payload.clone())
        }
    }
}

/// Gives a wire string its extension type: known integer extensions that look like integers become
/// integers, everything else stays a string (Go peers send every extension as a string).
pub(crate) fn typed_extension(name: &str, value: &str) -> ExtensionValue {
    if INTEGER_EXTENSIONS.contains(&name)
        && let Ok(i) = value.parse::<i64>()
    {
        return ExtensionValue::Integer(i);
    }
    ExtensionValue::String(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudevents::{EventBuilder, EventBuilderV10};

    fn sample() -> Event {
        EventBuilderV10::new()
            .id("1")
            .source("ocm-edge")
            .ty("io.open-cluster-management.works.v1alpha1.manifestbundles.spec.create_request")
            .time("2025-12-16T06:00:17.771003Z")
            .extension("resourceversion", 3i64)
            .extension("clustername", "c1")
            .data(APPLICATION_JSON, serde_json::json!({"manifests": []}))
            .build()
            .unwrap()
    }

    #[test]
    fn attributes_become_ce_user_properties_and_content_type_the_mqtt_property() {
        let m = encode(&sample(), "sources/ocm-edge/consumers/c1/sourceevents").unwrap();
        assert_eq!(m.content_type.as_deref(), Some("application/json"));
        assert_eq!(m.user_property("ce-specversion"), Some("1.0"));
        assert_eq!(
            m.user_property("ce-time"),
            Some("2025-12-16T06:00:17.771003Z")
        );
        assert_eq!(m.user_property("ce-resourceversion"), Some("3"));
        assert_eq!(m.user_property("ce-clustername"), Some("c1"));
        assert_eq!(m.payload, br#"{"manifests":[]}"#);
        assert_eq!(decode(&m).unwrap(), sample());
    }

    #[test]
    fn a_message_without_specversion_is_not_a_cloudevent() {
        let mut m = encode(&sample(), "t").unwrap();
        m.user_properties.retain(|(k, _)| k != "ce-specversion");
        assert_eq!(decode(&m).unwrap_err(), WireError::NotBinaryMode);
    }
}
