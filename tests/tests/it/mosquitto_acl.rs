//! Mosquitto with ocm-edge's per-cluster ACL (`broker-config/mosquitto/ocm-edge.acl`) and a password
//! file made with `mosquitto_passwd`: one cluster cannot read another's works nor forge its statuses.
//!
//! Each negative check is ordered against a marker from the same publisher on a topic it may use,
//! so "nothing arrived" is observed without waiting on a clock.

use std::path::PathBuf;
use std::time::Duration;

use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_tests::fleet::{Fleet, FleetOptions};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::mosquitto::{Mosquitto, MosquittoAuth, require_mosquitto};
use ocm_edge_tests::probe::{Probe, ProbeOptions};

const SOURCE: &str = "ocm-edge";
const WAIT: Duration = Duration::from_secs(10);

fn acl_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../broker-config/mosquitto/ocm-edge.acl")
}

fn message(topic: String, body: &str) -> MqttMessage {
    MqttMessage {
        topic,
        payload: body.as_bytes().to_vec(),
        content_type: Some("application/json".into()),
        user_properties: vec![("ce-specversion".into(), "1.0".into())],
    }
}

fn source_events(cluster: &str) -> String {
    format!("sources/{SOURCE}/consumers/{cluster}/sourceevents")
}

fn agent_events(cluster: &str) -> String {
    format!("sources/{SOURCE}/consumers/{cluster}/agentevents")
}

async fn login(url: &str, user: &str) -> Probe {
    Probe::connect_with(
        url,
        ProbeOptions {
            client_id: format!("{user}-client"),
            credentials: Some((user.to_owned(), format!("{user}-secret"))),
            ..ProbeOptions::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{user} could not log in: {e}"))
}

fn start(test: &str) -> Option<Mosquitto> {
    let program = require_mosquitto(test)?;
    let auth = MosquittoAuth {
        users: ["ocm-edge-hub", "cluster-a", "cluster-b"]
            .iter()
            .map(|u| (u.to_string(), format!("{u}-secret")))
            .collect(),
        acl_file: acl_file(),
    };
    Some(
        Mosquitto::start_with(&program, Some(&auth))
            .expect("mosquitto starts with the ocm-edge ACL"),
    )
}

#[tokio::test]
async fn mosquitto_acl_keeps_cluster_a_from_reading_cluster_b_works() {
    let Some(broker) = start("mosquitto_acl_keeps_cluster_a_from_reading_cluster_b_works") else {
        return;
    };
    let url = broker.url();
    let hub = login(&url, "ocm-edge-hub").await;
    let mut a = login(&url, "cluster-a").await;
    let mut b = login(&url, "cluster-b").await;

    // A tries both B's exact topic and a wildcard over every cluster; B subscribes to its own.
    a.subscribe(&source_events("cluster-b")).await.unwrap();
    a.subscribe(&format!("sources/{SOURCE}/consumers/+/sourceevents"))
        .await
        .unwrap();
    b.subscribe(&source_events("cluster-b")).await.unwrap();

    hub.publish(&message(
        source_events("cluster-b"),
        r#"{"secret":"b-work"}"#,
    ))
    .await
    .unwrap();
    hub.publish(&message(source_events("cluster-a"), r#"{"marker":"a"}"#))
        .await
        .unwrap();

    let got_b = b.recv(WAIT).await.expect("cluster B receives its own work");
    assert_eq!(got_b.topic, source_events("cluster-b"));

    // A sees its own marker (published after B's work), and nothing of B's before or with it.
    let mut seen_by_a = Vec::new();
    let marker = a
        .recv_matching(WAIT, |m| {
            seen_by_a.push(m.clone());
            m.topic == source_events("cluster-a")
        })
        .await;
    assert!(
        marker.is_some(),
        "cluster A receives the marker on its own topic; log:\n{}",
        broker.log()
    );
    seen_by_a.extend(a.drain());
    let leaked: Vec<_> = seen_by_a
        .iter()
        .filter(|m| m.topic == source_events("cluster-b"))
        .collect();
    assert!(
        leaked.is_empty(),
        "cluster A read cluster B's sourceevents: {leaked:?}"
    );
}

#[tokio::test]
async fn mosquitto_acl_keeps_cluster_a_from_publishing_on_cluster_b_agentevents() {
    let Some(broker) =
        start("mosquitto_acl_keeps_cluster_a_from_publishing_on_cluster_b_agentevents")
    else {
        return;
    };
    let url = broker.url();
    let mut hub = login(&url, "ocm-edge-hub").await;
    let a = login(&url, "cluster-a").await;
    let b = login(&url, "cluster-b").await;
    hub.subscribe(&format!("sources/{SOURCE}/consumers/+/agentevents"))
        .await
        .unwrap();

    // A forges a status for B, then publishes a marker on its own topic.
    a.publish(&message(agent_events("cluster-b"), r#"{"forged":true}"#))
        .await
        .unwrap();
    a.publish(&message(agent_events("cluster-a"), r#"{"marker":"a"}"#))
        .await
        .unwrap();
    // B's own status goes through.
    b.publish(&message(agent_events("cluster-b"), r#"{"genuine":true}"#))
        .await
        .unwrap();

    let mut seen = Vec::new();
    for _ in 0..2 {
        let m = hub
            .recv_matching(WAIT, |m| {
                seen.push(m.clone());
                !m.payload.starts_with(br#"{"forged""#)
            })
            .await;
        assert!(
            m.is_some(),
            "the hub receives A's marker and B's genuine status; got {seen:?}; log:\n{}",
            broker.log()
        );
    }
    seen.extend(hub.drain());
    let forged: Vec<_> = seen
        .iter()
        .filter(|m| m.payload.starts_with(br#"{"forged""#))
        .collect();
    assert!(
        forged.is_empty(),
        "cluster A published on cluster B's agentevents: {forged:?}"
    );
    assert!(
        seen.iter().any(
            |m| m.topic == agent_events("cluster-b") && m.payload.starts_with(br#"{"genuine""#)
        )
    );
    assert!(seen.iter().any(|m| m.topic == agent_events("cluster-a")));
}

#[tokio::test]
async fn ocm_edge_agents_confined_by_the_mosquitto_acl_join_run_works_and_stay_apart() {
    let test = "ocm_edge_agents_confined_by_the_mosquitto_acl_join_run_works_and_stay_apart";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let auth = MosquittoAuth {
        users: ["cluster-a", "cluster-b"]
            .iter()
            .map(|u| (u.to_string(), format!("{u}-secret")))
            .collect(),
        acl_file: acl_file(),
    };
    // The hub has no broker credentials: it uses an open listener; agents use the secured one.
    let broker =
        Mosquitto::start_split(&program, &auth).expect("mosquitto starts with two listeners");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    for c in ["cluster-a", "cluster-b"] {
        let secured = broker.secured_url();
        fleet
            .agent(c)
            .configure(|cfg| {
                cfg.broker_url = secured;
                cfg.broker_username = Some(c.to_owned());
                cfg.broker_password = Some(format!("{c}-secret"));
            })
            .start()
            .await;
    }
    fleet.accept_all(&["cluster-a", "cluster-b"]).await;
    fleet
        .create_work(
            "web",
            &["cluster-a", "cluster-b"],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    for c in ["cluster-a", "cluster-b"] {
        fleet
            .wait_work_condition(c, "web", "Applied")
            .await
            .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    }

    // A client holding cluster A's credentials listens to every cluster's works.
    let mut spy_a = login(&broker.secured_url(), "cluster-a").await;
    spy_a
        .subscribe(&format!("sources/{SOURCE}/consumers/+/sourceevents"))
        .await
        .unwrap();
    let update = |cluster: &str, image: &str| CreateWork {
        name: "web".into(),
        clusters: vec![cluster.into()],
        manifests: vec![namespace("web"), deployment("web", "web", 1, image)],
        overwrite: true,
        ..CreateWork::default()
    };
    fleet.write_work(update("cluster-b", "nginx:1.28")).await;
    fleet.write_work(update("cluster-a", "nginx:1.28")).await;
    let mut seen = Vec::new();
    let got_a = spy_a
        .recv_matching(WAIT, |m| {
            seen.push(m.topic.clone());
            m.topic == source_events("cluster-a")
        })
        .await;
    assert!(got_a.is_some(), "cluster A's own update reaches it");
    seen.extend(spy_a.drain().into_iter().map(|m| m.topic));
    assert!(
        !seen.contains(&source_events("cluster-b")),
        "cluster A's credentials read cluster B's work: {seen:?}"
    );
    // Cluster B's agent got its update all the same.
    fleet
        .wait_sim("cluster-b", "nginx:1.28 on cluster B", |sim| {
            sim.get("Deployment", "web", "web")
                .filter(|d| ocm_edge_tests::manifests::deployment_image(d) == Some("nginx:1.28"))
        })
        .await
        .unwrap();
    fleet.shutdown().await;
}
