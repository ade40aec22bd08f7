//! Test harness: an embedded rumqttd (MQTT 5) on a free port, a raw rumqttc client playing the hub,
//! and bounded waits on the agent's counters.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use cloudevents::{AttributesReader, Event};
use ocm_edge_agent::AgentCounters;
use ocm_edge_schemas::wire::{MqttMessage, decode, encode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event as MqttEvent, MqttOptions};
use rumqttd::{Broker, Config, ConnectionSettings, RouterConfig, ServerSettings};
use tokio::sync::{mpsc, watch};

pub const WAIT: Duration = Duration::from_secs(20);

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts rumqttd with a v5 listener (1 MiB packets) and waits until it accepts connections.
pub fn start_broker() -> String {
    start_broker_with_auth(None)
}

/// [`start_broker`] that only lets in the given username/password pairs.
pub fn start_broker_with_auth(auth: Option<HashMap<String, String>>) -> String {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let server = ServerSettings {
        name: "v5".into(),
        listen: addr,
        tls: None,
        next_connection_delay_ms: 0,
        connections: ConnectionSettings {
            connection_timeout_ms: 60_000,
            max_payload_size: 1024 * 1024,
            max_inflight_count: 500,
            auth,
            external_auth: None,
            dynamic_filters: true,
        },
    };
    let config = Config {
        id: 0,
        router: RouterConfig {
            max_connections: 64,
            max_outgoing_packet_count: 200,
            max_segment_size: 100 * 1024 * 1024,
            max_segment_count: 10,
            custom_segment: None,
            initialized_filters: None,
            shared_subscriptions_strategy: Default::default(),
        },
        v5: Some(HashMap::from([("1".to_owned(), server)])),
        ..Config::default()
    };
    let mut broker = Broker::new(config);
    std::thread::spawn(move || {
        let _ = broker.start();
    });
    let started = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "broker did not start"
        );
        std::thread::yield_now();
    }
    format!("mqtt://{addr}")
}

/// A raw MQTT 5 client playing the hub.
pub struct FakeHub {
    pub client: AsyncClient,
    pub received: mpsc::UnboundedReceiver<MqttMessage>,
    /// Events received but not yet asked for, in arrival order.
    backlog: Vec<Event>,
    subscribed: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl FakeHub {
    /// Connects to `url` and subscribes to `filter`; returns once the SUBACK arrived.
    pub async fn connect(url: &str, filter: &str) -> FakeHub {
        let addr = url.trim_start_matches("mqtt://");
        let (host, port) = addr.rsplit_once(':').unwrap();
        let mut opts =
            MqttOptions::new(format!("hub-{}", free_port()), host, port.parse().unwrap());
        opts.set_max_packet_size(Some(1024 * 1024));
        opts.set_keep_alive(Duration::from_secs(5));
        let (client, mut eventloop) = AsyncClient::new(opts, 64);
        let (tx, rx) = mpsc::unbounded_channel();
        let (sub_tx, sub_rx) = tokio::sync::oneshot::channel();
        client.subscribe(filter, QoS::AtLeastOnce).await.unwrap();
        tokio::spawn(async move {
            let mut sub_tx = Some(sub_tx);
            loop {
                match eventloop.poll().await {
                    Ok(MqttEvent::Incoming(Packet::SubAck(_))) => {
                        if let Some(s) = sub_tx.take() {
                            let _ = s.send(());
                        }
                    }
                    Ok(MqttEvent::Incoming(Packet::Publish(p))) => {
                        let props = p.properties.unwrap_or_default();
                        let msg = MqttMessage::from_raw_parts(
                            &p.topic,
                            p.payload.to_vec(),
                            props.content_type,
                            props.user_properties,
                        )
                        .unwrap();
                        if tx.send(msg).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        let mut hub = FakeHub {
            client,
            received: rx,
            backlog: Vec::new(),
            subscribed: Some(sub_rx),
        };
        let sub = hub.subscribed.take().unwrap();
        tokio::time::timeout(WAIT, sub)
            .await
            .expect("hub SUBACK")
            .unwrap();
        hub
    }

    /// Publishes a CloudEvent in binary mode on `topic`.
    pub async fn publish_event(&self, event: &Event, topic: &str) {
        let msg = encode(event, topic).unwrap();
        self.publish_raw(msg).await;
    }

    /// Publishes a raw MQTT message.
    pub async fn publish_raw(&self, msg: MqttMessage) {
        let props = PublishProperties {
            content_type: msg.content_type,
            user_properties: msg.user_properties,
            ..PublishProperties::default()
        };
        self.client
            .publish_with_properties(msg.topic, QoS::AtLeastOnce, false, msg.payload, props)
            .await
            .unwrap();
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
        let target = broker_url.trim_start_matches("mqtt://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("mqtt://{}", listener.local_addr().unwrap());
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
