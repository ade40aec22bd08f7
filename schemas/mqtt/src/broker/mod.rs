//! The embedded broker the hub runs by default, so one command runs everything; tests start one
//! on port 0.
//!
//! Behind the `embedded-broker` feature. The engine is [rmqtt](https://github.com/rmqtt/rmqtt)
//! 0.24 as a library, chosen by measurement against rumqttd 0.20 and Mosquitto (README,
//! "Architecture"): it held 10,000 clients where rumqttd 0.20 never finished joining 5,000.
//! rumqttd stays behind the non-default `rumqttd` feature, only so `fleet-bench --broker rumqttd`
//! can repeat that comparison.
//!
//! The broker runs on its own thread with its own tokio runtime, so it does not compete with the
//! hub's tasks for the hub's workers and it can be started from blocking or async code alike.
//! Dropping the last [`EmbeddedBroker`] handle stops it and closes every connection.

mod rmqtt;
use rmqtt::Control;
#[cfg(feature = "rumqttd")]
pub mod rumqttd;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::BrokerUrl;

/// Largest MQTT packet the embedded broker accepts: works carry up to 500 KiB of manifests and
/// admin payloads up to 2 MiB (`ocm_edge_hub::admin::messages::MAX_ADMIN_PAYLOAD_BYTES`), plus headers.
pub const MAX_PACKET_BYTES: usize = 4 * 1024 * 1024;
/// Connections the embedded broker accepts: a 10,000-cluster fleet, its hub, CLIs, dashboards
/// and slack (each connection is a file; this machine allows 20,000 per process).
pub const MAX_CONNECTIONS: usize = 15_000;
/// How long to wait for the broker to bind its listener.
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

/// What the embedded broker counts, for logs, benchmarks and tests.
#[derive(Debug, Default)]
pub struct BrokerStats {
    dropped: AtomicU64,
    refused_logins: AtomicU64,
    refused_topics: AtomicU64,
    disconnected: AtomicU64,
}

impl BrokerStats {
    /// Messages the broker accepted but dropped before delivery (a full queue or in-flight window,
    /// an expired message): each one is a delivery a subscriber will never see.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// CONNECTs refused: a wrong or missing username / password or login proof, a client id or
    /// will of another identity.
    pub fn refused_logins(&self) -> u64 {
        self.refused_logins.load(Ordering::Relaxed)
    }

    /// Subscriptions and publishes refused by the topic rules ([`crate::acl`]).
    pub fn refused_topics(&self) -> u64 {
        self.refused_topics.load(Ordering::Relaxed)
    }

    /// Sessions dropped by [`EmbeddedBroker::drop_session`], [`EmbeddedBroker::enforce_login`]
    /// and the periodic re-check of logins that may lapse ([`EmbeddedOptions::login_recheck`]).
    pub fn disconnected(&self) -> u64 {
        self.disconnected.load(Ordering::Relaxed)
    }

    fn count_disconnected(&self) {
        self.disconnected.fetch_add(1, Ordering::Relaxed);
    }

    fn count_refused_topic(&self) -> u64 {
        self.refused_topics.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn count_dropped(&self) -> u64 {
        self.dropped.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn count_refused_login(&self) {
        self.refused_logins.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running embedded broker. Clones share it; dropping the last clone stops it.
#[derive(Debug, Clone)]
pub struct EmbeddedBroker {
    addr: SocketAddr,
    tls: bool,
    stats: Arc<BrokerStats>,
    /// `None` for rumqttd (benchmark comparisons only: no logins, nothing to drop).
    control: Option<Control>,
    _running: Arc<Running>,
}

/// Stops the broker's runtime when dropped.
#[derive(Debug)]
pub(crate) struct Running {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The broker thread may already be gone (its runtime failed): nothing to stop then.
            let _ = stop.send(());
        }
    }
}

impl EmbeddedBroker {
    /// `mqtt://HOST:PORT` (`mqtts://` with TLS) with the port actually bound (127.0.0.1 for an
    /// unspecified address).
    pub fn url(&self) -> BrokerUrl {
        if self.tls {
            BrokerUrl::tls(self.connect_addr())
        } else {
            BrokerUrl::plain(self.connect_addr())
        }
    }

    /// The listen address (port resolved).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the broker counted so far.
    pub fn stats(&self) -> &BrokerStats {
        &self.stats
    }

    /// Drops the connection of `client_id` and its session (with what was queued for it), if
    /// there is one (a cluster denied); returns once it is gone, or after a few failed tries
    /// (logged).
    pub async fn drop_session(&self, client_id: &str) {
        if let Some(control) = &self.control {
            control.drop_session(client_id, false).await;
        }
    }

    /// Drops the session of `client_id` unless the login it was made with is still valid
    /// ([`LoginCheck::still_valid`]: e.g. a cluster now accepted with another key than the one
    /// that session proved); returns once that holds, or after a few failed tries (logged).
    /// Without a [`LoginCheck`] it drops the session.
    pub async fn enforce_login(&self, client_id: &str) {
        if let Some(control) = &self.control {
            control.drop_session(client_id, true).await;
        }
    }

    fn connect_addr(&self) -> SocketAddr {
        if self.addr.ip().is_unspecified() {
            SocketAddr::from(([127, 0, 0, 1], self.addr.port()))
        } else {
            self.addr
        }
    }
}

/// Starts the embedded broker on `listen` (port 0: a free port), plaintext and for anonymous
/// clients (tests of other things, and `ocm-edge hub --insecure-plaintext`), and waits, bounded,
/// until it accepts TCP connections. Blocking: call it from `spawn_blocking` inside a runtime.
///
/// # Errors
/// [`BrokerError`] when the address cannot be bound, the thread cannot start, or nothing listens
/// in time.
pub fn start_embedded(listen: SocketAddr) -> Result<EmbeddedBroker, BrokerError> {
    start_embedded_with(listen, EmbeddedOptions::default())
}

/// [`start_embedded`] that lets in only the given username / password pairs.
///
/// # Errors
/// As [`start_embedded`].
pub fn start_embedded_with_users(
    listen: SocketAddr,
    users: Option<HashMap<String, String>>,
) -> Result<EmbeddedBroker, BrokerError> {
    let login = users.map_or(BrokerLogin::Anonymous, BrokerLogin::Users);
    start_embedded_with(
        listen,
        EmbeddedOptions {
            login,
            ..EmbeddedOptions::default()
        },
    )
}

/// [`start_embedded`] with a login policy and, with [`EmbeddedOptions::tls`], a TLS-only listener.
///
/// # Errors
/// As [`start_embedded`], and [`BrokerError::Tls`] for certificate files that cannot be used.
pub fn start_embedded_with(
    listen: SocketAddr,
    options: EmbeddedOptions,
) -> Result<EmbeddedBroker, BrokerError> {
    let stats = Arc::new(BrokerStats::default());
    let tls = options.tls.is_some();
    let (addr, stop, control) = rmqtt::spawn(listen, options, stats.clone(), START_TIMEOUT)?;
    let broker = EmbeddedBroker {
        addr,
        tls,
        stats,
        control: Some(control),
        _running: Arc::new(Running { stop: Some(stop) }),
    };
    wait_listening(broker.connect_addr(), START_TIMEOUT)?;
    tracing::info!(%addr, tls, "embedded MQTT broker listening (rmqtt)");
    Ok(broker)
}

/// Blocks until something accepts TCP connections on `addr` (a broker that has started), at
/// most `timeout`.
///
/// # Errors
/// [`BrokerError::NotListening`] after `timeout`.
pub fn wait_listening(addr: SocketAddr, timeout: Duration) -> Result<(), BrokerError> {
    let started = Instant::now();
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(BrokerError::NotListening {
                addr,
                waited: timeout,
            });
        }
        // Polling a TCP port has no event to wait on; 10 ms keeps start-up fast.
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_zero_starts_on_a_free_port_reports_it_and_stops_when_dropped() {
        let broker = start_embedded("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = broker.addr();
        assert_ne!(addr.port(), 0);
        assert_eq!(
            broker.url().to_string(),
            format!("mqtt://127.0.0.1:{}", addr.port())
        );
        TcpStream::connect(addr).unwrap();
        drop(broker);
        // The runtime shuts down on its own thread; the port closes once it has.
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "broker still listening after drop"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_taken_port_is_a_clear_error() {
        let first = start_embedded("127.0.0.1:0".parse().unwrap()).unwrap();
        let err = start_embedded(first.addr()).unwrap_err();
        assert!(matches!(err, BrokerError::Bind { .. }), "{err:?}");
        assert!(err.to_string().contains(&first.addr().to_string()), "{err}");
    }
}
