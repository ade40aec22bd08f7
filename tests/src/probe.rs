//! The one fake peer: a raw MQTT 5 client ([`Probe`], on `ocm_edge_mqtt`'s session) for tests that
//! speak the wire directly: a peer playing maestro, a spy on a cluster's topics, a sender of
//! malformed payloads, a cluster with broker credentials. Two roles are built on it:
//! [`AgentPeer`] plays a cluster's agent (for the hub's tests) and [`HubPeer`] plays the hub (for
//! the agent's tests).

use std::time::Duration;

use chrono::Utc;
use cloudevents::{AttributesReader, AttributesWriter, Event};
use ocm_edge_agent::registration::key::AgentKey;
use ocm_edge_mqtt::session::WillFn;
use ocm_edge_mqtt::{
    Ack, BrokerUrl, Credentials, LinkError, Publisher, Session, SessionConfig, SessionEvent,
    TlsFiles,
};
use ocm_edge_schemas::wire::event_type::EventType;
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
use ocm_edge_schemas::wire::works::WorkEvent;
use ocm_edge_schemas::wire::{MqttMessage, decode, encode, topic};
use tokio::sync::{Mutex, mpsc, watch};

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
    /// Filters subscribed (QoS 1) before [`Probe::connect_with`] returns, and again after every
    /// reconnect.
    pub subscriptions: Vec<String>,
    /// MQTT keepalive (5 s when `None`).
    pub keepalive: Option<Duration>,
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
    // Behind a lock, held from a request to its acknowledgement: publishing takes `&self`, and
    // requests made at once still each get their own answer.
    acks: Mutex<mpsc::UnboundedReceiver<Ack>>,
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
        cfg.keepalive = opts.keepalive.unwrap_or(Duration::from_secs(5));
        cfg.max_packet_bytes = MAX_PACKET_BYTES as u32;
        cfg.report_acks = true;
        cfg.tls = opts.tls;
        cfg.subscriptions = opts.subscriptions;
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
            acks: Mutex::new(acks),
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
    pub async fn subscribe(&self, filter: &str) -> Result<Vec<Result<u8, String>>, ProbeError> {
        // Held from the request to its answer: the next acknowledgement is this one's.
        let mut acks = self.acks.lock().await;
        self.publisher.subscribe(filter).await?;
        match Self::next_ack(&mut acks, "SUBACK").await? {
            Ack::Subscribe(codes) => Ok(codes),
            other => Err(ProbeError::UnexpectedAck(format!("{other:?}"), "SUBACK")),
        }
    }

    /// Publishes a message (QoS 1, not retained) with its content type and user properties,
    /// and waits for the PUBACK.
    ///
    /// # Errors
    /// [`ProbeError`] when the request fails or no PUBACK arrives.
    pub async fn publish(&self, msg: &MqttMessage) -> Result<PubAck, ProbeError> {
        // Held from the request to its answer: the next acknowledgement is this one's.
        let mut acks = self.acks.lock().await;
        self.publisher.publish(msg.clone()).await?;
        match Self::next_ack(&mut acks, "PUBACK").await? {
            Ack::Publish(r) => Ok(PubAck { refused: r.err() }),
            other => Err(ProbeError::UnexpectedAck(format!("{other:?}"), "PUBACK")),
        }
    }

    async fn next_ack(
        acks: &mut mpsc::UnboundedReceiver<Ack>,
        what: &'static str,
    ) -> Result<Ack, ProbeError> {
        match tokio::time::timeout(ACK_TIMEOUT, acks.recv()).await {
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

/// How long the peers below wait for what a test asks of them.
pub const PEER_WAIT: Duration = Duration::from_secs(20);

/// A [`Probe`] playing cluster `cluster`'s agent (for the hub's tests): subscribed to its
/// sourceevents (or another filter), publishing CloudEvents on its agentevents, signed with the
/// agent's key when given one.
#[derive(Debug)]
pub struct AgentPeer {
    /// The cluster it speaks for.
    pub cluster: String,
    /// The hub's source id.
    pub source: String,
    probe: Probe,
    key: Option<AgentKey>,
}

impl AgentPeer {
    /// Cluster `cluster`'s agent on `url`, subscribed to its sourceevents.
    ///
    /// # Panics
    /// When it cannot connect and subscribe: a harness failure.
    pub async fn connect(url: &str, source: &str, cluster: &str) -> AgentPeer {
        let sub = topic::source_events(source, cluster).expect("a valid cluster and source");
        Self::connect_to(url, source, cluster, sub).await
    }

    /// A client speaking for `cluster`, subscribed to `filter` (e.g. the dashboard topics)
    /// instead of its sourceevents.
    ///
    /// # Panics
    /// When it cannot connect and subscribe: a harness failure.
    pub async fn connect_to(url: &str, source: &str, cluster: &str, filter: String) -> AgentPeer {
        let opts = ProbeOptions {
            client_id: format!("{cluster}-{}", uuid::Uuid::new_v4().simple()),
            subscriptions: vec![filter],
            // The session's default (30 s), which the hub's tests have always given this peer.
            keepalive: Some(Duration::from_secs(30)),
            ..ProbeOptions::default()
        };
        let probe = Probe::connect_with(url, opts)
            .await
            .unwrap_or_else(|e| panic!("{cluster}'s peer cannot connect to {url}: {e}"));
        AgentPeer {
            cluster: cluster.to_owned(),
            source: source.to_owned(),
            probe,
            key: None,
        }
    }

    /// Signs everything it sends with the key of the agent whose data dir is `dir` (a process
    /// beside the agent speaking for its cluster once its key is bound).
    ///
    /// # Panics
    /// When the key cannot be read or made.
    pub fn signing_with(mut self, dir: &std::path::Path) -> AgentPeer {
        self.key = Some(AgentKey::load_or_create(dir).expect("the agent's key"));
        self
    }

    /// An event of type `ty` from this cluster with JSON `data`.
    ///
    /// # Panics
    /// When `ty` is not an event type.
    pub fn event(&self, ty: &str, data: serde_json::Value) -> Event {
        let mut e = Event::default();
        e.set_id(uuid::Uuid::new_v4().to_string());
        e.set_source(format!("{}-agent", self.cluster));
        e.set_type(EventType::parse(ty).expect("an event type").to_string());
        e.set_time(Some(Utc::now()));
        ext::set_cluster_name(&mut e, &self.cluster);
        ext::set_original_source(&mut e, "");
        e.set_data(APPLICATION_JSON, data);
        e
    }

    /// Publishes `event` on the cluster's agentevents (signed when it has a key).
    ///
    /// # Panics
    /// When the broker does not acknowledge it.
    pub async fn send(&self, event: &Event) {
        let topic = topic::agent_events(&self.source, &self.cluster).expect("a valid topic");
        let mut msg = encode(event, topic).expect("the event encodes");
        if let Some(key) = &self.key {
            key.sign(&mut msg);
        }
        self.send_raw(msg).await;
    }

    /// Publishes `msg` as it is.
    ///
    /// # Panics
    /// When the broker does not acknowledge it.
    pub async fn send_raw(&self, msg: MqttMessage) {
        self.probe
            .publish(&msg)
            .await
            .unwrap_or_else(|e| panic!("{}'s peer cannot publish: {e}", self.cluster));
    }

    /// Sends a join request (label `env=test`, a 60 s lease).
    pub async fn join(&self) {
        let e = self.event(
            "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
            serde_json::json!({"metadata": {"name": self.cluster, "labels": {"env": "test"}},
                               "spec": {"leaseDurationSeconds": 60}}),
        );
        self.send(&e).await;
    }

    /// Sends a lease renewal.
    pub async fn renew_lease(&self) {
        let e = self.event(
            "coordination.k8s.io.v1.leases.spec.update_request",
            serde_json::json!({"metadata": {"name": "managed-cluster-lease", "namespace": self.cluster},
                               "spec": {"leaseDurationSeconds": 60}}),
        );
        self.send(&e).await;
    }

    /// The next received message matching `pred` (others are skipped), within [`PEER_WAIT`].
    ///
    /// # Panics
    /// Naming `what` when none arrives.
    pub async fn next_message(
        &mut self,
        what: &str,
        pred: impl Fn(&MqttMessage) -> bool,
    ) -> MqttMessage {
        self.probe
            .recv_matching(PEER_WAIT, pred)
            .await
            .unwrap_or_else(|| panic!("no {what} within {PEER_WAIT:?}"))
    }

    /// The next received event matching `pred` (other events are skipped), within
    /// [`PEER_WAIT`].
    ///
    /// # Panics
    /// Naming `what` when none arrives, or when a message is no CloudEvent: the hub sends the
    /// cluster nothing else.
    pub async fn next_event(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        let deadline = tokio::time::Instant::now() + PEER_WAIT;
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let msg = self
                .probe
                .recv(remaining)
                .await
                .unwrap_or_else(|| panic!("no {what} within {PEER_WAIT:?}"));
            let event =
                decode(&msg).unwrap_or_else(|e| panic!("not a CloudEvent on {}: {e}", msg.topic));
            if pred(&event) {
                return event;
            }
        }
    }

    /// The next hub view (`managedclusters.spec.update_request`) whose data matches `pred`.
    pub async fn next_hub_view(
        &mut self,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let e = self
            .next_event("hub view", |e| {
                e.ty()
                    .starts_with("cluster.open-cluster-management.io.v1.managedclusters.spec")
                    && ocm_edge_schemas::wire::data_json(e)
                        .ok()
                        .flatten()
                        .is_some_and(|v| pred(&v))
            })
            .await;
        ocm_edge_schemas::wire::data_json(&e)
            .expect("JSON data")
            .expect("data")
    }

    /// The next work event matching `pred`.
    pub async fn next_work_event(
        &mut self,
        what: &str,
        pred: impl Fn(&WorkEvent) -> bool,
    ) -> WorkEvent {
        let e = self
            .next_event(what, |e| WorkEvent::from_event(e).is_ok_and(|w| pred(&w)))
            .await;
        WorkEvent::from_event(&e).expect("a work event")
    }
}

/// A [`Probe`] playing the hub (for the agent's tests): subscribed to a filter, publishing
/// CloudEvents, and handing out received events by type, keeping the others for later.
#[derive(Debug)]
pub struct HubPeer {
    probe: Probe,
    /// Events received but not yet asked for, in arrival order.
    backlog: Vec<Event>,
}

impl HubPeer {
    /// Connects to `url` and subscribes to `filter`; returns once the SUBACK arrived.
    ///
    /// # Panics
    /// When it cannot connect and subscribe: a harness failure.
    pub async fn connect(url: &str, filter: &str) -> HubPeer {
        let opts = ProbeOptions {
            client_id: format!("hub-{}", uuid::Uuid::new_v4().simple()),
            subscriptions: vec![filter.to_owned()],
            ..ProbeOptions::default()
        };
        let probe = Probe::connect_with(url, opts)
            .await
            .unwrap_or_else(|e| panic!("the hub's peer cannot connect to {url}: {e}"));
        HubPeer {
            probe,
            backlog: Vec::new(),
        }
    }

    /// Publishes a CloudEvent in binary mode on `topic`.
    ///
    /// # Panics
    /// When it does not encode or the broker does not acknowledge it.
    pub async fn publish_event(&self, event: &Event, topic: &str) {
        let msg = encode(event, topic).expect("the event encodes");
        self.publish_raw(msg).await;
    }

    /// Publishes a raw MQTT message.
    ///
    /// # Panics
    /// When the broker does not acknowledge it.
    pub async fn publish_raw(&self, msg: MqttMessage) {
        self.probe
            .publish(&msg)
            .await
            .unwrap_or_else(|e| panic!("the hub's peer cannot publish: {e}"));
    }

    /// The first event received (earlier ones not yet taken included) whose type ends with
    /// `suffix` and that passes `pred`, within [`PEER_WAIT`]; other events stay for later calls.
    ///
    /// # Panics
    /// When none arrives.
    pub async fn next_event(&mut self, suffix: &str, pred: impl Fn(&Event) -> bool) -> Event {
        let matches = |ev: &Event| ev.ty().ends_with(suffix) && pred(ev);
        if let Some(i) = self.backlog.iter().position(&matches) {
            return self.backlog.remove(i);
        }
        let deadline = tokio::time::Instant::now() + PEER_WAIT;
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let msg = self
                .probe
                .recv(remaining)
                .await
                .unwrap_or_else(|| panic!("no {suffix} event within {PEER_WAIT:?}"));
            let Ok(ev) = decode(&msg) else { continue };
            if matches(&ev) {
                return ev;
            }
            self.backlog.push(ev);
        }
    }
}
