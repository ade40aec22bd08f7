//! A raw MQTT 5 client playing an edge agent, and a hub on a fresh embedded broker.
#![allow(dead_code)]

use std::time::Duration;

use chrono::Utc;
use cloudevents::{AttributesWriter, Event};
use ocm_edge_hub::admin::client::{AdminClient, ConnectOptions};
use ocm_edge_hub::{BrokerConfig, HubConfig, HubHandle, start_hub};
use ocm_edge_mqtt::broker::{EmbeddedBroker, start_embedded};
use ocm_edge_mqtt::{BrokerUrl, Session, SessionConfig, SessionEvent};
use ocm_edge_schemas::wire::event_type::EventType;
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
use ocm_edge_schemas::wire::works::WorkEvent;
use ocm_edge_schemas::wire::{MqttMessage, topic};
use tokio::sync::mpsc;

/// Bound on every wait in these tests.
pub const WAIT: Duration = Duration::from_secs(15);

pub struct TestHub {
    pub broker: EmbeddedBroker,
    pub data_dir: tempfile::TempDir,
    pub source: String,
    pub hub: Option<HubHandle>,
}

impl TestHub {
    /// An embedded broker on a free port and a hub using it as an external broker, so the hub can
    /// be restarted while the broker stays up.
    pub async fn start(source: &str) -> TestHub {
        let broker = tokio::task::spawn_blocking(|| start_embedded("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap()
            .unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        let mut t = TestHub {
            broker,
            data_dir,
            source: source.to_owned(),
            hub: None,
        };
        t.start_hub().await;
        t
    }

    pub fn config(&self) -> HubConfig {
        let mut cfg = HubConfig::new(self.data_dir.path());
        cfg.broker = BrokerConfig::External {
            url: self.broker.url().to_string(),
        };
        cfg.source_id = self.source.clone();
        cfg
    }

    pub async fn start_hub(&mut self) {
        let hub = start_hub(self.config()).await.unwrap();
        tokio::time::timeout(WAIT, hub.subscribed()).await.unwrap();
        self.hub = Some(hub);
    }

    pub async fn stop_hub(&mut self) {
        self.hub.take().unwrap().shutdown().await.unwrap();
    }

    /// An admin client signing with the first admin credential the hub wrote at its first start.
    pub async fn admin(&self) -> AdminClient {
        let options = ConnectOptions {
            timeout: WAIT,
            credentials: Some(self.data_dir.path().join("admin-credentials.pem")),
            ..ConnectOptions::default()
        };
        AdminClient::connect_with(&self.url(), &self.source, &options)
            .await
            .unwrap()
    }

    pub fn url(&self) -> String {
        self.broker.url().to_string()
    }
}

/// A raw agent: subscribed to its sourceevents, publishing CloudEvents on its agentevents.
pub struct RawAgent {
    pub cluster: String,
    pub source: String,
    session: Session,
    messages: mpsc::UnboundedReceiver<MqttMessage>,
    /// Signs what it sends, as the cluster's agent does (its key, from the agent's data dir).
    key: Option<ocm_edge_agent::trust::AgentKey>,
}

impl RawAgent {
    pub async fn connect(url: &str, source: &str, cluster: &str) -> RawAgent {
        let sub = topic::source_events(source, cluster).unwrap();
        Self::connect_to(url, source, cluster, sub).await
    }

    /// A client subscribed to `filter` (e.g. the dashboard topics) instead of sourceevents.
    pub async fn connect_to(url: &str, source: &str, cluster: &str, sub: String) -> RawAgent {
        let mut cfg = SessionConfig::new(
            BrokerUrl::parse(url).unwrap(),
            format!("{cluster}-{}", uuid::Uuid::new_v4().simple()),
        );
        cfg.max_packet_bytes = 4 * 1024 * 1024;
        cfg.subscriptions = vec![sub];
        let (session, mut events) = Session::connect(cfg, WAIT).await.unwrap();
        let (tx, messages) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if let SessionEvent::Message(p) = event {
                    let _ = tx.send(p.message);
                }
            }
        });
        RawAgent {
            cluster: cluster.to_owned(),
            source: source.to_owned(),
            session,
            messages,
            key: None,
        }
    }

    /// Signs everything it sends with the key of the agent whose data dir is `dir` (a process
    /// beside the agent, such as an add-on, speaking for its cluster once its key is bound).
    pub fn signing_with(mut self, dir: &std::path::Path) -> RawAgent {
        self.key = Some(ocm_edge_agent::trust::AgentKey::load_or_create(dir).unwrap());
        self
    }

    /// An event of type `ty` from this cluster with JSON data.
    pub fn event(&self, ty: &str, data: serde_json::Value) -> Event {
        let mut e = Event::default();
        e.set_id(uuid::Uuid::new_v4().to_string());
        e.set_source(format!("{}-agent", self.cluster));
        e.set_type(EventType::parse(ty).unwrap().to_string());
        e.set_time(Some(Utc::now()));
        ext::set_cluster_name(&mut e, &self.cluster);
        ext::set_original_source(&mut e, "");
        e.set_data(APPLICATION_JSON, data);
        e
    }

    pub async fn send(&self, event: &Event) {
        let topic = topic::agent_events(&self.source, &self.cluster).unwrap();
        let mut msg = ocm_edge_schemas::wire::encode(event, topic).unwrap();
        if let Some(key) = &self.key {
            key.sign(&mut msg);
        }
        self.send_raw(msg).await;
    }

    pub async fn send_raw(&self, msg: MqttMessage) {
        self.session.publisher().publish(msg).await.unwrap();
    }

    pub async fn join(&self) {
        let e = self.event(
            "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
            serde_json::json!({"metadata": {"name": self.cluster, "labels": {"env": "test"}},
                               "spec": {"leaseDurationSeconds": 60}}),
        );
        self.send(&e).await;
    }

    pub async fn renew_lease(&self) {
        let e = self.event(
            "coordination.k8s.io.v1.leases.spec.update_request",
            serde_json::json!({"metadata": {"name": "managed-cluster-lease", "namespace": self.cluster},
                               "spec": {"leaseDurationSeconds": 60}}),
        );
        self.send(&e).await;
    }

    /// Waits (bounded) for the next received message matching `pred`, skipping others.
    pub async fn next_message(
        &mut self,
        what: &str,
        pred: impl Fn(&MqttMessage) -> bool,
    ) -> MqttMessage {
        let wait = async {
            loop {
                let msg = self.messages.recv().await.expect("connection closed");
                if pred(&msg) {
                    return msg;
                }
            }
        };
        match tokio::time::timeout(WAIT, wait).await {
            Ok(m) => m,
            Err(_) => panic!("no {what} within {WAIT:?}"),
        }
    }

    /// Waits (bounded) for the next received event matching `pred`, skipping others.
    pub async fn next_event(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        let wait = async {
            loop {
                let msg = self.messages.recv().await.expect("agent connection closed");
                let event = ocm_edge_schemas::wire::decode(&msg).unwrap();
                if pred(&event) {
                    return event;
                }
            }
        };
        match tokio::time::timeout(WAIT, wait).await {
            Ok(e) => e,
            Err(_) => panic!("no {what} within {WAIT:?}"),
        }
    }

    /// The next hub view (`managedclusters.spec.update_request`) matching `pred`.
    pub async fn next_hub_view(
        &mut self,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let e = self
            .next_event("hub view", |e| {
                use cloudevents::AttributesReader;
                e.ty()
                    .starts_with("cluster.open-cluster-management.io.v1.managedclusters.spec")
                    && ocm_edge_schemas::wire::data_json(e)
                        .ok()
                        .flatten()
                        .is_some_and(|v| pred(&v))
            })
            .await;
        ocm_edge_schemas::wire::data_json(&e).unwrap().unwrap()
    }

    /// The next work event matching `pred`.
    pub async fn next_work_event(
        &mut self,
        what: &str,
        pred: impl Fn(&WorkEvent) -> bool,
    ) -> WorkEvent {
        let e = self
            .next_event(what, |e| WorkEvent::from_event(e).is_ok_and(|w| pred(&w)))
            .await;
        WorkEvent::from_event(&e).unwrap()
    }
}

/// Polls `check` through round trips to the hub until it returns `Some`, bounded by [`WAIT`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let wait = async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            // Each check is an admin round trip; yield so the hub and agent tasks progress.
            tokio::task::yield_now().await;
        }
    };
    match tokio::time::timeout(WAIT, wait).await {
        Ok(v) => v,
        Err(_) => panic!("{what} did not happen within {WAIT:?}"),
    }
}

/// A validator for the checked-in JSON Schema `file` of `schemas/json/`.
pub fn schema_validator(file: &str) -> jsonschema::Validator {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas")
        .join(ocm_edge_schemas::contracts::JSON_DIR)
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{file} does not compile: {e}"))
}
