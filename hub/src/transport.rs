//! The hub's MQTT 5 client (rumqttc): connects with a clean start, reconnects forever, subscribes
//! after every CONNACK, and reports every SUBACK so the hub can resync. It only moves messages:
//! [`Received`] in (with response topic and correlation data for the admin API), [`MqttMessage`]s out.
//!
//! The event loop runs on its own task and never waits on the hub: inbound messages go to an
//! unbounded channel, so a hub busy publishing cannot deadlock against a full event loop.

use std::time::Duration;

use bytes::Bytes;
use ocm_edge_schemas::wire::{MqttMessage, WireError};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, Filter, Packet, Publish, PublishProperties};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rumqttc::Outgoing;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Largest packet the hub sends or accepts (the broker may lower what it accepts in CONNACK).
pub const MAX_PACKET_BYTES: u32 = 4 * 1024 * 1024;
/// Outgoing QoS 1 messages in flight: rumqttc's v5 default preallocates ~14 MB per client.
const INFLIGHT: u16 = 100;
/// Requests queued to the event loop.
const REQUEST_CAPACITY: usize = 1024;
/// Pause before reconnecting after a connection error.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// Transport errors.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The broker URL is not `mqtt://host:port`. Not retryable.
    #[error("broker URL {0:?} is not mqtt://host[:port]")]
    BadUrl(String),
    /// The event loop has stopped (hub shutting down). Not retryable.
    #[error("MQTT client is closed: {0}")]
    Closed(String),
}

/// A message received from the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub message: MqttMessage,
    /// MQTT 5 Response Topic (admin requests).
    pub response_topic: Option<String>,
    /// MQTT 5 Correlation Data (admin requests).
    pub correlation_data: Option<Bytes>,
}

/// What the transport tells the hub.
#[derive(Debug)]
pub enum Inbound {
    /// A PUBLISH arrived.
    Message(Box<Received>),
    /// A PUBLISH arrived that cannot be read (topic not UTF-8).
    Malformed(WireError),
    /// The broker acknowledged our subscriptions (after every (re)connect).
    Subscribed,
}

/// Connection settings.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// `mqtt://host:port`.
    pub broker_url: String,
    pub client_id: String,
    pub keepalive: Duration,
    /// Filters subscribed (QoS 1) after every CONNACK.
    pub subscriptions: Vec<String>,
    /// Username and password, if the broker wants them.
    pub credentials: Option<(String, String)>,
}

/// A connected (or connecting) client. Cloning shares the connection.
#[derive(Debug, Clone)]
pub struct Transport {
    client: AsyncClient,
}

/// The event loop task; stop it with [`TransportTask::shutdown`].
#[derive(Debug)]
pub struct TransportTask {
    client: AsyncClient,
    closing: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

/// `mqtt://host:port` (also `tcp://`; port defaults to 1883) as (host, port).
///
/// # Errors
/// [`TransportError::BadUrl`].
pub fn parse_broker_url(url: &str) -> Result<(String, u16), TransportError> {
    let bad = || TransportError::BadUrl(url.to_owned());
    let rest = url
        .strip_prefix("mqtt://")
        .or_else(|| url.strip_prefix("tcp://"))
        .ok_or_else(bad)?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None if after.is_empty() => 1883,
            None => return Err(bad()),
        };
        (host.to_owned(), port)
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse().map_err(|_| bad())?),
            None => (rest.to_owned(), 1883),
        }
    };
    if host.is_empty() || host.contains('/') {
        return Err(bad());
    }
    Ok((host, port))
}

/// Installs the ring rustls provider once per process (every crate uses ring; DESIGN.md 10).
pub fn install_crypto_provider() {
    // AlreadyInstalled is fine: another component (or an earlier hub) did it.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Starts the client and its event loop task; inbound traffic goes to `inbound`.
///
/// # Errors
/// [`TransportError::BadUrl`]. Connection failures are retried forever in the background.
pub fn connect(
    cfg: &TransportConfig,
    inbound: mpsc::UnboundedSender<Inbound>,
) -> Result<(Transport, TransportTask), TransportError> {
    install_crypto_provider();
    let (host, port) = parse_broker_url(&cfg.broker_url)?;
    let mut opts = MqttOptions::new(cfg.client_id.clone(), host, port);
    opts.set_keep_alive(cfg.keepalive.max(Duration::from_secs(5)))
        .set_clean_start(true)
        .set_max_packet_size(Some(MAX_PACKET_BYTES))
        .set_outgoing_inflight_upper_limit(INFLIGHT);
    if let Some((user, pass)) = &cfg.credentials {
        opts.set_credentials(user.clone(), pass.clone());
    }
    let (client, eventloop) = AsyncClient::new(opts, REQUEST_CAPACITY);
    let closing = Arc::new(AtomicBool::new(false));
    let filters: Vec<Filter> = cfg
        .subscriptions
        .iter()
        .map(|f| Filter::new(f.clone(), QoS::AtLeastOnce))
        .collect();
    let task = tokio::spawn(run_event_loop(
        eventloop,
        client.clone(),
        filters,
        inbound,
        closing.clone(),
    ));
    Ok((
        Transport {
            client: client.clone(),
        },
        TransportTask {
            client,
            closing,
            task,
        },
    ))
}

async fn run_event_loop(
    mut eventloop: EventLoop,
    client: AsyncClient,
    filters: Vec<Filter>,
    inbound: mpsc::UnboundedSender<Inbound>,
    closing: Arc<AtomicBool>,
) {
    loop {
        match eventloop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                tracing::info!("hub connected to the broker; subscribing");
                // Sent from a separate task: the request channel is drained by this loop.
                let client = client.clone();
                let filters = filters.clone();
                tokio::spawn(async move {
                    if let Err(e) = client.subscribe_many(filters).await {
                        tracing::warn!(error = %e, "subscribe failed");
                    }
                });
            }
            Ok(Event::Incoming(Packet::SubAck(_))) => {
                if inbound.send(Inbound::Subscribed).is_err() {
                    break;
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) => {
                let item = match from_publish(p) {
                    Ok(r) => Inbound::Message(Box::new(r)),
                    Err(e) => Inbound::Malformed(e),
                };
                if inbound.send(item).is_err() {
                    break;
                }
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) => break,
            Ok(_) => {}
            Err(e) => {
                if closing.load(Ordering::SeqCst) {
                    break;
                }
                if let ConnectionError::ConnectionRefused(
                    code @ (ConnectReturnCode::BadUserNamePassword
                    | ConnectReturnCode::NotAuthorized),
                ) = &e
                {
                    // Retried anyway: the broker's password file may be fixed while the hub runs.
                    tracing::warn!(
                        ?code,
                        "the broker refused the hub's credentials (--broker-username/--broker-password); retrying"
                    );
                } else {
                    tracing::warn!(error = %e, "MQTT connection error; reconnecting");
                }
                tokio::time::sleep(RECONNECT_DELAY).await;
            }
        }
    }
}

/// A received PUBLISH as a [`Received`].
///
/// # Errors
/// [`WireError::TopicNotUtf8`].
pub fn from_publish(p: Publish) -> Result<Received, WireError> {
    let props = p.properties.unwrap_or_default();
    let message = MqttMessage::from_raw_parts(
        &p.topic,
        p.payload.to_vec(),
        props.content_type,
        props.user_properties,
    )?;
    Ok(Received {
        message,
        response_topic: props.response_topic,
        correlation_data: props.correlation_data,
    })
}

/// The PUBLISH properties carrying a message's content type and user properties.
pub fn publish_properties(msg: &MqttMessage) -> PublishProperties {
    PublishProperties {
        content_type: msg.content_type.clone(),
        user_properties: msg.user_properties.clone(),
        ..PublishProperties::default()
    }
}

impl Transport {
    /// Publishes a message (QoS 1, not retained).
    ///
    /// # Errors
    /// [`TransportError::Closed`] when the event loop has stopped.
    pub async fn publish(&self, msg: MqttMessage) -> Result<(), TransportError> {
        let props = publish_properties(&msg);
        self.publish_with(msg.topic, msg.payload, props, false)
            .await
    }

    /// Publishes with explicit properties (admin responses carry correlation data; dashboard
    /// topics are retained).
    ///
    /// # Errors
    /// [`TransportError::Closed`] when the event loop has stopped.
    pub async fn publish_with(
        &self,
        topic: String,
        payload: Vec<u8>,
        props: PublishProperties,
        retain: bool,
    ) -> Result<(), TransportError> {
        self.client
            .publish_with_properties(topic, QoS::AtLeastOnce, retain, payload, props)
            .await
            .map_err(|e| TransportError::Closed(e.to_string()))
    }
}

impl TransportTask {
    /// Disconnects politely (bounded) and stops the event loop.
    pub async fn shutdown(mut self) {
        self.closing.store(true, Ordering::SeqCst);
        let _ = tokio::time::timeout(Duration::from_millis(500), self.client.disconnect()).await;
        if tokio::time::timeout(Duration::from_secs(1), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_urls_parse_with_default_port() {
        let cases = [
            ("mqtt://127.0.0.1:1884", Some(("127.0.0.1", 1884))),
            ("mqtt://broker", Some(("broker", 1883))),
            ("tcp://broker:42/", Some(("broker", 42))),
            ("mqtt://[::1]:1885", Some(("::1", 1885))),
            ("http://broker:1883", None),
            ("mqtt://:1883", None),
            ("mqtt://broker:notaport", None),
        ];
        for (url, expected) in cases {
            let got = parse_broker_url(url).ok();
            assert_eq!(
                got.as_ref().map(|(h, p)| (h.as_str(), *p)),
                expected,
                "{url}"
            );
        }
    }

    #[test]
    fn publish_properties_round_trip_through_a_rumqttc_publish() {
        let msg = MqttMessage {
            topic: "sources/ocm-edge/consumers/c/agentevents".into(),
            payload: b"{}".to_vec(),
            content_type: Some("application/json".into()),
            user_properties: vec![("ce-id".into(), "1".into())],
        };
        let mut props = publish_properties(&msg);
        props.response_topic = Some("r".into());
        props.correlation_data = Some(Bytes::from_static(b"c"));
        let p = Publish::new(
            msg.topic.clone(),
            QoS::AtLeastOnce,
            msg.payload.clone(),
            Some(props),
        );
        let r = from_publish(p).unwrap();
        assert_eq!(r.message, msg);
        assert_eq!(r.response_topic.as_deref(), Some("r"));
        assert_eq!(r.correlation_data.as_deref(), Some(&b"c"[..]));
    }
}
