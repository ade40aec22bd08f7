//! A raw MQTT 5 client (rumqttc v5) for tests that speak the wire directly: a peer playing maestro,
//! a spy on a cluster's topics, a sender of malformed payloads, a cluster with broker credentials.

use std::time::Duration;

use bytes::Bytes;
use ocm_edge_schemas::wire::MqttMessage;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{
    ConnectReturnCode, Packet, PubAckReason, PublishProperties, SubscribeReasonCode,
};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use tokio::sync::mpsc;

use crate::broker::MAX_PACKET_BYTES;

/// Errors of the probe client.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("bad broker url {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("broker refused the connection: {0}")]
    Refused(String),
    #[error("connection failed: {0}")]
    Connection(String),
    #[error("client request failed: {0}")]
    Client(String),
    #[error("no {what} within {timeout:?}")]
    Timeout {
        what: &'static str,
        timeout: Duration,
    },
}

/// Acknowledgements the broker sent back, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Ack {
    /// SUBACK reason codes, one per filter.
    Sub(Vec<SubscribeReasonCode>),
    /// PUBACK reason of a QoS 1 publish.
    Pub(PubAckReason),
}

/// Options of a [`Probe`].
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    /// Client id (random when empty).
    pub client_id: String,
    /// Username and password, for brokers with authentication.
    pub credentials: Option<(String, String)>,
}

/// A connected raw MQTT 5 client; received PUBLISHes arrive as [`MqttMessage`]s.
#[derive(Debug)]
pub struct Probe {
    client: AsyncClient,
    messages: mpsc::UnboundedReceiver<MqttMessage>,
    acks: mpsc::UnboundedReceiver<Ack>,
    task: tokio::task::JoinHandle<()>,
}

impl From<rumqttc::v5::ClientError> for ProbeError {
    fn from(e: rumqttc::v5::ClientError) -> Self {
        // Kept as text: the client error carries a whole request and would make every Result large.
        ProbeError::Client(e.to_string())
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long the probe waits for the broker's acknowledgements.
const ACK_TIMEOUT: Duration = Duration::from_secs(10);

impl Probe {
    /// Connects to `broker_url` (`mqtt://host:port`) with a random client id.
    ///
    /// # Errors
    /// [`ProbeError`] when the URL is bad or the broker refuses or is unreachable.
    pub async fn connect(broker_url: &str) -> Result<Self, ProbeError> {
        Self::connect_with(broker_url, ProbeOptions::default()).await
    }

    /// Connects with options (client id, credentials) and waits for the CONNACK.
    ///
    /// # Errors
    /// [`ProbeError`] when the URL is bad or the broker refuses or is unreachable.
    pub async fn connect_with(broker_url: &str, opts: ProbeOptions) -> Result<Self, ProbeError> {
        let url = url_host_port(broker_url)?;
        let client_id = if opts.client_id.is_empty() {
            format!("probe-{}", uuid::Uuid::new_v4().simple())
        } else {
            opts.client_id
        };
        let mut mqtt = MqttOptions::new(client_id, url.0, url.1);
        mqtt.set_keep_alive(Duration::from_secs(5));
        mqtt.set_clean_start(true);
        mqtt.set_max_packet_size(Some(MAX_PACKET_BYTES as u32));
        mqtt.set_outgoing_inflight_upper_limit(100);
        if let Some((u, p)) = opts.credentials {
            mqtt.set_credentials(u, p);
        }
        let (client, mut eventloop) = AsyncClient::new(mqtt, 64);
        let (msg_tx, messages) = mpsc::unbounded_channel();
        let (ack_tx, acks) = mpsc::unbounded_channel();
        let (conn_tx, mut conn_rx) = mpsc::unbounded_channel::<Result<(), ProbeError>>();
        let task = tokio::spawn(async move {
            let mut connected = false;
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                        if ack.code == ConnectReturnCode::Success {
                            connected = true;
                            let _ = conn_tx.send(Ok(()));
                        } else {
                            let _ =
                                conn_tx.send(Err(ProbeError::Refused(format!("{:?}", ack.code))));
                            return;
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let props = p.properties.unwrap_or_default();
                        if let Ok(m) = MqttMessage::from_raw_parts(
                            &p.topic,
                            p.payload.to_vec(),
                            props.content_type,
                            props.user_properties,
                        ) {
                            let _ = msg_tx.send(m);
                        }
                    }
                    Ok(Event::Incoming(Packet::SubAck(s))) => {
                        let _ = ack_tx.send(Ack::Sub(s.return_codes));
                    }
                    Ok(Event::Incoming(Packet::PubAck(a))) => {
                        let _ = ack_tx.send(Ack::Pub(a.reason));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if !connected {
                            let _ = conn_tx.send(Err(ProbeError::Connection(e.to_string())));
                            return;
                        }
                        // A probe never reconnects: tests that cut links use agents, not probes.
                        tracing::debug!(error = %e, "probe connection ended");
                        return;
                    }
                }
            }
        });
        match tokio::time::timeout(ACK_TIMEOUT, conn_rx.recv()).await {
            Ok(Some(Ok(()))) => Ok(Self {
                client,
                messages,
                acks,
                task,
            }),
            Ok(Some(Err(e))) => Err(e),
            Ok(None) => Err(ProbeError::Connection("event loop ended".into())),
            Err(_) => Err(ProbeError::Timeout {
                what: "CONNACK",
                timeout: ACK_TIMEOUT,
            }),
        }
    }

    /// Subscribes (QoS 1) and waits for the SUBACK; returns its reason codes.
    ///
    /// # Errors
    /// [`ProbeError`] when the request fails or no SUBACK arrives.
    pub async fn subscribe(
        &mut self,
        filter: &str,
    ) -> Result<Vec<SubscribeReasonCode>, ProbeError> {
        self.client.subscribe(filter, QoS::AtLeastOnce).await?;
        match self.next_ack("SUBACK").await? {
            Ack::Sub(codes) => Ok(codes),
            Ack::Pub(_) => Err(ProbeError::Connection(
                "PUBACK where a SUBACK was expected".into(),
            )),
        }
    }

    /// Publishes a message (QoS 1, not retained) with its content type and user properties,
    /// and waits for the PUBACK; returns its reason.
    ///
    /// # Errors
    /// [`ProbeError`] when the request fails or no PUBACK arrives.
    pub async fn publish(&mut self, msg: &MqttMessage) -> Result<PubAckReason, ProbeError> {
        let props = PublishProperties {
            content_type: msg.content_type.clone(),
            user_properties: msg.user_properties.clone(),
            ..PublishProperties::default()
        };
        self.client
            .publish_with_properties(
                msg.topic.clone(),
                QoS::AtLeastOnce,
                false,
                Bytes::from(msg.payload.clone()),
                props,
            )
            .await?;
        match self.next_ack("PUBACK").await? {
            Ack::Pub(r) => Ok(r),
            Ack::Sub(_) => Err(ProbeError::Connection(
                "SUBACK where a PUBACK was expected".into(),
            )),
        }
    }

    async fn next_ack(&mut self, what: &'static str) -> Result<Ack, ProbeError> {
        match tokio::time::timeout(ACK_TIMEOUT, self.acks.recv()).await {
            Ok(Some(a)) => Ok(a),
            Ok(None) => Err(ProbeError::Connection(format!(
                "connection closed before {what}"
            ))),
            Err(_) => Err(ProbeError::Timeout {
                what,
                timeout: ACK_TIMEOUT,
            }),
        }
    }

    /// The next received message, if one arrives within `timeout`.
    pub async fn recv(&mut self, timeout: Duration) -> Option<MqttMessage> {
        tokio::time::timeout(timeout, self.messages.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next received message matching `pred` within `timeout` (others are discarded).
    pub async fn recv_matching(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&MqttMessage) -> bool,
    ) -> Option<MqttMessage> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let m = tokio::time::timeout_at(deadline, self.messages.recv())
                .await
                .ok()
                .flatten()?;
            if pred(&m) {
                return Some(m);
            }
        }
    }

    /// Every message received so far, without waiting.
    pub fn drain(&mut self) -> Vec<MqttMessage> {
        let mut out = Vec::new();
        while let Ok(m) = self.messages.try_recv() {
            out.push(m);
        }
        out
    }

    /// The underlying client, for requests the probe does not wrap.
    pub fn client(&self) -> &AsyncClient {
        &self.client
    }
}

/// Host and port of `mqtt://host:port` (or `tcp://`).
fn url_host_port(broker_url: &str) -> Result<(String, u16), ProbeError> {
    let bad = |reason: &str| ProbeError::Url {
        url: broker_url.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = broker_url
        .strip_prefix("mqtt://")
        .or_else(|| broker_url.strip_prefix("tcp://"))
        .ok_or_else(|| bad("expected mqtt://host:port"))?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let port = port.parse().map_err(|_| bad("port is not a number"))?;
    Ok((host.to_owned(), port))
}
