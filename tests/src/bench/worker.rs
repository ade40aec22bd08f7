//! A benchmark worker process: runs a slice of the fleet's agents, real ones (ocm-edge agents on
//! the simulated cluster) or ideal ones (a bare MQTT client that answers each message once), so a
//! large fleet spreads over processes (20,000 open files per process) and the hub's process
//! figures are its own.
//!
//! The parent holds the worker's stdin: when it closes, the worker stops its agents and exits.

use std::path::PathBuf;
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_mqtt::{BrokerUrl, Session, SessionConfig, SessionEvent};
use ocm_edge_schemas::wire::MqttMessage;

use crate::broker::MAX_PACKET_BYTES;
use crate::process::wait_stdin_closed;

/// Source id of the ideal transport run (its own topics, so both runs pay for new topics).
pub const IDEAL_SOURCE: &str = "bench-ideal";
/// What an ideal agent publishes once it is subscribed.
pub const IDEAL_READY: &[u8] = b"ready";

/// Name of the `i`-th cluster of the benchmark.
pub fn cluster_name(i: usize) -> String {
    format!("c{i:05}")
}

/// What one worker runs.
#[derive(Debug, Clone)]
pub enum WorkerMode {
    /// ocm-edge agents with the sim applier, data under `dir`.
    Real {
        dir: PathBuf,
        ready_delay: Duration,
        /// The hub's CA, for its TLS broker.
        ca_file: Option<PathBuf>,
        /// A join token, for its broker with logins.
        token: Option<String>,
    },
    /// Bare clients that answer each message on their sourceevents with `reply_bytes` bytes.
    Ideal { reply_bytes: usize },
}

/// Runs agents `first..first+count` until stdin closes.
///
/// # Errors
/// When an agent or client cannot start.
pub async fn run_worker(
    broker_url: &str,
    first: usize,
    count: usize,
    mode: WorkerMode,
) -> anyhow::Result<()> {
    match mode {
        WorkerMode::Real {
            dir,
            ready_delay,
            ca_file,
            token,
        } => {
            let mut handles = Vec::with_capacity(count);
            for i in first..first + count {
                let name = cluster_name(i);
                let mut cfg = AgentConfig::new(&name, broker_url, dir.join(&name));
                cfg.applier = ApplierConfig::Sim { ready_delay };
                cfg.tls.ca_file = ca_file.clone();
                cfg.join_token = token.clone();
                // Calm background traffic: the benchmark measures delivery, not housekeeping.
                cfg.reconcile_interval = Duration::from_secs(30);
                cfg.keepalive = Duration::from_secs(30);
                // As often as the lease renewals of the old 60 s default: 10,000 pending clusters
                // asking every second would load the hub while the bench accepts them.
                cfg.join_retry = Duration::from_secs(20);
                handles.push(start_agent(cfg).await?);
            }
            println!("started {count}");
            wait_stdin_closed().await;
            for h in handles {
                let _ = h.shutdown().await;
            }
        }
        WorkerMode::Ideal { reply_bytes } => {
            let url = BrokerUrl::parse(broker_url)?;
            let mut tasks = Vec::with_capacity(count);
            for i in first..first + count {
                tasks.push(tokio::spawn(ideal_agent(
                    url.clone(),
                    cluster_name(i),
                    reply_bytes,
                )));
            }
            println!("started {count}");
            wait_stdin_closed().await;
            for t in tasks {
                t.abort();
            }
        }
    }
    Ok(())
}

/// An ideal agent: subscribe, say ready, answer every message with one status-sized message.
async fn ideal_agent(url: BrokerUrl, cluster: String, reply_bytes: usize) {
    let mut cfg = SessionConfig::new(url, format!("{cluster}-ideal"));
    cfg.max_packet_bytes = MAX_PACKET_BYTES as u32;
    cfg.queue_capacity = 16;
    cfg.subscriptions = vec![format!(
        "sources/{IDEAL_SOURCE}/consumers/{cluster}/sourceevents"
    )];
    let Ok((session, mut events)) = Session::start(cfg, None) else {
        return;
    };
    let publisher = session.publisher();
    let outbox = |payload: Vec<u8>| MqttMessage {
        topic: format!("sources/{IDEAL_SOURCE}/consumers/{cluster}/agentevents"),
        payload,
        ..MqttMessage::default()
    };
    let reply = vec![b'x'; reply_bytes];
    while let Some(event) = events.recv().await {
        let answer = match event {
            SessionEvent::Subscribed { .. } => outbox(IDEAL_READY.to_vec()),
            SessionEvent::Message(_) => outbox(reply.clone()),
            _ => continue,
        };
        let _ = publisher.publish(answer).await;
    }
}
