//! Agent configuration: a plain struct with defaults ([`AgentConfig::new`]) and a
//! [`AgentConfig::validate`] that says what is wrong in words a user can act on.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use ocm_edge_mqtt::TlsFiles;
use ocm_edge_mqtt::{Backoff, BrokerUrl, CaPin, Credentials, TlsError, UrlError};
use ocm_edge_schemas::wire::chunks::MIN_CHUNK_BYTES;
use ocm_edge_schemas::wire::topic::is_valid_name;

/// Default source id (the hub's); maestro uses `maestro`.
pub const DEFAULT_SOURCE_ID: &str = "ocm-edge";
/// Default server-side-apply field manager of this agent.
pub const DEFAULT_FIELD_MANAGER: &str = "ocm-edge-agent";
/// Default lease duration: 10 minutes, renewed every 200 s. OCM's 60 s renewed every 20 s
/// cost 4,320 renewals (~3.5 MB) per cluster and day, too much for a metered edge link; the MQTT
/// will (at once for a killed agent, 1.5 x keepalive for a dead link) is what marks a cluster
/// unreachable quickly, the lease is the backstop (`tests/bench/idle-bytes.sh` measures it).
pub const DEFAULT_LEASE_DURATION_SECONDS: i32 = 600;
/// Default interval between join requests until a hub answers.
pub const DEFAULT_JOIN_RETRY: Duration = Duration::from_secs(30);
/// Default MQTT keepalive: one ping a minute when idle; a dead link's will fires within 91 s.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(60);
/// Default time an MQTT connection attempt may take (TCP, TLS, CONNACK). A broker letting a whole
/// fleet back in after a restart answers the last of 10,000 TLS logins many seconds late; an
/// agent that gave up after 10 s came back into the queue behind its own abandoned handshake, and
/// the fleet never got in (10,000 clusters on 2 cores, docs/performance.md). A 2G link needs
/// several seconds too.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default largest chunk of a large spec (offered to the hub in every spec resync request).
pub const DEFAULT_CHUNK_BYTES: u32 = 16 * 1024;
/// Default MQTT Receive Maximum: QoS 1 messages the broker may have in flight to the agent. With
/// 16 KiB chunks, a ping reply waits behind at most 64 KiB (8 s at 64 kbit/s), so a slow link
/// stays up while a large work crosses it.
pub const DEFAULT_RECEIVE_MAXIMUM: u16 = 4;
/// Default stall after which the agent asks for the rest of an unfinished chunked transfer: a
/// 16 KiB chunk takes 2 s at 64 kbit/s, so two minutes without one means it is not coming (e.g.
/// a broker dropped it).
pub const DEFAULT_TRANSFER_STALL: Duration = Duration::from_secs(120);
/// Shortest lease the hub accepts (issue 4).
pub const MIN_LEASE_DURATION_SECONDS: i32 = 5;
/// Shortest MQTT keepalive rumqttc accepts.
pub const MIN_KEEPALIVE: Duration = ocm_edge_mqtt::session::MIN_KEEPALIVE;
/// Default interval between reads of the cluster's facts (capacity, nodes, version, claims): a
/// changed fact is reported within a minute, and an unchanged one costs no byte on the wire.
pub const DEFAULT_FACTS_INTERVAL: Duration = Duration::from_secs(60);
/// Label and claim that mark a simulated cluster.
pub const SIMULATED_LABEL: &str = "ocm-edge.io/simulated";

/// Which cluster the agent applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplierConfig {
    /// A simulated cluster kept in the agent's redb file; Deployments, DaemonSets, Jobs and Pods
    /// become ready `ready_delay` after they change.
    Sim { ready_delay: Duration },
    /// A real cluster through kube-rs. `None` = in-cluster config, else the default kubeconfig.
    Kube { kubeconfig: Option<PathBuf> },
}

impl ApplierConfig {
    /// Whether this is the simulated cluster.
    pub fn is_simulated(&self) -> bool {
        matches!(self, ApplierConfig::Sim { .. })
    }
}

/// Everything the agent needs. Build with [`AgentConfig::new`], then set fields.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Managed cluster name (`[a-z0-9-]+`), also the MQTT consumer name.
    pub cluster_name: String,
    /// `mqtt://host:port` or `mqtts://host:port` ([`BrokerUrl`]).
    pub broker_url: String,
    /// Directory of the agent's redb file.
    pub data_dir: PathBuf,
    /// MQTT username; defaults to the cluster name when a password is set (brokers with
    /// per-cluster ACLs, see broker-config/).
    pub broker_username: Option<String>,
    /// MQTT password.
    pub broker_password: Option<String>,
    /// Certificates for an `mqtts://` broker.
    pub tls: TlsFiles,
    /// `mqtts://` listener of a broker that takes the cluster's certificate as its identity
    /// (Mosquitto's `use_identity_as_username`, `broker-config/mosquitto/`). Once the hub has
    /// issued the cluster a certificate (at `cluster accept`) and while it is valid, the agent
    /// connects here with it (and its own key); before that, and once it has ended, to
    /// [`AgentConfig::broker_url`] (where it asks for a new one).
    pub broker_mtls_url: Option<String>,
    /// Source id of the hub (topic `sources/<source_id>/...`).
    pub source_id: String,
    /// Pin of the CA that issues the hub's signing key; `None` uses the broker's CA pin
    /// (`tls.ca_pin`, the hub's own CA with the embedded broker), and without that either the
    /// agent trusts the first hub CA it sees and keeps it ([`crate::registration::trust`]).
    pub hub_ca_pin: Option<CaPin>,
    /// The join token (`ocm-edge token create`) the hub's embedded broker wants from a cluster it
    /// has not accepted yet; once accepted, the agent's own key is enough (an expired token then
    /// changes nothing).
    pub join_token: Option<String>,
    /// Takes events without the hub's signature from this source, which must be `source_id`
    /// (a source that does not sign, such as maestro). Anyone who can publish on the cluster's
    /// topics can then make it apply anything: only for brokers whose ACLs are trusted.
    pub accept_unsigned_from: Option<String>,
    /// Kube or Sim.
    pub applier: ApplierConfig,
    /// Labels sent with the join request.
    pub labels: BTreeMap<String, String>,
    /// Cluster claims sent with the join request and the cluster status.
    pub claims: BTreeMap<String, String>,
    /// Lease duration announced to the hub (renewed every third of it).
    pub lease_duration_seconds: i32,
    /// MQTT keepalive (at least 5 s); the broker publishes the will after 1.5x this without traffic.
    pub keepalive: Duration,
    /// How long one connection attempt may take (TCP, TLS and the broker's CONNACK), at least 1 s.
    pub connect_timeout: Duration,
    /// How often every held bundle is reconciled against the cluster (drift correction), online or not.
    pub reconcile_interval: Duration,
    /// How often the API server's health is checked (a change is reported at once).
    pub health_interval: Duration,
    /// How often a join request is repeated until a hub answers it (a request sent while no hub
    /// listened is lost: the broker keeps nothing). Checked on the health tick.
    pub join_retry: Duration,
    /// How often the cluster's facts are read again; a change is reported, an unchanged read
    /// sends nothing. Checked on the health tick.
    pub facts_interval: Duration,
    /// What the simulated cluster reports about itself (sim applier only).
    pub sim_facts: crate::applier::sim::SimFacts,
    /// Field manager for server-side apply when a bundle does not name one.
    pub field_manager: String,
    /// First reconnect delay; doubles up to `reconnect_max`, with jitter (default 0.5 s).
    pub reconnect_min: Duration,
    /// Longest reconnect delay (default 10 s: a link that comes back is used within 10 s).
    pub reconnect_max: Duration,
    /// Largest chunk of a large spec the agent asks the hub for (at least 1 KiB); `None` asks
    /// for whole messages, as maestro's agents get them.
    pub chunk_bytes: Option<u32>,
    /// MQTT Receive Maximum announced to the broker (at least 1).
    pub receive_maximum: u16,
    /// How long an unfinished chunked transfer may go without a new piece, while connected,
    /// before the agent asks the hub for the rest (a spec resync listing the chunks it holds).
    pub transfer_stall: Duration,
    /// When new versions of works may be applied (`--maintenance-window`, checked when parsed);
    /// empty: at any time. A hold on site (`crate::maintenance::hold`) closes them all.
    pub maintenance_windows: Vec<crate::maintenance::MaintenanceWindow>,
    /// Where to serve Prometheus metrics (`--metrics-listen`; port 0 picks a free one,
    /// [`crate::AgentHandle::metrics_addr`] tells which); `None`, the default: nowhere.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl AgentConfig {
    /// A config with the defaults: source `ocm-edge`, sim applier with a 2 s ready delay, lease 600 s,
    /// keepalive 60 s, connect timeout 30 s, reconcile every 10 s, field manager `ocm-edge-agent`.
    pub fn new(
        cluster_name: impl Into<String>,
        broker_url: impl Into<String>,
        data_dir: impl Into<PathBuf>,
    ) -> Self {
        AgentConfig {
            cluster_name: cluster_name.into(),
            broker_url: broker_url.into(),
            data_dir: data_dir.into(),
            broker_username: None,
            broker_password: None,
            tls: TlsFiles::default(),
            source_id: DEFAULT_SOURCE_ID.to_owned(),
            hub_ca_pin: None,
            join_token: None,
            broker_mtls_url: None,
            accept_unsigned_from: None,
            applier: ApplierConfig::Sim {
                ready_delay: Duration::from_secs(2),
            },
            labels: BTreeMap::new(),
            claims: BTreeMap::new(),
            lease_duration_seconds: DEFAULT_LEASE_DURATION_SECONDS,
            keepalive: DEFAULT_KEEPALIVE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            reconcile_interval: Duration::from_secs(10),
            health_interval: Duration::from_secs(5),
            join_retry: DEFAULT_JOIN_RETRY,
            facts_interval: DEFAULT_FACTS_INTERVAL,
            sim_facts: crate::applier::sim::SimFacts::default(),
            field_manager: DEFAULT_FIELD_MANAGER.to_owned(),
            reconnect_min: Backoff::default().min,
            reconnect_max: Backoff::default().max,
            chunk_bytes: Some(DEFAULT_CHUNK_BYTES),
            receive_maximum: DEFAULT_RECEIVE_MAXIMUM,
            transfer_stall: DEFAULT_TRANSFER_STALL,
            maintenance_windows: Vec::new(),
            metrics_listen: None,
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`ConfigError`] naming the field and what to do.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !is_valid_name(&self.cluster_name) {
            return Err(ConfigError::BadName {
                what: "cluster name",
                value: self.cluster_name.clone(),
            });
        }
        if ocm_edge_schemas::validate::is_reserved_identity_name(&self.cluster_name) {
            return Err(ConfigError::ReservedName(self.cluster_name.clone()));
        }
        if let Err(e) = ocm_edge_schemas::validate::validate_cluster_name(&self.cluster_name) {
            return Err(ConfigError::ClusterName(e.to_string()));
        }
        if !is_valid_name(&self.source_id) {
            return Err(ConfigError::BadName {
                what: "source id",
                value: self.source_id.clone(),
            });
        }
        if let Some(unsigned) = &self.accept_unsigned_from
            && *unsigned != self.source_id
        {
            return Err(ConfigError::UnsignedOtherSource {
                unsigned: unsigned.clone(),
                serves: self.source_id.clone(),
            });
        }
        let url = self.broker_url()?;
        if let Some(mtls) = &self.broker_mtls_url {
            let mtls = BrokerUrl::parse(mtls)?;
            if !mtls.is_tls() {
                return Err(ConfigError::MtlsWithoutTls(mtls.to_string()));
            }
        }
        self.tls.check()?;
        if !self.tls.is_empty() && !url.is_tls() {
            return Err(TlsError::FilesWithoutTls(url.to_string()).into());
        }
        if self.lease_duration_seconds < MIN_LEASE_DURATION_SECONDS {
            return Err(ConfigError::LeaseTooShort(self.lease_duration_seconds));
        }
        if self.keepalive < MIN_KEEPALIVE {
            return Err(ConfigError::KeepaliveTooShort(self.keepalive));
        }
        if self.connect_timeout < Duration::from_secs(1) {
            return Err(ConfigError::ConnectTimeoutTooShort(self.connect_timeout));
        }
        if self.reconcile_interval.is_zero()
            || self.health_interval.is_zero()
            || self.facts_interval.is_zero()
        {
            return Err(ConfigError::ZeroInterval);
        }
        if let Some(bytes) = self.chunk_bytes
            && !(MIN_CHUNK_BYTES..=ocm_edge_mqtt::session::DEFAULT_MAX_PACKET_BYTES / 2)
                .contains(&bytes)
        {
            return Err(ConfigError::ChunkBytes(bytes));
        }
        if self.receive_maximum == 0 {
            return Err(ConfigError::ReceiveMaximum);
        }
        if self.field_manager.is_empty() {
            return Err(ConfigError::EmptyFieldManager);
        }
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::EmptyDataDir);
        }
        Ok(())
    }

    /// The broker URL, parsed.
    ///
    /// # Errors
    /// [`ConfigError::BrokerUrl`].
    pub fn broker_url(&self) -> Result<BrokerUrl, ConfigError> {
        Ok(BrokerUrl::parse(&self.broker_url)?)
    }

    /// Username and password for the broker, when a password is set; the username defaults to
    /// the cluster name (brokers with per-cluster ACLs, see broker-config/).
    pub fn broker_credentials(&self) -> Option<Credentials> {
        let password = self.broker_password.clone()?;
        let username = self
            .broker_username
            .clone()
            .unwrap_or_else(|| self.cluster_name.clone());
        Some(Credentials { username, password })
    }

    /// The pin that anchors the hub's signing key: `hub_ca_pin`, else the broker's CA pin.
    pub fn trusted_hub_ca(&self) -> Option<CaPin> {
        self.hub_ca_pin.or(self.tls.ca_pin)
    }

    /// `<cluster>-work-agent`, the ce-source of status events (as the OCM work agent).
    pub fn agent_id(&self) -> String {
        format!("{}-work-agent", self.cluster_name)
    }
}

/// A bad configuration value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{what} {value:?} is not valid: use lowercase letters, digits and '-' only ([a-z0-9-]+)"
    )]
    BadName { what: &'static str, value: String },
    #[error(
        "cluster name {0:?} is the broker identity of one of ocm-edge's own parties (hub, CLI, dashboard), which has other rights on the broker: choose another name"
    )]
    ReservedName(String),
    /// A cluster name the hub refuses (see `ocm_edge_schemas::validate::validate_cluster_name`).
    #[error("--cluster-name: {0}")]
    ClusterName(String),
    #[error(
        "--accept-unsigned-specs-from {unsigned:?} names another source than the one this agent serves ({serves:?}): name the source whose events may come unsigned, or leave the option out"
    )]
    UnsignedOtherSource { unsigned: String, serves: String },
    #[error(
        "--broker-mtls {0} is no TLS listener: a cluster's certificate is presented over TLS only (mqtts://HOST:PORT)"
    )]
    MtlsWithoutTls(String),
    #[error(transparent)]
    BrokerUrl(#[from] UrlError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("lease duration {0} s is too short: use at least {MIN_LEASE_DURATION_SECONDS} s")]
    LeaseTooShort(i32),
    #[error("keepalive {0:?} is too short: use at least 5 s (rumqttc's minimum)")]
    KeepaliveTooShort(Duration),
    #[error("connect timeout {0:?} is too short: use at least 1 s (30 s by default)")]
    ConnectTimeoutTooShort(Duration),
    #[error("reconcile, health and facts intervals must be more than zero")]
    ZeroInterval,
    #[error(
        "chunk size {0} bytes is outside {MIN_CHUNK_BYTES}..={max}: pick a size in that range",
        max = ocm_edge_mqtt::session::DEFAULT_MAX_PACKET_BYTES / 2
    )]
    ChunkBytes(u32),
    #[error("receive maximum must be at least 1")]
    ReceiveMaximum,
    #[error("field manager must not be empty")]
    EmptyFieldManager,
    #[error("data dir must not be empty")]
    EmptyDataDir,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_follow_ocm() {
        let c = AgentConfig::new("edge-1", "mqtt://127.0.0.1:1883", "/tmp/x");
        c.validate().unwrap();
        assert_eq!(c.source_id, "ocm-edge");
        assert_eq!(c.lease_duration_seconds, 600);
        assert_eq!(c.keepalive, Duration::from_secs(60));
        assert_eq!(c.connect_timeout, Duration::from_secs(30));
        assert_eq!(c.field_manager, "ocm-edge-agent");
        assert_eq!(c.agent_id(), "edge-1-work-agent");
        assert_eq!(c.broker_credentials(), None);
    }

    #[test]
    fn a_connect_timeout_under_a_second_is_refused() {
        let mut c = AgentConfig::new("edge-1", "mqtt://127.0.0.1:1883", "/tmp/x");
        c.connect_timeout = Duration::from_millis(500);
        assert_eq!(
            c.validate().unwrap_err(),
            ConfigError::ConnectTimeoutTooShort(Duration::from_millis(500))
        );
        c.connect_timeout = Duration::from_secs(1);
        c.validate().unwrap();
    }

    #[test]
    fn mqtts_defaults_to_port_8883_and_tls_files_need_mqtts_and_a_whole_client_pair() {
        let mut c = AgentConfig::new("edge-1", "mqtts://broker", "/tmp/x");
        let url = c.broker_url().unwrap();
        assert_eq!((url.host(), url.port()), ("broker", 8883));
        c.tls.client_cert_file = Some("/c.pem".into());
        assert_eq!(
            c.validate().unwrap_err(),
            ConfigError::Tls(TlsError::HalfClientPair)
        );
        c.tls.client_key_file = Some("/k.pem".into());
        c.validate().unwrap();
        c.broker_url = "mqtt://broker:1883".into();
        assert!(matches!(
            c.validate().unwrap_err(),
            ConfigError::Tls(TlsError::FilesWithoutTls(_))
        ));
    }

    #[test]
    fn the_broker_username_defaults_to_the_cluster_name_when_a_password_is_set() {
        let mut c = AgentConfig::new("edge-1", "mqtt://h:1", "/tmp/x");
        c.broker_password = Some("s3cret".into());
        let c1 = c.broker_credentials().unwrap();
        assert_eq!(
            (c1.username.as_str(), c1.password.as_str()),
            ("edge-1", "s3cret")
        );
        c.broker_username = Some("other".into());
        assert_eq!(c.broker_credentials().unwrap().username, "other");
    }

    #[test]
    fn a_lease_shorter_than_five_seconds_is_refused_with_the_minimum_in_the_message() {
        let mut c = AgentConfig::new("edge-1", "mqtt://h:1", "/tmp/x");
        c.lease_duration_seconds = 4;
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("at least 5"), "{e}");
        c.lease_duration_seconds = 5;
        c.validate().unwrap();
    }

    #[test]
    fn bad_names_and_urls_are_refused_clearly() {
        let c = AgentConfig::new("Edge_1", "mqtt://h:1", "/tmp/x");
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("cluster name")
        );
        let c = AgentConfig::new("edge-1", "http://h:1", "/tmp/x");
        assert!(c.validate().unwrap_err().to_string().contains("mqtt://"));
        let c = AgentConfig::new("edge-1", "mqtt://h:port", "/tmp/x");
        assert!(c.validate().unwrap_err().to_string().contains("port"));
        let c = AgentConfig::new("edge-1", "mqtt://broker", "/tmp/x");
        assert_eq!(c.broker_url().unwrap().port(), 1883);
    }
}
