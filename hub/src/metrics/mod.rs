//! The hub's Prometheus metrics (`ocm-edge hub --metrics-listen`; every metric is in
//! docs/reference/metrics.md).
//!
//! Two kinds:
//! - what only the process sees as it goes, kept here in [`HubMetrics`]: CloudEvents sent and
//!   received with sdk-go's names and labels, the spec resync's duration, reconnects, the store's
//!   commit latency, join requests, chunked transfers;
//! - what the hub already holds, read when Prometheus scrapes ([`HubMetrics::render`]): the fleet
//!   ([`fleet::FleetGauges`], counted by the hub task), the hub's named counters (those
//!   `ocm-edge stats` shows) and the embedded broker's ([`ocm_edge_mqtt::broker::BrokerStats`]).
//!
//! No label names a cluster: sdk-go's `consumer` (and, for what agents send, `source`) is `*`,
//! every cluster, so 10,000 clusters cost no more series than ten.

pub mod fleet;

use std::sync::Arc;
use std::time::Duration;

use ocm_edge_mqtt::metrics_endpoint::{
    Histograms, Labels, Scrape, cloudevent_labels, resync_histogram,
};
use ocm_edge_schemas::wire::MqttMessage;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use fleet::FleetGauges;

/// What sdk-go puts in `consumer` (and an agent's `source`) is a cluster's name; the hub puts
/// this instead, meaning every cluster (see the module's docs).
pub const EVERY_CLUSTER: &str = "*";

/// A store commit: an fsync on an SSD takes a millisecond or two, a batch of 512 a few more.
const COMMIT_BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

fn commit_histogram() -> Histogram {
    Histogram::new(COMMIT_BUCKETS)
}

/// How a batch reached the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Written and fsynced before anything of it is published.
    Durable,
    /// Agents' reports written without an fsync of their own.
    Deferred,
    /// The fsync of deferred writes.
    Flush,
}

impl Commit {
    fn as_str(self) -> &'static str {
        match self {
            Commit::Durable => "durable",
            Commit::Deferred => "deferred",
            Commit::Flush => "flush",
        }
    }
}

/// The instruments the hub keeps; shared by its tasks (cheap to update, a lock only on a new
/// label set).
#[derive(Debug)]
pub struct HubMetrics {
    registry: Registry,
    source: String,
    sent: Family<Labels, Counter>,
    received: Family<Labels, Counter>,
    spec_resync: Histograms,
    reconnected: Family<Labels, Counter>,
    commits: Histograms,
    join_requests: Counter,
    chunks_sent: Counter,
    transfers: Counter,
}

impl HubMetrics {
    /// The instruments of a hub whose source id is `source`.
    pub fn new(source: &str) -> Arc<Self> {
        let m = HubMetrics {
            registry: Registry::default(),
            source: source.to_owned(),
            sent: Family::default(),
            received: Family::default(),
            spec_resync: Family::new_with_constructor(resync_histogram),
            reconnected: Family::default(),
            commits: Family::new_with_constructor(commit_histogram),
            join_requests: Counter::default(),
            chunks_sent: Counter::default(),
            transfers: Counter::default(),
        };
        let mut registry = Registry::default();
        registry.register(
            "cloudevents_sent",
            "CloudEvents the hub sent, by sdk-go's labels (consumer: * for every cluster)",
            m.sent.clone(),
        );
        registry.register(
            "cloudevents_received",
            "CloudEvents the hub received from agents, by sdk-go's labels (source and consumer: * for every cluster)",
            m.received.clone(),
        );
        registry.register(
            "resources_spec_resync_duration_seconds",
            "From an agent's spec resync request to the hub's answer published (sdk-go's)",
            m.spec_resync.clone(),
        );
        registry.register(
            "cloudevents_client_reconnected",
            "Reconnects of the hub's MQTT sessions, by client id (sdk-go's)",
            m.reconnected.clone(),
        );
        registry.register(
            "ocm_edge_store_commit_duration_seconds",
            "Time to write one batch to the hub's store (kind: durable, deferred, or flush, the fsync of deferred batches)",
            m.commits.clone(),
        );
        registry.register(
            "ocm_edge_join_requests",
            "Join requests the hub handled (signed by the key they carry)",
            m.join_requests.clone(),
        );
        registry.register(
            "ocm_edge_chunks_sent",
            "Chunks of specs larger than an agent's chunk size sent",
            m.chunks_sent.clone(),
        );
        registry.register(
            "ocm_edge_chunked_transfers_started",
            "Specs sent in chunks (a head and its chunks), resumed ones included",
            m.transfers.clone(),
        );
        Arc::new(HubMetrics { registry, ..m })
    }

    fn cloudevent(&self, source: &str, msg: &MqttMessage) -> Labels {
        let mut labels = vec![
            ("source", source.to_owned()),
            ("consumer", EVERY_CLUSTER.to_owned()),
        ];
        labels.extend(cloudevent_labels(msg));
        labels
    }

    /// A CloudEvent published to an agent (one per event, however many chunks carried it).
    pub fn sent(&self, msg: &MqttMessage) {
        self.sent
            .get_or_create(&self.cloudevent(&self.source, msg))
            .inc();
    }

    /// A CloudEvent received from an agent.
    pub fn received(&self, msg: &MqttMessage) {
        self.received
            .get_or_create(&self.cloudevent(EVERY_CLUSTER, msg))
            .inc();
    }

    /// The hub answered a spec resync request in `took`.
    pub fn spec_resynced(&self, took: Duration) {
        let labels = vec![
            ("source", self.source.clone()),
            ("consumer", EVERY_CLUSTER.to_owned()),
            (
                "type",
                ocm_edge_schemas::wire::event_type::MANIFEST_BUNDLES.to_string(),
            ),
        ];
        self.spec_resync
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// A session of the hub connected again.
    pub fn reconnected(&self, client_id: &str) {
        self.reconnected
            .get_or_create(&vec![("client_id", client_id.to_owned())])
            .inc();
    }

    /// A batch reached the store in `took`.
    pub fn committed(&self, kind: Commit, took: Duration) {
        self.commits
            .get_or_create(&vec![("kind", kind.as_str().to_owned())])
            .observe(took.as_secs_f64());
    }

    pub fn join_request(&self) {
        self.join_requests.inc();
    }

    /// A spec went out as a head and `chunks` chunks.
    pub fn chunked(&self, chunks: u64) {
        self.transfers.inc();
        self.chunks_sent.inc_by(chunks);
    }

    /// The Prometheus text: the instruments kept here, the fleet (when the hub task answered)
    /// and the embedded broker's figures (when the hub runs one).
    pub fn render(&self, fleet: Option<&FleetGauges>, broker: Option<BrokerFigures>) -> String {
        let mut scrape = Scrape::default();
        if let Some(g) = fleet {
            fleet_metrics(&mut scrape, g);
        }
        if let Some(b) = broker {
            broker_metrics(&mut scrape, &b);
        }
        scrape.encode(&self.registry)
    }
}

/// What the embedded broker counted, read at scrape time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BrokerFigures {
    pub connections: u64,
    pub sessions: u64,
    pub refused_logins: u64,
    pub refused_topics: u64,
    pub dropped: u64,
    pub sessions_dropped: u64,
}

#[cfg(feature = "embedded-broker")]
impl BrokerFigures {
    pub fn of(broker: &ocm_edge_mqtt::broker::EmbeddedBroker) -> Self {
        let stats = broker.stats();
        let (connections, sessions) = broker.connections();
        BrokerFigures {
            connections,
            sessions,
            refused_logins: stats.refused_logins(),
            refused_topics: stats.refused_topics(),
            dropped: stats.dropped(),
            sessions_dropped: stats.disconnected(),
        }
    }
}

fn fleet_metrics(scrape: &mut Scrape, g: &FleetGauges) {
    let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    scrape.gauges(
        "ocm_edge_clusters",
        "Clusters by registration state (Pending, Accepted, Denied, Removing) and availability (the Available condition; Unknown before the first lease)",
        g.clusters.iter().map(|((stage, available), n)| {
            (
                vec![
                    ("state", stage.as_str().to_owned()),
                    ("available", (*available).to_owned()),
                ],
                gauge(*n),
            )
        }),
    );
    scrape.gauges(
        "ocm_edge_works",
        "Works by phase, as `ocm-edge work list` shows them",
        g.works
            .iter()
            .map(|(phase, n)| (vec![("phase", phase.as_str().to_owned())], gauge(*n))),
    );
    scrape.gauges(
        "ocm_edge_rollout_clusters",
        "Clusters selected by each ManifestWorkReplicaSet, by rollout status (ToApply, Progressing, Succeeded, Failed, TimeOut, Held)",
        g.rollouts.iter().flat_map(|r| {
            r.clusters.iter().map(|(status, n)| {
                (
                    vec![
                        ("namespace", r.namespace.clone()),
                        ("name", r.name.clone()),
                        ("status", status.clone()),
                    ],
                    gauge(*n),
                )
            })
        }),
    );
    scrape.gauges(
        "ocm_edge_placement_selected_clusters",
        "Clusters each Placement selects",
        g.placements.iter().map(|(namespace, name, n)| {
            (
                vec![("namespace", namespace.clone()), ("name", name.clone())],
                gauge(*n),
            )
        }),
    );
    scrape.counters(
        "ocm_edge_hub_events",
        "The hub's named counters, as `ocm-edge stats` shows them (messagesMalformed, agentEventsRefusedSignature, statusesStale, ...); kept across restarts",
        g.counters
            .iter()
            .map(|(name, n)| (vec![("counter", name.clone())], *n)),
    );
}

fn broker_metrics(scrape: &mut Scrape, b: &BrokerFigures) {
    let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    scrape.gauge(
        "ocm_edge_broker_connections",
        "Client connections open on the embedded broker (the hub's own included)",
        gauge(b.connections),
    );
    scrape.gauge(
        "ocm_edge_broker_sessions",
        "Sessions the embedded broker holds, connected or kept for a client that is away",
        gauge(b.sessions),
    );
    scrape.counter(
        "ocm_edge_broker_refused_logins",
        "CONNECTs the embedded broker refused (wrong login, no join token, a client id or will of another identity)",
        b.refused_logins,
    );
    scrape.counter(
        "ocm_edge_broker_refused_topics",
        "Subscriptions and publishes the embedded broker refused by its topic rules",
        b.refused_topics,
    );
    scrape.counter(
        "ocm_edge_broker_dropped_messages",
        "Deliveries the embedded broker dropped (a full queue, an expired message)",
        b.dropped,
    );
    scrape.counter(
        "ocm_edge_broker_sessions_dropped",
        "Sessions the embedded broker dropped (a denied or removed cluster, a login that lapsed)",
        b.sessions_dropped,
    );
}
