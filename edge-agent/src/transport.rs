//! MQTT 5 transport (rumqttc v5): one connection at a time, reconnecting forever with a capped,
//! jittered backoff. Each connection gets a new connection sequence number and an MQTT will built
//! for it (presence offline, same number as the birth the agent publishes on connect).
//!
//! The task only moves messages: it reports [`TransportEvent`]s to the agent and hands it a
//! [`Publisher`] for the current connection. What to publish is the agent's business.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use bytes::Bytes;
use ocm_edge_schemas::wire::MqttMessage;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{LastWill, LastWillProperties, Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Largest MQTT packet sent or accepted: works carry up to 500 KiB of manifests.
pub const MAX_PACKET_BYTES: u32 = 1024 * 1024;
/// Outgoing in-flight limit (rumqttc's v5 default allocates ~14 MB per client).
pub const OUTGOING_INFLIGHT: u16 = 100;

/// Transport errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The connection is gone or its queue is full; the outbox keeps the message. Retryable.
    #[error("cannot publish on {topic}: {reason}")]
    Publish { topic: String, reason: String },
}

/// What happened on the connection.
#[derive(Debug)]
pub enum TransportEvent {
    /// CONNACK received; `publisher` is valid until the next `Disconnected`.
    Connected {
        publisher: Publisher,
        connection_seq: u64,
    },
    /// The subscriptions were acknowledged (time to ask for a spec resync).
    Subscribed,
    /// A message from the hub.
    Message(MqttMessage),
    /// The connection broke; a new one is being attempted.
    Disconnected { reason: String },
}

/// Publishes on the current connection (QoS 1, not retained).
#[derive(Debug, Clone)]
pub struct Publisher {
    client: AsyncClient,
}

impl Publisher {
    /// Queues `msg` without waiting.
    ///
    /// # Errors
    /// [`TransportError::Publish`] when the connection's queue is closed or full.
    pub fn publish(&self, msg: MqttMessage) -> Result<(), TransportError> {
        let props = PublishProperties {
            content_type: msg.content_type.clone(),
            user_properties: msg.user_properties.clone(),
            ..PublishProperties::default()
        };
        self.client
            .try_publish_with_properties(
                msg.topic.clone(),
                QoS::AtLeastOnce,
                false,
                msg.payload,
                props,
            )
            .map_err(|e| TransportError::Publish {
                topic: msg.topic,
                reason: e.to_string(),
            })
    }

    /// Sends DISCONNECT (no will is published after it).
    pub fn disconnect(&self) {
        let _ = self.client.try_disconnect();
    }
}

/// Connection settings.
pub struct TransportConfig {
    pub client_id: String,
    pub host: String,
    pub port: u16,
    pub keepalive: Duration,
    /// TLS settings for `mqtts://` (read from files at start-up).
    pub tls: Option<rumqttc::TlsConfiguration>,
    /// Username and password, if the broker wants them.
    pub credentials: Option<(String, String)>,
    pub subscriptions: Vec<String>,
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    /// Gives the sequence number of the next connection (persisted by the caller).
    pub next_connection_seq: Box<dyn FnMut() -> u64 + Send>,
    /// Builds the will of connection `seq`.
    pub will: Box<dyn Fn(u64) -> Option<MqttMessage> + Send>,
}

impl std::fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportConfig")
            .field("client_id", &self.client_id)
            .field("host", &self.host)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// Converts a received PUBLISH.
pub fn from_publish(
    topic: &[u8],
    payload: &Bytes,
    props: Option<&PublishProperties>,
) -> Option<MqttMessage> {
    MqttMessage::from_raw_parts(
        topic,
        payload.to_vec(),
        props.and_then(|p| p.content_type.clone()),
        props.map(|p| p.user_properties.clone()).unwrap_or_default(),
    )
    .ok()
}

fn last_will(msg: MqttMessage) -> LastWill {
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

/// TLS settings from PEM files: the CA (system roots when `None`) and an optional client pair.
///
/// # Errors
/// [`TlsFileError`] naming the file that cannot be read.
pub fn tls_configuration(
    files: &crate::config::TlsFiles,
) -> Result<rumqttc::TlsConfiguration, TlsFileError> {
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| TlsFileError {
            path: p.display().to_string(),
            reason: e.to_string(),
        })
    };
    let client_auth = match (&files.client_cert_file, &files.client_key_file) {
        (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
        _ => None,
    };
    Ok(match &files.ca_file {
        Some(ca) => rumqttc::TlsConfiguration::Simple {
            ca: read(ca)?,
            alpn: None,
            client_auth,
        },
        None if client_auth.is_none() => rumqttc::TlsConfiguration::default(),
        None => {
            return Err(TlsFileError {
                path: "(CA file)".into(),
                reason: "a client certificate needs the CA file of the broker too".into(),
            });
        }
    })
}

/// A TLS file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TLS file {path}: {reason}")]
pub struct TlsFileError {
    pub path: String,
    pub reason: String,
}

/// Installs the ring rustls provider once per process (ignores "already installed").
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn jitter_factor() -> f64 {
    // 0.5..1.0 from the std hasher's random keys: no rand dependency for one number.
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    0.5 + (r % 1000) as f64 / 2000.0
}

/// The delay before reconnect attempt `attempt` (0-based): min x 2^attempt, capped, jittered.
pub fn backoff(attempt: u32, min: Duration, max: Duration) -> Duration {
    let base = min
        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        .min(max);
    base.mul_f64(jitter_factor())
}

/// Runs the connection loop until `stop` is cancelled.
pub async fn run(
    mut cfg: TransportConfig,
    events: mpsc::Sender<TransportEvent>,
    stop: CancellationToken,
) {
    let mut attempt = 0u32;
    loop {
        let seq = (cfg.next_connection_seq)();
        let mut options = MqttOptions::new(cfg.client_id.clone(), cfg.host.clone(), cfg.port);
        options
            .set_keep_alive(cfg.keepalive)
            .set_clean_start(true)
            .set_max_packet_size(Some(MAX_PACKET_BYTES))
            .set_outgoing_inflight_upper_limit(OUTGOING_INFLIGHT)
            .set_connection_timeout(10);
        if let Some(tls) = &cfg.tls {
            options.set_transport(rumqttc::Transport::tls_with_config(tls.clone()));
        }
        if let Some((user, password)) = &cfg.credentials {
            options.set_credentials(user.clone(), password.clone());
        }
        if let Some(will) = (cfg.will)(seq) {
            options.set_last_will(last_will(will));
        }
        let (client, mut eventloop) = AsyncClient::new(options, 1024);
        let publisher = Publisher {
            client: client.clone(),
        };
        let reason = loop {
            let polled = tokio::select! {
                () = stop.cancelled() => {
                    publisher.disconnect();
                    // Let the DISCONNECT out, briefly.
                    let _ = tokio::time::timeout(Duration::from_millis(200), async {
                        while eventloop.poll().await.is_ok() {}
                    }).await;
                    return;
                }
                polled = eventloop.poll() => polled,
            };
            match polled {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    attempt = 0;
                    let subs = cfg.subscriptions.iter().map(|t| {
                        rumqttc::v5::mqttbytes::v5::Filter::new(t.clone(), QoS::AtLeastOnce)
                    });
                    if let Err(e) = client.try_subscribe_many(subs) {
                        break format!("subscribe: {e}");
                    }
                    let ev = TransportEvent::Connected {
                        publisher: publisher.clone(),
                        connection_seq: seq,
                    };
                    if events.send(ev).await.is_err() {
                        return;
                    }
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if events.send(TransportEvent::Subscribed).await.is_err() {
                        return;
                    }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    match from_publish(&p.topic, &p.payload, p.properties.as_ref()) {
                        Some(msg) => {
                            if events.send(TransportEvent::Message(msg)).await.is_err() {
                                return;
                            }
                        }
                        None => tracing::warn!("dropped a PUBLISH whose topic is not UTF-8"),
                    }
                }
                Ok(_) => {}
                Err(e) => break e.to_string(),
            }
        };
        tracing::info!(%reason, "MQTT connection lost");
        if events
            .send(TransportEvent::Disconnected { reason })
            .await
            .is_err()
        {
            return;
        }
        let delay = backoff(attempt, cfg.reconnect_min, cfg.reconnect_max);
        attempt = attempt.saturating_add(1);
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}
