//! The embedded broker with logins enforces ocm-edge's topic rules (`ocm_edge_mqtt::acl`, the same
//! topic rules as the Mosquitto ACL): a real hub and real agents logged in as their identities run
//! a work end to end, while a client holding another cluster's password (edge-c) can neither read
//! cluster B's works, nor forge B's status (by publishing or with a will), nor take over B's
//! agent's client id, and a dashboard can neither write nor take the hub's id. Every refusal is
//! counted by the broker.

use std::collections::HashMap;

use ocm_edge_mqtt::acl::{DASHBOARD_USER, HUB_USER, OPERATOR_USER};
use ocm_edge_mqtt::broker::{EmbeddedBroker, start_embedded_with_users};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, password_of};
use ocm_edge_tests::manifests::{feedback_integer, web_with_feedback};
use ocm_edge_tests::probe::{Probe, ProbeOptions};

const CLUSTERS: [&str; 2] = ["edge-a", "edge-b"];
/// A registered identity with no agent running: the attacker.
const INTRUDER: &str = "edge-c";

async fn broker() -> EmbeddedBroker {
    let users: HashMap<String, String> = [HUB_USER, OPERATOR_USER, DASHBOARD_USER]
        .into_iter()
        .chain(CLUSTERS)
        .chain([INTRUDER])
        .map(|u| (u.to_owned(), password_of(u)))
        .collect();
    tokio::task::spawn_blocking(move || {
        start_embedded_with_users("127.0.0.1:0".parse().unwrap(), Some(users))
    })
    .await
    .unwrap()
    .expect("embedded broker starts")
}

fn as_user(user: &str, client_id: &str) -> ProbeOptions {
    ProbeOptions {
        client_id: client_id.to_owned(),
        credentials: Some((user.to_owned(), password_of(user))),
        ..ProbeOptions::default()
    }
}

async fn login(url: &str, user: &str, client_id: &str) -> Probe {
    Probe::connect_with(url, as_user(user, client_id))
        .await
        .unwrap_or_else(|e| panic!("{user} logs in as {client_id}: {e}"))
}

fn status_of(cluster: &str) -> String {
    format!("sources/ocm-edge/consumers/{cluster}/agentevents")
}

#[tokio::test]
async fn the_embedded_broker_keeps_each_identity_to_its_own_topics_while_a_fleet_runs() {
    let broker = broker().await;
    let url = broker.url().to_string();
    let mut fleet = Fleet::on_broker(
        url.clone(),
        FleetOptions {
            logins: true,
            ..FleetOptions::default()
        },
    );
    fleet.start_hub().await;
    fleet.start_agents(&CLUSTERS).await;
    fleet.accept_all(&CLUSTERS).await;
    fleet
        .write_work(web_with_feedback(&CLUSTERS, 2, false))
        .await;
    for c in CLUSTERS {
        fleet
            .wait_work(c, "web", "ReadyReplicas=2", |w| {
                feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(2)
            })
            .await
            .unwrap();
    }
    assert_eq!(
        broker.stats().refused_topics(),
        0,
        "the hub, the CLI and the agents use only topics their identities may use"
    );

    // Another cluster's password: B's works and every cluster's works are refused, its own
    // allowed.
    let a = login(&url, INTRUDER, "edge-c-agent").await;
    for filter in [
        "sources/ocm-edge/consumers/edge-b/sourceevents",
        "sources/ocm-edge/consumers/+/sourceevents",
        "#",
        "ocm-edge/ocm-edge/admin/responses/#",
    ] {
        let granted = a.subscribe(filter).await.unwrap();
        assert!(
            granted.iter().all(Result::is_err),
            "edge-a may subscribe to {filter}: {granted:?}"
        );
    }
    let own = a
        .subscribe("sources/ocm-edge/consumers/edge-c/sourceevents")
        .await
        .unwrap();
    assert!(own.iter().all(Result::is_ok), "{own:?}");

    // A forged status for B is refused at the broker; the hub sees B's only from B.
    let mut hub_spy = login(&url, HUB_USER, "spy-hub").await;
    hub_spy.subscribe(&status_of("edge-b")).await.unwrap();
    let forged = MqttMessage {
        topic: status_of("edge-b"),
        payload: br#"{"forged":true}"#.to_vec(),
        content_type: Some("application/json".into()),
        user_properties: vec![("ce-specversion".into(), "1.0".into())],
    };
    let ack = a.publish(&forged).await.unwrap();
    assert!(
        ack.refused.is_some(),
        "the forged status was accepted: {ack:?}"
    );
    // B's genuine status arrives (among its agent's own lease renewals), and no forged one.
    let b = login(&url, "edge-b", "edge-b-agent").await;
    let genuine = MqttMessage {
        payload: br#"{"genuine":true}"#.to_vec(),
        ..forged.clone()
    };
    assert_eq!(b.publish(&genuine).await.unwrap().refused, None);
    let mut seen = Vec::new();
    let got = hub_spy
        .recv_matching(ocm_edge_tests::fleet::WAIT, |m| {
            seen.push(m.payload.clone());
            m.payload.starts_with(br#"{"genuine""#)
        })
        .await;
    assert!(got.is_some(), "B's genuine status arrives");
    assert!(
        !seen.iter().any(|p| p.starts_with(br#"{"forged""#)),
        "a forged status for B reached the hub"
    );
    drop(b);

    // Logins that would reach B's or the hub's topics some other way are refused at CONNECT:
    // B's agent's client id (its session and subscriptions), a will on B's status topic (rmqtt
    // publishes wills without a publish check), and the dashboard taking the hub's client id.
    let refused_logins = broker.stats().refused_logins();
    assert!(
        Probe::connect_with(&url, as_user(INTRUDER, "edge-b-agent"))
            .await
            .is_err(),
        "edge-c took edge-b's agent's client id"
    );
    let will = ProbeOptions {
        will: Some(MqttMessage {
            payload: br#"{"forged":"will"}"#.to_vec(),
            ..forged.clone()
        }),
        ..as_user(INTRUDER, "edge-c-agent")
    };
    assert!(
        Probe::connect_with(&url, will).await.is_err(),
        "edge-c logged in with a will on edge-b's status topic"
    );
    assert!(
        Probe::connect_with(&url, as_user(DASHBOARD_USER, "ocm-edge-hub"))
            .await
            .is_err(),
        "the dashboard took the hub's client id"
    );
    assert_eq!(broker.stats().refused_logins(), refused_logins + 3);

    // A dashboard reads the views and cannot write them.
    let dashboard = login(&url, DASHBOARD_USER, "grafana").await;
    let views = dashboard
        .subscribe("ocm-edge/ocm-edge/dashboard/#")
        .await
        .unwrap();
    assert!(views.iter().all(Result::is_ok), "{views:?}");
    let fake_view = MqttMessage {
        topic: "ocm-edge/ocm-edge/dashboard/summary".into(),
        ..forged
    };
    assert!(
        dashboard
            .publish(&fake_view)
            .await
            .unwrap()
            .refused
            .is_some()
    );

    // 4 refused subscriptions + the forged status + the dashboard's write.
    assert_eq!(broker.stats().refused_topics(), 6);
    fleet.shutdown().await;
}
