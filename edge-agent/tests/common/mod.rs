//! Test harness: the embedded broker on a free port, a raw MQTT client playing the hub,
//! and bounded waits on the agent's counters.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use cloudevents::{AttributesReader, Event};
use ocm_edge_agent::AgentCounters;
use ocm_edge_mqtt::broker::EmbeddedBroker;
use ocm_edge_mqtt::{BrokerUrl, Session, SessionConfig, SessionEvent};
use ocm_edge_schemas::wire::{MqttMessage, decode, encode};
use tokio::sync::{mpsc, watch};

pub const WAIT: Duration = Duration::from_secs(20);

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The embedded broker of a test: its URL, and the handle that keeps it running (dropping the
/// last handle stops the broker). Derefs to the URL.
#[derive(Debug, Clone)]
pub struct TestBroker {
    url: String,
    _running: EmbeddedBroker,
}

impl std::ops::Deref for TestBroker {
    type Target = str;

    fn deref(&self) -> &str {
        &self.url
    }
}

impl std::fmt::Display for TestBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

/// Starts the embedded broker (the hub's, from `ocm_edge_mqtt`) on a free port.
pub fn start_broker() -> TestBroker {
    start_broker_with_auth(None)
}

/// [`start_broker`] that only lets in the given username/password pairs.
pub fn start_broker_with_auth(auth: Option<HashMap<String, String>>) -> TestBroker {
    let broker = ocm_edge_mqtt::broker::start_embedded_with_users(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        auth,
    )
    .expect("embedded broker starts");
    TestBroker {
        url: broker.url().to_string(),
        _running: broker,
    }
}

/// A raw MQTT 5 client playing the hub.
pub struct FakeHub {
    session: Session,
    pub received: mpsc::UnboundedReceiver<MqttMessage>,
    /// Events received but not yet asked for, in arrival order.
    backlog: Vec<Event>,
}

impl FakeHub {
    /// Connects to `url` and subscribes to `filter`; returns once the SUBACK arrived.
    pub async fn connect(url: &str, filter: &str) -> FakeHub {
        let mut cfg = SessionConfig::new(
            BrokerUrl::parse(url).unwrap(),
            format!("hub-{}", free_port()),
        );
        cfg.keepalive = Duration::from_secs(5);
        cfg.subscriptions = vec![filter.to_owned()];
        let (session, mut events) = Session::connect(cfg, WAIT).await.expect("hub SUBACK");
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if let SessionEvent::Message(p) = event
                    && tx.send(p.message).is_err()
                {
                    return;
                }
            }
        });
        FakeHub {
            session,
            received: rx,
            backlog: Vec::new(),
        }
    }

    /// Publishes a CloudEvent in binary mode on `topic`.
    pub async fn publish_event(&self, event: &Event, topic: &str) {
        let msg = encode(event, topic).unwrap();
        self.publish_raw(msg).await;
    }

    /// Publishes a raw MQTT message.
    pub async fn publish_raw(&self, msg: MqttMessage) {
        self.session.publisher().publish(msg).await.unwrap();
    }

    /// The first event received (earlier ones not yet taken included) whose type ends with
    /// `suffix` and that passes `pred`; other events stay for later calls.
    pub async fn next_event(&mut self, suffix: &str, pred: impl Fn(&Event) -> bool) -> Event {
        let matches = |ev: &Event| ev.ty().ends_with(suffix) && pred(ev);
        if let Some(i) = self.backlog.iter().position(&matches) {
            return self.backlog.remove(i);
        }
        let backlog = &mut self.backlog;
        let received = &mut self.received;
        tokio::time::timeout(WAIT, async {
            loop {
                let msg = received.recv().await.expect("hub channel open");
                let Ok(ev) = decode(&msg) else { continue };
                if matches(&ev) {
                    return ev;
                }
                backlog.push(ev);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {suffix} event within {WAIT:?}"))
    }
}

/// Waits (bounded) until the counters satisfy `pred`.
pub async fn wait_counters(
    rx: &mut watch::Receiver<AgentCounters>,
    what: &str,
    pred: impl FnMut(&AgentCounters) -> bool,
) -> AgentCounters {
    let got = match tokio::time::timeout(WAIT, rx.wait_for(pred)).await {
        Ok(Ok(c)) => Some(c.clone()),
        _ => None,
    };
    got.unwrap_or_else(|| panic!("timed out waiting for {what}: {:?}", *rx.borrow()))
}

/// The maestro spec vector as a CloudEvent.
pub fn maestro_spec() -> Event {
    // A copy of shared/vectors/maestro/cloudevents.spec.maestro.json.
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cloudevents.spec.maestro.json"
    ))
    .expect("maestro vector");
    ocm_edge_schemas::wire::structured::parse(&bytes).expect("vector parses")
}

/// A TCP proxy in front of the broker whose link can be cut (both sides see the connection drop,
/// as with a broken network) and blocked (new connections are refused while blocked).
pub struct LinkProxy {
    pub url: String,
    cuts: watch::Sender<u64>,
    blocked: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl LinkProxy {
    pub async fn start(broker_url: &str) -> LinkProxy {
        let broker = BrokerUrl::parse(broker_url).unwrap();
        let target = format!("{}:{}", broker.host(), broker.port());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = BrokerUrl::plain(listener.local_addr().unwrap()).to_string();
        let (cuts, cut_rx) = watch::channel(0u64);
        let blocked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let is_blocked = blocked.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                if is_blocked.load(std::sync::atomic::Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                let mut cut = cut_rx.clone();
                cut.mark_unchanged();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        LinkProxy { url, cuts, blocked }
    }

    /// Drops every open connection.
    pub fn cut(&self) {
        self.cuts.send_modify(|n| *n += 1);
    }

    /// Refuses (`true`) or accepts new connections.
    pub fn block(&self, blocked: bool) {
        self.blocked
            .store(blocked, std::sync::atomic::Ordering::SeqCst);
    }
}
