//! A hub on a fresh embedded broker with in-process simulated agents (short keepalive and lease),
//! for the availability and placement tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, AgentHandle, ApplierConfig, start_agent};
use ocm_edge_hub::admin::client::{AdminClient, ConnectOptions};
use ocm_edge_hub::admin::messages::ClusterView;
use ocm_edge_hub::{BrokerConfig, HubConfig, HubHandle, start_hub};
use ocm_edge_mqtt::broker::{EmbeddedBroker, start_embedded};
use ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE;
use ocm_edge_schemas::api::meta::ConditionStatus;
use tokio::time::{Instant, timeout};

/// Bound on waits that do not measure anything (registration, round trips).
pub const WAIT: Duration = Duration::from_secs(20);
/// The agents' MQTT keepalive (the agent's minimum).
pub const KEEPALIVE: Duration = Duration::from_secs(5);
/// The agents' lease duration (the hub's minimum).
pub const LEASE_SECONDS: i32 = 5;

pub struct Fleet {
    pub broker: EmbeddedBroker,
    pub dir: tempfile::TempDir,
    pub hub: Option<HubHandle>,
    pub admin: AdminClient,
}

impl Fleet {
    pub async fn start() -> Fleet {
        let broker = tokio::task::spawn_blocking(|| start_embedded("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = HubConfig::new(dir.path().join("hub"));
        cfg.broker = BrokerConfig::External {
            url: broker.url().to_string(),
        };
        let hub = start_hub(cfg).await.unwrap();
        timeout(WAIT, hub.subscribed()).await.unwrap();
        let options = ConnectOptions {
            timeout: WAIT,
            credentials: hub.admin_credentials().map(Path::to_owned),
            ..ConnectOptions::default()
        };
        let admin = AdminClient::connect_with(&broker.url().to_string(), "ocm-edge", &options)
            .await
            .unwrap();
        Fleet {
            broker,
            dir,
            hub: Some(hub),
            admin,
        }
    }

    pub fn url(&self) -> String {
        self.broker.url().to_string()
    }

    /// The first admin credential, written by the hub's first start (for the CLI's `--credentials`).
    pub fn credentials(&self) -> std::path::PathBuf {
        self.dir.path().join("hub").join("admin-credentials.pem")
    }

    /// The data dir of `name`'s agent (its redb file and signing key).
    pub fn agent_dir(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    pub fn agent_config(&self, name: &str, labels: &[(&str, &str)]) -> AgentConfig {
        let mut cfg = AgentConfig::new(name, self.url(), self.agent_dir(name));
        cfg.applier = ApplierConfig::Sim {
            ready_delay: Duration::from_millis(200),
        };
        cfg.keepalive = KEEPALIVE;
        cfg.lease_duration_seconds = LEASE_SECONDS;
        cfg.join_retry = std::time::Duration::from_secs(1);
        cfg.reconcile_interval = Duration::from_secs(1);
        cfg.reconnect_max = Duration::from_secs(2);
        cfg.labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>();
        cfg
    }

    /// Starts (or restarts, same data directory) a simulated agent and waits until the hub
    /// knows its cluster.
    pub async fn start_agent(&self, name: &str, labels: &[(&str, &str)]) -> AgentHandle {
        let agent = start_agent(self.agent_config(name, labels)).await.unwrap();
        let known = poll(WAIT, || async { self.admin.get_cluster(name).await.ok() }).await;
        assert!(known.is_some(), "the hub never heard of {name}");
        agent
    }

    /// Starts an agent, accepts its cluster and waits until the hub sees it available.
    pub async fn accepted_agent(&self, name: &str, labels: &[(&str, &str)]) -> AgentHandle {
        let agent = self.start_agent(name, labels).await;
        self.admin.accept_cluster(name).await.unwrap();
        self.wait_cluster(name, WAIT, "available", is_available)
            .await;
        agent
    }

    /// Polls the hub (admin round trips) until `done` holds for the cluster, within `bound`.
    pub async fn wait_cluster(
        &self,
        name: &str,
        bound: Duration,
        what: &str,
        done: impl Fn(&ClusterView) -> bool,
    ) -> ClusterView {
        let last = std::cell::RefCell::new(None);
        let found = poll(bound, || async {
            let c = self.admin.get_cluster(name).await.unwrap();
            let ok = done(&c);
            *last.borrow_mut() = Some(c.clone());
            ok.then_some(c)
        })
        .await;
        found.unwrap_or_else(|| {
            panic!(
                "cluster {name} not {what} within {bound:?}: {:#?}",
                last.borrow()
            )
        })
    }

    pub async fn stop(mut self) {
        if let Some(hub) = self.hub.take() {
            hub.shutdown().await.unwrap();
        }
    }
}

/// Calls `check` every 100 ms until it returns `Some`, or `None` after `bound`.
pub async fn poll<T, F, Fut>(bound: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + bound;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        if let Some(v) = check().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
    }
}

pub fn is_available(c: &ClusterView) -> bool {
    c.available
        .as_ref()
        .is_some_and(|a| a.status == ConditionStatus::True)
        && c.taints.is_empty()
}

pub fn is_unreachable(c: &ClusterView) -> bool {
    c.available
        .as_ref()
        .is_some_and(|a| a.status == ConditionStatus::Unknown)
        && c.taints.iter().any(|t| t.key == TAINT_UNREACHABLE)
}

/// A TCP proxy in front of the broker whose link can be frozen: bytes stop flowing both ways
/// but no socket is closed, as with a cable pulled or a process stopped with SIGSTOP. Only the
/// broker's keepalive (and the hub's lease grace) can notice.
pub struct FreezableLink {
    pub url: String,
    frozen: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FreezableLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FreezableLink {
    pub async fn start(broker_url: &str) -> FreezableLink {
        let broker = ocm_edge_mqtt::BrokerUrl::parse(broker_url).unwrap();
        let upstream = format!("{}:{}", broker.host(), broker.port());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("mqtt://{}", listener.local_addr().unwrap());
        let (frozen, watch) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut pipes = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                pipes.spawn(pipe(cr, sw, watch.clone()));
                pipes.spawn(pipe(sr, cw, watch.clone()));
            }
        });
        FreezableLink { url, frozen, task }
    }

    pub fn freeze(&self, frozen: bool) {
        let _ = self.frozen.send(frozen);
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: tokio::sync::watch::Receiver<bool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // While frozen nothing is read, so nothing moves; the sockets stay open.
        if frozen.wait_for(|f| !*f).await.is_err() {
            return;
        }
        let n = tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = frozen.wait_for(|f| *f) => continue,
        };
        // Bytes read just as the link froze are held back until it thaws.
        if frozen.wait_for(|f| !*f).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
