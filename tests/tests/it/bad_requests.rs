//! Operator mistakes through the admin API: refused clearly, nothing stored, the fleet unharmed.

use ocm_edge_schemas::admin::AdminErrorKind;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_tests::fleet::Fleet;
use ocm_edge_tests::manifests::{config_map, namespace};
use serde_json::json;

async fn refused(fleet: &Fleet, work: CreateWork) -> (AdminErrorKind, String) {
    let err = fleet
        .admin()
        .await
        .create_work(work)
        .await
        .expect_err("the hub refuses it");
    (
        err.hub_kind().expect("an answer from the hub"),
        err.to_string(),
    )
}

fn work(name: &str, clusters: &[&str], manifests: Vec<serde_json::Value>) -> CreateWork {
    CreateWork {
        name: name.into(),
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        manifests,
        ..CreateWork::default()
    }
}

#[tokio::test]
async fn bad_work_requests_are_refused_with_a_reason_and_nothing_is_stored() {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&["c1"]).await;
    fleet.accept("c1").await;

    // A cluster the hub never heard of.
    let (kind, msg) = refused(
        &fleet,
        work("web", &["c1", "nowhere"], vec![namespace("web")]),
    )
    .await;
    assert_eq!(kind, AdminErrorKind::NotFound, "{msg}");
    assert!(
        msg.contains("nowhere"),
        "the message names the unknown cluster: {msg}"
    );

    // More than 500 KiB of manifests.
    let big = "x".repeat(600 * 1024);
    let (kind, msg) = refused(
        &fleet,
        work(
            "big",
            &["c1"],
            vec![config_map("default", "big", json!({"blob": big}))],
        ),
    )
    .await;
    assert_eq!(kind, AdminErrorKind::Invalid, "{msg}");

    // generateName instead of a name.
    let generated = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-", "namespace": "default"}});
    let (kind, msg) = refused(&fleet, work("gen", &["c1"], vec![generated])).await;
    assert_eq!(kind, AdminErrorKind::Invalid, "{msg}");

    // A work name that is not a valid Kubernetes/topic name.
    let (kind, msg) = refused(&fleet, work("Bad_Name", &["c1"], vec![namespace("web")])).await;
    assert_eq!(kind, AdminErrorKind::Invalid, "{msg}");

    // Deleting what does not exist.
    let err = fleet
        .admin()
        .await
        .delete_work("c1", "never-created")
        .await
        .unwrap_err();
    assert_eq!(err.hub_kind(), Some(AdminErrorKind::NotFound), "{err}");

    let stats = fleet.stats().await;
    assert_eq!(stats.works, 0, "nothing stored: {stats:?}");
    assert_eq!(fleet.counters("c1").bundles_held, 0);
    assert!(fleet.sim("c1").objects().is_empty());

    // Creating twice without overwrite.
    fleet
        .create_work("web", &["c1"], vec![namespace("web")])
        .await;
    let (kind, msg) = refused(&fleet, work("web", &["c1"], vec![namespace("other")])).await;
    assert_eq!(kind, AdminErrorKind::AlreadyExists, "{msg}");
    let view = fleet.admin().await.get_work("c1", "web").await.unwrap();
    assert_eq!(view.version, 1, "the existing work is untouched");
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_admin_request_whose_answer_would_land_on_a_cluster_topic_is_dropped_and_counted() {
    use std::time::Duration;

    use bytes::Bytes;
    use ocm_edge_mqtt::{BrokerUrl, Publication, Session, SessionConfig};
    use ocm_edge_schemas::wire::MqttMessage;
    use ocm_edge_tests::probe::Probe;
    use ocm_edge_tests::wait::wait_until;

    const WAIT: Duration = Duration::from_secs(20);
    let fleet = Fleet::start().await;
    let url = fleet.broker_url().to_owned();
    let victim = "sources/ocm-edge/consumers/c1/sourceevents";
    let mut spy = Probe::connect(&url).await.unwrap();
    spy.subscribe(victim).await.unwrap();

    // A client that wants the hub to publish on cluster c1's spec topic.
    let cfg = SessionConfig::new(BrokerUrl::parse(&url).unwrap(), "rogue-admin");
    let (rogue, _events) = Session::connect(cfg, WAIT).await.unwrap();
    let request = Publication {
        message: MqttMessage {
            topic: "ocm-edge/ocm-edge/admin/requests".into(),
            payload: br#"{"command":"listClusters"}"#.to_vec(),
            content_type: Some("application/json".into()),
            user_properties: vec![],
        },
        response_topic: Some(victim.into()),
        correlation_data: Some(Bytes::from_static(b"rogue")),
        retain: false,
    };
    rogue.publisher().publish(request).await.unwrap();

    let admin = fleet.admin().await;
    wait_until("the hub counts the dropped request", WAIT, || async {
        let stats = admin.stats().await.unwrap();
        stats
            .counters
            .get("adminRequestsDropped")
            .copied()
            .unwrap_or(0)
            >= 1
    })
    .await
    .unwrap();
    // The drop and any answer would have been one batch: nothing reached c1's topic.
    let leaked = spy.recv(Duration::from_millis(500)).await;
    assert!(leaked.is_none(), "the hub answered on {victim}: {leaked:?}");
}

#[tokio::test]
async fn a_change_sent_twice_or_replayed_is_carried_out_once_and_answered_alike() {
    use std::time::Duration;

    use bytes::Bytes;
    use ocm_edge_cli::client::credential::Credential;
    use ocm_edge_mqtt::{BrokerUrl, Publication, Session, SessionConfig, SessionEvent};
    use ocm_edge_schemas::admin::{AdminPayload, AdminResponse};
    use ocm_edge_schemas::wire::MqttMessage;

    const WAIT: Duration = Duration::from_secs(20);
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&["c1"]).await;
    fleet.accept("c1").await;

    // A CLI whose first answer is lost sends the same request again (same correlation data and
    // signature); an eavesdropper replays it. Both look like this.
    let reply = "ocm-edge/ocm-edge/admin/responses/ocm-edge-cli-replay";
    let mut cfg = SessionConfig::new(
        BrokerUrl::parse(fleet.broker_url()).unwrap(),
        "ocm-edge-cli-replay",
    );
    cfg.subscriptions = vec![reply.to_owned()];
    let (session, mut events) = Session::connect(cfg, WAIT).await.unwrap();
    let topic = "ocm-edge/ocm-edge/admin/requests";
    let payload = serde_json::to_vec(&ocm_edge_schemas::admin::AdminRequest::CreateWork(work(
        "web",
        &["c1"],
        vec![namespace("web")],
    )))
    .unwrap();
    let credential = Credential::load(&fleet.admin_credentials()).unwrap();
    let signed = |correlation: &'static [u8]| Publication {
        message: MqttMessage {
            topic: topic.into(),
            payload: payload.clone(),
            content_type: Some("application/json".into()),
            user_properties: credential.sign_at(
                topic,
                reply,
                correlation,
                &payload,
                chrono::Utc::now().timestamp(),
            ),
        },
        retain: false,
        response_topic: Some(reply.into()),
        correlation_data: Some(Bytes::from_static(correlation)),
    };
    let mut answer = async || loop {
        let event = tokio::time::timeout(WAIT, events.recv())
            .await
            .expect("the hub answers")
            .expect("the session runs");
        if let SessionEvent::Message(m) = event {
            return serde_json::from_slice::<AdminResponse>(&m.message.payload).unwrap();
        }
    };
    let publisher = session.publisher();
    publisher.publish(signed(b"first")).await.unwrap();
    let first = answer().await;
    assert!(
        matches!(&first, AdminResponse::Ok(AdminPayload::Written(_))),
        "{first:?}"
    );
    publisher.publish(signed(b"first")).await.unwrap();
    assert_eq!(answer().await, first, "the repeat gets the first answer");

    // The same change under new correlation data is a new request: carried out, and refused as
    // it would be (the work exists).
    publisher.publish(signed(b"second")).await.unwrap();
    let AdminResponse::Error { kind, .. } = answer().await else {
        panic!("a second create is refused");
    };
    assert_eq!(kind, AdminErrorKind::AlreadyExists);

    let view = fleet.admin().await.get_work("c1", "web").await.unwrap();
    assert_eq!(view.version, 1);
    let stats = fleet.stats().await;
    assert_eq!(stats.counters.get("adminRequestsRepeated"), Some(&1));
    session.shutdown().await;
    fleet.shutdown().await;
}
