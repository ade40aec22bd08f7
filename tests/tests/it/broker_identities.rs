//! The hub's own embedded broker, as `ocm-edge hub` runs it with no flags (TLS with the hub's CA,
//! logins proven with keys), attacked from clients that reach its port: nobody gets in without
//! proving an identity, each identity uses only its own topics, a cluster's accepted key cannot be
//! borrowed by another key, a cluster asks to join only with a valid join token, a denied
//! cluster's session is dropped at once, a reinstalled agent with a new key is kept out until an
//! admin re-admits it, after which it works again without anyone touching the agent, an
//! accepted cluster needs no token any more, and a session whose join token or credential is
//! revoked while it is connected is dropped.

use ocm_edge_agent::registration::key::{AGENT_KEY_FILE, AgentKey};
use ocm_edge_hub::pki::HubPki;
use ocm_edge_mqtt::TlsFiles;
use ocm_edge_mqtt::acl::{DASHBOARD_USER, HUB_USER, OPERATOR_USER};
use ocm_edge_mqtt::broker::BrokerStats;
use ocm_edge_schemas::admin::ClusterState;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::manifests::config_map;
use ocm_edge_tests::probe::{Probe, ProbeOptions};
use ocm_edge_tests::wait::wait_until;
use serde_json::json;

fn secure() -> FleetOptions {
    FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    }
}

fn settings(value: &str) -> Vec<serde_json::Value> {
    vec![config_map(
        "default",
        "settings",
        json!({ "secret": value }),
    )]
}

fn spec_topic(cluster: &str) -> String {
    format!("sources/ocm-edge/consumers/{cluster}/sourceevents")
}

fn status_topic(cluster: &str) -> String {
    format!("sources/ocm-edge/consumers/{cluster}/agentevents")
}

fn stats(fleet: &Fleet) -> &BrokerStats {
    fleet
        .hub()
        .embedded_broker()
        .expect("the hub runs its own broker")
        .stats()
}

/// Probe options trusting the hub's CA, logged in as `user` with `password` (none: anonymous).
fn probe_options(fleet: &Fleet, client_id: &str, login: Option<(&str, String)>) -> ProbeOptions {
    ProbeOptions {
        client_id: client_id.to_owned(),
        credentials: login.map(|(u, p)| (u.to_owned(), p)),
        tls: TlsFiles {
            ca_file: fleet.options().broker_ca_file.clone(),
            ..TlsFiles::default()
        },
        ..ProbeOptions::default()
    }
}

/// A fresh agent key (its own temporary directory) and the proof it makes for `cluster`, with
/// `token`.
fn fresh_key_login(
    cluster: &str,
    client_id: &str,
    token: Option<&str>,
) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let key = AgentKey::load_or_create(dir.path()).unwrap();
    let password = key.login_password(cluster, client_id, token);
    (dir, password)
}

async fn mode_on(fleet: &Fleet, cluster: &str) -> Option<String> {
    fleet
        .sim(cluster)
        .get("ConfigMap", "default", "settings")
        .and_then(|o| {
            o.pointer("/data/secret")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        })
}

async fn wait_mode(fleet: &Fleet, cluster: &str, value: &str) {
    wait_until(&format!("{cluster} holds {value}"), WAIT, || async {
        mode_on(fleet, cluster).await.as_deref() == Some(value)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

async fn deny(fleet: &Fleet, cluster: &str) {
    fleet
        .admin()
        .await
        .deny_cluster(cluster)
        .await
        .unwrap_or_else(|e| panic!("deny {cluster}: {e}"));
}

async fn accept(fleet: &Fleet, cluster: &str) {
    fleet
        .admin()
        .await
        .accept_cluster(cluster)
        .await
        .unwrap_or_else(|e| panic!("accept {cluster}: {e}"));
}

async fn write_settings(fleet: &Fleet, cluster: &str, value: &str) {
    fleet
        .write_work(ocm_edge_schemas::admin::CreateWork {
            name: "settings".into(),
            clusters: vec![cluster.to_owned()],
            manifests: settings(value),
            overwrite: true,
            ..Default::default()
        })
        .await;
}

#[tokio::test]
async fn nobody_gets_in_without_proving_who_it_is_and_each_identity_keeps_to_its_own_topics() {
    let mut fleet = Fleet::start_with(secure()).await;
    assert!(fleet.broker_url().starts_with("mqtts://"), "TLS by default");
    fleet.start_agents(&["edge-a", "edge-b"]).await;
    fleet.accept_all(&["edge-a", "edge-b"]).await;
    write_settings(&fleet, "edge-a", "a-1").await;
    write_settings(&fleet, "edge-b", "b-1").await;
    wait_mode(&fleet, "edge-a", "a-1").await;
    wait_mode(&fleet, "edge-b", "b-1").await;
    assert_eq!(stats(&fleet).refused_logins(), 0, "{:?}", stats(&fleet));
    assert_eq!(
        stats(&fleet).refused_topics(),
        0,
        "the hub, the admin client and the agents use only their own topics"
    );
    let url = fleet.broker_url().to_owned();

    // Refused at CONNECT: no credentials, a guessed hub password, garbage as the operator, an
    // operator credential of another hub, a fresh key claiming accepted cluster B (with B's
    // client id, which would have taken B's session over), and B's real key with a client id
    // that is not B's agent's.
    let other_hub = tempfile::tempdir().unwrap();
    let other_pki = HubPki::load_or_create(other_hub.path(), chrono::Utc::now()).unwrap();
    let (stranger_pem, _) = ocm_edge_hub::admin::users::issue(
        &other_pki,
        "mallory",
        ocm_edge_schemas::admin::Role::Admin,
        chrono::Duration::days(1),
        chrono::Utc::now(),
    )
    .unwrap();
    let stranger =
        ocm_edge_cli::client::credential::Credential::from_pem(stranger_pem.as_bytes()).unwrap();
    let token = fleet.new_join_token(chrono::Duration::hours(1)).token;
    let (_k, fresh_b) = fresh_key_login("edge-b", "edge-b-agent", Some(&token));
    let b_key = AgentKey::load_or_create(&fleet.agent_dir("edge-b")).unwrap();
    let expired = fleet.new_join_token(chrono::Duration::hours(-1)).token;
    let revoked_token = fleet.new_join_token(chrono::Duration::hours(1));
    ocm_edge_hub::registration::join_token::revoke(&fleet.hub_dir(), &revoked_token.id).unwrap();
    let revoked = revoked_token.token;
    let foreign =
        ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(other_hub.path())
            .unwrap()
            .create(chrono::Duration::hours(1), chrono::Utc::now())
            .unwrap()
            .token;
    let stretched = {
        let parts: Vec<&str> = token.split('.').collect();
        format!("oet1.{}.{}.{}", parts[1], 4_000_000_000i64, parts[3])
    };
    let attempts = [
        ("anonymous", probe_options(&fleet, "anon-1", None)),
        (
            "a guessed hub password",
            probe_options(&fleet, "ocm-edge-hub", Some((HUB_USER, "ocm-edge".into()))),
        ),
        (
            "a plain password as the operator",
            probe_options(
                &fleet,
                "ocm-edge-cli-x",
                Some((OPERATOR_USER, "admin".into())),
            ),
        ),
        (
            "another hub's admin credential",
            probe_options(
                &fleet,
                "ocm-edge-cli-y",
                Some((
                    OPERATOR_USER,
                    stranger.login_password(OPERATOR_USER, "ocm-edge-cli-y"),
                )),
            ),
        ),
        (
            "a fresh key claiming accepted cluster B",
            probe_options(&fleet, "edge-b-agent", Some(("edge-b", fresh_b))),
        ),
        (
            "B's key with another client id",
            probe_options(
                &fleet,
                "edge-b-probe",
                Some((
                    "edge-b",
                    b_key.login_password("edge-b", "edge-b-probe", None),
                )),
            ),
        ),
        (
            "B's key proof replayed for cluster A",
            probe_options(
                &fleet,
                "edge-a-agent",
                Some((
                    "edge-a",
                    b_key.login_password("edge-b", "edge-b-agent", None),
                )),
            ),
        ),
        (
            "a newcomer without a join token",
            probe_options(
                &fleet,
                "edge-x-agent",
                Some(("edge-x", fresh_key_login("edge-x", "edge-x-agent", None).1)),
            ),
        ),
        (
            "a newcomer with an expired join token",
            probe_options(
                &fleet,
                "edge-x-agent",
                Some((
                    "edge-x",
                    fresh_key_login("edge-x", "edge-x-agent", Some(&expired)).1,
                )),
            ),
        ),
        (
            "a newcomer with a revoked join token",
            probe_options(
                &fleet,
                "edge-x-agent",
                Some((
                    "edge-x",
                    fresh_key_login("edge-x", "edge-x-agent", Some(&revoked)).1,
                )),
            ),
        ),
        (
            "a newcomer with another hub's join token",
            probe_options(
                &fleet,
                "edge-x-agent",
                Some((
                    "edge-x",
                    fresh_key_login("edge-x", "edge-x-agent", Some(&foreign)).1,
                )),
            ),
        ),
        (
            "a newcomer with a join token whose expiry was pushed back",
            probe_options(
                &fleet,
                "edge-x-agent",
                Some((
                    "edge-x",
                    fresh_key_login("edge-x", "edge-x-agent", Some(&stretched)).1,
                )),
            ),
        ),
    ];
    let n = attempts.len() as u64;
    for (what, options) in attempts {
        let refused = Probe::connect_with(&url, options).await;
        assert!(refused.is_err(), "{what} got in");
    }
    assert_eq!(stats(&fleet).refused_logins(), n, "every refusal counted");

    // A newcomer with a valid join token (any key: a cluster asking to join) gets in, and may
    // read only its own spec topic, where the hub sends nothing to a cluster it has not accepted.
    let (_k, newcomer_login) = fresh_key_login("edge-x", "edge-x-agent", Some(&token));
    let newcomer = Probe::connect_with(
        &url,
        probe_options(&fleet, "edge-x-agent", Some(("edge-x", newcomer_login))),
    )
    .await
    .expect("a cluster asking to join gets in");
    for filter in [
        spec_topic("edge-b").as_str(),
        "sources/ocm-edge/consumers/+/sourceevents",
        "sources/#",
        "#",
        "ocm-edge/ocm-edge/admin/responses/#",
        &status_topic("edge-a"),
    ] {
        let granted = newcomer.subscribe(filter).await.unwrap();
        assert!(
            granted.iter().all(Result::is_err),
            "a newcomer may subscribe to {filter}: {granted:?}"
        );
    }
    let own = newcomer.subscribe(&spec_topic("edge-x")).await.unwrap();
    assert!(own.iter().all(Result::is_ok), "{own:?}");
    // It cannot speak for B either: the broker refuses a status on B's topic.
    let forged = MqttMessage {
        topic: status_topic("edge-b"),
        payload: br#"{"forged":true}"#.to_vec(),
        content_type: Some("application/json".into()),
        user_properties: vec![("ce-specversion".into(), "1.0".into())],
    };
    let ack = newcomer.publish(&forged).await.unwrap();
    assert!(ack.refused.is_some(), "a forged status for B got through");

    // The dashboard logs in with the password the hub wrote, reads dashboards, nothing else.
    let password = std::fs::read_to_string(
        fleet
            .hub()
            .dashboard_password_file()
            .expect("the hub wrote a dashboard password"),
    )
    .unwrap();
    let mut dashboard = Probe::connect_with(
        &url,
        probe_options(
            &fleet,
            "grafana-1",
            Some((DASHBOARD_USER, password.trim().to_owned())),
        ),
    )
    .await
    .expect("the dashboard logs in");
    let granted = dashboard
        .subscribe("ocm-edge/ocm-edge/dashboard/#")
        .await
        .unwrap();
    assert!(granted.iter().all(Result::is_ok), "{granted:?}");
    assert!(
        dashboard
            .recv(WAIT)
            .await
            .is_some_and(|m| m.topic.starts_with("ocm-edge/ocm-edge/dashboard/")),
        "the retained dashboards arrive"
    );
    let granted = dashboard.subscribe(&spec_topic("edge-a")).await.unwrap();
    assert!(granted.iter().all(Result::is_err), "{granted:?}");
    assert!(stats(&fleet).refused_topics() >= 8, "{:?}", stats(&fleet));

    // Nothing of that touched the fleet: B still connected, and it takes its next version.
    assert!(fleet.counters("edge-b").connected);
    write_settings(&fleet, "edge-b", "b-2").await;
    wait_mode(&fleet, "edge-b", "b-2").await;
    assert_eq!(mode_on(&fleet, "edge-a").await.as_deref(), Some("a-1"));
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_denied_cluster_is_dropped_at_once_and_a_new_key_waits_for_an_admin() {
    let mut fleet = Fleet::start_with(secure()).await;
    fleet.start_agents(&["edge-a"]).await;
    fleet.accept("edge-a").await;
    write_settings(&fleet, "edge-a", "v1").await;
    wait_mode(&fleet, "edge-a", "v1").await;
    let first_key = AgentKey::load_or_create(&fleet.agent_dir("edge-a"))
        .unwrap()
        .id()
        .to_owned();

    // Deny: the broker drops the agent's session at once (and what it queued for it).
    let dropped = stats(&fleet).disconnected();
    let connections = fleet.counters("edge-a").connections;
    deny(&fleet, "edge-a").await;
    wait_until("the denied cluster's session dropped", WAIT, || async {
        stats(&fleet).disconnected() > dropped
    })
    .await
    .unwrap();
    // The agent comes back as a cluster asking to join, hears it was denied, and gets no work.
    wait_until(
        "the agent reconnects as a joining cluster",
        WAIT,
        || async { fleet.counters("edge-a").connections > connections },
    )
    .await
    .unwrap();
    wait_until("the agent hears it was denied", WAIT, || async {
        fleet.counters("edge-a").registration == ocm_edge_agent::Registration::Denied
    })
    .await
    .unwrap();
    let refused = fleet
        .admin()
        .await
        .create_work(ocm_edge_schemas::admin::CreateWork {
            name: "settings".into(),
            clusters: vec!["edge-a".into()],
            manifests: settings("v2"),
            overwrite: true,
            ..Default::default()
        })
        .await;
    assert!(refused.is_err(), "a work for a denied cluster: {refused:?}");

    // An impostor with a join token sits on the denied cluster's session (its agent away),
    // waiting for the admin to accept the cluster again: it is dropped before the hub sends the
    // cluster's works, and its client cannot get back in.
    fleet.stop_agent("edge-a").await;
    let token = fleet.new_join_token(chrono::Duration::hours(1)).token;
    let (_k, impostor_login) = fresh_key_login("edge-a", "edge-a-agent", Some(&token));
    let mut impostor = Probe::connect_with(
        fleet.broker_url(),
        probe_options(&fleet, "edge-a-agent", Some(("edge-a", impostor_login))),
    )
    .await
    .expect("a token holder gets in as a denied cluster asking to join");
    let granted = impostor.subscribe(&spec_topic("edge-a")).await.unwrap();
    assert!(granted.iter().all(Result::is_ok), "{granted:?}");
    let dropped = stats(&fleet).disconnected();
    let refused = stats(&fleet).refused_logins();
    accept(&fleet, "edge-a").await;
    assert!(
        stats(&fleet).disconnected() > dropped,
        "the impostor's session is dropped before the accept is answered"
    );
    wait_until("the impostor's reconnect refused", WAIT, || async {
        stats(&fleet).refused_logins() > refused
    })
    .await
    .unwrap();

    // Accepted again with the same key: it works again, nobody touches the agent.
    fleet.restart_agent("edge-a").await;
    write_settings(&fleet, "edge-a", "v2").await;
    wait_mode(&fleet, "edge-a", "v2").await;
    let leaked: Vec<_> = impostor
        .drain()
        .into_iter()
        .filter(|m| {
            m.user_property("ce-type")
                .is_some_and(|t| t.contains("manifestbundles.spec"))
        })
        .collect();
    assert!(leaked.is_empty(), "the impostor got works: {leaked:?}");
    drop(impostor);

    // Reinstalled with a new key: the broker keeps it out while the cluster is accepted with
    // the old one, and its cluster keeps what it had.
    fleet.stop_agent("edge-a").await;
    std::fs::remove_file(fleet.agent_dir("edge-a").join(AGENT_KEY_FILE)).unwrap();
    let refused_before = stats(&fleet).refused_logins();
    fleet.restart_agent("edge-a").await;
    let new_key = AgentKey::load_or_create(&fleet.agent_dir("edge-a"))
        .unwrap()
        .id()
        .to_owned();
    assert_ne!(new_key, first_key);
    wait_until("the new key refused at login", WAIT, || async {
        stats(&fleet).refused_logins() > refused_before
    })
    .await
    .unwrap();
    assert!(!fleet.counters("edge-a").connected);
    let view = fleet.admin().await.get_cluster("edge-a").await.unwrap();
    assert_eq!(view.agent_key.as_deref(), Some(first_key.as_str()));
    assert_eq!(mode_on(&fleet, "edge-a").await.as_deref(), Some("v2"));

    // The admin re-keys: deny, see the new key the agent asks with, accept it.
    deny(&fleet, "edge-a").await;
    let admin = fleet.admin().await;
    ocm_edge_tests::wait::wait_for("the new key shown at the hub", WAIT, || async {
        admin
            .get_cluster("edge-a")
            .await
            .ok()
            .filter(|c| c.agent_key.as_deref() == Some(new_key.as_str()))
    })
    .await
    .unwrap();
    accept(&fleet, "edge-a").await;
    fleet
        .wait_cluster_state("edge-a", ClusterState::Accepted)
        .await
        .unwrap();
    write_settings(&fleet, "edge-a", "v3").await;
    wait_mode(&fleet, "edge-a", "v3").await;

    // Once accepted, the cluster needs no token: with every token revoked, its agent restarted
    // (a cluster back after a long time offline) gets back in by its key alone.
    let token = fleet
        .agent_config("edge-a")
        .join_token
        .expect("the fleet's agents have a token");
    let id = token.split('.').nth(1).unwrap().to_owned();
    ocm_edge_hub::registration::join_token::revoke(&fleet.hub_dir(), &id).unwrap();
    fleet.kill_agent("edge-a").await;
    fleet.restart_agent("edge-a").await;
    write_settings(&fleet, "edge-a", "v4").await;
    wait_mode(&fleet, "edge-a", "v4").await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_session_whose_join_token_or_credential_is_revoked_is_dropped_an_accepted_one_stays() {
    let mut fleet = Fleet::start_with(secure()).await;
    // edge-k joins with the fleet's token and is accepted; the token then stops mattering.
    fleet.start_agents(&["edge-k"]).await;
    fleet.accept("edge-k").await;
    write_settings(&fleet, "edge-k", "v1").await;
    wait_mode(&fleet, "edge-k", "v1").await;
    let fleet_token = fleet
        .join_token()
        .unwrap()
        .split('.')
        .nth(1)
        .unwrap()
        .to_owned();
    let connections = fleet.counters("edge-k").connections;

    // A newcomer asking to join with a token, and an operator with a credential of its own.
    let token = fleet.new_join_token(chrono::Duration::hours(1));
    let (_k, login) = fresh_key_login("edge-n", "edge-n-agent", Some(&token.token));
    let newcomer = Probe::connect_with(
        fleet.broker_url(),
        probe_options(&fleet, "edge-n-agent", Some(("edge-n", login))),
    )
    .await
    .expect("a token holder gets in");
    let granted = newcomer.subscribe(&spec_topic("edge-n")).await.unwrap();
    assert!(granted.iter().all(Result::is_ok), "{granted:?}");
    let pki = HubPki::load_existing(&fleet.hub_dir().join("pki")).unwrap();
    let (pem, record) = ocm_edge_hub::admin::users::issue(
        &pki,
        "otto",
        ocm_edge_schemas::admin::Role::Viewer,
        chrono::Duration::days(1),
        chrono::Utc::now(),
    )
    .unwrap();
    ocm_edge_hub::admin::users::record_issued(&fleet.hub_dir(), &record).unwrap();
    let otto = ocm_edge_cli::client::credential::Credential::from_pem(pem.as_bytes()).unwrap();
    let operator = Probe::connect_with(
        fleet.broker_url(),
        probe_options(
            &fleet,
            "ocm-edge-cli-otto",
            Some((
                OPERATOR_USER,
                otto.login_password(OPERATOR_USER, "ocm-edge-cli-otto"),
            )),
        ),
    )
    .await
    .expect("otto's credential gets in");
    let granted = operator
        .subscribe("ocm-edge/ocm-edge/dashboard/#")
        .await
        .unwrap();
    assert!(granted.iter().all(Result::is_ok), "{granted:?}");

    // Both tokens revoked: the newcomer's session is dropped without it doing anything, and
    // its client cannot get back in.
    let dropped = stats(&fleet).disconnected();
    let refused = stats(&fleet).refused_logins();
    ocm_edge_hub::registration::join_token::revoke(&fleet.hub_dir(), &token.id).unwrap();
    ocm_edge_hub::registration::join_token::revoke(&fleet.hub_dir(), &fleet_token).unwrap();
    wait_until("the newcomer's session dropped", WAIT, || async {
        stats(&fleet).disconnected() > dropped
    })
    .await
    .unwrap();
    wait_until("the newcomer's reconnect refused", WAIT, || async {
        stats(&fleet).refused_logins() > refused
    })
    .await
    .unwrap();

    // Otto's credential revoked: his session goes too.
    let dropped = stats(&fleet).disconnected();
    ocm_edge_hub::admin::users::revoke(
        &fleet.hub_dir(),
        &ocm_edge_hub::admin::users::Revoke::User("otto"),
        chrono::Utc::now(),
    )
    .unwrap();
    wait_until("otto's session dropped", WAIT, || async {
        stats(&fleet).disconnected() > dropped
    })
    .await
    .unwrap();

    // Sweeps ran after the fleet's token was revoked (they dropped both sessions above), and
    // the accepted cluster that joined with it kept its connection and its works.
    assert_eq!(
        fleet.counters("edge-k").connections,
        connections,
        "the accepted cluster was not disconnected"
    );
    write_settings(&fleet, "edge-k", "v2").await;
    wait_mode(&fleet, "edge-k", "v2").await;
    // The hub's own sessions and the first admin's are untouched.
    assert!(fleet.hub().embedded_broker().is_some());
    let _ = fleet
        .admin()
        .await
        .stats()
        .await
        .expect("the admin client still works");
    drop((newcomer, operator));
}

/// An operator whose link drops (a broker restart, a flaky link, a late ping reply) comes back
/// and gets answers again: the subscription to its own responses is granted after the reconnect.
#[tokio::test]
async fn an_operator_whose_session_is_dropped_gets_back_in_and_gets_answers_again() {
    let fleet = Fleet::start_with(secure()).await;
    let admin = fleet.new_admin().await;
    admin.stats().await.expect("the hub answers");
    let refused = stats(&fleet).refused_topics();
    fleet
        .hub()
        .embedded_broker()
        .unwrap()
        .drop_session(admin.client_id())
        .await;
    // The request waits in the session's queue until it is back.
    admin
        .stats()
        .await
        .expect("the hub answers the operator after its reconnect");
    assert_eq!(
        stats(&fleet).refused_topics(),
        refused,
        "the broker refused a topic of the operator's after its reconnect"
    );
}
