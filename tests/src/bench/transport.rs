//! The transport alone: an ideal hub on the same broker as the real one, which publishes one
//! message per cluster to ideal agents and counts one reply each, so the real hub's round can be
//! compared with what the broker and the link cost by themselves.

use std::time::{Duration, Instant};

use ocm_edge_mqtt::{BrokerUrl, Session, SessionConfig, SessionEvent};
use ocm_edge_schemas::wire::MqttMessage;

use anyhow::bail;

use super::worker::{IDEAL_READY, IDEAL_SOURCE, cluster_name};
use super::{BenchOptions, Workers};
use crate::broker::MAX_PACKET_BYTES;

/// An ideal hub: once every ideal agent is subscribed, publish one `spec_bytes` message per
/// cluster and count one reply each.
pub(super) async fn ideal_transport(
    url: &str,
    opts: &BenchOptions,
    spec_bytes: usize,
    status_bytes: usize,
) -> anyhow::Result<Duration> {
    let n = opts.agents;
    let mut cfg = SessionConfig::new(BrokerUrl::parse(url)?, "bench-ideal-hub");
    cfg.max_packet_bytes = MAX_PACKET_BYTES as u32;
    cfg.subscriptions = vec![format!("sources/{IDEAL_SOURCE}/consumers/+/agentevents")];
    let (session, mut events) = Session::connect(cfg, opts.timeout).await?;
    let client = session.publisher();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
    let loop_task = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let SessionEvent::Message(p) = event {
                let _ = tx.send(p.message.payload == IDEAL_READY);
            }
        }
    });
    // rumqttd is slow on the first publish to a new topic; the real run's sourceevents topics
    // already exist (the hub published its views there), so create these before the clock too.
    for i in 0..n {
        let topic = format!(
            "sources/{IDEAL_SOURCE}/consumers/{}/sourceevents",
            cluster_name(i)
        );
        client
            .publish(ideal_message(topic, b"warm-up".to_vec()))
            .await?;
    }
    let workers = Workers::spawn(
        url,
        opts,
        "ideal",
        &["--reply-bytes".into(), status_bytes.to_string()],
    )
    .await?;
    let ready = tokio::time::timeout(opts.timeout, count(n, true, &mut rx))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "transport run: timed out after {:?} waiting for {n} ideal agents to subscribe",
                opts.timeout
            )
        })?;
    if ready < n {
        bail!("only {ready} of {n} ideal agents subscribed");
    }
    let payload = vec![b'x'; spec_bytes.max(1)];
    let t = Instant::now();
    let publish_all = async {
        for i in 0..n {
            let topic = format!(
                "sources/{IDEAL_SOURCE}/consumers/{}/sourceevents",
                cluster_name(i)
            );
            client
                .publish(ideal_message(topic, payload.clone()))
                .await?;
        }
        anyhow::Ok(())
    };
    let (published, replies) = tokio::join!(
        publish_all,
        tokio::time::timeout(opts.timeout, count(n, false, &mut rx))
    );
    published?;
    let replies = replies.map_err(|_| {
        anyhow::anyhow!(
            "transport run: timed out after {:?} waiting for {n} ideal replies",
            opts.timeout
        )
    })?;
    let elapsed = t.elapsed();
    if replies < n {
        bail!("only {replies} of {n} ideal agents replied");
    }
    workers.stop().await;
    loop_task.abort();
    session.shutdown().await;
    Ok(elapsed)
}

fn ideal_message(topic: String, payload: Vec<u8>) -> MqttMessage {
    MqttMessage {
        topic,
        payload,
        ..MqttMessage::default()
    }
}

/// Counts messages from ideal agents (ready ones or replies) until `n` of the wanted kind arrived.
async fn count(
    n: usize,
    want_ready: bool,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<bool>,
) -> usize {
    let mut seen = 0;
    while seen < n {
        match rx.recv().await {
            Some(r) if r == want_ready => seen += 1,
            Some(_) => {}
            None => break,
        }
    }
    seen
}
