//! rumqttd 0.20, the previous embedded broker, behind the non-default `rumqttd` feature so that
//! `fleet-bench --broker rumqttd` can repeat the comparison that replaced it. Not for production:
//! it has no topic ACLs, keeps a commit log per filter in memory, rescans every filter on each
//! publish nobody subscribes to, and cannot be stopped (its threads live until the process ends).

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use rumqttd::{Broker, Config, ConnectionSettings, RouterConfig, ServerSettings};

use super::{
    BrokerError, BrokerStats, EmbeddedBroker, MAX_CONNECTIONS, MAX_PACKET_BYTES, Running,
    START_TIMEOUT, wait_listening,
};

/// How rumqttd is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RumqttdTuning {
    /// As ocm-edge shipped it: per-filter logs of 10 segments of 100 MiB.
    AsShipped,
    /// Small per-filter logs (10 segments of 1 MiB): bounded memory, same routing cost.
    SmallLogs,
}

/// Starts rumqttd on `listen` (port 0: a free port, probed and released first: rumqttd cannot
/// report the port it bound) and waits until it accepts TCP. Blocking.
///
/// # Errors
/// [`BrokerError`] when no port is free, the thread cannot start, or nothing listens in time.
pub fn start_rumqttd(
    listen: SocketAddr,
    tuning: RumqttdTuning,
) -> Result<EmbeddedBroker, BrokerError> {
    let addr = if listen.port() == 0 {
        TcpListener::bind(SocketAddr::new(listen.ip(), 0))
            .and_then(|p| p.local_addr())
            .map_err(|e| BrokerError::Bind {
                addr: listen,
                reason: e.to_string(),
            })?
    } else {
        listen
    };
    let mut broker = Broker::new(config(addr, tuning));
    std::thread::Builder::new()
        .name("ocm-edge-rumqttd".into())
        .spawn(move || {
            if let Err(e) = broker.start() {
                tracing::error!(error = %e, %addr, "rumqttd stopped");
            }
        })
        .map_err(BrokerError::Thread)?;
    let broker = EmbeddedBroker {
        addr,
        tls: false,
        stats: Arc::new(BrokerStats::default()),
        control: None,
        _running: Arc::new(Running { stop: None }),
    };
    wait_listening(broker.connect_addr(), START_TIMEOUT)?;
    Ok(broker)
}

fn config(addr: SocketAddr, tuning: RumqttdTuning) -> Config {
    let server = ServerSettings {
        name: "ocm-edge-v5".into(),
        listen: addr,
        tls: None,
        next_connection_delay_ms: 0,
        connections: ConnectionSettings {
            connection_timeout_ms: 60_000,
            max_payload_size: MAX_PACKET_BYTES,
            max_inflight_count: 500,
            auth: None,
            external_auth: None,
            dynamic_filters: true,
        },
    };
    let max_segment_size = match tuning {
        RumqttdTuning::AsShipped => 100 * 1024 * 1024,
        RumqttdTuning::SmallLogs => 1024 * 1024,
    };
    Config {
        id: 0,
        router: RouterConfig {
            max_connections: MAX_CONNECTIONS,
            max_outgoing_packet_count: 200,
            max_segment_size,
            max_segment_count: 10,
            custom_segment: None,
            initialized_filters: None,
            shared_subscriptions_strategy: Default::default(),
        },
        v5: Some(std::collections::HashMap::from([("1".to_owned(), server)])),
        ..Config::default()
    }
}
