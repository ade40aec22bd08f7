//! The agent's task: wires the store, the applier, the MQTT session and the pure cores together.
//!
//! One task owns all state (no locks): it reacts to session events, a reconcile tick and a
//! lease / health tick. Everything works without a broker; the broker only carries specs in and
//! statuses out. This file starts the agent, holds its state ([`Agent`]) and dispatches what
//! arrives; each concern's handlers are in its folder: [`crate::registration`] (join, hub view,
//! certificate), [`crate::work`] (bundles and statuses), [`crate::lease`] (renewals, cluster
//! status, the periodic tick), [`crate::transfer`] (chunked works).

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use cloudevents::Event;
use ocm_edge_mqtt::{
    BrokerUrl, Credentials, Publisher, Session, SessionConfig, SessionError, SessionEvent,
};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::wire::encode;
use ocm_edge_schemas::wire::sequence::SequenceIdGenerator;
use ocm_edge_schemas::wire::topic;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::applier::facts::ClusterFacts;
#[cfg(feature = "kube")]
use crate::applier::kube::KubeApplier;
use crate::applier::sim::{SimApplier, SimControl};
use crate::applier::{AnyApplier, Applier, ApplyError};
use crate::config::{AgentConfig, ApplierConfig, ConfigError};
use crate::events::{AgentIdentity, Inbound, parse_inbound};
use crate::lease::schedule::LeaseSchedule;
use crate::lease::status_report::StatusReport;
use crate::metrics::AgentMetrics;
use crate::registration::Registration;
use crate::registration::certificate::ClusterCert;
use crate::registration::key::AgentKey;
use crate::registration::trust::{Checked, HubTrust, TrustError};
use crate::store::{Store, StoreError};
use crate::work::outbox::Outbox;

/// Errors that stop the agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("local store: {0}")]
    Store(#[from] StoreError),
    #[error("applier: {0}")]
    Applier(#[from] ApplyError),
    #[error("topic: {0}")]
    Topic(#[from] topic::TopicError),
    /// The MQTT session cannot start (TLS files).
    #[error("{0}")]
    Session(#[from] SessionError),
    #[error("agent task failed: {0}")]
    Task(String),
    #[error("signing key: {0}")]
    Key(#[from] crate::registration::key::AgentKeyError),
    /// The metrics endpoint cannot listen where it was asked to. Not retryable.
    #[error(transparent)]
    Metrics(#[from] ocm_edge_mqtt::MetricsError),
}

/// What the agent has done so far, for tests, the demo and logs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentCounters {
    /// Currently connected to the broker.
    pub connected: bool,
    /// The current (or last) connection logged in with the cluster's certificate
    /// (`--broker-mtls`), not through `--broker`.
    pub on_certificate: bool,
    /// Successful connections (CONNACKs).
    pub connections: u64,
    /// Connection sequence number of the current (or last) connection.
    pub connection_seq: u64,
    /// Updates are held (a hold on site, or outside every maintenance window) at the last
    /// reconcile.
    pub updates_held: bool,
    /// Works whose latest version (or removal) waits for updates to be allowed, at the last
    /// reconcile of every bundle.
    pub versions_waiting: u64,
    /// Spec events applied (new or re-applied bundles).
    pub specs_applied: u64,
    /// Spec events older than the held version, dropped.
    pub specs_dropped_stale: u64,
    /// Spec events refused before anything was stored (no resourceid, manifests over the
    /// 500 KiB limit): the agent never trusts the other side of the broker.
    pub specs_refused: u64,
    /// Malformed or misaddressed messages, dropped.
    pub dropped_malformed: u64,
    /// Well-formed events the agent has no use for.
    pub ignored_events: u64,
    /// Reconcile passes over all held bundles.
    pub reconciles: u64,
    /// Object writes that changed nothing or something (every successful apply call).
    pub objects_applied: u64,
    /// Applies that put back an object changed or deleted on the cluster since the last apply
    /// of the same version ([`crate::work::drift`]).
    pub drift_corrections: u64,
    /// Objects deleted (removed from a bundle or with a deleted bundle).
    pub objects_deleted: u64,
    /// Apply or delete calls that failed.
    pub apply_errors: u64,
    /// Bundles removed and forgotten after a delete.
    pub bundles_deleted: u64,
    /// Status events handed to the broker.
    pub statuses_published: u64,
    /// Spec resync requests sent.
    pub spec_resyncs_sent: u64,
    /// Status resync requests answered.
    pub status_resyncs_received: u64,
    /// Join requests sent.
    pub join_requests: u64,
    /// Lease renewals sent.
    pub lease_renewals: u64,
    /// Cluster status events sent.
    pub cluster_statuses: u64,
    /// The hub's answer to the join request.
    pub registration: Registration,
    /// Bundles held (desired).
    pub bundles_held: u64,
    /// Chunks of large specs stored.
    pub chunks_received: u64,
    /// Chunks dropped because their transfer was unknown (refused, dropped or finished).
    pub chunks_dropped: u64,
    /// Chunked transfers assembled and checked.
    pub transfers_completed: u64,
    /// Chunked transfers refused (over a limit, inconsistent, wrong digest).
    pub transfers_refused: u64,
    /// Events on the hub's topics refused for a missing, unknown or wrong signature
    /// ([`crate::registration::trust`]).
    pub refused_signature: u64,
    /// Objects watched (`feedbackScrapeType: Watch`) right now.
    pub objects_watched: u64,
    /// Bundles reconciled because a watched object changed.
    pub watch_reconciles: u64,
}

/// A running agent.
#[derive(Debug)]
pub struct AgentHandle {
    counters: watch::Receiver<AgentCounters>,
    /// The Prometheus endpoint (`--metrics-listen`); it stops with the handle.
    metrics: Option<ocm_edge_mqtt::MetricsEndpoint>,
    sim: Option<SimControl>,
    stop: CancellationToken,
    task: JoinHandle<Result<(), AgentError>>,
}

impl AgentHandle {
    /// Counters, updated as the agent works (`wait_for` on it instead of sleeping).
    pub fn counters(&self) -> watch::Receiver<AgentCounters> {
        self.counters.clone()
    }

    /// Where the agent serves its Prometheus metrics (the real port when configured with 0).
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics
            .as_ref()
            .map(ocm_edge_mqtt::MetricsEndpoint::addr)
    }

    /// The simulated cluster, when the agent uses the sim applier.
    pub fn sim(&self) -> Option<SimControl> {
        self.sim.clone()
    }

    /// Stops gracefully: presence offline, DISCONNECT, store closed.
    ///
    /// # Errors
    /// The error that stopped the agent, if any.
    pub async fn shutdown(self) -> Result<(), AgentError> {
        self.stop.cancel();
        self.task
            .await
            .map_err(|e| AgentError::Task(e.to_string()))?
    }

    /// Stops abruptly, like a killed process: no DISCONNECT, so the broker publishes the will.
    /// Returns once the store file is closed.
    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    /// Whether the agent task has ended (on an error).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

/// Runs the agent until `shutdown` completes.
///
/// # Errors
/// [`AgentError`] for a bad configuration, an unusable data dir or applier, or a failed task.
pub async fn run_agent(
    cfg: AgentConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), AgentError> {
    let data_dir = cfg.data_dir.clone();
    let mut handle = start_agent(cfg).await?;
    // The sim applier's control socket (`ocm-edge-agent sim ...` puts drift in from outside).
    let control = match handle.sim() {
        Some(sim) => match crate::applier::sim_control::serve(sim, &data_dir) {
            Ok(task) => Some(task),
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    dir = %data_dir.display(),
                    "cannot serve the sim control socket; `ocm-edge-agent sim` will not reach this agent"
                );
                None
            }
        },
        None => None,
    };
    let result = tokio::select! {
        () = shutdown => handle.shutdown().await,
        res = &mut handle.task => res.map_err(|e| AgentError::Task(e.to_string()))?,
    };
    if let Some(task) = control {
        task.abort();
        let _ = std::fs::remove_file(crate::applier::sim_control::socket_path(&data_dir));
    }
    result
}

/// Starts the agent in the background.
///
/// # Errors
/// [`AgentError`] for a bad configuration, an unusable data dir or applier.
pub async fn start_agent(cfg: AgentConfig) -> Result<AgentHandle, AgentError> {
    cfg.validate()?;
    // One rustls provider (ring) for the whole process, the MQTT layer and kube-rs alike
    // (ARCHITECTURE.md).
    ocm_edge_mqtt::install_crypto_provider();
    let store = Store::open(&cfg.data_dir)?;
    let key = Arc::new(AgentKey::load_or_create(&cfg.data_dir)?);
    tracing::info!(
        key = key.id(),
        "this agent's signing key: the hub shows it with the cluster (`ocm-edge cluster get`); compare before accepting"
    );
    let (applier, sim) = applier_for(&cfg, &store).await?;
    let outbox = Outbox::from_records(store.all_status()?);
    let trust = if cfg.accept_unsigned_from.is_some() {
        tracing::warn!(
            source = %cfg.source_id,
            "INSECURE: events from the hub's side are taken without a signature \
             (--accept-unsigned-specs-from): anyone who can publish on this cluster's topics \
             can make it apply anything"
        );
        HubTrust::unsigned()
    } else {
        HubTrust::new(cfg.trusted_hub_ca(), store.hub_signer()?)
    };
    let (counters_tx, counters_rx) = watch::channel(AgentCounters::default());
    let metrics = AgentMetrics::new(&cfg.agent_id(), &cfg.source_id, &cfg.cluster_name);
    let endpoint = match cfg.metrics_listen {
        Some(listen) => {
            let endpoint = ocm_edge_mqtt::MetricsEndpoint::start(
                listen,
                metrics.renderer(counters_rx.clone()),
            )?;
            tracing::info!(url = %endpoint.url(), "serving Prometheus metrics (no authentication)");
            Some(endpoint)
        }
        None => None,
    };
    let (watch_tx, watch_rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let mut agent = Agent {
        id: AgentIdentity {
            cluster: cfg.cluster_name.clone(),
            agent_id: cfg.agent_id(),
        },
        agent_events: topic::agent_events(&cfg.source_id, &cfg.cluster_name)?,
        lease: LeaseSchedule::new(cfg.lease_duration_seconds),
        join_retry: LeaseSchedule::every(cfg.join_retry),
        status_report: StatusReport::new(cfg.facts_interval),
        facts: None,
        registration: store.registration()?,
        certificate: None,
        on_mtls: false,
        refused_certificate: None,
        asked_certificate: None,
        switch_session: false,
        addon_asks: Default::default(),
        trust,
        refused_unknown_signer: false,
        login_refused: false,
        key,
        cfg,
        store,
        applier,
        outbox,
        sequence: SequenceIdGenerator::new(),
        counters: counters_tx,
        metrics,
        publisher: None,
        api_healthy: None,
        last_chunk_at: None,
        hub_windows: Ok(Vec::new()),
        watches: Default::default(),
        applied_marks: Default::default(),
        watch_tx,
        watch_stop: stop.child_token(),
    };
    // The certificate the hub issued and its maintenance windows, from its last view (kept in
    // the store): a restart while offline keeps both.
    if let Some(view) = agent.registration.clone() {
        agent.take_certificate(&view);
        agent.take_hub_windows(&view);
    }
    // Started here, not in the task: certificates are read now, so a wrong path fails the start
    // instead of every reconnect.
    let (session, events) = agent.start_session()?;
    let task = tokio::spawn(agent.run(session, events, watch_rx, stop.clone()));
    Ok(AgentHandle {
        counters: counters_rx,
        metrics: endpoint,
        sim,
        stop,
        task,
    })
}

/// The applier `cfg` names, over `store` (the sim keeps its cluster there), and the sim's
/// control when it is the sim.
pub(crate) async fn applier_for(
    cfg: &AgentConfig,
    store: &Store,
) -> Result<(AnyApplier, Option<SimControl>), AgentError> {
    Ok(match &cfg.applier {
        ApplierConfig::Sim { ready_delay } => {
            let sim = SimApplier::new(store.database(), *ready_delay)?;
            sim.set_facts(cfg.sim_facts.clone());
            let control = sim.control();
            (AnyApplier::Sim(sim), Some(control))
        }
        #[cfg(feature = "kube")]
        ApplierConfig::Kube { kubeconfig } => (
            AnyApplier::Kube(KubeApplier::connect(kubeconfig.as_deref()).await?),
            None,
        ),
        #[cfg(not(feature = "kube"))]
        ApplierConfig::Kube { .. } => {
            return Err(AgentError::Applier(ApplyError::Unavailable(
                "this build of the agent has no kube applier (built without the `kube` feature); \
                 use `--applier sim` or a default build"
                    .into(),
            )));
        }
    })
}

/// How the agent logs in to `url` with `tls`: a password given for an external broker, else,
/// over TLS only, the proof of the agent's own key (and its join token), which the hub's
/// embedded broker asks for; never in plaintext, where anyone on the path could take it.
pub(crate) fn login_config(
    cfg: &AgentConfig,
    key: &AgentKey,
    url: BrokerUrl,
    tls: ocm_edge_mqtt::TlsFiles,
) -> SessionConfig {
    let client_id = ocm_edge_mqtt::acl::agent_client_id(&cfg.cluster_name);
    let credentials = cfg.broker_credentials().or_else(|| {
        url.is_tls().then(|| Credentials {
            username: cfg.cluster_name.clone(),
            password: key.login_password(&cfg.cluster_name, &client_id, cfg.join_token.as_deref()),
        })
    });
    let mut session_cfg = SessionConfig::new(url, client_id);
    session_cfg.keepalive = cfg.keepalive;
    session_cfg.connect_timeout = cfg.connect_timeout;
    session_cfg.receive_maximum = Some(cfg.receive_maximum);
    session_cfg.credentials = credentials;
    session_cfg.tls = tls;
    session_cfg.backoff = ocm_edge_mqtt::Backoff {
        min: cfg.reconnect_min,
        max: cfg.reconnect_max,
    };
    session_cfg
}

pub(crate) struct Agent {
    pub(crate) cfg: AgentConfig,
    pub(crate) id: AgentIdentity,
    pub(crate) agent_events: String,
    pub(crate) store: Store,
    pub(crate) applier: AnyApplier,
    pub(crate) outbox: Outbox,
    pub(crate) sequence: SequenceIdGenerator,
    pub(crate) counters: watch::Sender<AgentCounters>,
    /// The Prometheus instruments the counters do not cover (labels, durations).
    pub(crate) metrics: Arc<AgentMetrics>,
    /// The session's publisher while connected; `None` offline.
    pub(crate) publisher: Option<Publisher>,
    pub(crate) lease: LeaseSchedule,
    /// When the next join request is due while no hub has answered.
    pub(crate) join_retry: LeaseSchedule,
    pub(crate) api_healthy: Option<bool>,
    /// The cluster's facts as last read (`None`: never read).
    pub(crate) facts: Option<ClusterFacts>,
    /// When the facts are read and the status sent again for them.
    pub(crate) status_report: StatusReport,
    pub(crate) registration: Option<ManagedCluster>,
    /// Whose signature the agent acts on.
    pub(crate) trust: HubTrust,
    /// Signs everything the agent publishes.
    pub(crate) key: Arc<AgentKey>,
    /// An event signed by a key the agent did not know was dropped: it asks for the hub's view
    /// until one comes, then for the specs again.
    pub(crate) refused_unknown_signer: bool,
    /// The broker refused this agent's last login: ask the hub where the cluster stands once
    /// back in.
    pub(crate) login_refused: bool,
    /// When the last piece of an unfinished chunked transfer arrived (or the agent last asked
    /// for the rest of one).
    pub(crate) last_chunk_at: Option<DateTime<Utc>>,
    /// The cluster's certificate from the hub ([`crate::registration::certificate`]).
    pub(crate) certificate: Option<ClusterCert>,
    /// The session logs in with that certificate at `--broker-mtls`.
    pub(crate) on_mtls: bool,
    /// The broker refused that certificate (its PEM) at this time: the agent asks the hub
    /// through `--broker` and tries the certificate again after `join_retry` only.
    pub(crate) refused_certificate: Option<(String, DateTime<Utc>)>,
    /// The certificate (its end; `None`: none) the agent last said it asks the hub about: said
    /// once at INFO, then quietly at each `join_retry`.
    pub(crate) asked_certificate: Option<Option<DateTime<Utc>>>,
    /// Start the session again (another endpoint or certificate) after this event.
    pub(crate) switch_session: bool,
    /// The add-on identities the agent asked the hub to bind: add-on, (password hash, public
    /// key), when.
    pub(crate) addon_asks: std::collections::HashMap<String, ((String, String), DateTime<Utc>)>,
    /// The maintenance windows set on the hub, from its last view of this cluster (or why
    /// they cannot be read: then updates wait).
    pub(crate) hub_windows: crate::maintenance::HubWindows,
    /// `feedbackScrapeType: Watch`: the watches running, by bundle and object.
    pub(crate) watches: std::collections::HashMap<
        String,
        std::collections::HashMap<crate::work::resource::ResourceRef, tokio::task::AbortHandle>,
    >,
    /// What the last reconcile of each bundle left on the cluster, to count drift corrections.
    pub(crate) applied_marks: std::collections::HashMap<String, crate::work::drift::Marks>,
    /// Where the watches say which bundle changed.
    pub(crate) watch_tx: mpsc::UnboundedSender<String>,
    /// Ends every watch when the agent stops, however its task ends.
    pub(crate) watch_stop: CancellationToken,
}

impl Drop for Agent {
    /// Its watches end with it, whether its task returned, failed or was aborted.
    fn drop(&mut self) {
        self.watch_stop.cancel();
    }
}

/// The only place the agent reads the clock: the shell passes `now` down to the pure core.
pub(crate) fn now() -> DateTime<Utc> {
    Utc::now()
}

impl Agent {
    /// The MQTT session: the cluster's topics, a will and a persisted connection number per
    /// connection. It lives as long as the agent's task (dropped with it: an aborted agent
    /// closes its TCP connection at once).
    pub(crate) fn start_session(
        &mut self,
    ) -> Result<(Session, mpsc::UnboundedReceiver<SessionEvent>), AgentError> {
        // Weak: the session task may outlive the agent by a moment and must not hold the file.
        let seq_store = self.store.downgrade();
        let will_id = self.id.clone();
        let will_topic = self.agent_events.clone();
        let will_key = Arc::clone(&self.key);
        let mut url = self.cfg.broker_url()?;
        let mut tls = self.cfg.tls.clone();
        self.on_mtls = false;
        let refused = self.refused_certificate.as_ref().map(|(pem, _)| pem);
        if let Some(mtls) = &self.cfg.broker_mtls_url
            && self
                .certificate
                .as_ref()
                .is_some_and(|c| c.valid_at(now()) && refused != Some(&c.pem))
        {
            // The broker takes the certificate's CN as the cluster's name.
            url = BrokerUrl::parse(mtls).map_err(ConfigError::from)?;
            tls.client_cert_file = Some(crate::registration::certificate::file(&self.cfg.data_dir));
            tls.client_key_file = Some(AgentKey::file(&self.cfg.data_dir));
            self.on_mtls = true;
            tracing::info!(broker = %url, "logging in with the cluster's certificate");
        }
        let mut session_cfg = login_config(&self.cfg, &self.key, url, tls);
        session_cfg.subscriptions = vec![
            topic::source_events(&self.cfg.source_id, &self.cfg.cluster_name)?,
            topic::source_broadcast(&self.cfg.source_id)?,
        ];
        // Each connection gets the next persisted sequence number and a will carrying it, so the
        // hub can tell a stale will from the current birth.
        let will = Box::new(move || {
            let seq = match seq_store.upgrade().map(|s| s.next_connection_seq()) {
                Some(Ok(n)) => n,
                None => 0,
                Some(Err(e)) => {
                    tracing::error!(error = %e, "cannot persist the connection sequence number");
                    u64::try_from(Utc::now().timestamp_millis()).unwrap_or(0)
                }
            };
            let will = will_id
                .presence(false, seq, Utc::now())
                .ok()
                .and_then(|event| encode(&event, will_topic.clone()).ok())
                .map(|mut msg| {
                    will_key.sign(&mut msg);
                    msg
                });
            (seq, will)
        });
        Ok(Session::start(session_cfg, Some(will))?)
    }

    async fn run(
        mut self,
        mut session: Session,
        mut rx: mpsc::UnboundedReceiver<SessionEvent>,
        mut watched: mpsc::UnboundedReceiver<String>,
        stop: CancellationToken,
    ) -> Result<(), AgentError> {
        // Offline-first: reconcile from the cache before any broker is reached.
        self.reconcile_all(now()).await;
        let mut reconcile = tokio::time::interval(self.cfg.reconcile_interval);
        reconcile.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reconcile.tick().await;
        let tick = self
            .lease
            .interval()
            .to_std()
            .unwrap_or(self.cfg.health_interval)
            .min(self.cfg.health_interval);
        let mut health = tokio::time::interval(tick);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                ev = rx.recv() => match ev {
                    Some(ev) => self.on_session(ev, &session).await,
                    None => break,
                },
                _ = reconcile.tick() => self.reconcile_all(now()).await,
                Some(first) = watched.recv() => {
                    // A burst of changes (a rollout's status updates) reconciles each bundle once.
                    let mut ids = std::collections::BTreeSet::from([first]);
                    while let Ok(id) = watched.try_recv() {
                        ids.insert(id);
                    }
                    self.reconcile_watched(ids, now()).await;
                }
                _ = health.tick() => self.on_health_tick(now()).await,
            }
            if std::mem::take(&mut self.switch_session) {
                // Another endpoint or certificate: a new session (the old one says goodbye).
                self.publisher = None;
                self.bump(|c| c.connected = false);
                session.shutdown().await;
                match self.start_session() {
                    Ok((s, r)) => (session, rx) = (s, r),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot start the MQTT session again; stopping");
                        return Err(e);
                    }
                }
            }
        }
        if let Some(p) = self.publisher.take() {
            let seq = self.counters.borrow().connection_seq;
            if let Ok(ev) = self.id.presence(false, seq, now()) {
                Self::send_with(&p, &ev, &self.agent_events, &self.key, &self.metrics);
            }
        }
        session.shutdown().await;
        Ok(())
    }

    pub(crate) fn bump(&self, f: impl FnOnce(&mut AgentCounters)) {
        self.counters.send_modify(f);
    }

    fn send_with(
        publisher: &Publisher,
        event: &Event,
        topic: &str,
        key: &AgentKey,
        metrics: &AgentMetrics,
    ) -> bool {
        let mut msg = match encode(event, topic) {
            Ok(msg) => msg,
            Err(e) => {
                tracing::error!(error = %e, "cannot encode an outgoing event");
                return false;
            }
        };
        key.sign(&mut msg);
        let sent = metrics.sent(&msg);
        match publisher.try_publish(msg) {
            Ok(()) => {
                sent.inc();
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "publish failed; will retry after reconnect");
                false
            }
        }
    }

    /// Publishes on the current connection; false when offline or the queue is full.
    pub(crate) fn send(&self, event: &Event) -> bool {
        match &self.publisher {
            Some(p) => Self::send_with(p, event, &self.agent_events, &self.key, &self.metrics),
            None => false,
        }
    }

    async fn on_session(&mut self, ev: SessionEvent, session: &Session) {
        match ev {
            SessionEvent::Connected {
                connection: connection_seq,
                ..
            } => {
                tracing::debug!(connection_seq, "connected to the broker");
                self.publisher = Some(session.publisher());
                let on_certificate = self.on_mtls;
                self.bump(|c| {
                    c.connected = true;
                    c.on_certificate = on_certificate;
                    c.connections += 1;
                    c.connection_seq = connection_seq;
                });
                let t = now();
                if let Ok(mut birth) = self.id.presence(true, connection_seq, t) {
                    // The hub learns the chunk size with the first message of the connection,
                    // before it sends anything (the spec resync comes after the SUBACK).
                    if let Some(offer) = self.transfer_offer() {
                        offer.set_on(&mut birth);
                    }
                    self.send(&birth);
                }
                // After the broker refused this agent's login, its standing at the hub changed
                // while the agent could not hear it (denied, or accepted with another key): ask
                // where the cluster stands. The join request also carries the agent's key,
                // which an admin needs to see after a re-install.
                if self.wants_hub_view() || std::mem::take(&mut self.login_refused) {
                    self.send_join_request(t);
                }
                self.api_healthy = Some(self.applier.health().await);
                self.read_facts(t).await;
                self.send_cluster_status(t).await;
                self.lease.reset();
                self.renew_lease(t);
                self.outbox.on_reconnect();
                self.flush_outbox(t);
            }
            SessionEvent::Subscribed { refused } => {
                if !refused.is_empty() {
                    tracing::error!(
                        ?refused,
                        "the broker refused this agent's subscriptions: check its ACL (broker-config/)"
                    );
                }
                self.send_spec_resync(now());
            }
            SessionEvent::Malformed(e) => {
                tracing::warn!(error = %e, "dropped an unreadable MQTT message");
                self.bump(|c| c.dropped_malformed += 1);
            }
            SessionEvent::Message(publication) => {
                let msg = publication.message;
                self.on_message(&msg).await;
            }
            // Only asked for by wire-level test clients.
            SessionEvent::Acked(_) => {}
            SessionEvent::Disconnected { why } => {
                match &why {
                    ocm_edge_mqtt::LinkError::LoginRefused { .. } => self.login_refused = true,
                    ocm_edge_mqtt::LinkError::CertificateRefused { alert, .. } if self.on_mtls => {
                        // Revoked (denied, or accepted with another key; and maybe accepted again
                        // since, with a new certificate the agent could not hear of), or not
                        // trusted: ask the hub through --broker with the agent's key.
                        tracing::warn!(
                            %alert,
                            "the broker refused the cluster's certificate; connecting to --broker to ask the hub where the cluster stands"
                        );
                        self.refused_certificate =
                            self.certificate.as_ref().map(|c| (c.pem.clone(), now()));
                        self.login_refused = true;
                        self.switch_session = true;
                    }
                    _ => {}
                }
                if self.publisher.take().is_some() {
                    // The session logged the loss; the agent keeps reconciling from its cache.
                    tracing::debug!("offline; reconciling from the local store");
                }
                self.bump(|c| c.connected = false);
            }
        }
    }

    async fn on_message(&mut self, msg: &ocm_edge_schemas::wire::MqttMessage) {
        use ocm_edge_schemas::wire::chunks::{Piece, classify};
        let assembled = match classify(msg) {
            Ok(Piece::Whole) => None,
            Ok(Piece::Head(head)) => match self.on_transfer_head(msg, head, now()) {
                Some(whole) => Some(whole),
                None => return,
            },
            Ok(Piece::Chunk(chunk)) => match self.on_chunk(msg, chunk, now()) {
                Some(whole) => Some(whole),
                None => return,
            },
            Err(e) => {
                tracing::warn!(error = %e, topic = %msg.topic, "dropped a malformed chunk");
                self.bump(|c| c.dropped_malformed += 1);
                return;
            }
        };
        let msg = assembled.as_ref().unwrap_or(msg);
        let learned = match self.trust.check(msg, now()) {
            Ok(Checked::Learned(signer)) => Some(signer),
            Ok(Checked::Trusted | Checked::Unchecked) => None,
            Err(e) => {
                tracing::warn!(error = %e, topic = %msg.topic, "refused an event from the hub's side");
                self.bump(|c| c.refused_signature += 1);
                if let TrustError::UnknownSigner(_) = e {
                    self.refused_unknown_signer = true;
                    // The hub answers a join request with its view, which carries its key.
                    if self.publisher.is_some() && self.join_retry.due(now()) {
                        self.send_join_request(now());
                    }
                }
                return;
            }
        };
        if let Some(signer) = learned {
            self.learn_signer(signer);
        }
        self.metrics.received(msg);
        match parse_inbound(msg, &self.cfg.cluster_name) {
            Ok(Inbound::Spec(spec)) => self.on_spec(*spec, now()).await,
            Ok(Inbound::StatusResync(list)) => {
                let started = std::time::Instant::now();
                self.bump(|c| c.status_resyncs_received += 1);
                self.outbox.on_status_resync(&list.status_hashes);
                self.flush_outbox(now());
                self.metrics.status_resynced(started.elapsed());
            }
            Ok(Inbound::HubView(view)) => self.on_hub_view(*view),
            Ok(Inbound::Ignored(ty)) => {
                tracing::debug!(%ty, topic = %msg.topic, "ignored event");
                self.bump(|c| c.ignored_events += 1);
            }
            Err(e) => {
                tracing::warn!(error = %e, topic = %msg.topic, "dropped a malformed message");
                self.bump(|c| c.dropped_malformed += 1);
            }
        }
    }
}
