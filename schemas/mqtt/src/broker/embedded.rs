//! The running embedded broker (behind the `embedded-broker` feature): its handle, counters and
//! start functions; the engine itself is in `rmqtt.rs`.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::rmqtt::{self, Control};
use super::{BrokerError, BrokerLogin, EmbeddedOptions, START_TIMEOUT};
use crate::BrokerUrl;

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

    pub(super) fn count_disconnected(&self) {
        self.disconnected.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn count_refused_topic(&self) -> u64 {
        self.refused_topics.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(super) fn count_dropped(&self) -> u64 {
        self.dropped.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(super) fn count_refused_login(&self) {
        self.refused_logins.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running embedded broker. Clones share it; dropping the last clone stops it.
#[derive(Debug, Clone)]
pub struct EmbeddedBroker {
    pub(super) addr: SocketAddr,
    pub(super) tls: bool,
    pub(super) stats: Arc<BrokerStats>,
    /// `None` for rumqttd (benchmark comparisons only: no logins, nothing to drop).
    pub(super) control: Option<Control>,
    pub(super) _running: Arc<Running>,
}

/// Stops the broker's runtime when dropped.
#[derive(Debug)]
pub(crate) struct Running {
    pub(super) stop: Option<tokio::sync::oneshot::Sender<()>>,
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

    /// Client connections open now and sessions held (connected or kept for a client that is
    /// away), the hub's own included; zeros for the rumqttd engine (benchmarks only).
    pub fn connections(&self) -> (u64, u64) {
        self.control.as_ref().map_or((0, 0), Control::connections)
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

    pub(super) fn connect_addr(&self) -> SocketAddr {
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
