//! Admin API client used by the CLI (and the demo): one MQTT 5 connection to the broker, one
//! private response topic, typed calls that each publish an [`AdminRequest`] and wait, bounded,
//! for the matching [`AdminResponse`].
//!
//! The client never talks to the hub directly: like agents, operators only need the broker's
//! address. Each request carries a fresh Correlation Data, so answers to requests that timed out
//! (a slow hub) are recognised and dropped instead of being taken for the next answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use ocm_edge_schemas::api::work::{DeleteOption, ManifestConfigOption, ManifestWork};
use ocm_edge_schemas::wire::topic;
use rumqttc::Transport;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, Packet, Publish, PublishProperties};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions};
use serde_json::Value;
use thiserror::Error;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::messages::{
    ADMIN_API_VERSION, ADMIN_API_VERSION_PROPERTY, AdminErrorKind, AdminPayload, AdminRequest,
    AdminResponse, ClusterView, HubStats, MAX_ADMIN_PAYLOAD_BYTES, WorkView, WorkWritten,
};

/// How long a call waits for the hub by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Errors of the admin client. Each message says what failed, where, and what to check.
#[derive(Debug, Error)]
pub enum AdminError {
    /// The broker URL cannot be used. Not retryable.
    #[error(
        "invalid broker URL {url:?}: {reason} (expected mqtt://HOST:PORT, e.g. mqtt://127.0.0.1:1883)"
    )]
    InvalidBrokerUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The source id cannot appear in a topic. Not retryable.
    #[error("invalid source id: {0}")]
    InvalidSourceId(#[from] topic::TopicError),
    /// The broker could not be reached. Retryable once the broker runs.
    #[error(
        "cannot connect to the MQTT broker at {url}: {reason} (is `ocm-edge hub` running there? \
         set --broker or OCM_EDGE_BROKER to its address)"
    )]
    Connect {
        /// The broker URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The broker refused the username and password. Not retryable as is.
    #[error(
        "the broker at {url} refused the credentials for user {user:?} (check --broker-username \
         and --broker-password, or OCM_EDGE_BROKER_USERNAME and OCM_EDGE_BROKER_PASSWORD)"
    )]
    BadCredentials {
        /// The broker URL.
        url: String,
        /// The username sent.
        user: String,
    },
    /// Nobody answered in time. Retryable.
    #[error(
        "no hub answered on {url} within {secs} s: is `ocm-edge hub` running with source id \
         {source_id:?}? (set --source-id or OCM_EDGE_SOURCE_ID to the hub's, or raise --timeout)"
    )]
    NoAnswer {
        /// The broker URL.
        url: String,
        /// The source id the request was sent to.
        source_id: String,
        /// The timeout, in seconds.
        secs: u64,
    },
    /// The hub refused the command; nothing was changed. Not retryable as is.
    #[error("{message}")]
    Hub {
        /// Why.
        kind: AdminErrorKind,
        /// The hub's explanation.
        message: String,
    },
    /// The request is larger than the admin API carries.
    #[error(
        "the {command} request is {bytes} bytes, more than the {limit} bytes the admin API carries"
    )]
    TooLarge {
        /// The command.
        command: &'static str,
        /// Its encoded size.
        bytes: usize,
        /// [`MAX_ADMIN_PAYLOAD_BYTES`].
        limit: usize,
    },
    /// The hub's answer is not what this client understands (different versions?).
    #[error(
        "the hub's answer to {command} could not be understood: {reason} (are the CLI and hub the same version?)"
    )]
    BadAnswer {
        /// The command.
        command: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The MQTT client stopped (broker gone).
    #[error("lost the connection to the MQTT broker at {url}: {reason}")]
    Disconnected {
        /// The broker URL.
        url: String,
        /// What happened.
        reason: String,
    },
}

impl AdminError {
    /// Whether trying again later may succeed (broker or hub not there yet).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            AdminError::Connect { .. }
                | AdminError::NoAnswer { .. }
                | AdminError::Disconnected { .. }
                | AdminError::Hub {
                    kind: AdminErrorKind::Internal,
                    ..
                }
        )
    }

    /// The hub's error kind, when the hub refused the command.
    pub fn hub_kind(&self) -> Option<AdminErrorKind> {
        match self {
            AdminError::Hub { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// Result alias of this module.
pub type Result<T, E = AdminError> = std::result::Result<T, E>;

/// Installs ring as rustls' process-wide crypto provider (DESIGN decision 10). Safe to call
/// more than once and alongside other crates that install the same provider.
pub fn install_crypto_provider() {
    // An Err only means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Where to connect: host, port and whether TLS is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    /// Host name or IP.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// `mqtts://`.
    pub tls: bool,
}

impl BrokerAddress {
    /// Parses `mqtt://host[:port]`, `tcp://host[:port]` or `mqtts://host[:port]` (1883 / 8883).
    ///
    /// # Errors
    /// [`AdminError::InvalidBrokerUrl`] saying what is wrong.
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |reason: &str| AdminError::InvalidBrokerUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("missing scheme"))?;
        let (tls, default_port) = match scheme {
            "mqtt" | "tcp" => (false, 1883),
            "mqtts" | "ssl" => (true, 8883),
            _ => return Err(bad("unsupported scheme (use mqtt:// or mqtts://)")),
        };
        let authority = rest.trim_end_matches('/');
        if authority.contains('/') || authority.contains('@') || authority.contains('?') {
            return Err(bad("only host and port are allowed"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("unexpected text after the IPv6 address")),
            };
            (host.to_owned(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_owned(), Some(p)),
                None => (authority.to_owned(), None),
            }
        };
        if host.is_empty() {
            return Err(bad("missing host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("the port must be a number from 1 to 65535"))?,
            None => default_port,
        };
        Ok(BrokerAddress { host, port, tls })
    }
}

type Pending = Arc<Mutex<HashMap<Bytes, oneshot::Sender<Publish>>>>;

/// How [`AdminClient::connect_with`] connects.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Timeout for connecting and for each call.
    pub timeout: Duration,
    /// MQTT username, for a broker with authentication (e.g. `ocm-edge-operator` in
    /// broker-config/mosquitto/).
    pub username: Option<String>,
    /// MQTT password going with `username` (empty when only the username is set).
    pub password: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            timeout: DEFAULT_TIMEOUT,
            username: None,
            password: None,
        }
    }
}

impl std::fmt::Debug for ConnectOptions {
    // The password stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("timeout", &self.timeout)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Why the client did not become ready.
#[derive(Debug)]
enum NotReady {
    Connection(ConnectionError),
    Refused(String),
}

/// A connected admin API client.
///
/// Dropping it stops its MQTT event loop.
#[derive(Debug)]
pub struct AdminClient {
    client: AsyncClient,
    pending: Pending,
    request_topic: String,
    response_topic: String,
    broker_url: String,
    source_id: String,
    timeout: Duration,
    event_loop: JoinHandle<()>,
}

impl Drop for AdminClient {
    fn drop(&mut self) {
        self.event_loop.abort();
    }
}

impl AdminClient {
    /// Connects to the broker at `broker_url` and subscribes to a private response topic, with
    /// the [`DEFAULT_TIMEOUT`].
    ///
    /// # Errors
    /// Invalid URL or source id; broker unreachable within the timeout.
    pub async fn connect(broker_url: &str, source_id: &str) -> Result<AdminClient> {
        Self::connect_with_timeout(broker_url, source_id, DEFAULT_TIMEOUT).await
    }

    /// [`AdminClient::connect`] with a timeout for connecting and for each call.
    ///
    /// # Errors
    /// Invalid URL or source id; broker unreachable within `timeout`.
    pub async fn connect_with_timeout(
        broker_url: &str,
        source_id: &str,
        timeout: Duration,
    ) -> Result<AdminClient> {
        let options = ConnectOptions {
            timeout,
            ..ConnectOptions::default()
        };
        Self::connect_with(broker_url, source_id, &options).await
    }

    /// [`AdminClient::connect`] with a timeout and, for a broker with authentication, a
    /// username and password.
    ///
    /// # Errors
    /// Invalid URL or source id; broker unreachable within the timeout;
    /// [`AdminError::BadCredentials`] when the broker refuses the username and password.
    pub async fn connect_with(
        broker_url: &str,
        source_id: &str,
        connect: &ConnectOptions,
    ) -> Result<AdminClient> {
        let timeout = connect.timeout;
        install_crypto_provider();
        let address = BrokerAddress::parse(broker_url)?;
        let client_id = format!("ocm-edge-cli-{}", uuid::Uuid::new_v4().simple());
        let request_topic = topic::admin_requests(source_id)?;
        let response_topic = topic::admin_responses(source_id, &client_id)?;

        let mut options = MqttOptions::new(client_id, address.host.clone(), address.port);
        options
            .set_clean_start(true)
            .set_keep_alive(Duration::from_secs(30))
            .set_max_packet_size(Some(MAX_ADMIN_PAYLOAD_BYTES as u32))
            // The v5 default reserves ~14 MB of in-flight slots per client (DESIGN decision 11).
            .set_outgoing_inflight_upper_limit(100)
            .set_connection_timeout(timeout.as_secs().max(1));
        if address.tls {
            options.set_transport(Transport::tls_with_default_config());
        }
        if let Some(user) = &connect.username {
            options.set_credentials(user.clone(), connect.password.clone().unwrap_or_default());
        }
        let (client, event_loop) = AsyncClient::new(options, 16);
        let pending: Pending = Arc::default();
        let (ready_tx, ready_rx) = oneshot::channel();
        let task = tokio::spawn(drive(
            event_loop,
            client.clone(),
            response_topic.clone(),
            pending.clone(),
            ready_tx,
        ));
        let admin = AdminClient {
            client,
            pending,
            request_topic,
            response_topic,
            broker_url: broker_url.to_owned(),
            source_id: source_id.to_owned(),
            timeout,
            event_loop: task,
        };
        let connect_error = |reason: String| AdminError::Connect {
            url: broker_url.to_owned(),
            reason,
        };
        match tokio::time::timeout(timeout, ready_rx).await {
            Ok(Ok(Ok(()))) => Ok(admin),
            Ok(Ok(Err(NotReady::Refused(reason)))) => Err(connect_error(reason)),
            Ok(Ok(Err(NotReady::Connection(e)))) => {
                Err(not_connected(broker_url, connect.username.as_deref(), &e))
            }
            Ok(Err(_)) => Err(connect_error("the MQTT client stopped".to_owned())),
            Err(_) => Err(connect_error(format!(
                "no answer within {} s",
                timeout.as_secs()
            ))),
        }
    }

    /// The broker URL this client talks through.
    pub fn broker_url(&self) -> &str {
        &self.broker_url
    }

    /// The source id (hub) this client talks to.
    pub fn source_id(&self) -> &str {
        &self.source_id
    }

    /// Sends `request` and waits for the hub's answer.
    ///
    /// # Errors
    /// [`AdminError::Hub`] when the hub refused it, [`AdminError::NoAnswer`] after the timeout.
    pub async fn request(&self, request: &AdminRequest) -> Result<AdminPayload> {
        let command = request.command();
        let payload = serde_json::to_vec(request).map_err(|e| AdminError::BadAnswer {
            command,
            reason: format!("cannot encode the request: {e}"),
        })?;
        // Leave room for the topic and properties inside the packet.
        let limit = MAX_ADMIN_PAYLOAD_BYTES - 4096;
        if payload.len() > limit {
            return Err(AdminError::TooLarge {
                command,
                bytes: payload.len(),
                limit,
            });
        }
        // Bytes: each resend shares the buffer instead of copying up to 2 MiB.
        let payload = Bytes::from(payload);
        let correlation = Bytes::from(uuid::Uuid::new_v4().as_bytes().to_vec());
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(correlation.clone(), tx);
        let properties = PublishProperties {
            response_topic: Some(self.response_topic.clone()),
            correlation_data: Some(correlation.clone()),
            content_type: Some("application/json".to_owned()),
            user_properties: vec![(
                ADMIN_API_VERSION_PROPERTY.to_owned(),
                ADMIN_API_VERSION.to_owned(),
            )],
            ..Default::default()
        };
        let publish = || {
            self.client.publish_with_properties(
                self.request_topic.clone(),
                QoS::AtLeastOnce,
                false,
                payload.clone(),
                properties.clone(),
            )
        };
        let disconnected = |reason: String| AdminError::Disconnected {
            url: self.broker_url.clone(),
            reason,
        };
        let answer = async {
            // A hub that is (re)starting has not subscribed yet and the broker keeps nothing for
            // it, so the request is sent again, with the same correlation data, until the first
            // answer arrives. The hub's commands are idempotent or fail harmlessly on a repeat,
            // and only the first answer is taken.
            let mut rx = rx;
            let mut resend = Duration::from_millis(500);
            loop {
                publish().await.map_err(|e| disconnected(e.to_string()))?;
                match tokio::time::timeout(resend, &mut rx).await {
                    Ok(Ok(publish)) => return Ok(publish),
                    Ok(Err(_)) => return Err(disconnected("the MQTT client stopped".to_owned())),
                    Err(_) => resend = (resend * 2).min(Duration::from_secs(4)),
                }
            }
        };
        let outcome = tokio::time::timeout(self.timeout, answer).await;
        self.lock_pending().remove(&correlation);
        let publish = match outcome {
            Ok(answer) => answer?,
            Err(_) => {
                return Err(AdminError::NoAnswer {
                    url: self.broker_url.clone(),
                    source_id: self.source_id.clone(),
                    secs: self.timeout.as_secs_f64().ceil() as u64,
                });
            }
        };
        match serde_json::from_slice::<AdminResponse>(&publish.payload) {
            Ok(AdminResponse::Ok(payload)) => Ok(payload),
            Ok(AdminResponse::Error { kind, message }) => Err(AdminError::Hub { kind, message }),
            Err(e) => Err(AdminError::BadAnswer {
                command,
                reason: e.to_string(),
            }),
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<Bytes, oneshot::Sender<Publish>>> {
        // A poisoned map only means another call panicked mid-insert; the map is still usable.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every cluster the hub knows, sorted by name.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn list_clusters(&self) -> Result<Vec<ClusterView>> {
        match self.request(&AdminRequest::ListClusters).await? {
            AdminPayload::Clusters(c) => Ok(c),
            other => Err(unexpected("listClusters", &other)),
        }
    }

    /// One cluster.
    ///
    /// # Errors
    /// NotFound when the hub does not know it; see [`AdminClient::request`].
    pub async fn get_cluster(&self, name: &str) -> Result<ClusterView> {
        let req = AdminRequest::GetCluster {
            name: name.to_owned(),
        };
        self.cluster_call(req).await
    }

    /// Accepts a cluster; returns its new view.
    ///
    /// # Errors
    /// NotFound when it never asked to join; see [`AdminClient::request`].
    pub async fn accept_cluster(&self, name: &str) -> Result<ClusterView> {
        let req = AdminRequest::AcceptCluster {
            name: name.to_owned(),
        };
        self.cluster_call(req).await
    }

    /// Denies a cluster; returns its new view.
    ///
    /// # Errors
    /// NotFound when unknown; see [`AdminClient::request`].
    pub async fn deny_cluster(&self, name: &str) -> Result<ClusterView> {
        let req = AdminRequest::DenyCluster {
            name: name.to_owned(),
        };
        self.cluster_call(req).await
    }

    async fn cluster_call(&self, req: AdminRequest) -> Result<ClusterView> {
        let command = req.command();
        match self.request(&req).await? {
            AdminPayload::Cluster(c) => Ok(*c),
            other => Err(unexpected(command, &other)),
        }
    }

    /// Creates (or with `overwrite` replaces) the work `name` on every cluster of `clusters`.
    ///
    /// # Errors
    /// NotFound / NotAccepted / AlreadyExists / Invalid from the hub; nothing is stored then.
    pub async fn create_work(&self, work: NewWork) -> Result<Vec<WorkWritten>> {
        let req = AdminRequest::CreateWork {
            name: work.name,
            clusters: work.clusters,
            manifests: work.manifests,
            delete_option: work.delete_option,
            manifest_configs: work.manifest_configs,
            overwrite: work.overwrite,
        };
        match self.request(&req).await? {
            AdminPayload::Written(w) => Ok(w),
            other => Err(unexpected("createWork", &other)),
        }
    }

    /// Creates or updates one work from an OCM ManifestWork.
    ///
    /// # Errors
    /// NotFound / NotAccepted / Invalid from the hub; see [`AdminClient::request`].
    pub async fn apply_manifest_work(&self, work: ManifestWork) -> Result<WorkWritten> {
        let req = AdminRequest::ApplyManifestWork {
            work: Box::new(work),
        };
        match self.request(&req).await? {
            AdminPayload::Written(mut w) if w.len() == 1 => Ok(w.remove(0)),
            other => Err(unexpected("applyManifestWork", &other)),
        }
    }

    /// Works of one cluster, or all of them.
    ///
    /// # Errors
    /// NotFound when `cluster` is unknown; see [`AdminClient::request`].
    pub async fn list_works(&self, cluster: Option<&str>) -> Result<Vec<WorkView>> {
        let req = AdminRequest::ListWorks {
            cluster: cluster.map(str::to_owned),
        };
        match self.request(&req).await? {
            AdminPayload::Works(w) => Ok(w),
            other => Err(unexpected("listWorks", &other)),
        }
    }

    /// One work, with its spec.
    ///
    /// # Errors
    /// NotFound when absent; see [`AdminClient::request`].
    pub async fn get_work(&self, cluster: &str, name: &str) -> Result<WorkView> {
        let req = AdminRequest::GetWork {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
        };
        self.work_call(req).await
    }

    /// Starts deleting a work; returns it marked deleting.
    ///
    /// # Errors
    /// NotFound when absent; see [`AdminClient::request`].
    pub async fn delete_work(&self, cluster: &str, name: &str) -> Result<WorkView> {
        let req = AdminRequest::DeleteWork {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
        };
        self.work_call(req).await
    }

    async fn work_call(&self, req: AdminRequest) -> Result<WorkView> {
        let command = req.command();
        match self.request(&req).await? {
            AdminPayload::Work(w) => Ok(*w),
            other => Err(unexpected(command, &other)),
        }
    }

    /// Hub counters.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn stats(&self) -> Result<HubStats> {
        match self.request(&AdminRequest::Stats).await? {
            AdminPayload::Stats(s) => Ok(s),
            other => Err(unexpected("stats", &other)),
        }
    }

    /// Disconnects cleanly (the broker drops the private subscription at once).
    pub async fn disconnect(self) {
        // Best effort: when the broker is already gone there is nothing to tell it.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client.disconnect()).await;
    }
}

/// The arguments of [`AdminClient::create_work`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewWork {
    /// Work name.
    pub name: String,
    /// Target clusters.
    pub clusters: Vec<String>,
    /// Kubernetes objects, in apply order.
    pub manifests: Vec<Value>,
    /// Deletion options.
    pub delete_option: Option<DeleteOption>,
    /// Per-resource options.
    pub manifest_configs: Vec<ManifestConfigOption>,
    /// Replace an existing work of that name.
    pub overwrite: bool,
}

pub(super) fn unexpected(command: &'static str, payload: &AdminPayload) -> AdminError {
    let got = match payload {
        AdminPayload::Clusters(_) => "clusters",
        AdminPayload::Cluster(_) => "cluster",
        AdminPayload::Written(_) => "written",
        AdminPayload::Works(_) => "works",
        AdminPayload::Work(_) => "work",
        AdminPayload::Stats(_) => "stats",
        AdminPayload::Applied(_) => "applied",
        AdminPayload::ClusterSets(_) => "clusterSets",
        AdminPayload::ClusterSet(_) => "clusterSet",
        AdminPayload::Placements(_) => "placements",
        AdminPayload::Placement(_) => "placement",
        AdminPayload::ReplicaSets(_) => "replicaSets",
        AdminPayload::ReplicaSet(_) => "replicaSet",
        AdminPayload::Deleted(_) => "deleted",
    };
    AdminError::BadAnswer {
        command,
        reason: format!("unexpected payload {got:?}"),
    }
}

/// Polls the MQTT event loop: (re)subscribes to the response topic after every CONNACK (clean
/// start forgets subscriptions), reports the first SUBACK or the first failure on `ready`, and
/// hands each response to the call waiting for its correlation data.
async fn drive(
    mut event_loop: EventLoop,
    client: AsyncClient,
    response_topic: String,
    pending: Pending,
    ready: oneshot::Sender<Result<(), NotReady>>,
) {
    let mut ready = Some(ready);
    loop {
        match event_loop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                if let Err(e) = client.try_subscribe(response_topic.clone(), QoS::AtLeastOnce) {
                    tracing::warn!(error = %e, "cannot subscribe to the admin response topic");
                }
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                if let Some(ready) = ready.take() {
                    let refused = ack.return_codes.iter().any(|code| {
                        !matches!(
                            code,
                            rumqttc::v5::mqttbytes::v5::SubscribeReasonCode::Success(_)
                        )
                    });
                    let outcome = if refused {
                        Err(NotReady::Refused(format!(
                            "the broker refused the subscription to {response_topic}"
                        )))
                    } else {
                        Ok(())
                    };
                    let _ = ready.send(outcome);
                }
            }
            Ok(Event::Incoming(Packet::Publish(publish))) => {
                let correlation = publish
                    .properties
                    .as_ref()
                    .and_then(|p| p.correlation_data.clone());
                let waiter = correlation
                    .and_then(|c| pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&c));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(publish);
                    }
                    // An answer to a call that already timed out, or a stray message.
                    None => tracing::debug!("dropping an admin response nobody waits for"),
                }
            }
            Ok(_) => {}
            Err(e) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(NotReady::Connection(e)));
                    return;
                }
                tracing::warn!(error = %e, "admin client lost the broker; reconnecting");
                // Back off before rumqttc reconnects on the next poll; pending calls keep their
                // own deadlines.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// The error for a first connection that failed: refused credentials are told apart, and a
/// broker that just closed the connection of a client with credentials hints at them.
fn not_connected(url: &str, user: Option<&str>, e: &ConnectionError) -> AdminError {
    let refused_login = matches!(
        e,
        ConnectionError::ConnectionRefused(
            ConnectReturnCode::BadUserNamePassword | ConnectReturnCode::NotAuthorized
        )
    );
    let reason = match user {
        Some(user) if refused_login => {
            return AdminError::BadCredentials {
                url: url.to_owned(),
                user: user.to_owned(),
            };
        }
        None if refused_login => format!(
            "{}: the broker wants a username and password (set --broker-username and \
             --broker-password)",
            describe(e)
        ),
        Some(user) if !is_port_closed(e) => format!(
            "{}; if the broker closed the connection, the credentials for user {user:?} may be wrong",
            describe(e)
        ),
        _ => describe(e),
    };
    AdminError::Connect {
        url: url.to_owned(),
        reason,
    }
}

fn is_port_closed(e: &ConnectionError) -> bool {
    matches!(e, ConnectionError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused)
}

fn describe(e: &ConnectionError) -> String {
    match e {
        ConnectionError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_owned()
        }
        ConnectionError::ConnectionRefused(code) => format!("the broker refused us ({code:?})"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_urls_accept_mqtt_and_mqtts_with_default_ports() {
        let a = BrokerAddress::parse("mqtt://127.0.0.1:1884").unwrap();
        assert_eq!((a.host.as_str(), a.port, a.tls), ("127.0.0.1", 1884, false));
        let a = BrokerAddress::parse("mqtt://broker.local").unwrap();
        assert_eq!(a.port, 1883);
        let a = BrokerAddress::parse("mqtts://broker.local/").unwrap();
        assert_eq!((a.port, a.tls), (8883, true));
        let a = BrokerAddress::parse("tcp://[::1]:2000").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("::1", 2000));
    }

    #[test]
    fn broken_broker_urls_say_what_is_wrong() {
        for (url, needle) in [
            ("127.0.0.1:1883", "missing scheme"),
            ("http://x:1", "unsupported scheme"),
            ("mqtt://x:port", "port must be a number"),
            ("mqtt://:1883", "missing host"),
            ("mqtt://x:1883/topic", "only host and port"),
        ] {
            let e = BrokerAddress::parse(url).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
            assert!(e.contains(url), "{url}: {e}");
        }
    }

    #[tokio::test]
    async fn connecting_to_a_closed_port_fails_with_a_hint() {
        // Bind then drop a listener to get a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("mqtt://127.0.0.1:{port}");
        let e = AdminClient::connect_with_timeout(&url, "ocm-edge", Duration::from_secs(3))
            .await
            .unwrap_err();
        assert!(matches!(e, AdminError::Connect { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains(&url) && text.contains("--broker"), "{text}");
    }
}
