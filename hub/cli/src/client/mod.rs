//! Admin API client used by the CLI (and the demo): one MQTT 5 session to the broker, one
//! private response topic, typed calls that each publish an [`AdminRequest`] and wait, bounded,
//! for the matching [`AdminResponse`] ([`ocm_edge_mqtt::Requester`] does the request/response).
//!
//! The client never talks to the hub directly: like agents, operators only need the broker's
//! address. Errors live in [`error`]; calls for cluster sets, placements and replica sets in
//! [`fleet`]; the credential that signs each request in [`credential`].

use std::time::Duration;

use ocm_edge_mqtt::acl::OPERATOR_USER;
use ocm_edge_mqtt::{BrokerUrl, Credentials, RequestError, Requester, SessionConfig, TlsFiles};
use ocm_edge_schemas::api::work::ManifestWork;
use ocm_edge_schemas::wire::{MqttMessage, topic};

pub mod credential;
pub mod error;
mod fleet;

use credential::Credential;
use error::unexpected;
pub use error::{AdminError, Result};
use ocm_edge_schemas::admin::{
    ADMIN_API_VERSION, ADMIN_API_VERSION_PROPERTY, AdminErrorKind, AdminPayload, AdminRequest,
    AdminResponse, ClusterView, CreateWork, HubStats, MAX_ADMIN_PAYLOAD_BYTES, WorkRef, WorkView,
    WorkWritten,
};

/// Items per page of a list: a 10,000-cluster fleet comes in 20 answers of well under the
/// broker's packet limit. A page the hub finds too large is asked again at half the size.
pub const LIST_PAGE: u32 = 500;

/// How long a call waits for the hub by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// CA file and client certificate for an `mqtts://` broker (system roots when empty).
    pub tls: TlsFiles,
    /// The credential file every request is signed with (a hub refuses unsigned requests unless
    /// it runs with `--insecure-open-admin`); see [`credential`].
    pub credentials: Option<std::path::PathBuf>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            timeout: DEFAULT_TIMEOUT,
            username: None,
            password: None,
            tls: TlsFiles::default(),
            credentials: None,
        }
    }
}

impl std::fmt::Debug for ConnectOptions {
    // The password stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("timeout", &self.timeout)
            .field("username", &self.username)
            .field("tls", &self.tls)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

/// A connected admin API client. Dropping it stops its MQTT session.
#[derive(Debug)]
pub struct AdminClient {
    requester: Requester,
    /// The scope of the credential requests are signed with (`None`: unscoped or unsigned).
    scope: Option<ocm_edge_schemas::admin::CredentialScope>,
    request_topic: String,
    broker_url: String,
    source_id: String,
    timeout: Duration,
    list_page: u32,
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

    /// [`AdminClient::connect`] with a timeout, credentials and TLS files.
    ///
    /// # Errors
    /// Invalid URL, source id, TLS files or credential file; [`AdminError::Link`] when the broker
    /// cannot be used (refused port, untrusted certificate, refused login) within the timeout.
    pub async fn connect_with(
        broker_url: &str,
        source_id: &str,
        connect: &ConnectOptions,
    ) -> Result<AdminClient> {
        let url = BrokerUrl::parse(broker_url)?;
        let credential = connect
            .credentials
            .as_deref()
            .map(Credential::load)
            .transpose()?;
        let client_id = format!("ocm-edge-cli-{}", uuid::Uuid::new_v4().simple());
        let request_topic = topic::admin_requests(source_id)?;
        let response_topic = topic::admin_responses(source_id, &client_id)?;
        let mut cfg = SessionConfig::new(url, client_id);
        cfg.max_packet_bytes = MAX_ADMIN_PAYLOAD_BYTES as u32;
        cfg.connect_timeout = connect.timeout;
        cfg.tls = connect.tls.clone();
        cfg.credentials = match (&connect.username, &credential) {
            // A username and password for an external broker.
            (Some(u), _) => Some(Credentials {
                username: u.clone(),
                password: connect.password.clone().unwrap_or_default(),
            }),
            // The hub's embedded broker lets operators in by their credential (brokers without
            // logins ignore it).
            (None, Some(c)) => Some(Credentials {
                username: OPERATOR_USER.to_owned(),
                password: c.login_password(OPERATOR_USER, &cfg.client_id),
            }),
            (None, None) => None,
        };
        let mut requester = Requester::connect(cfg, response_topic, connect.timeout).await?;
        let scope = credential.as_ref().and_then(|c| c.scope().cloned());
        if let Some(credential) = credential {
            tracing::debug!(user = credential.user(), role = %credential.role(), scope = ?credential.scope(), "signing admin requests");
            requester.set_signer(std::sync::Arc::new(credential));
        }
        Ok(AdminClient {
            requester,
            scope,
            request_topic,
            broker_url: broker_url.to_owned(),
            source_id: source_id.to_owned(),
            timeout: connect.timeout,
            list_page: LIST_PAGE,
        })
    }

    /// The scope of the credential this client signs with: the hub answers only within it.
    pub fn scope(&self) -> Option<&ocm_edge_schemas::admin::CredentialScope> {
        self.scope.as_ref()
    }

    /// Items per page of [`AdminClient::list_clusters`] and [`AdminClient::list_works`]
    /// (default [`LIST_PAGE`], at least 1).
    #[must_use]
    pub fn with_list_page(mut self, items: u32) -> Self {
        self.list_page = items.max(1);
        self
    }

    /// The broker URL this client talks through.
    pub fn broker_url(&self) -> &str {
        &self.broker_url
    }

    /// The source id (hub) this client talks to.
    pub fn source_id(&self) -> &str {
        &self.source_id
    }

    /// This client's MQTT client id (`ocm-edge-cli-<random>`, the last level of its response
    /// topic).
    pub fn client_id(&self) -> &str {
        let topic = self.requester.response_topic();
        topic.rsplit_once('/').map_or(topic, |(_, id)| id)
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
        let message = MqttMessage {
            topic: self.request_topic.clone(),
            payload,
            content_type: Some("application/json".to_owned()),
            user_properties: vec![(
                ADMIN_API_VERSION_PROPERTY.to_owned(),
                ADMIN_API_VERSION.to_owned(),
            )],
        };
        let answer = match self.requester.request(message, self.timeout).await {
            Ok(answer) => answer,
            Err(RequestError::NoAnswer { .. }) => {
                let url = self.broker_url.clone();
                let source_id = self.source_id.clone();
                let secs = self.timeout.as_secs_f64().ceil() as u64;
                return Err(match request.how_to_check() {
                    Some(check) => AdminError::Unconfirmed {
                        command,
                        url,
                        source_id,
                        secs,
                        check,
                    },
                    None => AdminError::NoAnswer {
                        url,
                        source_id,
                        secs,
                    },
                });
            }
            Err(RequestError::Closed(reason)) => {
                return Err(AdminError::Disconnected {
                    url: self.broker_url.clone(),
                    reason,
                });
            }
        };
        match serde_json::from_slice::<AdminResponse>(&answer.message.payload) {
            Ok(AdminResponse::Ok(payload)) => Ok(payload),
            Ok(AdminResponse::Error { kind, message }) => Err(AdminError::Hub { kind, message }),
            Err(e) => Err(AdminError::BadAnswer {
                command,
                reason: e.to_string(),
            }),
        }
    }

    /// Every cluster the hub knows, sorted by name.
    ///
    /// # Errors
    /// See [`AdminClient::request`].
    pub async fn list_clusters(&self) -> Result<Vec<ClusterView>> {
        self.list_paged(
            |last: Option<&ClusterView>, limit| AdminRequest::ListClusters {
                after: last.map(|c| c.name.clone()),
                limit: Some(limit),
            },
            |payload| match payload {
                AdminPayload::Clusters(c) => Ok(c),
                other => Err(unexpected("listClusters", &other)),
            },
        )
        .await
    }

    /// Every item of a list, a page at a time (see [`LIST_PAGE`]).
    async fn list_paged<T>(
        &self,
        ask: impl Fn(Option<&T>, u32) -> AdminRequest,
        take: impl Fn(AdminPayload) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let mut all = Vec::new();
        let mut limit = self.list_page;
        loop {
            let page = match self.request(&ask(all.last(), limit)).await {
                Ok(payload) => take(payload)?,
                Err(AdminError::Hub {
                    kind: AdminErrorKind::TooLarge,
                    ..
                }) if limit > 1 => {
                    limit /= 2;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let n = page.len();
            if n > limit as usize && all.is_empty() {
                // A hub that does not page answered with everything at once.
                return Ok(page);
            }
            all.extend(page);
            if n < limit as usize {
                return Ok(all);
            }
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
        self.cluster_call(AdminRequest::accept_cluster(name)).await
    }

    /// Accepts a cluster with the operator's edit of the labels its agent sent
    /// (`drop_agent_labels` takes none of them, then `labels` are set and `remove` removed);
    /// returns its new view.
    ///
    /// # Errors
    /// NotFound when it never asked to join, Invalid for a label Kubernetes would refuse; see
    /// [`AdminClient::request`].
    pub async fn accept_cluster_labelled(
        &self,
        name: &str,
        labels: std::collections::BTreeMap<String, String>,
        remove: Vec<String>,
        drop_agent_labels: bool,
    ) -> Result<ClusterView> {
        let req = AdminRequest::AcceptCluster {
            name: name.to_owned(),
            labels,
            remove_labels: remove,
            drop_agent_labels,
        };
        self.cluster_call(req).await
    }

    /// Adds and accepts a cluster whose agent never asks to join (OCM's own work agent); returns
    /// its view.
    ///
    /// # Errors
    /// AlreadyExists when the hub knows it, Invalid for a bad name; see [`AdminClient::request`].
    pub async fn add_cluster(&self, name: &str) -> Result<ClusterView> {
        let req = AdminRequest::AddCluster {
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

    /// Removes a cluster (`force`: without waiting for its agent); returns its view, with
    /// `removing` set while its agent removes its works, `removed` once the hub forgot it.
    ///
    /// # Errors
    /// NotFound when unknown (or already removed); see [`AdminClient::request`].
    pub async fn remove_cluster(&self, name: &str, force: bool) -> Result<ClusterView> {
        let req = AdminRequest::RemoveCluster {
            name: name.to_owned(),
            force,
        };
        self.cluster_call(req).await
    }

    /// Sets the labels `set` and removes the keys `remove` of a cluster; returns its new view.
    ///
    /// # Errors
    /// NotFound when unknown, Invalid for a label Kubernetes would refuse; see
    /// [`AdminClient::request`].
    pub async fn label_cluster(
        &self,
        name: &str,
        set: std::collections::BTreeMap<String, String>,
        remove: Vec<String>,
    ) -> Result<ClusterView> {
        let req = AdminRequest::LabelCluster {
            name: name.to_owned(),
            set,
            remove,
        };
        self.cluster_call(req).await
    }

    /// Replaces the maintenance windows set on the hub for a cluster (none: any time); returns
    /// its new view.
    ///
    /// # Errors
    /// NotFound when unknown, Invalid for a window that cannot be read; see
    /// [`AdminClient::request`].
    pub async fn set_maintenance_windows(
        &self,
        name: &str,
        windows: Vec<String>,
    ) -> Result<ClusterView> {
        let req = AdminRequest::SetMaintenanceWindows {
            name: name.to_owned(),
            windows,
        };
        self.cluster_call(req).await
    }

    /// Puts taints on a cluster and removes the taints of the keys `remove`; returns its new view.
    ///
    /// # Errors
    /// NotFound when unknown, Invalid for a bad or reserved taint; see [`AdminClient::request`].
    pub async fn taint_cluster(
        &self,
        name: &str,
        add: Vec<ocm_edge_schemas::api::cluster::Taint>,
        remove: Vec<String>,
    ) -> Result<ClusterView> {
        let req = AdminRequest::TaintCluster {
            name: name.to_owned(),
            add,
            remove,
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
    pub async fn create_work(&self, work: CreateWork) -> Result<Vec<WorkWritten>> {
        match self.request(&AdminRequest::CreateWork(work)).await? {
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
        self.list_paged(
            |last: Option<&WorkView>, limit| AdminRequest::ListWorks {
                cluster: cluster.map(str::to_owned),
                after: last.map(|w| WorkRef {
                    cluster: w.cluster.clone(),
                    name: w.name.clone(),
                }),
                limit: Some(limit),
            },
            |payload| match payload {
                AdminPayload::Works(w) => Ok(w),
                other => Err(unexpected("listWorks", &other)),
            },
        )
        .await
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
        self.requester.disconnect().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_broken_broker_url_is_refused_before_connecting() {
        let e = AdminClient::connect("http://x:1", "ocm-edge")
            .await
            .unwrap_err();
        assert!(matches!(e, AdminError::BrokerUrl(_)), "{e}");
        assert!(e.to_string().contains("unsupported scheme"), "{e}");
    }
}
