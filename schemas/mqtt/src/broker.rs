//! The embedded broker: rumqttd 0.20 with one MQTT 5 listener, so one command runs everything.
//!
//! Behind the `embedded-broker` feature: the hub runs it, and tests start one on port 0.
//!
//! # Limits (see DESIGN.md, "Known gaps of rumqttd 0.20")
//! - rumqttd cannot be stopped: [`Broker::start`](rumqttd::Broker::start) blocks its thread for
//!   the life of the process, and dropping an [`EmbeddedBroker`] leaves the broker running. Tests
//!   start one broker each on a free port; a hub restarted in-process keeps using the same broker.
//! - rumqttd cannot report the port it bound, so port 0 is resolved here by binding 127.0.0.1:0,
//!   reading the port and releasing it before rumqttd binds it (another process could take it in
//!   between; we retry a few times).
//! - No topic ACLs and nothing persisted: correctness never depends on the broker (resync).

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rumqttd::{Broker, Config, ConnectionSettings, RouterConfig, ServerSettings};

use crate::BrokerUrl;

/// Largest MQTT packet the embedded broker accepts: works carry up to 500 KiB of manifests and
/// admin payloads up to 2 MiB (`ocm_edge_hub::admin::messages::MAX_ADMIN_PAYLOAD_BYTES`), plus headers.
pub const MAX_PACKET_BYTES: usize = 4 * 1024 * 1024;
/// Connections the embedded broker accepts (a 1,000-agent benchmark plus CLIs and slack).
pub const MAX_CONNECTIONS: usize = 10_010;
/// How long to wait for the listener to accept TCP.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors starting the embedded broker. Retryable only for [`BrokerError::NotListening`] on a
/// busy machine; the others need a different listen address.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("no free TCP port on {ip}: {source}")]
    NoFreePort {
        ip: std::net::IpAddr,
        source: std::io::Error,
    },
    #[error("cannot start the embedded broker thread: {0}")]
    Thread(std::io::Error),
    #[error(
        "embedded broker on {addr} did not accept connections within {waited:?} (is the port already in use?)"
    )]
    NotListening { addr: SocketAddr, waited: Duration },
}

/// A running embedded broker. Dropping it does not stop the broker (rumqttd cannot be stopped).
#[derive(Debug, Clone)]
pub struct EmbeddedBroker {
    addr: SocketAddr,
}

impl EmbeddedBroker {
    /// `mqtt://HOST:PORT` with the port actually bound (127.0.0.1 for an unspecified address).
    pub fn url(&self) -> BrokerUrl {
        BrokerUrl::plain(self.addr)
    }

    /// The listen address (port resolved).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Starts rumqttd on `listen` (port 0: a free port) on its own thread and waits, bounded, until it
/// accepts TCP connections. Blocking: call it from `spawn_blocking` inside a runtime.
///
/// # Errors
/// [`BrokerError`] when no port is free, the thread cannot start, or nothing listens in time.
pub fn start_embedded(listen: SocketAddr) -> Result<EmbeddedBroker, BrokerError> {
    start_embedded_with_users(listen, None)
}

/// [`start_embedded`] that lets in only the given username / password pairs (rumqttd's static
/// authentication; tests of clients that log in).
///
/// # Errors
/// As [`start_embedded`].
pub fn start_embedded_with_users(
    listen: SocketAddr,
    users: Option<HashMap<String, String>>,
) -> Result<EmbeddedBroker, BrokerError> {
    if listen.port() != 0 {
        return start_on(listen, users);
    }
    let mut last = None;
    for _ in 0..3 {
        let probe = TcpListener::bind(SocketAddr::new(listen.ip(), 0)).map_err(|source| {
            BrokerError::NoFreePort {
                ip: listen.ip(),
                source,
            }
        })?;
        let addr = probe
            .local_addr()
            .map_err(|source| BrokerError::NoFreePort {
                ip: listen.ip(),
                source,
            })?;
        drop(probe);
        match start_on(addr, users.clone()) {
            Ok(b) => return Ok(b),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or(BrokerError::NotListening {
        addr: listen,
        waited: START_TIMEOUT,
    }))
}

fn broker_config(addr: SocketAddr, users: Option<HashMap<String, String>>) -> Config {
    let server = ServerSettings {
        name: "ocm-edge-v5".into(),
        listen: addr,
        tls: None,
        next_connection_delay_ms: 0,
        connections: ConnectionSettings {
            connection_timeout_ms: 60_000,
            max_payload_size: MAX_PACKET_BYTES,
            max_inflight_count: 500,
            auth: users,
            external_auth: None,
            dynamic_filters: true,
        },
    };
    Config {
        id: 0,
        router: RouterConfig {
            max_connections: MAX_CONNECTIONS,
            max_outgoing_packet_count: 200,
            // Per-filter commit log: segments roll over (dropping the oldest) past this size.
            max_segment_size: 100 * 1024 * 1024,
            max_segment_count: 10,
            custom_segment: None,
            initialized_filters: None,
            shared_subscriptions_strategy: Default::default(),
        },
        v5: Some(HashMap::from([("1".to_owned(), server)])),
        ..Config::default()
    }
}

fn start_on(
    addr: SocketAddr,
    users: Option<HashMap<String, String>>,
) -> Result<EmbeddedBroker, BrokerError> {
    let mut broker = Broker::new(broker_config(addr, users));
    std::thread::Builder::new()
        .name("ocm-edge-rumqttd".into())
        .spawn(move || {
            if let Err(e) = broker.start() {
                tracing::error!(error = %e, %addr, "embedded broker stopped");
            }
        })
        .map_err(BrokerError::Thread)?;
    let connect_to = if addr.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    };
    wait_listening(connect_to, START_TIMEOUT).map_err(|_| BrokerError::NotListening {
        addr,
        waited: START_TIMEOUT,
    })?;
    tracing::info!(%addr, "embedded MQTT 5 broker listening");
    Ok(EmbeddedBroker { addr })
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
    fn port_zero_starts_on_a_free_port_and_reports_it() {
        let broker = start_embedded("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(broker.addr().port(), 0);
        assert_eq!(
            broker.url().to_string(),
            format!("mqtt://127.0.0.1:{}", broker.addr().port())
        );
        TcpStream::connect(broker.addr()).unwrap();
    }
}
