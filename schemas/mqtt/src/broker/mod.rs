//! The embedded broker the hub runs by default, so one command runs everything; tests start one
//! on port 0.
//!
//! Behind the `embedded-broker` feature. The engine is [rmqtt](https://github.com/rmqtt/rmqtt)
//! 0.24 as a library, chosen by measurement against rumqttd 0.20 and Mosquitto (docs/changelog.md,
//! "The embedded broker"): it held 10,000 clients where rumqttd 0.20 never finished joining 5,000.
//! rumqttd stays behind the non-default `rumqttd` feature, only so `fleet-bench --broker rumqttd`
//! can repeat that comparison.
//!
//! The broker runs on its own thread with its own tokio runtime, so it does not compete with the
//! hub's tasks for the hub's workers and it can be started from blocking or async code alike.
//! Dropping the last `EmbeddedBroker` handle stops it and closes every connection.
//!
//! Without the feature this module keeps only what describes a broker's logins and limits
//! ([`LoginCheck`], [`ServerTls`], [`MAX_PACKET_BYTES`]): the hub's login rules and PKI compile
//! without the engine, so the fuzz targets build without rmqtt (fuzz/Cargo.toml).

#[cfg(feature = "embedded-broker")]
mod embedded;
#[cfg(feature = "embedded-broker")]
mod rmqtt;
#[cfg(feature = "rumqttd")]
pub mod rumqttd;
#[cfg(feature = "embedded-broker")]
pub use embedded::*;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Largest MQTT packet the embedded broker accepts: works carry up to 500 KiB of manifests and
/// admin payloads up to 2 MiB (`ocm_edge_hub::admin::messages::MAX_ADMIN_PAYLOAD_BYTES`), plus headers.
pub const MAX_PACKET_BYTES: usize = 4 * 1024 * 1024;
/// Connections the embedded broker accepts: a 10,000-cluster fleet, its hub, CLIs, dashboards
/// and slack (each connection is a file; this machine allows 20,000 per process).
pub const MAX_CONNECTIONS: usize = 15_000;
/// How long to wait for the broker to bind its listener.
#[cfg(feature = "embedded-broker")]
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors starting the embedded broker.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(
        "cannot listen on {addr}: {reason} (another broker or hub may hold the port; choose another with --listen)"
    )]
    Bind { addr: SocketAddr, reason: String },
    #[error("the embedded broker cannot use its TLS certificate {cert} / key {key}: {reason}")]
    Tls {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
    #[error("cannot start the embedded broker thread: {0}")]
    Thread(std::io::Error),
    #[error(
        "embedded broker on {addr} did not accept connections within {waited:?} (is the port already in use?)"
    )]
    NotListening { addr: SocketAddr, waited: Duration },
}

/// Who may log in to the embedded broker.
#[derive(Clone, Default)]
pub enum BrokerLogin {
    /// Any client, without a username.
    #[default]
    Anonymous,
    /// Only these username / password pairs; anything else is refused at CONNECT. Each user
    /// may then use only its own topics ([`crate::acl`]: the hub, operator and dashboard
    /// identities by name, any other username as the edge cluster of that name), only client
    /// ids of its own ([`crate::acl::client_id_allowed`]) and a will on its own topics.
    Users(HashMap<String, String>),
    /// Each login decided by a [`LoginCheck`] (the hub's: proofs made with keys, never shared
    /// passwords; `ocm_edge_schemas::wire::login`), then the same topic, client id and will
    /// rules as [`BrokerLogin::Users`].
    Checked(Arc<dyn LoginCheck>),
}

/// Decides who may log in to the embedded broker ([`BrokerLogin::Checked`]). Called on the
/// broker's threads for every CONNECT, so it must not block for long.
pub trait LoginCheck: Send + Sync + 'static {
    /// `Ok` when `username` may log in with `client_id` and `password` (then limited to that
    /// identity's topics, [`crate::acl`]); `Err` with the reason otherwise, which the broker
    /// logs (the client sees only "not authorized").
    ///
    /// # Errors
    /// The reason the login is refused.
    fn check(&self, username: &str, client_id: &str, password: &[u8]) -> Result<(), String>;

    /// Whether a session that logged in with these still would now (its cluster denied since,
    /// or accepted with another key). Asked at every SUBSCRIBE and by
    /// [`EmbeddedBroker::enforce_login`]; must not log (it is asked often).
    fn still_valid(&self, username: &str, client_id: &str, password: &[u8]) -> bool {
        self.check(username, client_id, password).is_ok()
    }

    /// Whether a session that logged in with these can become invalid by time or by a change the
    /// broker is not told of (a join token that expires or is revoked, an operator credential
    /// revoked): such sessions are re-checked every [`EmbeddedOptions::login_recheck`] and
    /// dropped when [`LoginCheck::still_valid`] says no. Must be cheap and not log.
    fn may_lapse(&self, _username: &str, _password: &[u8]) -> bool {
        false
    }

    /// Whether this session may subscribe to `filter`, which its identity's topic rules
    /// ([`crate::acl`]) allow: a narrower rule for some sessions of an identity (a scoped
    /// operator's credential reads only its own admin answers). Asked at every SUBSCRIBE after
    /// the topic rules; must not log.
    fn may_subscribe(
        &self,
        _username: &str,
        _client_id: &str,
        _password: &[u8],
        _filter: &str,
    ) -> bool {
        true
    }
}

impl std::fmt::Debug for BrokerLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            // Never the passwords.
            Self::Users(u) => f.debug_tuple("Users").field(&u.len()).finish(),
            Self::Checked(_) => f.write_str("Checked"),
        }
    }
}

/// The broker's certificate for a TLS-only listener (`mqtts://`): PEM files, read when the broker
/// starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTls {
    /// The broker's certificate followed by the CA that signed it: clients that pin the CA
    /// ([`crate::CaPin`]) find it in the chain.
    pub cert_chain_file: PathBuf,
    /// The certificate's private key.
    pub key_file: PathBuf,
}

/// How the embedded broker lets clients in.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedOptions {
    /// Who may log in.
    pub login: BrokerLogin,
    /// TLS only with this certificate; `None` is plaintext (`ocm-edge hub --insecure-plaintext`
    /// and tests of other things).
    pub tls: Option<ServerTls>,
    /// How often the sessions whose login [may lapse](LoginCheck::may_lapse) are checked again
    /// (with [`BrokerLogin::Checked`]); `None`: never.
    pub login_recheck: Option<std::time::Duration>,
}
