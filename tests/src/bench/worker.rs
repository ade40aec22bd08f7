//! A benchmark worker process: runs a slice of the fleet's agents, real ones (ocm-edge agents on
//! the simulated cluster) or ideal ones (a bare MQTT client that answers each message once), so a
//! large fleet spreads over processes (20,000 open files per process) and the hub's process
//! figures are its own.
//!
//! The parent holds the worker's stdin: when it closes, the worker stops its agents and exits.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use tokio::io::AsyncReadExt;

use crate::broker::MAX_PACKET_BYTES;

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
    Real { dir: PathBuf, ready_delay: Duration },
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
        WorkerMode::Real { dir, ready_delay } => {
            let mut handles = Vec::with_capacity(count);
            for i in first..first + count {
                let name = cluster_name(i);
                let mut cfg = AgentConfig::new(&name, broker_url, dir.join(&name));
                cfg.applier = ApplierConfig::Sim { ready_delay };
                // Calm background traffic: the benchmark measures delivery, not housekeeping.
                cfg.reconcile_interval = Duration::from_secs(30);
                cfg.keepalive = Duration::from_secs(30);
                handles.push(start_agent(cfg).await?);
            }
            println!("started {count}");
            wait_stdin_closed().await;
            for h in handles {
                let _ = h.shutdown().await;
            }
        }
        WorkerMode::Ideal { reply_bytes } => {
            let (host, port) = host_port(broker_url)?;
            let mut tasks = Vec::with_capacity(count);
            for i in first..first + count {
                tasks.push(tokio::spawn(ideal_agent(
                    host.clone(),
                    port,
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

async fn wait_stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

/// An ideal agent: subscribe, say ready, answer every message with one status-sized message.
async fn ideal_agent(host: String, port: u16, cluster: String, reply_bytes: usize) {
    let mut opts = MqttOptions::new(format!("{cluster}-ideal"), host, port);
    opts.set_keep_alive(Duration::from_secs(30));
    opts.set_clean_start(true);
    opts.set_max_packet_size(Some(MAX_PACKET_BYTES as u32));
    opts.set_outgoing_inflight_upper_limit(100);
    let (client, mut eventloop) = AsyncClient::new(opts, 16);
    let inbox = format!("sources/{IDEAL_SOURCE}/consumers/{cluster}/sourceevents");
    let outbox = format!("sources/{IDEAL_SOURCE}/consumers/{cluster}/agentevents");
    let reply = Bytes::from(vec![b'x'; reply_bytes]);
    loop {
        match eventloop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                let _ = client.subscribe(inbox.clone(), QoS::AtLeastOnce).await;
            }
            Ok(Event::Incoming(Packet::SubAck(_))) => {
                let _ = client
                    .publish(outbox.clone(), QoS::AtLeastOnce, false, IDEAL_READY)
                    .await;
            }
            Ok(Event::Incoming(Packet::Publish(_))) => {
                let _ = client
                    .publish(outbox.clone(), QoS::AtLeastOnce, false, reply.clone())
                    .await;
            }
            Ok(_) => {}
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Host and port of `mqtt://host:port`.
///
/// # Errors
/// When the URL has another shape.
pub fn host_port(url: &str) -> anyhow::Result<(String, u16)> {
    let rest = url
        .strip_prefix("mqtt://")
        .ok_or_else(|| anyhow::anyhow!("broker URL {url:?} is not mqtt://host:port"))?;
    let (h, p) = rest
        .rsplit_once(':')
        .ok_or_else(|| anyhow::anyhow!("broker URL {url:?} has no port"))?;
    Ok((h.to_owned(), p.parse()?))
}
