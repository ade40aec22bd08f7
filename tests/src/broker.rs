//! Brokers for tests: an embedded rumqttd (MQTT 5) on a free port that outlives hub restarts.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rumqttd::{Broker, Config, ConnectionSettings, RouterConfig, ServerSettings};

/// Largest MQTT packet the test brokers accept: a work may carry 500 KiB of manifests.
pub const MAX_PACKET_BYTES: usize = 1024 * 1024;

/// Errors starting a test broker.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("no free TCP port on 127.0.0.1: {0}")]
    NoFreePort(std::io::Error),
    #[error("broker did not start: {0}")]
    Start(String),
    #[error("broker on {addr} did not accept connections within {waited:?}")]
    NotListening { addr: SocketAddr, waited: Duration },
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
///
/// # Errors
/// [`BrokerError::NoFreePort`] when the OS gives none.
pub fn free_port() -> Result<u16, BrokerError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(BrokerError::NoFreePort)?;
    let port = listener
        .local_addr()
        .map_err(BrokerError::NoFreePort)?
        .port();
    Ok(port)
}

/// Blocks until something accepts TCP connections on `addr` (a broker that has started).
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
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An embedded rumqttd 0.20 with one MQTT 5 listener on a free port of 127.0.0.1.
///
/// rumqttd cannot be stopped: its threads live until the test process exits. Each test starts
/// its own broker, so tests never share topics.
#[derive(Debug)]
pub struct TestBroker {
    addr: SocketAddr,
}

impl TestBroker {
    /// Starts a broker sized for `max_connections` clients and waits until it listens.
    ///
    /// # Errors
    /// [`BrokerError`] when no port is free or the broker does not come up.
    pub fn start(max_connections: usize) -> Result<Self, BrokerError> {
        // A few attempts: another process may take the released port before rumqttd binds it.
        let mut last = None;
        for _ in 0..3 {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
            match Self::start_on(addr, max_connections) {
                Ok(b) => return Ok(b),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| BrokerError::Start("no attempt made".into())))
    }

    fn start_on(addr: SocketAddr, max_connections: usize) -> Result<Self, BrokerError> {
        let connections = ConnectionSettings {
            connection_timeout_ms: 60_000,
            max_payload_size: MAX_PACKET_BYTES,
            max_inflight_count: 500,
            auth: None,
            external_auth: None,
            dynamic_filters: true,
        };
        let server = ServerSettings {
            name: "v5-test".into(),
            listen: addr,
            tls: None,
            next_connection_delay_ms: 0,
            connections,
        };
        let config = Config {
            id: 0,
            router: RouterConfig {
                max_connections: max_connections.max(16),
                max_outgoing_packet_count: 200,
                max_segment_size: 100 * 1024 * 1024,
                max_segment_count: 10,
                custom_segment: None,
                initialized_filters: None,
                shared_subscriptions_strategy: Default::default(),
            },
            v5: Some(HashMap::from([("1".to_owned(), server)])),
            ..Config::default()
        };
        let mut broker = Broker::new(config);
        std::thread::Builder::new()
            .name("test-rumqttd".into())
            .spawn(move || {
                if let Err(e) = broker.start() {
                    tracing::error!(error = %e, "test broker stopped");
                }
            })
            .map_err(|e| BrokerError::Start(e.to_string()))?;
        wait_listening(addr, Duration::from_secs(5))?;
        Ok(Self { addr })
    }

    /// `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mqtt://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}
