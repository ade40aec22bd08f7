//! A raw MQTT 5 client (on `ocm_edge_mqtt`'s session) for tests that speak the wire directly: a peer playing maestro,
//! a spy on a cluster's topics, a sender of malformed payloads, a cluster with broker credentials.

use std::time::Duration;

use ocm_edge_mqtt::session::WillFn;
use ocm_edge_mqtt::{
    Ack, BrokerUrl, Credentials, LinkError, Publisher, Session, SessionConfig, SessionEvent,
    TlsFiles,
};
use ocm_edge_schemas::wire::MqttMessage;
use tokio::sync::{mpsc, watch};

use crate::broker::MAX_PACKET_BYTES;

/// Errors of the probe client.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Url(#[from] ocm_edge_mqtt::UrlError),
    #[error(transparent)]
    Connect(#[from] ocm_edge_mqtt::ConnectError),
    #[error("client request failed: {0}")]
    Client(#[from] ocm_edge_mqtt::PublishError),
    #[error("connection closed before {0}")]
    Closed(&'static str),
    #[error("{0} where a {1} was expected")]
    UnexpectedAck(String, &'static str),
    #[error("no {what} within {timeout:?}")]
    Timeout {
        what: &'static str,
        timeout: Duration,
    },
}

/// The broker's answer to a QoS 1 PUBLISH. Brokers may acknowledge a publish their ACL drops
/// (Mosquitto does by default), so tests check delivery, not this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PubAck {
    /// The reason code of a refusal (e.g. `NotAuthorized`), `None` when accepted.
    pub refused: Option<String>,
}

/// Options of a [`Probe`].
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    /// Client id (random when empty).
    pub client_id: String,
    /// Username and password, for brokers with authentication.
    pub credentials: Option<(String, String)>,
    /// CA (and client certificate) for an `mqtts://` broker.
    pub tls: TlsFiles,
    /// A will the broker publishes if the connection dies.
    pub will: Option<MqttMessage>,
}

/// A connected raw MQTT 5 client (an [`ocm_edge_mqtt::Session`] that reports every SUBACK and
/// PUBACK); received PUBLISHes arrive as [`MqttMessage`]s. It reconnects when its link is lost,
/// as every session does; [`Probe::link`] tells how its link is.
#[derive(Debug)]
pub struct Probe {
    // Kept for its Drop: dropping the session closes the connection.
    _session: Session,
    publisher: Publisher,
    messages: mpsc::UnboundedReceiver<MqttMessage>,
    acks: mpsc::UnboundedReceiver<Ack>,
    link: watch::Receiver<ProbeLink>,
}

/// How a [`Probe`]'s link is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeLink {
    /// Whether it is connected now.
    pub connected: bool,
    /// Links lost and reconnection attempts failed since it was last connected.
    pub down_events: u32,
    /// Times it connected again after a loss.
    pub reconnects: u32,
    /// Why it was last down.
    pub last_why: Option<LinkError>,
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
        let url = BrokerUrl::parse(broker_url)?;
        let client_id = if opts.client_id.is_empty() {
            format!("probe-{}", uuid::Uuid::new_v4().simple())
        } else {
            opts.client_id
        };
        let mut cfg = SessionConfig::new(url, client_id);
        cfg.keepalive = Duration::from_secs(5);
        cfg.max_packet_bytes = MAX_PACKET_BYTES as u32;
        cfg.report_acks = true;
        cfg.tls = opts.tls;
        cfg.credentials = opts
            .credentials
            .map(|(username, password)| Credentials { username, password });
        let will = opts
            .will
            .map(|m| -> WillFn { Box::new(move || (0, Some(m.clone()))) });
        let (session, mut events) = Session::connect_with_will(cfg, will, ACK_TIMEOUT).await?;
        let (msg_tx, messages) = mpsc::unbounded_channel();
        let (ack_tx, acks) = mpsc::unbounded_channel();
        let (link_tx, link) = watch::channel(ProbeLink {
            connected: true,
            ..ProbeLink::default()
        });
        // Ends when the session stops (its event channel closes).
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                match event {
                    SessionEvent::Message(p) => {
                        let _ = msg_tx.send(p.message);
                    }
                    SessionEvent::Acked(a) => {
                        let _ = ack_tx.send(a);
                    }
                    SessionEvent::Connected { .. } => link_tx.send_modify(|l| {
                        l.connected = true;
                        l.down_events = 0;
                        l.reconnects += 1;
                    }),
                    SessionEvent::Disconnected { why } => link_tx.send_modify(|l| {
                        l.connected = false;
                        l.down_events += 1;
                        l.last_why = Some(why);
                    }),
                    _ => {}
                }
            }
        });
        Ok(Self {
            publisher: session.publisher(),
            _session: session,
            messages,
            acks,
            link,
        })
    }

    /// How its link is now.
    pub fn link(&self) -> ProbeLink {
        self.link.borrow().clone()
    }

    /// Subscribes (QoS 1) and waits for the SUBACK; returns, per filter, the granted QoS or the
    /// broker's refusal.
    ///
    /// # Errors
    /// [`ProbeError`] when the request fails or no SUBACK arrives.
    pub async fn subscribe(&mut self, filter: &str) -> Result<Vec<Result<u8, String>>, ProbeError> {
        self.publisher.subscribe(filter).await?;
        match self.next_ack("SUBACK").await? {
            Ack::Subscribe(codes) => Ok(codes),
            other => Err(ProbeError::UnexpectedAck(format!("{other:?}"), "SUBACK")),
        }
    }

    /// Publishes a message (QoS 1, not retained) with its content type and user properties,
    /// and waits for the PUBACK.
    ///
    /// # Errors
    /// [`ProbeError`] when the request fails or no PUBACK arrives.
    pub async fn publish(&mut self, msg: &MqttMessage) -> Result<PubAck, ProbeError> {
        self.publisher.publish(msg.clone()).await?;
        match self.next_ack("PUBACK").await? {
            Ack::Publish(r) => Ok(PubAck { refused: r.err() }),
            other => Err(ProbeError::UnexpectedAck(format!("{other:?}"), "PUBACK")),
        }
    }

    async fn next_ack(&mut self, what: &'static str) -> Result<Ack, ProbeError> {
        match tokio::time::timeout(ACK_TIMEOUT, self.acks.recv()).await {
            Ok(Some(a)) => Ok(a),
            Ok(None) => Err(ProbeError::Closed(what)),
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
}
