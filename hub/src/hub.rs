//! The hub process: broker (embedded or external), store, transport, core and admin server, wired.
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
//! republishes its view of every known cluster, sends again the spec of every work no agent has
//! confirmed ([`HubCore::unconfirmed_specs`]) and sends `status.resync_request`s to every
//! accepted one. That is how a restarted hub catches up, and how a change it stored but had not
//! published when it stopped (or that a restarted broker lost) still reaches its cluster.
//!
//! A spec larger than the chunk size an agent offered in its last spec resync request goes to
//! that agent as a head and chunks (`ocm_edge_schemas::wire::chunks`), leaving out the chunks the
//! agent said it holds: a transfer cut by a dropped link resumes where it stopped.

// Without the embedded broker (the fuzz targets' build) the code that configures it has no caller.
#![cfg_attr(
    not(feature = "embedded-broker"),
    allow(dead_code, unused_imports, unused_mut, unused_variables)
)]

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use ocm_edge_mqtt::acl::{DASHBOARD_USER, HUB_USER};
use ocm_edge_mqtt::broker::BrokerError;
#[cfg(feature = "embedded-broker")]
use ocm_edge_mqtt::broker::{BrokerLogin, EmbeddedBroker, EmbeddedOptions, start_embedded_with};
use ocm_edge_mqtt::{
    BrokerUrl, Publication, Publisher, Session, SessionConfig, SessionError, SessionEvent, UrlError,
};
use ocm_edge_mqtt::{CaPin, Credentials, TlsFiles};
use ocm_edge_schemas::admin::Role;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::chunks::{self, TransferOffer};
use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
use ocm_edge_schemas::wire::topic;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::admin::credential::{ADMIN_CREDENTIALS, Authenticator, authorize};
use crate::admin::messages::{
    ADMIN_API_VERSION, ADMIN_API_VERSION_PROPERTY, AdminErrorKind, AdminRequest, AdminResponse,
    MAX_ADMIN_PAYLOAD_BYTES,
};
use crate::admin::server;
use crate::availability::AvailabilityConfig;
use crate::cluster_ca::ClusterCa;
use crate::config::{AdminAuth, BrokerConfig, EmbeddedSecurity, HubConfig};
use crate::core::certificates::{CertificatePolicy, RevokedCertificate};
use crate::core::{AgentInput, Change, CoreConfig, HubCore, Outbound, Presence, Record, counter};
use crate::join_token::JoinTokens;
use crate::logins::{HubLogins, Standing, Standings, dashboard_password, random_password};
use crate::pki::{HubPki, PkiError, default_serving_names};
use crate::signing::{EventSigner, check_agent_signature};
use crate::store::{Store, StoreError};
use crate::{dashboard, events};

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
/// (README "Performance"). The broker runs in the hub's own process and its loopback link
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

/// The names the embedded broker's certificate is valid for: loopback, the host name, the listen
/// address when it is a specific one, and `extra` (`--tls-san`).
fn serving_names(listen: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut names = default_serving_names();
    let ip = listen.ip();
    let specific = (!ip.is_unspecified() && !ip.is_loopback()).then(|| ip.to_string());
    for name in specific.into_iter().chain(extra.iter().cloned()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

async fn close_sessions(session: Session, intakes: Vec<Session>) {
    let mut closing: Vec<_> = intakes.into_iter().map(Session::shutdown).collect();
    closing.push(session.shutdown());
    futures::future::join_all(closing).await;
}

/// Starts a hub: the embedded broker (unless external), the store, the MQTT client and the hub task.
///
/// # Errors
/// [`HubError`] for a bad source id or broker URL, a broker that does not start, or a store that
/// cannot be opened (e.g. another hub holds it).
pub async fn start_hub(cfg: HubConfig) -> Result<HubHandle, HubError> {
    if !topic::is_valid_name(&cfg.source_id) {
        return Err(HubError::Config(format!(
            "source id {:?} must match [a-z0-9-]+",
            cfg.source_id
        )));
    }
    // The hub's first start on this data directory creates the store.
    let first_start = !cfg.data_dir.join(crate::store::DB_FILE).exists();
    // The store first: a hub that cannot open it must not leave a broker behind.
    let store = Store::open(&cfg.data_dir)?;
    let loaded = store.load()?;
    let mut broker_tls = cfg.broker_tls.clone();
    let mut ca = None;
    // The CA signs the broker's certificate, admin credentials and the hub's signing key,
    // whatever the broker mode.
    let pki = HubPki::load_or_create(&cfg.data_dir.join("pki"), Utc::now())?;
    let signer = Arc::new(EventSigner::load_or_create(&pki, Utc::now())?);
    let admin_credentials = Some(cfg.data_dir.join(ADMIN_CREDENTIALS))
        .filter(|_| cfg.admin_auth == AdminAuth::Credentials);
    let authenticator = match cfg.admin_auth {
        AdminAuth::Credentials => Some(admin_authenticator(
            &pki,
            &cfg.data_dir,
            first_start,
            Utc::now(),
        )?),
        AdminAuth::InsecureOpen => {
            tracing::warn!(
                "INSECURE: the admin API takes unsigned requests (--insecure-open-admin): \
                 anyone who can publish on the broker's admin topic can accept clusters and \
                 run anything on every cluster"
            );
            None
        }
    };
    let keys = Standings::of(&loaded.clusters);
    // The hub's own sessions on its embedded broker with logins.
    let mut own_login = None;
    let mut with_logins = false;
    let mut dashboard_password_file = None;
    let (broker_url, broker) = match &cfg.broker {
        #[cfg(not(feature = "embedded-broker"))]
        BrokerConfig::Embedded { .. } => {
            return Err(HubError::Config(
                "this build of the hub has no embedded broker (built without the \
                 `embedded-broker` feature): give the URL of an external broker (--broker URL)"
                    .into(),
            ));
        }
        #[cfg(feature = "embedded-broker")]
        BrokerConfig::Embedded { listen } => {
            let listen = *listen;
            let options = match &cfg.embedded_security {
                EmbeddedSecurity::Tls { extra_names } => {
                    let now = Utc::now();
                    let tls = pki.issue_serving(&serving_names(listen, extra_names), now)?;
                    // The hub's own sessions trust its CA, as agents do by its pin.
                    broker_tls = TlsFiles {
                        ca_file: Some(pki.ca_file()),
                        ..TlsFiles::default()
                    };
                    ca = Some((pki.pin(), pki.ca_file()));
                    let hub_password = random_password();
                    let (dashboard_file, dashboard_password) = dashboard_password(&cfg.data_dir)?;
                    let tokens = Arc::new(JoinTokens::load_or_create(&cfg.data_dir)?);
                    let check = Arc::new(HubLogins::new(
                        hub_password.clone(),
                        Some(dashboard_password),
                        authenticator.clone(),
                        keys.clone(),
                        tokens,
                    ));
                    with_logins = true;
                    own_login = Some(Credentials {
                        username: HUB_USER.to_owned(),
                        password: hub_password,
                    });
                    tracing::info!(
                        user = DASHBOARD_USER,
                        password_file = %dashboard_file.display(),
                        "dashboards log in to the embedded broker as this user, with the password in this file"
                    );
                    dashboard_password_file = Some(dashboard_file);
                    EmbeddedOptions {
                        tls: Some(tls),
                        login: BrokerLogin::Checked(check),
                        login_recheck: Some(cfg.login_recheck),
                    }
                }
                EmbeddedSecurity::InsecurePlaintext => {
                    tracing::warn!(
                        %listen,
                        "INSECURE: the embedded broker takes plaintext, anonymous connections \
                         (--insecure-plaintext): anyone who reaches this port can read every \
                         cluster's works and run anything on every cluster"
                    );
                    EmbeddedOptions::default()
                }
            };
            let broker = tokio::task::spawn_blocking(move || start_embedded_with(listen, options))
                .await
                .map_err(|e| HubError::Task(e.to_string()))??;
            (broker.url(), Some(broker))
        }
        BrokerConfig::External { url } => (BrokerUrl::parse(url)?, None),
    };
    tracing::info!(
        clusters = loaded.clusters.len(),
        works = loaded.works.len(),
        path = %store.path().display(),
        "hub state loaded"
    );

    let mut core = HubCore::restore(
        CoreConfig {
            source_id: cfg.source_id.clone(),
            availability: AvailabilityConfig::new(cfg.lease_grace_multiplier)
                .map_err(|e| HubError::Config(e.to_string()))?,
            status_resync_batch: cfg.status_resync_batch.clamp(1, 1000),
        },
        loaded.clusters,
        loaded.works,
        loaded.counters,
        loaded.spec_clock,
    );
    core.restore_objects(loaded.objects);
    core.set_grace_start(Utc::now());
    // Each accepted cluster's client certificate, for brokers that take certificates as
    // identities; the revocation list written again at every start (it must never lapse).
    let cluster_ca = Arc::new(ClusterCa::load_or_create(&cfg.data_dir, Utc::now())?);
    core.set_certificate_policy(CertificatePolicy {
        issuer: cluster_ca.clone(),
        validity: cfg.cluster_cert_validity,
        grace: cfg.cluster_cert_grace,
    });
    let listed = core.revoked_certificates(Utc::now());
    let written_crl: Vec<RevokedCertificate> = listed.iter().map(|(_, r)| r.clone()).collect();
    cluster_ca.write_crl(&written_crl, Utc::now())?;
    let evictor = match (&cfg.broker_mtls, &cfg.broker) {
        (None, _) => None,
        (Some(_), BrokerConfig::Embedded { .. }) => {
            return Err(HubError::Config(
                "a broker certificate listener (--broker-mtls) is for an external broker (--broker): \
                 the embedded broker drops a denied cluster's sessions itself"
                    .into(),
            ));
        }
        (Some(url), BrokerConfig::External { .. }) if !url.is_tls() => {
            return Err(HubError::Config(format!(
                "the broker's certificate listener {url} (--broker-mtls) must be mqtts://: \
                 clusters log in there with TLS client certificates"
            )));
        }
        (Some(url), BrokerConfig::External { .. }) => {
            let listener = crate::evict::Listener {
                url: url.clone(),
                tls: cfg.broker_tls.clone(),
            };
            let tx = crate::evict::spawn(
                listener,
                cluster_ca.clone(),
                cfg.broker_mtls_recheck,
                cluster_ca.crl_file().display().to_string(),
                cfg.data_dir.join(crate::evict::DONE_FILE),
            );
            let _ = tx.send(crate::evict::Revoked::from_listed(listed));
            Some(tx)
        }
    };
    let core_spec_clock = core.spec_clock();
    let admin_topic =
        topic::admin_requests(&cfg.source_id).map_err(|e| HubError::Config(e.to_string()))?;
    if !(1..=MAX_INTAKES).contains(&cfg.intakes) {
        return Err(HubError::Config(format!(
            "intakes must be 1 to {MAX_INTAKES} (MQTT sessions receiving agent events), not {}",
            cfg.intakes
        )));
    }
    // One intake subscribes the plain filter; several share it (MQTT 5 shared subscription).
    let share_group = format!("{}-hub", cfg.source_id);
    let agent_events = topic::hub_agent_events_subscription(
        &cfg.source_id,
        (cfg.intakes > 1).then_some(share_group.as_str()),
    )
    .map_err(|e| HubError::Config(e.to_string()))?;
    let mut session_cfg = SessionConfig::new(broker_url.clone(), cfg.mqtt_client_id());
    session_cfg.keepalive = if broker.is_some() {
        cfg.keepalive.max(EMBEDDED_KEEPALIVE)
    } else {
        cfg.keepalive
    };
    // What the embedded broker accepts (works of 500 KiB, admin payloads of 2 MiB, headers); an
    // external broker may lower it in its CONNACK.
    session_cfg.max_packet_bytes = ocm_edge_mqtt::broker::MAX_PACKET_BYTES as u32;
    // A write to a whole fleet publishes one spec per cluster in one go: a deeper window than an
    // agent's (brokers lower it to their Receive Maximum in the CONNACK; the embedded broker's is
    // 500).
    session_cfg.inflight = HUB_INFLIGHT;
    session_cfg.queue_capacity = HUB_QUEUE;
    session_cfg.credentials = match own_login {
        Some(login) => Some(login),
        None => cfg.broker_credentials().map_err(HubError::Config)?,
    };
    session_cfg.tls = broker_tls;
    let mut intake_cfg = session_cfg.clone();
    intake_cfg.subscriptions = vec![agent_events.clone()];
    session_cfg.subscriptions = vec![
        agent_events,
        "sources/+/agentbroadcast".to_owned(),
        admin_topic.clone(),
    ];
    let (inbound_tx, inbound_rx) = mpsc::unbounded_channel();
    let (session, events) = Session::start(session_cfg, None)?;
    let intake = Intake {
        index: 0,
        source_id: cfg.source_id.clone(),
        admin_topic,
        to_hub: inbound_tx,
        keys: keys.clone(),
    };
    let mut intakes = Vec::with_capacity(cfg.intakes - 1);
    for index in 1..cfg.intakes {
        let mut c = intake_cfg.clone();
        c.client_id = format!("{}-intake-{index}", cfg.mqtt_client_id());
        let (s, events) = Session::start(c, None)?;
        tokio::spawn(
            Intake {
                index,
                ..intake.clone()
            }
            .run(events),
        );
        intakes.push(s);
    }
    tokio::spawn(intake.run(events));
    let (stop, stopped) = watch::channel(false);
    let (subscribed, subscriptions) = watch::channel(0u64);
    let hub = HubLoop {
        dashboard: cfg.dashboard,
        dashboards: dashboard::Dashboards::default(),
        subscribed,
        core,
        store,
        publisher: session.publisher(),
        inbound: inbound_rx,
        intakes_subscribed: vec![false; cfg.intakes],
        unflushed_since: None,
        flush_every: cfg.report_flush_every,
        stored_spec_clock: core_spec_clock,
        transfers: HashMap::new(),
        authenticator,
        answered: Answered::default(),
        signer,
        keys,
        login_broker: broker.clone().filter(|_| with_logins),
        cluster_ca,
        written_crl,
        crl_written_at: Utc::now(),
        evictor,
        external_broker: matches!(cfg.broker, BrokerConfig::External { .. }),
        stopped,
    };
    let task = tokio::spawn(hub.run());
    let admin_credentials = admin_credentials.filter(|p| p.is_file());
    Ok(HubHandle {
        broker_url,
        broker,
        hub_ca_pin: pki.pin(),
        ca,
        admin_credentials,
        dashboard_password_file,
        stop,
        subscriptions,
        task,
        session,
        intakes,
    })
}

/// The admin API's authenticator: the hub's CA (created when missing) and, at the hub's first
/// start on its data directory, the first admin credential (`DATA_DIR/admin-credentials.pem`,
/// mode 0600). Later starts never write it again: an admin who removed it meant to.
fn admin_authenticator(
    pki: &HubPki,
    data_dir: &Path,
    first_start: bool,
    now: chrono::DateTime<Utc>,
) -> Result<Authenticator, HubError> {
    let path = data_dir.join(ADMIN_CREDENTIALS);
    if first_start && !path.exists() {
        let (pem, record) = pki.issue_user("admin", Role::Admin, crate::pki::USER_VALIDITY, now)?;
        crate::pki::write_file(&path, &pem, true)?;
        crate::admin::registry::record_issued(data_dir, &record)?;
        tracing::info!(path = %path.display(), "wrote the first admin credential (user admin, role admin): keep it safe");
    } else if !path.exists() {
        tracing::info!(
            "no {ADMIN_CREDENTIALS} in the data directory: admin requests need a credential made with `ocm-edge user create NAME --role admin`"
        );
    }
    Ok(Authenticator::new(pki.ca_der()?).with_revocations(data_dir))
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

/// The task that owns the core.
struct HubLoop {
    dashboard: bool,
    dashboards: dashboard::Dashboards,
    /// SUBACKs handled so far (for [`HubHandle::subscribed`]).
    subscribed: watch::Sender<u64>,
    core: HubCore,
    store: Store,
    publisher: Publisher,
    inbound: mpsc::UnboundedReceiver<Inbound>,
    /// Which intake sessions have had a SUBACK since the hub started.
    intakes_subscribed: Vec<bool>,
    /// Since when batches stored with [`Store::write_deferred`] wait for an fsync.
    unflushed_since: Option<std::time::Instant>,
    /// [`HubConfig::report_flush_every`].
    flush_every: Duration,
    /// The spec clock as last stored ([`crate::core::spec_clock`]).
    stored_spec_clock: Option<chrono::DateTime<Utc>>,
    /// The chunked-transfer offer of each cluster's agent, from its last spec resync request
    /// (in memory: an agent offers again at every reconnect).
    transfers: HashMap<String, TransferOffer>,
    /// Checks admin requests' credentials; `None` with [`AdminAuth::InsecureOpen`].
    authenticator: Option<Authenticator>,
    /// The answers to recent changes, so that a resend or a replay is not carried out twice.
    answered: Answered,
    /// Signs every event sent to agents.
    signer: Arc<EventSigner>,
    /// The clusters' standings (bound agent keys) the intakes and the embedded broker check
    /// against, kept up to date with the clusters.
    keys: Standings,
    /// The embedded broker when it has logins ([`HubLogins`]): the hub makes its sessions agree
    /// with each change of a cluster's standing.
    login_broker: Option<EmbeddedBroker>,
    /// Issues clusters' certificates and writes their revocation list.
    cluster_ca: Arc<ClusterCa>,
    /// Drops revoked clusters' sessions on the external broker's certificate listener.
    evictor: Option<mpsc::UnboundedSender<Vec<crate::evict::Revoked>>>,
    /// Whether the broker is another process (whose sessions the hub cannot drop itself).
    external_broker: bool,
    /// The revoked certificates as last written to the revocation list.
    written_crl: Vec<RevokedCertificate>,
    /// When the revocation list was last written (rewritten after [`CRL_REFRESH`] even when
    /// nothing changed, so the file never nears its end).
    crl_written_at: chrono::DateTime<Utc>,
    stopped: watch::Receiver<bool>,
}

/// What reaches the hub task from its sessions' intake tasks.
#[derive(Debug)]
enum Inbound {
    /// An admin request (first session only).
    Admin(Box<Publication>),
    /// An agent event, decoded (`None`: well-formed, but nothing the hub handles).
    Agent(Option<AgentInput>),
    /// An agent message that could not be decoded (logged by the intake).
    Malformed,
    /// An agent event not signed by its cluster's agent key (logged by the intake).
    Refused,
    /// Session `intake` had a SUBACK; `refused` lists the filters the broker refused.
    Subscribed { intake: usize, refused: Vec<String> },
}

/// Reads one session's events, decodes agent messages (CloudEvent, payload, status hash) and
/// hands the results to the hub task: the decoding cost is spread over the runtime's workers,
/// not paid on the one task that owns the core.
#[derive(Debug, Clone)]
struct Intake {
    index: usize,
    source_id: String,
    admin_topic: String,
    to_hub: mpsc::UnboundedSender<Inbound>,
    keys: Standings,
}

impl Intake {
    async fn run(self, mut events: mpsc::UnboundedReceiver<SessionEvent>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while events.recv_many(&mut batch, MAX_BATCH).await > 0 {
            for event in batch.drain(..) {
                let Some(item) = self.decode(event) else {
                    continue;
                };
                if self.to_hub.send(item).is_err() {
                    return;
                }
            }
        }
    }

    fn decode(&self, event: SessionEvent) -> Option<Inbound> {
        match event {
            SessionEvent::Subscribed { refused } => Some(Inbound::Subscribed {
                intake: self.index,
                refused,
            }),
            SessionEvent::Connected { .. }
            | SessionEvent::Disconnected { .. }
            | SessionEvent::Acked(_) => None,
            SessionEvent::Malformed(e) => {
                tracing::warn!(error = %e, "unreadable MQTT message dropped");
                Some(Inbound::Malformed)
            }
            SessionEvent::Message(received) if received.topic() == self.admin_topic => {
                Some(Inbound::Admin(received))
            }
            SessionEvent::Message(received) => {
                match events::decode_agent_message(&self.source_id, &received.message) {
                    Ok(Some(input)) => {
                        let carried = match &input {
                            AgentInput::JoinRequest { request, .. } => request
                                .metadata
                                .annotations
                                .get(ocm_edge_schemas::wire::signature::AGENT_KEY_ANNOTATION)
                                .map(String::as_str),
                            _ => None,
                        };
                        let bound = self.keys.bound(input.cluster());
                        match check_agent_signature(&received.message, bound.as_deref(), carried) {
                            Ok(()) => Some(Inbound::Agent(Some(input))),
                            Err(e) => {
                                tracing::warn!(
                                    cluster = input.cluster(),
                                    error = %e,
                                    "agent event refused"
                                );
                                Some(Inbound::Refused)
                            }
                        }
                    }
                    Ok(None) => Some(Inbound::Agent(None)),
                    Err(e) => {
                        tracing::warn!(
                            topic = %received.message.topic,
                            error = %e,
                            "malformed agent message dropped"
                        );
                        Some(Inbound::Malformed)
                    }
                }
            }
        }
    }
}

/// How long the answer to a change is kept for a repeat of its request: twice the clock skew a
/// signed request is accepted with, so a request is never carried out twice while its signature
/// is still good.
const REPEAT_WINDOW_SECS: i64 = 2 * ocm_edge_schemas::admin::auth::MAX_CLOCK_SKEW_SECS;
/// At most this many answers are kept (the oldest go first): a flood of changes costs bounded
/// memory.
const MAX_ANSWERS_KEPT: usize = 4096;

/// One admin request, as a repeat of it looks: its response topic, correlation data and payload
/// (SHA-256). A signed request cannot be altered in any of these without a new signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RepeatKey([u8; 32]);

impl RepeatKey {
    fn of(response_topic: &str, received: &Publication) -> RepeatKey {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        let payload = ring::digest::digest(&ring::digest::SHA256, &received.message.payload);
        let correlation = received.correlation_data.as_deref().unwrap_or_default();
        for field in [response_topic.as_bytes(), correlation, payload.as_ref()] {
            ctx.update(&(field.len() as u64).to_be_bytes());
            ctx.update(field);
        }
        let mut key = [0; 32];
        key.copy_from_slice(ctx.finish().as_ref());
        RepeatKey(key)
    }
}

/// The answers to recent changes ([`REPEAT_WINDOW_SECS`], at most [`MAX_ANSWERS_KEPT`]). The CLI
/// sends a request again, with the same correlation data, until it has an answer: a change the
/// hub carried out whose answer was lost is answered again instead of being carried out a second
/// time (a second `createWork` would fail with AlreadyExists), and a captured request replayed
/// within its signature's lifetime changes nothing. In memory only: a restarted hub has none.
#[derive(Debug, Default)]
struct Answered {
    answers: HashMap<RepeatKey, (chrono::DateTime<Utc>, AdminResponse)>,
    order: std::collections::VecDeque<(chrono::DateTime<Utc>, RepeatKey)>,
}

impl Answered {
    fn get(&mut self, key: &RepeatKey, now: chrono::DateTime<Utc>) -> Option<AdminResponse> {
        self.expire(now);
        self.answers.get(key).map(|(_, answer)| answer.clone())
    }

    fn insert(&mut self, key: RepeatKey, answer: AdminResponse, now: chrono::DateTime<Utc>) {
        self.expire(now);
        while self.order.len() >= MAX_ANSWERS_KEPT {
            if let Some((_, oldest)) = self.order.pop_front() {
                self.answers.remove(&oldest);
            }
        }
        self.order.push_back((now, key.clone()));
        self.answers.insert(key, (now, answer));
    }

    fn expire(&mut self, now: chrono::DateTime<Utc>) {
        let horizon = now - chrono::Duration::seconds(REPEAT_WINDOW_SECS);
        while self.order.front().is_some_and(|(at, _)| *at < horizon) {
            if let Some((at, key)) = self.order.pop_front() {
                // A key answered again later keeps its newer entry.
                if self.answers.get(&key).is_some_and(|(t, _)| *t == at) {
                    self.answers.remove(&key);
                }
            }
        }
    }
}

/// An admin answer waiting for its batch to be stored.
struct PendingResponse {
    topic: String,
    correlation_data: Option<Bytes>,
    response: AdminResponse,
}

#[derive(Default)]
struct Batch {
    change: Change,
    responses: Vec<PendingResponse>,
    subscribed: bool,
    /// Made only of agent reports that the agents give again when a restarted hub asks (work
    /// statuses, on the status resync; lease renewals, every lease period), deciding nothing and
    /// publishing nothing: stored without its own fsync ([`Store::write_deferred`]), made
    /// durable within [`HubConfig::report_flush_every`] or by the next batch that is not. A
    /// crash loses at most those reports, and the resync brings them back; what the hub decides
    /// or answers is always on disk before anyone hears of it.
    deferrable: bool,
}

impl HubLoop {
    async fn run(mut self) -> Result<(), HubError> {
        let mut items = Vec::with_capacity(MAX_BATCH);
        let rescan = chrono::Duration::from_std(RESCAN_EVERY).unwrap_or_default();
        let mut deadline: Option<chrono::DateTime<Utc>> = None;
        let mut last_scan: Option<chrono::DateTime<Utc>> = None;
        loop {
            let now = Utc::now();
            let due =
                deadline.is_some_and(|d| d <= now) || last_scan.is_none_or(|at| now - at >= rescan);
            if due {
                if crl_refresh_due(self.crl_written_at, now) {
                    let listed = self.core.revoked_certificates(now);
                    self.write_crl(listed, now);
                }
                let (tick, next) = self.tick(now);
                deadline = next;
                last_scan = Some(now);
                if !tick.is_empty() {
                    let batch = Batch {
                        change: tick,
                        ..Batch::default()
                    };
                    self.commit(batch).await?;
                }
            }
            // The floor keeps a deadline that is already due from spinning the loop; the cap
            // finds deadlines that changes since the last scan brought in.
            let sleep_for = deadline.map_or(RESCAN_EVERY, |d| {
                (d - Utc::now()).to_std().unwrap_or(Duration::ZERO)
            });
            let mut sleep_for = sleep_for.clamp(MIN_TICK, RESCAN_EVERY);
            if let Some(since) = self.unflushed_since {
                let due = since + self.flush_every;
                let now = std::time::Instant::now();
                if due <= now {
                    self.flush()?;
                } else {
                    sleep_for = sleep_for.min(due - now);
                }
            }
            if let Some(due) = self.dashboards.due() {
                let now = std::time::Instant::now();
                if due <= now {
                    self.publish_dashboards().await;
                } else {
                    sleep_for = sleep_for.min(due - now);
                }
            }
            tokio::select! {
                _ = self.stopped.changed() => break,
                n = self.inbound.recv_many(&mut items, MAX_BATCH) => {
                    if n == 0 {
                        break;
                    }
                    let started = std::time::Instant::now();
                    let batch = self.plan_batch(items.drain(..));
                    let planned = started.elapsed();
                    let records = batch.change.records.len();
                    self.commit(batch).await?;
                    tracing::debug!(
                        events = n,
                        records,
                        plan_ms = planned.as_millis() as u64,
                        total_ms = started.elapsed().as_millis() as u64,
                        "batch handled"
                    );
                }
                () = tokio::time::sleep(sleep_for) => {}
            }
        }
        self.flush()?;
        tracing::info!("hub stopped");
        Ok(())
    }

    /// Makes the deferred batches durable.
    fn flush(&mut self) -> Result<(), HubError> {
        if self.unflushed_since.take().is_some() {
            self.store.flush().map_err(|e| {
                tracing::error!(error = %e, "hub store failed; stopping");
                HubError::from(e)
            })?;
        }
        Ok(())
    }

    /// Availability deadlines, then placements and replica sets when something changed or one
    /// of them is due. Returns the (applied) change and when to tick next.
    fn tick(&mut self, now: chrono::DateTime<Utc>) -> (Change, Option<chrono::DateTime<Utc>>) {
        let (tick, deadline) = self.core.availability_tick(now);
        let mut change = self.stage(tick);
        let due = self.core.fleet_requeue_at().is_some_and(|t| t <= now);
        if due || touches_fleet(&change) {
            let fleet = self.core.reconcile_fleet(now);
            change.extend(fleet);
        }
        let next = match (deadline, self.core.fleet_requeue_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (change, next)
    }

    /// Applies a change to the core and returns it for storing and publishing.
    fn stage(&mut self, change: Change) -> Change {
        self.core.apply(&change.records);
        // Only a cluster with revoked certificates can change the list (a lease renewal of
        // any other does not cost a pass over the fleet).
        if change
            .records
            .iter()
            .any(|r| matches!(r, Record::Cluster(c) if !c.revoked_certificates.is_empty()))
        {
            self.write_crl_if_changed();
        }
        change
    }

    /// Rewrites the cluster CA's revocation list when a certificate was revoked (deny, a new
    /// key). Written before the change's messages go out; a broker reads it when reloaded.
    fn write_crl_if_changed(&mut self) {
        let now = Utc::now();
        let listed = self.core.revoked_certificates(now);
        if !listed.iter().map(|(_, r)| r).eq(self.written_crl.iter()) {
            self.write_crl(listed, now);
        }
    }

    /// Writes the cluster CA's revocation list of `listed` (the core's revoked certificates
    /// with their clusters) and tells the evictor what it holds.
    fn write_crl(&mut self, listed: Vec<(String, RevokedCertificate)>, now: chrono::DateTime<Utc>) {
        let revoked: Vec<RevokedCertificate> = listed.iter().map(|(_, r)| r.clone()).collect();
        match self.cluster_ca.write_crl(&revoked, now) {
            Ok(()) => {
                tracing::info!(
                    file = %self.cluster_ca.crl_file().display(),
                    revoked = revoked.len(),
                    "wrote the clusters' certificate revocation list (reload a broker that reads it: Mosquitto's crlfile)"
                );
                let gained = revoked
                    .iter()
                    .any(|r| !self.written_crl.iter().any(|w| w.serial == r.serial));
                self.written_crl = revoked;
                self.crl_written_at = now;
                match &self.evictor {
                    Some(evictor) => {
                        let _ = evictor.send(crate::evict::Revoked::from_listed(listed));
                    }
                    None if self.external_broker && gained => tracing::warn!(
                        "a broker that takes certificates as identities (Mosquitto's certificate \
                         listener) keeps a revoked cluster's live session until it disconnects: \
                         give the hub --broker-mtls URL of that listener to have it dropped"
                    ),
                    None => {}
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot write the clusters' certificate revocation list")
            }
        }
    }

    fn plan_batch(&mut self, items: impl Iterator<Item = Inbound>) -> Batch {
        let now = Utc::now();
        let mut batch = Batch::default();
        let mut reports_only = true;
        for item in items {
            reports_only &= matches!(
                &item,
                Inbound::Malformed
                    | Inbound::Refused
                    | Inbound::Agent(
                        None | Some(
                            AgentInput::WorkStatus { .. }
                                | AgentInput::LeaseRenewal { .. }
                                | AgentInput::SpecResyncRequest { .. }
                        )
                    )
            );
            let change = match item {
                Inbound::Subscribed { intake, refused } => {
                    if !refused.is_empty() {
                        tracing::error!(
                            ?refused,
                            "the broker refused the hub's subscriptions: check the hub's ACL (broker-config/)"
                        );
                    }
                    self.intakes_subscribed[intake] = true;
                    // Resync only once every intake listens, or the answers could go unheard;
                    // once per batch, however many sessions came back in it.
                    if self.intakes_subscribed.iter().all(|s| *s) {
                        batch.subscribed = true;
                    }
                    Change::default()
                }
                Inbound::Malformed => self.core.count(counter::MALFORMED),
                Inbound::Refused => self.core.count(counter::AGENT_SIGNATURE_REFUSED),
                Inbound::Admin(received) => self.plan_admin(*received, now, &mut batch),
                Inbound::Agent(Some(mut input)) => {
                    // An agent offers chunked transfers in its birth (first thing on a new
                    // connection) and again, with the chunks it holds, in its spec resync.
                    if let AgentInput::SpecResyncRequest {
                        cluster, transfer, ..
                    }
                    | AgentInput::Presence {
                        cluster,
                        transfer,
                        presence: Presence { online: true, .. },
                    } = &mut input
                    {
                        match transfer.take() {
                            Some(offer) => self.transfers.insert(cluster.clone(), offer),
                            None => self.transfers.remove(cluster),
                        };
                    }
                    self.core.handle_agent(input, now)
                }
                Inbound::Agent(None) => Change::default(),
            };
            let change = self.stage(change);
            batch.change.extend(change);
        }
        if batch.subscribed {
            let mut c = self.core.all_hub_views();
            let unconfirmed = self.core.unconfirmed_specs(now);
            if !unconfirmed.outbound.is_empty() {
                tracing::info!(
                    works = unconfirmed.outbound.len(),
                    "sending again the specs no agent has confirmed yet"
                );
            }
            c.extend(unconfirmed);
            c.extend(self.core.status_resync_all());
            let c = self.stage(c);
            batch.change.extend(c);
        }
        if touches_fleet(&batch.change) {
            // Placements follow clusters, taints, sets, bindings, scores; rollouts follow
            // decisions and work statuses. reconcile_fleet applies its own records.
            let fleet = self.core.reconcile_fleet(now);
            reports_only &= fleet.is_empty();
            batch.change.extend(fleet);
        }
        superseded_views_dropped(&mut batch.change.outbound);
        batch.deferrable = reports_only
            && !batch.subscribed
            && batch.change.outbound.is_empty()
            && batch.change.records.iter().all(|r| {
                matches!(
                    r,
                    Record::Work(_) | Record::Cluster(_) | Record::Counters(_)
                )
            });
        batch
    }

    fn plan_admin(
        &mut self,
        received: Publication,
        now: chrono::DateTime<Utc>,
        batch: &mut Batch,
    ) -> Change {
        if received.retain {
            // A retained request would be replayed at every resubscribe: never act on one.
            tracing::warn!("retained admin request dropped (requests must not be retained)");
            return self.core.count(counter::ADMIN_DROPPED);
        }
        let Some(topic) = received.response_topic.clone() else {
            tracing::warn!("admin request without a response topic dropped");
            return self.core.count(counter::ADMIN_DROPPED);
        };
        // Answers go only to this hub's admin response topics: a request must not make the hub
        // publish on a cluster's topic (or anywhere else its identity may write).
        let source = &self.core.config().source_id;
        if !matches!(topic::Topic::parse(&topic),
            Ok(topic::Topic::AdminResponses { source: s, .. }) if &s == source)
        {
            tracing::warn!(
                response_topic = %topic,
                "admin request dropped: its response topic is not ocm-edge/{source}/admin/responses/<client>"
            );
            return self.core.count(counter::ADMIN_DROPPED);
        }
        let (change, response) = match server::parse_request(&received.message.payload) {
            Ok(request) => match self.admit(&received, &topic, &request, now) {
                Ok(user) => {
                    let key = RepeatKey::of(&topic, &received);
                    if let Some(first) = self.answered.get(&key, now) {
                        tracing::info!(
                            command = request.command(),
                            user,
                            "repeated admin request answered with its first answer (not carried out again)"
                        );
                        (self.core.count(counter::ADMIN_REPEATED), first)
                    } else {
                        match &request {
                            AdminRequest::Unknown { command } => tracing::warn!(
                                command,
                                user,
                                "admin request for a command this hub does not know (newer CLI?)"
                            ),
                            known => {
                                tracing::info!(command = known.command(), user, "admin request");
                            }
                        }
                        let changes = request.changes_something();
                        let (change, response) = server::handle_request(&self.core, request, now);
                        if changes {
                            self.answered.insert(key, response.clone(), now);
                        }
                        (change, response)
                    }
                }
                Err(refusal) => (self.core.count(counter::ADMIN_REFUSED), refusal),
            },
            Err(response) => (self.core.count(counter::ADMIN_DROPPED), response),
        };
        batch.responses.push(PendingResponse {
            topic,
            correlation_data: received.correlation_data,
            response,
        });
        change
    }

    /// Who sent an admin request (`"-"` without authentication), or the answer refusing it:
    /// Unauthenticated without a valid signed credential, Forbidden when the role does not allow
    /// the command. Refusals are logged.
    fn admit(
        &self,
        received: &Publication,
        response_topic: &str,
        request: &AdminRequest,
        now: chrono::DateTime<Utc>,
    ) -> Result<String, AdminResponse> {
        let Some(authenticator) = &self.authenticator else {
            return Ok("-".to_owned());
        };
        let correlation = received.correlation_data.as_deref().unwrap_or_default();
        let who = authenticator
            .authenticate(&received.message, response_topic, correlation, now)
            .map_err(|e| {
                tracing::warn!(command = request.command(), reason = %e, "admin request refused: unauthenticated");
                AdminResponse::error(AdminErrorKind::Unauthenticated, e.to_string())
            })?;
        authorize(&who, request).map_err(|message| {
            tracing::warn!(command = request.command(), user = who.user, role = %who.role, "admin request refused: forbidden");
            AdminResponse::error(AdminErrorKind::Forbidden, message)
        })?;
        Ok(who.user)
    }

    /// Stores the batch, then publishes its messages and answers.
    async fn commit(&mut self, mut batch: Batch) -> Result<(), HubError> {
        // The spec events of this batch moved the spec clock: stored with the batch, so a
        // restarted hub stamps later ones even if its clock went back meanwhile.
        let spec_clock = self.core.spec_clock();
        if let Some(t) = spec_clock.filter(|_| spec_clock > self.stored_spec_clock) {
            batch.change.records.push(Record::SpecClock(t));
        }
        // A batch that changes nothing (reads, unchanged statuses) writes nothing: what it
        // answers is either durable already or an agent's report the resync gives again.
        if !batch.change.records.is_empty() {
            let stored = if batch.deferrable {
                self.store.write_deferred(&batch.change.records)
            } else {
                self.store.write(&batch.change.records)
            };
            match stored {
                Ok(()) if batch.deferrable => {
                    self.unflushed_since
                        .get_or_insert_with(std::time::Instant::now);
                }
                // A durable commit carries every deferred one before it.
                Ok(()) => self.unflushed_since = None,
                Err(e) => {
                    tracing::error!(error = %e, "hub store failed; stopping");
                    for r in batch.responses {
                        let failed = AdminResponse::error(
                            AdminErrorKind::Internal,
                            format!("the hub could not store the change: {e}"),
                        );
                        self.respond(r.topic, r.correlation_data, &failed).await;
                    }
                    return Err(e.into());
                }
            }
        }
        self.stored_spec_clock = self.stored_spec_clock.max(spec_clock);
        let stored_at = std::time::Instant::now();
        // Standings first, and the broker's sessions made to agree with them, before anything of
        // this batch is published: a cluster accepted now gets its works only through a session
        // that proved the bound key; a denied one loses its session and what was queued for it.
        let changed = self
            .keys
            .update(batch.change.records.iter().filter_map(|r| match r {
                Record::Cluster(c) => Some(&**c),
                _ => None,
            }));
        if let Some(broker) = &self.login_broker {
            for (cluster, standing) in &changed {
                let client_id = crate::logins::agent_client_id(cluster);
                match standing {
                    Some(Standing::Denied) => broker.drop_session(&client_id).await,
                    Some(Standing::Accepted(_)) => broker.enforce_login(&client_id).await,
                    None => {}
                }
            }
        }
        let now = Utc::now();
        let source = self.core.config().source_id.clone();
        for out in &batch.change.outbound {
            match events::encode_outbound(&source, out, now, &self.signer) {
                Ok(msg) => {
                    for piece in self.pieces(out, msg) {
                        if let Err(e) = self.publisher.publish(piece).await {
                            tracing::warn!(error = %e, "publish failed");
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, kind = outbound_kind(out), "cannot encode"),
            }
        }
        if !batch.change.outbound.is_empty() {
            tracing::debug!(
                messages = batch.change.outbound.len(),
                publish_ms = stored_at.elapsed().as_millis() as u64,
                "batch published"
            );
        }
        if self.dashboard {
            self.dashboards
                .changed(&batch.change.records, std::time::Instant::now());
        }
        for r in batch.responses {
            self.respond(r.topic, r.correlation_data, &r.response).await;
        }
        if batch.subscribed {
            if self.dashboard {
                self.dashboards.forget_published();
            }
            self.subscribed.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// What goes on the wire for one outbound message: the message itself, or a head and the
    /// chunks its agent does not hold yet when it is a spec larger than the agent's offered
    /// chunk size.
    fn pieces(&mut self, out: &Outbound, msg: MqttMessage) -> Vec<MqttMessage> {
        let Outbound::Spec(spec) = out else {
            return vec![msg];
        };
        let Some(offer) = self.transfers.get_mut(&spec.cluster) else {
            return vec![msg];
        };
        if msg.payload.len() <= offer.chunk_bytes as usize {
            return vec![msg];
        }
        // What the agent held when it asked; used once (afterwards it may have finished and
        // dropped them, so a later resend sends everything). The payload is hashed here only
        // when the agent holds something (`split` hashes it anyway): a fleet-wide write of a
        // large work hashes each cluster's copy once, not twice.
        let held = if offer.held.is_empty() {
            Default::default()
        } else {
            offer
                .held
                .remove(&chunks::digest(&msg.payload))
                .unwrap_or_default()
        };
        let bytes = msg.payload.len();
        let pieces = chunks::split(msg, offer.chunk_bytes, &held);
        let sending = pieces.len().saturating_sub(1);
        if held.is_empty() {
            tracing::debug!(
                cluster = %spec.cluster,
                work = %spec.resource_id,
                version = spec.resource_version,
                bytes,
                chunks = sending,
                "sending a spec in chunks"
            );
        } else {
            tracing::info!(
                cluster = %spec.cluster,
                work = %spec.resource_id,
                version = spec.resource_version,
                bytes,
                held = held.len(),
                sending,
                "resuming a chunked spec transfer: the agent holds part of it"
            );
        }
        pieces
    }

    /// Publishes the dashboard views that changed, when due.
    async fn publish_dashboards(&mut self) {
        for m in self
            .dashboards
            .take_due(&self.core, std::time::Instant::now())
        {
            let retained = Publication {
                message: MqttMessage {
                    content_type: (!m.payload.is_empty()).then(|| APPLICATION_JSON.to_owned()),
                    topic: m.topic,
                    payload: m.payload,
                    user_properties: Vec::new(),
                },
                retain: true,
                ..Publication::default()
            };
            if let Err(e) = self.publisher.publish(retained).await {
                tracing::warn!(error = %e, "dashboard publish failed");
            }
        }
    }

    async fn respond(&self, topic: String, correlation: Option<Bytes>, response: &AdminResponse) {
        let answer = match admin_answer(topic.clone(), correlation.clone(), response) {
            Some(a) => a,
            None => return,
        };
        // Admin clients accept MAX_ADMIN_PAYLOAD_BYTES (and the broker disconnects a client sent
        // more than it accepts); the link may allow less.
        let bytes = answer.packet_bytes();
        let published = if bytes > MAX_ADMIN_PAYLOAD_BYTES {
            Err((bytes, MAX_ADMIN_PAYLOAD_BYTES as u32))
        } else {
            match self.publisher.publish(answer).await {
                Ok(()) => Ok(()),
                Err(e) => match e.too_large {
                    Some(too_large) => Err(too_large),
                    None => {
                        tracing::warn!(error = %e, "admin response not sent");
                        Ok(())
                    }
                },
            }
        };
        match published {
            Ok(()) => {}
            Err((bytes, limit)) => {
                tracing::warn!(
                    bytes,
                    limit,
                    "admin answer larger than the broker carries; answered TooLarge instead"
                );
                let refused = AdminResponse::error(
                    AdminErrorKind::TooLarge,
                    format!(
                        "the answer is {bytes} bytes, more than the {limit} bytes an admin answer \
                         may carry. Lists: ask for fewer items (listClusters and listWorks take \
                         `limit` and `after`; the ocm-edge CLI pages by itself). A write was stored \
                         before this answer: `ocm-edge work list` shows it."
                    ),
                );
                if let Some(a) = admin_answer(topic, correlation, &refused)
                    && let Err(e) = self.publisher.publish(a).await
                {
                    tracing::warn!(error = %e, "admin response not sent");
                }
            }
        }
    }
}

/// An admin answer as a publication on the client's response topic.
fn admin_answer(
    topic: String,
    correlation: Option<Bytes>,
    response: &AdminResponse,
) -> Option<Publication> {
    let payload = match serde_json::to_vec(response) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "cannot encode admin response");
            return None;
        }
    };
    Some(Publication {
        message: MqttMessage {
            topic,
            payload,
            content_type: Some(APPLICATION_JSON.to_owned()),
            user_properties: vec![(
                ADMIN_API_VERSION_PROPERTY.to_owned(),
                ADMIN_API_VERSION.to_owned(),
            )],
        },
        correlation_data: correlation,
        ..Publication::default()
    })
}

/// Whether a change may move a placement or a rollout: objects, works, or a cluster whose
/// published view changed (acceptance, labels, claims, taints, conditions). Lease renewals that
/// change nothing visible do not.
fn touches_fleet(change: &Change) -> bool {
    change.records.iter().any(|r| {
        matches!(
            r,
            Record::Object(_) | Record::ForgetObject(_) | Record::Work(_) | Record::ForgetWork(_)
        )
    }) || change
        .outbound
        .iter()
        .any(|o| matches!(o, Outbound::HubView(_)))
}

/// Keeps only the last hub view of each cluster in a batch's messages: an agent that reconnects
/// sends its birth and its cluster status together, each of which may change the view, and the
/// agent needs only the view as it ends up.
fn superseded_views_dropped(outbound: &mut Vec<Outbound>) {
    let mut seen = std::collections::HashSet::new();
    let mut keep: Vec<bool> = outbound
        .iter()
        .rev()
        .map(|o| match o {
            Outbound::HubView(v) => seen.insert(v.metadata.name.clone()),
            _ => true,
        })
        .collect();
    keep.reverse();
    let mut keep = keep.into_iter();
    outbound.retain(|_| keep.next().unwrap_or(true));
}

fn outbound_kind(out: &Outbound) -> &'static str {
    match out {
        Outbound::HubView(_) => "hub view",
        Outbound::Spec(_) => "spec",
        Outbound::StatusResyncRequest { .. } => "status resync request",
    }
}

/// How often the hub writes the revocation list again when nothing changed.
const CRL_REFRESH: chrono::Duration = chrono::Duration::days(30);

/// Whether the revocation list written at `written_at` is to be written again at `now`.
fn crl_refresh_due(written_at: chrono::DateTime<Utc>, now: chrono::DateTime<Utc>) -> bool {
    now - written_at >= CRL_REFRESH
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::cluster::ManagedCluster;

    #[test]
    fn the_revocation_list_is_written_again_every_30_days_long_before_its_end() {
        let written = Utc::now();
        assert!(!crl_refresh_due(
            written,
            written + chrono::Duration::days(29)
        ));
        assert!(crl_refresh_due(
            written,
            written + chrono::Duration::days(30)
        ));
        // A broker that read it just before the refresh still has years left on it.
        assert!(CRL_REFRESH * 12 < crate::cluster_ca::CRL_VALIDITY);
    }

    fn view(name: &str, label: &str) -> Outbound {
        let mut c = ManagedCluster::default();
        c.metadata.name = name.to_owned();
        c.metadata.labels.insert("v".to_owned(), label.to_owned());
        Outbound::HubView(Box::new(c))
    }

    #[test]
    fn only_the_last_view_of_each_cluster_in_a_batch_is_sent() {
        let resync = Outbound::StatusResyncRequest {
            cluster: "a".into(),
            hashes: Default::default(),
        };
        let mut out = vec![
            view("a", "1"),
            view("b", "1"),
            resync.clone(),
            view("a", "2"),
        ];
        superseded_views_dropped(&mut out);
        assert_eq!(out, vec![view("b", "1"), resync, view("a", "2")]);
    }

    fn request(correlation: &[u8], payload: &[u8]) -> Publication {
        Publication {
            message: MqttMessage {
                topic: "ocm-edge/ocm-edge/admin/requests".into(),
                payload: payload.to_vec(),
                content_type: None,
                user_properties: vec![],
            },
            retain: false,
            response_topic: Some("r".into()),
            correlation_data: Some(Bytes::copy_from_slice(correlation)),
        }
    }

    #[test]
    fn a_repeat_gets_the_first_answer_within_the_window_and_only_the_same_request_is_a_repeat() {
        let t0: chrono::DateTime<Utc> = "2026-11-25T10:00:00Z".parse().unwrap();
        let answer = AdminResponse::error(AdminErrorKind::NotFound, "first");
        let mut answered = Answered::default();
        let key = RepeatKey::of("r", &request(b"c1", b"p"));
        answered.insert(key.clone(), answer.clone(), t0);
        let later = t0 + chrono::Duration::seconds(REPEAT_WINDOW_SECS - 1);
        assert_eq!(answered.get(&key, later), Some(answer));
        for other in [
            RepeatKey::of("r", &request(b"c2", b"p")),
            RepeatKey::of("r", &request(b"c1", b"q")),
            RepeatKey::of("r2", &request(b"c1", b"p")),
        ] {
            assert_ne!(other, key);
            assert_eq!(answered.get(&other, later), None);
        }
        let expired = t0 + chrono::Duration::seconds(REPEAT_WINDOW_SECS + 1);
        assert_eq!(answered.get(&key, expired), None);
        assert!(answered.answers.is_empty() && answered.order.is_empty());
    }

    #[test]
    fn at_most_the_newest_answers_are_kept() {
        let t0: chrono::DateTime<Utc> = "2026-11-25T10:00:00Z".parse().unwrap();
        let mut answered = Answered::default();
        let answer = AdminResponse::error(AdminErrorKind::NotFound, "x");
        for i in 0..MAX_ANSWERS_KEPT + 10 {
            let key = RepeatKey::of("r", &request(&i.to_be_bytes(), b"p"));
            answered.insert(key, answer.clone(), t0);
        }
        assert_eq!(answered.answers.len(), MAX_ANSWERS_KEPT);
        let oldest = RepeatKey::of("r", &request(&0usize.to_be_bytes(), b"p"));
        assert_eq!(answered.get(&oldest, t0), None);
        let newest = RepeatKey::of("r", &request(&(MAX_ANSWERS_KEPT + 9).to_be_bytes(), b"p"));
        assert!(answered.get(&newest, t0).is_some());
    }
}
