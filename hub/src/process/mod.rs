//! The hub process: broker (embedded or external), store, transport, core and admin server, wired
//! (the IO shell around the pure [`HubCore`]).
//!
//! One task owns the [`HubCore`] and the [`Store`] and is fed by one channel (linkerd's index
//! pattern). It takes what has arrived in one batch, plans each item with the core, applies it,
//! writes the batch's records in one redb transaction, and only then publishes and answers: nothing
//! is announced that is not stored.
//!
//! A batch that touches works, placement objects or a cluster's published view (acceptance,
//! labels, claims, taints) is followed by [`HubCore::reconcile_fleet`] (placements, then replica
//! sets) in the same batch. The task also wakes at the earliest availability deadline or
//! placement / rollout requeue time ([`HubCore::availability_tick`],
//! [`HubCore::fleet_requeue_at`]), so taints appear and tolerations expire on time.
//!
//! Agent events arrive through [`HubConfig::intakes`] MQTT sessions (the hub's own first; with
//! more than one, each subscribes `$share/<source>-hub/sources/<source>/consumers/+/agentevents`
//! so the broker spreads the fleet over them). Each session has an intake task that decodes and
//! hashes what it receives, so the hub task gets [`AgentInput`]s, not bytes.
//!
//! Once every session has its SUBACK, and after every SUBACK from then on (reconnects), the hub
//! republishes its view of every cluster it has decided on (accepted or denied), sends again the
//! spec of every work no agent has confirmed ([`HubCore::unconfirmed_specs`]) and sends
//! `status.resync_request`s to every accepted one. That is how a restarted hub catches up, and how
//! a change it stored but had not published when it stopped (or that a restarted broker lost) still
//! reaches its cluster.
//!
//! A spec larger than the chunk size an agent offered in its last spec resync request goes to
//! that agent as a head and chunks (`ocm_edge_schemas::wire::chunks`), leaving out the chunks the
//! agent said it holds: a transfer cut by a dropped link resumes where it stopped.
//!
//! Files, by job:
//! - this file: [`HubHandle`], [`run_hub`], [`HubError`] and the process's limits;
//! - [`startup`]: [`start_hub`]: store, CA, broker (embedded or external), sessions, the task;
//! - [`intake`]: one task per MQTT session decoding what arrives into [`AgentInput`]s;
//! - [`commit`]: the hub task, [`commit::HubLoop`]: plans a batch with the core, stores it, then
//!   publishes (chunked when large) and answers;
//! - [`replies`]: admin requests: authentication, repeats, answers;
//! - [`revocation`]: the clusters' certificate revocation list, written on change and every 30 days;
//! - [`events`]: CloudEvents to and from the core's inputs and outputs.

// Without the embedded broker (the fuzz targets' build) the code that configures it has no caller.
#![cfg_attr(
    not(feature = "embedded-broker"),
    allow(dead_code, unused_imports, unused_mut, unused_variables)
)]

mod commit;
pub mod events;
mod intake;
mod replies;
mod revocation;
mod startup;

pub use startup::start_hub;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_edge_mqtt::broker::BrokerError;
#[cfg(feature = "embedded-broker")]
use ocm_edge_mqtt::broker::EmbeddedBroker;
use ocm_edge_mqtt::{
    BrokerUrl, CaPin, MetricsEndpoint, MetricsError, Session, SessionError, UrlError,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::HubConfig;
use crate::core::Record;
use crate::pki::PkiError;
use crate::store::StoreError;

/// How long [`HubHandle::shutdown`] waits for the batch in hand before aborting the hub task.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Shortest sleep between ticks.
const MIN_TICK: Duration = Duration::from_millis(10);
/// How often the hub scans every cluster for availability deadlines and due placements, at
/// most (and at least, while idle), unless a deadline it knows of is due sooner: scanning on
/// every batch cost O(fleet) per batch, however small the batch.
const RESCAN_EVERY: Duration = Duration::from_secs(1);
/// Most inbound items handled (and stored) in one batch.
const MAX_BATCH: usize = 512;
/// Most agent-event intake sessions (see [`HubConfig::intakes`]).
pub const MAX_INTAKES: usize = 16;
/// QoS 1 publications the hub's session keeps unacknowledged.
const HUB_INFLIGHT: u16 = 500;
/// Publications queued in the hub's session before `publish` waits.
const HUB_QUEUE: usize = 4096;
/// Shortest keepalive of the hub's own sessions on its embedded broker. rumqttc drops a link
/// whose ping reply is one keepalive late, even while messages flow; a broker letting 10,000
/// TLS logins in at once answered the hub's ping after more than 30 s, the hub dropped its link,
/// lost the statuses in flight and resynced the whole fleet, which loaded the broker again
/// (docs/performance.md). The broker runs in the hub's own process and its loopback link
/// fails only with the process, so a long keepalive hides nothing.
const EMBEDDED_KEEPALIVE: Duration = Duration::from_secs(300);

/// Errors starting or running the hub.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// A configuration value is wrong. Not retryable.
    #[error("invalid hub configuration: {0}")]
    Config(String),
    /// The embedded broker did not start.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// The store failed; the hub stops rather than run on state it cannot keep.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The broker URL cannot be used. Not retryable.
    #[error(transparent)]
    BrokerUrl(#[from] UrlError),
    /// The MQTT session cannot start (e.g. TLS files). Not retryable.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The hub's CA or the broker's certificate cannot be created or used. Not retryable.
    #[error(transparent)]
    Pki(#[from] PkiError),
    /// The metrics endpoint cannot listen where it was asked to. Not retryable.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// The hub task panicked or was cancelled.
    #[error("hub task failed: {0}")]
    Task(String),
}

/// Without the `embedded-broker` feature there is no embedded broker: this type has no values,
/// so the hub's fields and code for one stay the same and are never reached.
#[cfg(not(feature = "embedded-broker"))]
#[derive(Debug, Clone)]
enum EmbeddedBroker {}

#[cfg(not(feature = "embedded-broker"))]
impl EmbeddedBroker {
    async fn drop_session(&self, _client_id: &str) {
        match *self {}
    }

    async fn enforce_login(&self, _client_id: &str) {
        match *self {}
    }
}

/// A running hub.
#[derive(Debug)]
pub struct HubHandle {
    broker_url: BrokerUrl,
    broker: Option<EmbeddedBroker>,
    hub_ca_pin: CaPin,
    ca: Option<(CaPin, PathBuf)>,
    admin_credentials: Option<PathBuf>,
    dashboard_password_file: Option<PathBuf>,
    stop: watch::Sender<bool>,
    subscriptions: watch::Receiver<u64>,
    task: JoinHandle<Result<(), HubError>>,
    session: Session,
    /// The intake sessions after the first (which is `session`).
    intakes: Vec<Session>,
    /// The Prometheus endpoint, when [`HubConfig::metrics_listen`] asks for one.
    metrics: Option<MetricsEndpoint>,
}

impl HubHandle {
    /// The broker's URL, `mqtt://127.0.0.1:PORT` with the real port when the embedded broker was
    /// configured with port 0.
    pub fn broker_url(&self) -> String {
        self.broker_url.to_string()
    }

    /// The first admin's credential file (`DATA_DIR/admin-credentials.pem`) when the admin API
    /// takes signed requests and the file is there.
    pub fn admin_credentials(&self) -> Option<&Path> {
        self.admin_credentials.as_deref()
    }

    /// The file holding the dashboard identity's password on the embedded broker (TLS with
    /// logins, the default), `DATA_DIR/dashboard-password`.
    pub fn dashboard_password_file(&self) -> Option<&Path> {
        self.dashboard_password_file.as_deref()
    }

    /// The pin of the hub's CA, which issues the key that signs everything the hub sends to
    /// agents (`ocm-edge-agent --hub-ca-pin`; with the embedded broker on TLS it is also the
    /// broker's CA, [`HubHandle::ca_pin`]).
    pub fn hub_ca_pin(&self) -> CaPin {
        self.hub_ca_pin
    }

    /// The pin of the hub's CA, which agents are given, when the embedded broker uses TLS.
    pub fn ca_pin(&self) -> Option<CaPin> {
        self.ca.as_ref().map(|(pin, _)| *pin)
    }

    /// The hub's CA certificate file, when the embedded broker uses TLS.
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca.as_ref().map(|(_, file)| file.as_path())
    }

    /// Where the hub serves its Prometheus metrics (the real port when configured with 0).
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics.as_ref().map(MetricsEndpoint::addr)
    }

    /// Whether the hub started an embedded broker (rather than using an external one).
    pub fn runs_embedded_broker(&self) -> bool {
        self.broker.is_some()
    }

    /// The embedded broker, if the hub started one. It stops when the last handle to it is
    /// dropped (this one goes with the [`HubHandle`]); clone it to keep it running past the hub.
    #[cfg(feature = "embedded-broker")]
    pub fn embedded_broker(&self) -> Option<&EmbeddedBroker> {
        self.broker.as_ref()
    }

    /// Waits until the hub has subscribed to the broker at least once and published what follows
    /// a subscription (hub views, status resync requests). Agents and the CLI reach it from then on.
    /// Returns at once if the hub task has stopped.
    pub async fn subscribed(&self) {
        let mut rx = self.subscriptions.clone();
        let _ = rx.wait_for(|n| *n > 0).await;
    }

    /// Stops the hub: finishes the batch in hand, stops the tasks, disconnects and closes the
    /// store, so a new hub can open the same data directory in this process.
    ///
    /// # Errors
    /// The error that stopped the hub task, if one did.
    pub async fn shutdown(mut self) -> Result<(), HubError> {
        let _ = self.stop.send(true);
        let result = match tokio::time::timeout(SHUTDOWN_GRACE, &mut self.task).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(HubError::Task(e.to_string())),
            Err(_) => {
                // Stuck publishing to a broker that is gone: what was stored stays stored, and
                // resync delivers the rest. Aborting drops the task and with it the store.
                tracing::warn!("hub task did not stop within {SHUTDOWN_GRACE:?}; aborting it");
                self.task.abort();
                let _ = (&mut self.task).await;
                Ok(())
            }
        };
        close_sessions(self.session, self.intakes).await;
        result
    }
}

async fn close_sessions(session: Session, intakes: Vec<Session>) {
    let mut closing: Vec<_> = intakes.into_iter().map(Session::shutdown).collect();
    closing.push(session.shutdown());
    futures::future::join_all(closing).await;
}

/// Runs a hub until `shutdown` completes (or the hub fails), then stops it gracefully.
///
/// # Errors
/// As [`start_hub`], or the error that stopped the hub.
pub async fn run_hub(
    cfg: HubConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), HubError> {
    let mut handle = start_hub(cfg).await?;
    tracing::info!(broker = %handle.broker_url(), "hub running");
    let finished = tokio::select! {
        () = shutdown => None,
        result = &mut handle.task => Some(result),
    };
    match finished {
        None => handle.shutdown().await,
        Some(result) => {
            close_sessions(handle.session, handle.intakes).await;
            result.unwrap_or_else(|e| Err(HubError::Task(e.to_string())))
        }
    }
}

/// The clusters `records` forget (removed, or unjoined by their agents).
fn forgotten_clusters(records: &[Record]) -> impl Iterator<Item = &str> {
    records.iter().filter_map(|r| match r {
        Record::ForgetCluster(name) => Some(name.as_str()),
        _ => None,
    })
}

/// The add-on identity bindings `records` change: `((cluster, addon), bound password hash)` of
/// each cluster's add-on stored (`None`: stored without one) or forgotten (`None`).
fn addon_bindings(
    records: &[Record],
) -> impl Iterator<Item = ((String, String), Option<String>)> + '_ {
    use crate::core::objects::ObjectKind;
    records.iter().filter_map(|r| match r {
        Record::Object(o) => o.as_cluster_addon().map(addon_binding),
        Record::ForgetObject(key) if key.kind == ObjectKind::ManagedClusterAddOn => {
            Some(((key.namespace.clone(), key.name.clone()), None))
        }
        _ => None,
    })
}

/// `((cluster, addon), bound password hash)` of a cluster's add-on.
fn addon_binding(
    m: &ocm_edge_schemas::api::addon::ManagedClusterAddOn,
) -> ((String, String), Option<String>) {
    (
        (m.metadata.namespace.clone(), m.metadata.name.clone()),
        m.metadata
            .annotations
            .get(ocm_edge_schemas::wire::addon_identity::PASSWORD_SHA256_ANNOTATION)
            .cloned(),
    )
}

/// The add-ons `records` store (`true`) or delete (`false`).
fn addon_names(records: &[Record]) -> impl Iterator<Item = (String, bool)> + '_ {
    use crate::core::objects::ObjectKind;
    records.iter().filter_map(|r| match r {
        Record::Object(o) if o.kind() == ObjectKind::ClusterManagementAddOn => {
            Some((o.key().name, true))
        }
        Record::ForgetObject(key) if key.kind == ObjectKind::ClusterManagementAddOn => {
            Some((key.name.clone(), false))
        }
        _ => None,
    })
}
