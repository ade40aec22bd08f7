//! The one conversion between an MQTT 5 PUBLISH (rumqttc) and ocm-edge's messages: topic, payload,
//! content type and user properties travel in the schemas crate's [`MqttMessage`]; the MQTT 5
//! request/response properties (Response Topic, Correlation Data) and the retain flag beside it.

use bytes::Bytes;
use ocm_edge_schemas::wire::{MqttMessage, WireError};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{LastWill, LastWillProperties, Publish, PublishProperties};

/// A message as published or received.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Publication {
    /// Topic, payload, content type and user properties.
    pub message: MqttMessage,
    /// Keep it on the broker for later subscribers (dashboard topics).
    pub retain: bool,
    /// MQTT 5 Response Topic (admin requests).
    pub response_topic: Option<String>,
    /// MQTT 5 Correlation Data (admin requests and responses).
    pub correlation_data: Option<Bytes>,
}

impl From<MqttMessage> for Publication {
    fn from(message: MqttMessage) -> Self {
        Publication {
            message,
            ..Publication::default()
        }
    }
}

impl Publication {
    /// The topic.
    pub fn topic(&self) -> &str {
        &self.message.topic
    }

    /// Reads a received PUBLISH.
    ///
    /// # Errors
    /// [`WireError::TopicNotUtf8`].
    pub fn from_publish(p: Publish) -> Result<Self, WireError> {
        let props = p.properties.unwrap_or_default();
        let message = MqttMessage::from_raw_parts(
            &p.topic,
            p.payload.to_vec(),
            props.content_type,
            props.user_properties,
        )?;
        Ok(Publication {
            message,
            retain: p.retain,
            response_topic: props.response_topic,
            correlation_data: props.correlation_data,
        })
    }

    /// The size of this publication as an MQTT 5 PUBLISH packet, as rumqttc encodes it (the
    /// figure it checks against the broker's maximum packet size).
    pub fn packet_bytes(&self) -> usize {
        packet_bytes(
            &self.message.topic,
            self.properties(),
            self.message.payload.len(),
        )
        .0
    }

    /// Topic, retain flag, payload and PUBLISH properties, as rumqttc takes them.
    pub(crate) fn into_parts(self) -> (String, bool, Vec<u8>, PublishProperties) {
        let props = self.properties();
        (self.message.topic, self.retain, self.message.payload, props)
    }

    /// The PUBLISH properties of this message.
    pub(crate) fn properties(&self) -> PublishProperties {
        PublishProperties {
            content_type: self.message.content_type.clone(),
            user_properties: self.message.user_properties.clone(),
            response_topic: self.response_topic.clone(),
            correlation_data: self.correlation_data.clone(),
            ..PublishProperties::default()
        }
    }
}

/// The size of a QoS 1 PUBLISH of `topic` with `props` and `payload_len` bytes of payload, and
/// the properties back (measuring takes them by value; publishing needs them after).
pub(crate) fn packet_bytes(
    topic: &str,
    props: PublishProperties,
    payload_len: usize,
) -> (usize, PublishProperties) {
    let mut publish = Publish::new(topic.to_owned(), QoS::AtLeastOnce, Vec::new(), Some(props));
    publish.pkid = 1;
    let without_payload = publish.size();
    // The remaining-length header grows with the payload: at most 3 more bytes.
    let bytes = without_payload + payload_len + 3;
    (bytes, publish.properties.take().unwrap_or_default())
}

/// A message as the will of a connection (QoS 1, not retained).
pub(crate) fn last_will(msg: MqttMessage) -> LastWill {
    let props = LastWillProperties {
        delay_interval: None,
        payload_format_indicator: None,
        message_expiry_interval: None,
        content_type: msg.content_type,
        response_topic: None,
        correlation_data: None,
        user_properties: msg.user_properties,
    };
    LastWill::new(msg.topic, msg.payload, QoS::AtLeastOnce, false, Some(props))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publication_round_trips_through_a_rumqttc_publish() {
        let publication = Publication {
            message: MqttMessage {
                topic: "sources/ocm-edge/consumers/c/agentevents".into(),
                payload: b"{}".to_vec(),
                content_type: Some("application/json".into()),
                user_properties: vec![("ce-id".into(), "1".into())],
            },
            retain: true,
            response_topic: Some("r".into()),
            correlation_data: Some(Bytes::from_static(b"c")),
        };
        let mut p = Publish::new(
            publication.message.topic.clone(),
            QoS::AtLeastOnce,
            publication.message.payload.clone(),
            Some(publication.properties()),
        );
        p.retain = true;
        assert_eq!(Publication::from_publish(p).unwrap(), publication);
    }

    #[test]
    fn a_publish_whose_topic_is_not_utf8_is_an_error() {
        let mut p = Publish::new("t", QoS::AtLeastOnce, b"x".to_vec(), None);
        p.topic = Bytes::from_static(&[0xff, 0xfe]);
        assert!(matches!(
            Publication::from_publish(p),
            Err(WireError::TopicNotUtf8(_))
        ));
    }
}
