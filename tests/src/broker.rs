//! Brokers for tests: the hub's embedded broker (rmqtt, MQTT 5) on a free port that outlives hub
//! restarts, and the free-port / listening helpers the Mosquitto runner shares.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

/// Largest MQTT packet the test brokers and probes accept (the embedded broker's limit).
pub const MAX_PACKET_BYTES: usize = ocm_edge_mqtt::broker::MAX_PACKET_BYTES;

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
    ocm_edge_mqtt::broker::wait_listening(addr, timeout).map_err(|_| BrokerError::NotListening {
        addr,
        waited: timeout,
    })
}

/// The hub's embedded broker (`ocm_edge_mqtt::broker::start_embedded`) on a free port of
/// 127.0.0.1, started on its own so hubs can be stopped and restarted while it stays up. Each
/// test starts its own broker, so tests never share topics; dropping it stops the broker.
/// It derefs to (and prints as) its URL.
#[derive(Debug)]
pub struct TestBroker {
    inner: ocm_edge_mqtt::broker::EmbeddedBroker,
    url: String,
}

impl std::ops::Deref for TestBroker {
    type Target = str;

    fn deref(&self) -> &str {
        &self.url
    }
}

impl std::fmt::Display for TestBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

impl TestBroker {
    /// Starts a broker and waits until it listens. Blocking: from async code, call it through
    /// `tokio::task::spawn_blocking` or use [`TestBroker::start_async`].
    ///
    /// # Errors
    /// [`BrokerError::Start`] when no port is free or the broker does not come up.
    pub fn start() -> Result<Self, BrokerError> {
        Self::start_on(std::net::Ipv4Addr::LOCALHOST)
    }

    /// [`TestBroker::start`] on a free port of `ip` (e.g. a veth end, for agents in another
    /// network namespace).
    ///
    /// # Errors
    /// As [`TestBroker::start`].
    pub fn start_on(ip: std::net::Ipv4Addr) -> Result<Self, BrokerError> {
        let inner = ocm_edge_mqtt::broker::start_embedded(SocketAddr::from((ip, 0)))
            .map_err(|e| BrokerError::Start(e.to_string()))?;
        Ok(Self::of(inner))
    }

    /// [`TestBroker::start`] letting in only the given username / password pairs.
    ///
    /// # Errors
    /// As [`TestBroker::start`].
    pub fn with_users(
        users: std::collections::HashMap<String, String>,
    ) -> Result<Self, BrokerError> {
        let inner = ocm_edge_mqtt::broker::start_embedded_with_users(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            Some(users),
        )
        .map_err(|e| BrokerError::Start(e.to_string()))?;
        Ok(Self::of(inner))
    }

    fn of(inner: ocm_edge_mqtt::broker::EmbeddedBroker) -> Self {
        let url = inner.url().to_string();
        Self { inner, url }
    }

    /// rumqttd 0.20, the previous embedded broker (benchmarks only).
    ///
    /// # Errors
    /// As [`TestBroker::start`].
    #[cfg(feature = "rumqttd")]
    pub fn start_rumqttd(
        tuning: ocm_edge_mqtt::broker::rumqttd::RumqttdTuning,
    ) -> Result<Self, BrokerError> {
        let inner = ocm_edge_mqtt::broker::rumqttd::start_rumqttd(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            tuning,
        )
        .map_err(|e| BrokerError::Start(e.to_string()))?;
        Ok(Self::of(inner))
    }

    /// Deliveries the broker dropped so far (0 for rumqttd, which does not report them).
    pub fn dropped(&self) -> u64 {
        self.inner.stats().dropped()
    }

    /// [`TestBroker::start`] off the async runtime's threads.
    ///
    /// # Panics
    /// When the broker does not start: a harness failure.
    pub async fn start_async() -> Self {
        tokio::task::spawn_blocking(Self::start)
            .await
            .expect("broker start task")
            .expect("embedded broker starts")
    }

    /// `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr()
    }
}
