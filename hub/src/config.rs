//! Hub configuration: a plain struct with defaults, filled by the CLI or by tests.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use ocm_edge_mqtt::{BrokerUrl, Credentials, TlsFiles};

/// Default source id (`ce-source` of hub events, `S` in `sources/S/...`).
pub const DEFAULT_SOURCE_ID: &str = "ocm-edge";
/// Default port of the embedded broker (MQTT over TLS).
pub const DEFAULT_BROKER_PORT: u16 = 8883;
/// Default port of the embedded broker with [`EmbeddedSecurity::InsecurePlaintext`].
pub const DEFAULT_PLAINTEXT_PORT: u16 = 1883;
/// The hub marks a cluster's availability Unknown after `1.5 x leaseDurationSeconds` without a
/// proof of life (OCM: 5 x; see [`crate::availability`] for why ocm-edge is quicker).
pub const DEFAULT_LEASE_GRACE_MULTIPLIER: f64 = crate::availability::DEFAULT_GRACE_MULTIPLIER;
/// Statuses per `status.resync_request`, as maestro batches them.
pub const DEFAULT_STATUS_RESYNC_BATCH: usize = 1000;
/// Default number of agent-event intake sessions ([`HubConfig::intakes`]).
pub const DEFAULT_INTAKES: usize = 1;
/// Default for [`HubConfig::report_flush_every`].
pub const DEFAULT_REPORT_FLUSH_EVERY: Duration = Duration::from_millis(500);

/// Which broker the hub talks through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerConfig {
    /// Start the embedded broker inside the hub process. Port 0 picks a free port
    /// ([`crate::HubHandle::broker_url`] tells which).
    Embedded {
        /// Listen address of the MQTT 5 listener.
        listen: SocketAddr,
    },
    /// Use a broker that is already running, e.g. `mqtt://mosquitto:1883` or
    /// `mqtts://broker.example:8883`.
    External {
        /// A broker URL ([`ocm_edge_mqtt::BrokerUrl`]: `mqtt://` port 1883, `mqtts://` 8883).
        url: String,
    },
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig::Embedded {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_BROKER_PORT)),
        }
    }
}

/// How the embedded broker lets clients in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddedSecurity {
    /// TLS only (`mqtts://`), with a certificate the hub's CA (`DATA_DIR/pki`, created at first
    /// start: [`crate::pki`]) signs at every start for loopback, the host name, a specific listen
    /// address and these names (`--tls-san`).
    Tls {
        /// More DNS names or IP addresses agents reach the hub by.
        extra_names: Vec<String>,
    },
    /// Plaintext and anonymous (`--insecure-plaintext`): anyone who reaches the port can read
    /// every work and run anything on every cluster. Logged as a warning at every start.
    InsecurePlaintext,
}

impl Default for EmbeddedSecurity {
    fn default() -> Self {
        EmbeddedSecurity::Tls {
            extra_names: Vec::new(),
        }
    }
}

/// Who may use the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AdminAuth {
    /// Every request must be signed with a credential of the hub's CA, and the credential's role
    /// must allow the command ([`crate::admin::auth`]). The hub creates its CA in
    /// `DATA_DIR/pki` and the first admin's credential, `DATA_DIR/admin-credentials.pem`, at
    /// its first start.
    #[default]
    Credentials,
    /// Anyone who may publish on the admin topic may do anything (`--insecure-open-admin`).
    /// Logged as a warning at every start.
    InsecureOpen,
}

/// Everything the hub needs to run.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// Directory of the hub's redb file (`hub.redb`); created when missing.
    pub data_dir: PathBuf,
    /// A directory (a mounted Secret) holding the hub's CA (`ca.pem`, `ca-key.pem`) and the
    /// join-token key (`join-token-key`) to use: copied into `DATA_DIR/pki` at start where it
    /// has none ([`crate::pki::seed`]).
    pub pki_from: Option<PathBuf>,
    /// Embedded or external broker.
    pub broker: BrokerConfig,
    /// TLS (the default) or plaintext for the embedded broker; ignored with an external one.
    pub embedded_security: EmbeddedSecurity,
    /// Signed admin requests (the default) or an open admin API.
    pub admin_auth: AdminAuth,
    /// Source id; must match `[a-z0-9-]+`.
    pub source_id: String,
    /// A cluster's `ManagedClusterConditionAvailable` becomes Unknown when no proof of life
    /// (lease renewal, birth, health report) arrived for `lease_grace_multiplier x
    /// leaseDurationSeconds` (default 1.5; OCM: 5). At least 1.
    pub lease_grace_multiplier: f64,
    /// MQTT keepalive of the hub's own client (on its embedded broker at least 5 minutes: a late
    /// ping reply there means a busy broker, not a dead link).
    pub keepalive: Duration,
    /// Status hashes per `status.resync_request` message (at most 1000, like maestro).
    pub status_resync_batch: usize,
    /// MQTT client id of the hub; defaults to `<source_id>-hub`. Two hubs on one broker need
    /// different ids (a second connection with the same id kicks the first one off).
    pub client_id: Option<String>,
    /// Publish the retained dashboard topics (`ocm-edge/<source>/dashboard/...`).
    pub dashboard: bool,
    /// MQTT username of the hub on an [`BrokerConfig::External`] broker with authentication
    /// (e.g. `ocm-edge-hub` in broker-config/mosquitto/); ignored by the embedded broker.
    pub broker_username: Option<String>,
    /// MQTT password going with [`HubConfig::broker_username`] (empty when only the username
    /// is set); ignored by the embedded broker.
    pub broker_password: Option<String>,
    /// CA file (system roots when unset) and client certificate for an `mqtts://` external broker.
    pub broker_tls: TlsFiles,
    /// MQTT sessions receiving agent events (1 to [`crate::process::MAX_INTAKES`]), each with a task
    /// that decodes what it receives. More than one share the subscription
    /// (`$share/<source>-hub/...`, MQTT 5): the broker spreads the fleet over them. On the
    /// embedded broker a cluster's events always reach the same session (hash of the topic); a
    /// broker that spreads round-robin (Mosquitto) may reorder one cluster's events between
    /// sessions, which the hub tolerates (sequence ids, connection numbers) but which one session
    /// never does.
    pub intakes: usize,
    /// How long agents' reports (statuses, lease renewals) stored without an fsync of their own
    /// may wait for one. A hub killed meanwhile loses them, and its status resync brings them
    /// back; what the hub decides or answers is always on disk first.
    pub report_flush_every: Duration,
    /// How often the embedded broker checks again the sessions whose login may lapse: clusters
    /// that got in with a join token (dropped once it expired or was revoked, unless the cluster
    /// was accepted meanwhile) and operators (dropped once their credential was revoked).
    pub login_recheck: Duration,
    /// How long each accepted cluster's TLS client certificate is valid (issued at `cluster
    /// accept`, renewed when its agent asks after two thirds of it; default 30 days).
    pub cluster_cert_validity: chrono::Duration,
    /// How long after its certificate's end a cluster still gets a new one by asking, without
    /// an operator (default 90 days).
    pub cluster_cert_grace: chrono::Duration,
    /// The [`BrokerConfig::External`] broker's certificate listener (`mqtts://HOST:8884` in
    /// broker-config/mosquitto/), where the hub drops the live sessions of clusters whose
    /// certificate it revoked ([`crate::registration::evict`]); trusted like the broker ([`HubConfig::broker_tls`]'s
    /// CA file or pin). Without it such a session stays until it disconnects.
    pub broker_mtls: Option<BrokerUrl>,
    /// Longest wait between two checks whether the broker read the revocation list (1 s,
    /// doubling; default 30 s).
    pub broker_mtls_recheck: Duration,
    /// Where to serve Prometheus metrics (`GET /metrics`, no authentication; port 0 picks a
    /// free one, [`crate::HubHandle::metrics_addr`] tells which). `None` (the library's default):
    /// no endpoint; `ocm-edge hub` serves on 127.0.0.1:9464 unless told `--metrics-listen off`.
    pub metrics_listen: Option<SocketAddr>,
}

/// [`HubConfig::login_recheck`]'s default.
pub const DEFAULT_LOGIN_RECHECK: Duration = Duration::from_secs(30);

impl HubConfig {
    /// Defaults: embedded broker with TLS on 127.0.0.1:8883, source id `ocm-edge`, grace 1.5 x lease,
    /// keepalive 30 s, resync batches of 1000.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        HubConfig {
            data_dir: data_dir.into(),
            pki_from: None,
            broker: BrokerConfig::default(),
            embedded_security: EmbeddedSecurity::default(),
            admin_auth: AdminAuth::default(),
            source_id: DEFAULT_SOURCE_ID.to_owned(),
            lease_grace_multiplier: DEFAULT_LEASE_GRACE_MULTIPLIER,
            keepalive: Duration::from_secs(30),
            status_resync_batch: DEFAULT_STATUS_RESYNC_BATCH,
            client_id: None,
            dashboard: true,
            broker_username: None,
            broker_password: None,
            broker_tls: TlsFiles::default(),
            intakes: DEFAULT_INTAKES,
            report_flush_every: DEFAULT_REPORT_FLUSH_EVERY,
            login_recheck: DEFAULT_LOGIN_RECHECK,
            cluster_cert_validity: crate::registration::certificates::DEFAULT_VALIDITY,
            cluster_cert_grace: crate::registration::certificates::DEFAULT_GRACE,
            broker_mtls: None,
            broker_mtls_recheck: Duration::from_secs(30),
            metrics_listen: None,
        }
    }

    /// The MQTT client id the hub connects with.
    pub fn mqtt_client_id(&self) -> String {
        self.client_id
            .clone()
            .unwrap_or_else(|| format!("{}-hub", self.source_id))
    }

    /// Username and password for an external broker, when a username is set.
    ///
    /// # Errors
    /// A message naming the missing flag when only a password is set.
    pub fn broker_credentials(&self) -> Result<Option<Credentials>, String> {
        match &self.broker {
            BrokerConfig::External { .. } => Credentials::from_parts(
                self.broker_username.as_deref(),
                self.broker_password.as_deref(),
                None,
            ),
            BrokerConfig::Embedded { .. } => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_ocm_and_the_documented_ports() {
        let cfg = HubConfig::new("/tmp/x");
        assert_eq!(cfg.source_id, "ocm-edge");
        assert_eq!(cfg.lease_grace_multiplier, 1.5);
        assert_eq!(cfg.status_resync_batch, 1000);
        assert_eq!(
            cfg.broker,
            BrokerConfig::Embedded {
                listen: "127.0.0.1:8883".parse().unwrap()
            }
        );
        assert!(matches!(
            cfg.embedded_security,
            EmbeddedSecurity::Tls { .. }
        ));
        assert_eq!(cfg.mqtt_client_id(), "ocm-edge-hub");
        assert_eq!(cfg.admin_auth, AdminAuth::Credentials);
    }
}
