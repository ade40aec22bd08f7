//! A hub on a fresh embedded broker with in-process simulated agents (short keepalive and lease),
//! for the availability and placement tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, AgentHandle, ApplierConfig, start_agent};
use ocm_edge_hub::admin::client::AdminClient;
use ocm_edge_hub::admin::messages::ClusterView;
use ocm_edge_hub::broker::{EmbeddedBroker, start_embedded};
use ocm_edge_hub::{BrokerConfig, HubConfig, HubHandle, start_hub};
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
        cfg.broker = BrokerConfig::External { url: broker.url() };
        let hub = start_hub(cfg).await.unwrap();
        timeout(WAIT, hub.subscribed()).await.unwrap();
        let admin = AdminClient::connect_with_timeout(&broker.url(), "ocm-edge", WAIT)
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
        self.broker.url()
    }

    pub fn agent_config(&self, name: &str, labels: &[(&str, &str)]) -> AgentConfig {
        let mut cfg = AgentConfig::new(name, self.url(), self.dir.path().join(name));
        cfg.applier = ApplierConfig::Sim {
            ready_delay: Duration::from_millis(200),
        };
        cfg.keepalive = KEEPALIVE;
        cfg.lease_duration_seconds = LEASE_SECONDS;
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
