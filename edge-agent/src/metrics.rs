//! The agent's Prometheus metrics (`--metrics-listen`, off by default; every metric is in
//! docs/reference/metrics.md).
//!
//! What the agent already counts ([`AgentCounters`]) is read when Prometheus scrapes, not kept a
//! second time; [`AgentMetrics`] keeps only what needs labels or buckets: CloudEvents sent and
//! received with sdk-go's names and labels, and the status resync's duration. An agent nobody
//! scrapes does nothing more than before: no timer, no message.

use std::sync::Arc;
use std::time::Duration;

use ocm_edge_mqtt::metrics_endpoint::{
    Histograms, Labels, Render, Scrape, cloudevent_labels, resync_histogram,
};
use ocm_edge_schemas::wire::MqttMessage;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::AgentCounters;

/// sdk-go's `original_source` when an event names none.
const NO_ORIGINAL_SOURCE: &str = "none";

/// The instruments the agent keeps.
#[derive(Debug)]
pub struct AgentMetrics {
    registry: Registry,
    /// The `source` of what the agent sends (its agent id).
    agent_id: String,
    /// The hub's source id: events from another source are labelled `other`.
    hub_source: String,
    cluster: String,
    sent: Family<Labels, Counter>,
    received: Family<Labels, Counter>,
    status_resync: Histograms,
}

impl AgentMetrics {
    pub fn new(agent_id: &str, hub_source: &str, cluster: &str) -> Arc<Self> {
        let m = AgentMetrics {
            registry: Registry::default(),
            agent_id: agent_id.to_owned(),
            hub_source: hub_source.to_owned(),
            cluster: cluster.to_owned(),
            sent: Family::default(),
            received: Family::default(),
            status_resync: Family::new_with_constructor(resync_histogram),
        };
        let mut registry = Registry::default();
        registry.register(
            "cloudevents_sent",
            "CloudEvents the agent sent, by sdk-go's labels",
            m.sent.clone(),
        );
        registry.register(
            "cloudevents_received",
            "CloudEvents the agent took from the hub (signature checked), by sdk-go's labels",
            m.received.clone(),
        );
        registry.register(
            "resources_status_resync_duration_seconds",
            "From the hub's status resync request to the agent's statuses handed to the broker (sdk-go's)",
            m.status_resync.clone(),
        );
        Arc::new(AgentMetrics { registry, ..m })
    }

    /// The hub's source id as a label, or `other` for any other (what a peer writes cannot
    /// grow the series).
    fn source_label(&self, source: Option<&str>) -> String {
        match source {
            Some(s) if s == self.hub_source => s.to_owned(),
            _ => "other".to_owned(),
        }
    }

    /// The counter of `msg` once it is handed to the broker (`inc` it then).
    pub fn sent(&self, msg: &MqttMessage) -> Counter {
        // The agent's own events carry an empty one.
        let original = msg
            .user_property("ce-originalsource")
            .filter(|s| !s.is_empty())
            .map_or_else(
                || NO_ORIGINAL_SOURCE.to_owned(),
                |s| self.source_label(Some(s)),
            );
        let mut labels = vec![
            ("source", self.agent_id.clone()),
            ("original_source", original),
        ];
        labels.extend(cloudevent_labels(msg));
        self.sent.get_or_create(&labels).clone()
    }

    /// A CloudEvent from the hub's side whose signature the agent took.
    pub fn received(&self, msg: &MqttMessage) {
        let mut labels = vec![("source", self.source_label(msg.user_property("ce-source")))];
        labels.extend(cloudevent_labels(msg));
        self.received.get_or_create(&labels).inc();
    }

    /// The statuses a status resync request asked for went out in `took`.
    pub fn status_resynced(&self, took: Duration) {
        let labels = vec![
            ("source", self.hub_source.clone()),
            ("consumer", self.cluster.clone()),
            (
                "type",
                ocm_edge_schemas::wire::event_type::MANIFEST_BUNDLES.to_string(),
            ),
        ];
        self.status_resync
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// The Prometheus text: the instruments kept here and `c`, the agent's counters now.
    pub fn render(&self, c: &AgentCounters) -> String {
        let mut s = Scrape::default();
        let flag = |b: bool| i64::from(b);
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        s.gauge(
            "ocm_edge_agent_connected",
            "1 while the agent is connected to the broker",
            flag(c.connected),
        );
        s.counter(
            "ocm_edge_agent_connections",
            "Connections the broker accepted (CONNACKs)",
            c.connections,
        );
        s.counters(
            "cloudevents_client_reconnected",
            "Connections after the first, by client id (sdk-go's)",
            [(
                vec![(
                    "client_id",
                    ocm_edge_mqtt::acl::agent_client_id(&self.cluster),
                )],
                c.connections.saturating_sub(1),
            )],
        );
        s.gauge(
            "ocm_edge_agent_updates_held",
            "1 while updates are held (a hold on site, or outside every maintenance window), at the last reconcile",
            flag(c.updates_held),
        );
        s.gauge(
            "ocm_edge_agent_versions_waiting",
            "Works whose latest version (or removal) waits for a maintenance window or the end of a hold",
            gauge(c.versions_waiting),
        );
        s.gauge(
            "ocm_edge_agent_bundles",
            "Works (ManifestWork bundles) the agent holds",
            gauge(c.bundles_held),
        );
        s.gauge(
            "ocm_edge_agent_objects_watched",
            "Objects watched for feedbackScrapeType Watch",
            gauge(c.objects_watched),
        );
        let counters: [(&str, &str, u64); 19] = [
            (
                "ocm_edge_agent_specs_applied",
                "Work versions applied (new or re-sent)",
                c.specs_applied,
            ),
            (
                "ocm_edge_agent_specs_dropped_stale",
                "Spec events older than the version held, dropped",
                c.specs_dropped_stale,
            ),
            (
                "ocm_edge_agent_specs_refused",
                "Spec events refused before anything was stored (no resource id, manifests over the limit)",
                c.specs_refused,
            ),
            (
                "ocm_edge_agent_malformed_messages",
                "Malformed or misaddressed messages, dropped",
                c.dropped_malformed,
            ),
            (
                "ocm_edge_agent_ignored_events",
                "Well-formed events the agent has no use for",
                c.ignored_events,
            ),
            (
                "ocm_edge_agent_refused_signatures",
                "Events on the hub's topics refused for a missing, unknown or wrong signature",
                c.refused_signature,
            ),
            (
                "ocm_edge_agent_reconciles",
                "Reconcile passes over every held work (drift correction)",
                c.reconciles,
            ),
            (
                "ocm_edge_agent_objects_applied",
                "Successful object applies (every reconcile re-applies)",
                c.objects_applied,
            ),
            (
                "ocm_edge_agent_drift_corrections",
                "Applies that put back an object changed or deleted on the cluster since the last apply of the same work version",
                c.drift_corrections,
            ),
            (
                "ocm_edge_agent_objects_deleted",
                "Objects deleted (removed from a work, or with a deleted work)",
                c.objects_deleted,
            ),
            (
                "ocm_edge_agent_apply_errors",
                "Apply or delete calls that failed",
                c.apply_errors,
            ),
            (
                "ocm_edge_agent_statuses_published",
                "Work statuses handed to the broker",
                c.statuses_published,
            ),
            (
                "ocm_edge_agent_join_requests",
                "Join requests sent",
                c.join_requests,
            ),
            (
                "ocm_edge_agent_lease_renewals",
                "Lease renewals sent",
                c.lease_renewals,
            ),
            (
                "ocm_edge_agent_chunks_received",
                "Chunks of large works stored",
                c.chunks_received,
            ),
            (
                "ocm_edge_agent_chunks_dropped",
                "Chunks dropped: their transfer was unknown (refused, dropped or finished)",
                c.chunks_dropped,
            ),
            (
                "ocm_edge_agent_transfers_completed",
                "Chunked transfers assembled and checked",
                c.transfers_completed,
            ),
            (
                "ocm_edge_agent_transfers_refused",
                "Chunked transfers refused (over a limit, inconsistent, wrong digest)",
                c.transfers_refused,
            ),
            (
                "ocm_edge_agent_watch_reconciles",
                "Works reconciled because a watched object changed",
                c.watch_reconciles,
            ),
        ];
        for (name, help, value) in counters {
            s.counter(name, help, value);
        }
        s.encode(&self.registry)
    }

    /// What the endpoint serves: [`AgentMetrics::render`] over the counters as they are.
    pub fn renderer(self: &Arc<Self>, counters: watch::Receiver<AgentCounters>) -> Render {
        let metrics = self.clone();
        Arc::new(move || {
            let body = metrics.render(&counters.borrow());
            Box::pin(async move { body })
        })
    }
}
