//! Per-cluster certificates on Mosquitto as shipped (`broker-config/mosquitto/mosquitto.conf`,
//! only its paths and ports changed): clusters join on the password listener, get the
//! certificate the hub's cluster CA issues them at `cluster accept` (for the agent's own key, in
//! the hub's signed view), and from then on work on the certificate listener with it alone
//! (their passwords removed). A cluster's certificate reads only its own works; no other
//! credential of the hub opens that listener; `cluster deny` puts the certificate on the
//! revocation list Mosquitto reads, and the hub (`--broker-mtls`) drops the denied cluster's live
//! session once Mosquitto has read it.

use std::path::Path;
use std::time::Duration;

use ocm_edge_hub::registration::cluster_ca::ClusterCa;
use ocm_edge_mqtt::{LinkError, TlsFiles};
use ocm_edge_schemas::admin::{ClusterCertificateView, ClusterState, CreateWork};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, HUB_USER, OPERATOR_USER, password_of};
use ocm_edge_tests::manifests::{deployment, deployment_image, namespace};
use ocm_edge_tests::mosquitto::{Mosquitto, free_port, require_mosquitto};
use ocm_edge_tests::pki::TestPki;
use ocm_edge_tests::probe::{Probe, ProbeOptions};
use ocm_edge_tests::wait::wait_for;
use serde_json::json;

const SOURCE: &str = "ocm-edge";
const WAIT: Duration = Duration::from_secs(30);
const CLUSTERS: [&str; 2] = ["edge-1", "edge-2"];

fn users(with_clusters: bool) -> Vec<(String, String)> {
    let mut users = vec![HUB_USER, OPERATOR_USER];
    if with_clusters {
        users.extend(CLUSTERS);
    }
    users
        .into_iter()
        .map(|u| (u.to_owned(), password_of(u)))
        .collect()
}

fn source_events(cluster: &str) -> String {
    format!("sources/{SOURCE}/consumers/{cluster}/sourceevents")
}

fn web(image: &str) -> CreateWork {
    CreateWork {
        name: "web".into(),
        clusters: CLUSTERS.iter().map(|c| c.to_string()).collect(),
        manifests: vec![namespace("web"), deployment("web", "web", 1, image)],
        overwrite: true,
        ..CreateWork::default()
    }
}

/// [`web`] for `cluster` alone.
fn web_on(cluster: &str, image: &str) -> CreateWork {
    CreateWork {
        clusters: vec![cluster.to_owned()],
        ..web(image)
    }
}

/// The clusters' passwords removed and the broker restarted, an update with `image` still
/// reaches edge-1: it works on its certificate alone.
async fn works_on_its_certificate_alone(fleet: &Fleet, broker: &mut Mosquitto, image: &str) {
    broker.set_users(&users(false)).unwrap();
    broker.kill9_and_restart().unwrap();
    fleet.write_work(web_on("edge-1", image)).await;
    wait_image(fleet, "edge-1", image, broker).await;
}

/// A client logging in to the certificate listener with `cert` and `key` files.
async fn with_certificate(url: &str, cert: &Path, key: &Path, ca: &Path) -> Result<Probe, String> {
    Probe::connect_with(
        url,
        ProbeOptions {
            client_id: format!("spy-{}", uuid::Uuid::new_v4().simple()),
            tls: TlsFiles {
                ca_file: Some(ca.to_owned()),
                client_cert_file: Some(cert.to_owned()),
                client_key_file: Some(key.to_owned()),
                ca_pin: None,
            },
            ..ProbeOptions::default()
        },
    )
    .await
    .map_err(|e| e.to_string())
}

async fn wait_image(fleet: &Fleet, cluster: &str, image: &str, broker: &Mosquitto) {
    fleet
        .wait_sim(cluster, &format!("{image} on {cluster}"), |sim| {
            sim.get("Deployment", "web", "web")
                .filter(|d| deployment_image(d) == Some(image))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
}

/// Mosquitto as shipped with its own broker certificate, and a fleet whose hub logs in there
/// with a password and knows the certificate listener (changed by `hub`); no agent yet.
async fn setup(
    program: &Path,
    hub: impl FnOnce(&mut ocm_edge_hub::config::HubConfig),
) -> (tempfile::TempDir, TestPki, Mosquitto, Fleet, ClusterCa) {
    let certs = tempfile::tempdir().unwrap();
    let pki = TestPki::create(certs.path(), "mosquitto");
    let ports = (free_port().unwrap(), free_port().unwrap());
    let mut fleet = Fleet::on_broker(
        format!("mqtts://127.0.0.1:{}", ports.0),
        FleetOptions {
            logins: true,
            broker_ca_file: Some(pki.ca_file.clone()),
            ..FleetOptions::default()
        },
    );
    // Mosquitto reads the hub's cluster CA and revocation list: the hub's first start writes
    // them; here the broker starts first, so they are made as that start would.
    let cluster_ca = ClusterCa::load_or_create(&fleet.hub_dir(), chrono::Utc::now()).unwrap();
    // Mosquitto drops to its own user before it reads them: the way must be open to it.
    for dir in [fleet.hub_dir().parent().unwrap(), &fleet.hub_dir()] {
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    cluster_ca.write_crl(&[], chrono::Utc::now()).unwrap();
    let broker = Mosquitto::start_shipped(program, &pki, &users(true), &fleet.hub_dir(), ports)
        .expect("mosquitto starts with the shipped configuration");
    let listener = ocm_edge_mqtt::BrokerUrl::parse(&broker.secured_url()).unwrap();
    fleet
        .start_hub_with(move |cfg| {
            cfg.broker_mtls = Some(listener);
            // Checks whether Mosquitto read the revocation list at least every 2 s.
            cfg.broker_mtls_recheck = Duration::from_secs(2);
            hub(cfg)
        })
        .await;
    (certs, pki, broker, fleet, cluster_ca)
}

#[tokio::test]
async fn clusters_work_on_the_certificate_the_hub_issued_them_and_a_denied_ones_is_revoked() {
    let test = "clusters_work_on_the_certificate_the_hub_issued_them_and_a_denied_ones_is_revoked";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let (_certs, pki, mut broker, mut fleet, cluster_ca) = setup(&program, |_| {}).await;
    let cert_url = broker.secured_url();
    for c in CLUSTERS {
        let url = cert_url.clone();
        fleet
            .agent(c)
            .configure(|cfg| cfg.broker_mtls_url = Some(url))
            .start()
            .await;
    }
    fleet.accept_all(&CLUSTERS).await;

    // Each agent took its certificate (the hub shows its serial) and works on it.
    for c in CLUSTERS {
        let file = fleet.agent_dir(c).join("cluster-cert.pem");
        wait_for(&format!("{c}'s certificate file"), WAIT, || async {
            file.is_file().then_some(())
        })
        .await
        .unwrap();
        let view = fleet.admin().await.get_cluster(c).await.unwrap();
        let cert = view
            .certificate
            .expect("the hub shows the cluster's certificate");
        assert!(!cert.waits_for_operator);
    }
    fleet.write_work(web("nginx:1.27")).await;
    for c in CLUSTERS {
        fleet
            .wait_work_condition(c, "web", "Applied")
            .await
            .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    }

    // The clusters' passwords are gone: what still reaches them came over their certificates.
    broker.set_users(&users(false)).unwrap();
    broker.kill9_and_restart().unwrap();
    fleet.write_work(web("nginx:1.28")).await;
    for c in CLUSTERS {
        wait_image(&fleet, c, "nginx:1.28", &broker).await;
    }

    // Cluster 1's certificate and key read cluster 1's works, not cluster 2's. The listener has
    // one session per certificate's CN (the client id is the CN): cluster 1's agent makes way
    // for this client, which from here on is cluster 1's live session.
    fleet.stop_agent("edge-1").await;
    let ca = pki.ca_file.clone();
    let (cert_1, key_1) = (
        fleet.agent_dir("edge-1").join("cluster-cert.pem"),
        fleet.agent_dir("edge-1").join("agent-key.p8"),
    );
    let mut spy = with_certificate(&cert_url, &cert_1, &key_1, &ca)
        .await
        .expect("cluster 1's certificate opens the certificate listener");
    spy.subscribe(&format!("sources/{SOURCE}/consumers/+/sourceevents"))
        .await
        .unwrap();
    fleet.write_work(web_on("edge-2", "nginx:1.29")).await;
    fleet.write_work(web_on("edge-1", "nginx:1.29")).await;
    let mut seen = Vec::new();
    let own = spy
        .recv_matching(WAIT, |m| {
            seen.push(m.topic.clone());
            m.topic == source_events("edge-1")
        })
        .await;
    assert!(
        own.is_some(),
        "cluster 1's own update reaches its certificate"
    );
    seen.extend(spy.drain().into_iter().map(|m| m.topic));
    assert!(
        !seen.contains(&source_events("edge-2")),
        "cluster 1's certificate read cluster 2's work: {seen:?}"
    );
    wait_image(&fleet, "edge-2", "nginx:1.29", &broker).await;

    // ... and publishes as cluster 1 only: a status on cluster 2's topic never reaches the
    // hub's side, the same on its own topic does (after it, in order).
    let mut hub_side = Probe::connect_with(
        &broker.url(),
        ProbeOptions {
            credentials: Some((HUB_USER.to_owned(), password_of(HUB_USER))),
            tls: TlsFiles {
                ca_file: Some(pki.ca_file.clone()),
                ..TlsFiles::default()
            },
            ..ProbeOptions::default()
        },
    )
    .await
    .expect("the hub's identity logs in on the password listener");
    hub_side
        .subscribe(&format!("sources/{SOURCE}/consumers/+/agentevents"))
        .await
        .unwrap();
    let status = |cluster: &str, body: &str| MqttMessage {
        topic: format!("sources/{SOURCE}/consumers/{cluster}/agentevents"),
        payload: body.as_bytes().to_vec(),
        ..MqttMessage::default()
    };
    spy.publish(&status("edge-2", "forged by edge-1"))
        .await
        .unwrap();
    spy.publish(&status("edge-1", "own")).await.unwrap();
    let mut payloads = Vec::new();
    let own = hub_side
        .recv_matching(WAIT, |m| {
            payloads.push(String::from_utf8_lossy(&m.payload).into_owned());
            m.payload == b"own"
        })
        .await;
    assert!(
        own.is_some(),
        "cluster 1's own status reaches the hub's side"
    );
    assert!(
        !payloads.iter().any(|p| p == "forged by edge-1"),
        "cluster 1's certificate published on cluster 2's topic"
    );
    drop(hub_side);

    // The first admin's credential (the hub's CA, not the cluster CA) does not open it.
    let admin = fleet.admin_credentials();
    let refused = with_certificate(&cert_url, &admin, &admin, &ca).await;
    assert!(
        refused.is_err(),
        "an admin credential logged in as a cluster"
    );

    // Denied: the certificate goes on the revocation list, which Mosquitto reads when reloaded.
    let probe_line = "Client <unknown> closed its connection.";
    let probes_before = broker.log().matches(probe_line).count();
    let denied = deny(&fleet, &cluster_ca).await;
    assert!(
        denied.certificate.is_none(),
        "a denied cluster shows no certificate"
    );
    // Until Mosquitto reads the list it takes the revoked certificate, and the hub's checks
    // (TLS handshakes, no login: Mosquitto logs a client without a name that left) leave
    // cluster 1's live session alone.
    wait_for("the hub to check the revoked certificate", WAIT, || async {
        (broker.log().matches(probe_line).count() > probes_before).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    assert_eq!(
        spy.link().reconnects,
        0,
        "a session was taken over before the list was read"
    );
    broker.reload().unwrap();
    // Once it has, the live session is dropped and its reconnection refused.
    let link = wait_for(
        "cluster 1's live session to be dropped for good",
        WAIT * 2,
        || {
            let link = spy.link();
            async move { (!link.connected && link.down_events >= 2).then_some(link) }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    assert!(
        matches!(
            &link.last_why,
            Some(LinkError::CertificateRefused { alert, .. }) if alert == "CertificateRevoked"
        ),
        "{:?}",
        link.last_why
    );
    assert_eq!(
        link.reconnects, 0,
        "cluster 1's session was taken over before the list was read"
    );
    drop(spy);
    let refused = with_certificate(&cert_url, &cert_1, &key_1, &ca).await;
    assert!(
        refused.is_err(),
        "a revoked certificate logged in; mosquitto log:\n{}",
        broker.log()
    );
    // Cluster 2 goes on.
    fleet.write_work(web_on("edge-2", "nginx:1.30")).await;
    wait_image(&fleet, "edge-2", "nginx:1.30", &broker).await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_cluster_renews_its_certificate_on_its_own_and_works_on_the_new_one_once_the_old_ended() {
    let test =
        "a_cluster_renews_its_certificate_on_its_own_and_works_on_the_new_one_once_the_old_ended";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    // 20 s certificates: the agent asks for the next one after ~13 s.
    let validity = chrono::Duration::seconds(20);
    let (_certs, _pki, mut broker, mut fleet, _ca) =
        setup(&program, |cfg| cfg.cluster_cert_validity = validity).await;
    start_agent(&mut fleet, &broker.secured_url()).await;
    fleet.accept("edge-1").await;
    let first = certificate(&fleet, "the first certificate", None).await;
    fleet.write_work(web_on("edge-1", "nginx:1.27")).await;
    wait_image(&fleet, "edge-1", "nginx:1.27", &broker).await;

    // Nobody touches anything: the agent asks, the hub issues the next one.
    let second = certificate(&fleet, "a renewed certificate", Some(&first.serial)).await;
    assert!(second.not_after > first.not_after);
    let file = fleet.agent_dir("edge-1").join("cluster-cert.pem");
    // Once the first one ended, only the new one opens the listener: no password either.
    until_ended(&first).await;
    assert!(std::fs::read_to_string(&file).unwrap().len() > 100);
    works_on_its_certificate_alone(&fleet, &mut broker, "nginx:1.28").await;
    fleet.shutdown().await;
}

/// Denies edge-1 and waits until the hub rewrote the revocation list; returns the hub's view.
async fn deny(fleet: &Fleet, cluster_ca: &ClusterCa) -> ocm_edge_schemas::admin::ClusterView {
    let crl = cluster_ca.crl_file();
    let before = std::fs::read(&crl).unwrap();
    let denied = fleet.admin().await.deny_cluster("edge-1").await.unwrap();
    assert_eq!(denied.state, ClusterState::Denied);
    wait_for("the revocation list to be rewritten", WAIT, || async {
        (std::fs::read(&crl).ok()? != before).then_some(())
    })
    .await
    .unwrap();
    denied
}

/// Waits until edge-1's agent is connected on its certificate (`certificate`) or through
/// --broker.
async fn wait_on(fleet: &Fleet, broker: &Mosquitto, certificate: bool, what: &str) {
    wait_for(what, WAIT, || async {
        let c = fleet.counters("edge-1");
        (c.connected && c.on_certificate == certificate).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
}

/// Waits until the hub shows edge-1 with a certificate (another than the one with serial
/// `other_than`).
async fn certificate(
    fleet: &Fleet,
    what: &str,
    other_than: Option<&str>,
) -> ClusterCertificateView {
    wait_for(what, WAIT, || async {
        fleet
            .admin()
            .await
            .get_cluster("edge-1")
            .await
            .ok()?
            .certificate
            .filter(|c| Some(c.serial.as_str()) != other_than)
    })
    .await
    .unwrap()
}

/// Waits until `cert` has ended (and a second more, for the broker's clock).
async fn until_ended(cert: &ClusterCertificateView) {
    let ended = cert.not_after.as_datetime() + chrono::Duration::seconds(1);
    wait_for("the certificate to end", WAIT, || async {
        (chrono::Utc::now() > ended).then_some(())
    })
    .await
    .unwrap();
}

/// Starts edge-1's agent with `--broker-mtls URL`, checking its certificate often.
async fn start_agent(fleet: &mut Fleet, url: &str) {
    fleet
        .agent("edge-1")
        .configure(|cfg| {
            cfg.broker_mtls_url = Some(url.to_owned());
            cfg.health_interval = Duration::from_millis(250);
        })
        .start()
        .await;
}

#[tokio::test]
async fn a_cluster_offline_past_its_certificates_end_gets_a_new_one_on_its_own() {
    let test = "a_cluster_offline_past_its_certificates_end_gets_a_new_one_on_its_own";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let validity = chrono::Duration::seconds(12);
    let (_certs, _pki, mut broker, mut fleet, _ca) =
        setup(&program, |cfg| cfg.cluster_cert_validity = validity).await;
    let url = broker.secured_url();
    start_agent(&mut fleet, &url).await;
    fleet.accept("edge-1").await;
    let first = certificate(&fleet, "the first certificate", None).await;
    // Offline (and its cluster's works with it) until its certificate has ended.
    fleet.stop_agent("edge-1").await;
    until_ended(&first).await;
    let ended = first.not_after.as_datetime();
    start_agent(&mut fleet, &url).await;
    let second = certificate(&fleet, "a new certificate", Some(&first.serial)).await;
    assert!(
        second.not_after.as_datetime() > ended + validity,
        "the new certificate was issued after the first ended (not before the agent stopped)"
    );
    // And it works on it alone.
    works_on_its_certificate_alone(&fleet, &mut broker, "nginx:1.27").await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_cluster_denied_then_accepted_again_gets_back_on_a_new_certificate() {
    let test = "a_cluster_denied_then_accepted_again_gets_back_on_a_new_certificate";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let (_certs, _pki, mut broker, mut fleet, cluster_ca) = setup(&program, |_| {}).await;
    start_agent(&mut fleet, &broker.secured_url()).await;
    fleet.accept("edge-1").await;
    let first = certificate(&fleet, "the first certificate", None).await;
    let file = fleet.agent_dir("edge-1").join("cluster-cert.pem");
    fleet.write_work(web_on("edge-1", "nginx:1.27")).await;
    wait_image(&fleet, "edge-1", "nginx:1.27", &broker).await;
    let first_pem = std::fs::read(&file).unwrap();

    wait_on(
        &fleet,
        &broker,
        true,
        "the agent to log in with its certificate",
    )
    .await;

    // Denied (by mistake): revoked, read by Mosquitto, the agent's session dropped by the hub.
    deny(&fleet, &cluster_ca).await;
    broker.reload().unwrap();
    // Refused there, the agent goes to the password listener (with its key's proof) to ask.
    wait_on(
        &fleet,
        &broker,
        false,
        "the agent to come back on its password",
    )
    .await;
    // Accepted again: the new certificate reaches the agent there, and it works on the new one
    // alone.
    let accepted = fleet.admin().await.accept_cluster("edge-1").await.unwrap();
    assert_eq!(accepted.state, ClusterState::Accepted);
    let second = certificate(&fleet, "a new certificate", Some(&first.serial)).await;
    wait_for("the agent to take the new certificate", WAIT, || async {
        (std::fs::read(&file).ok()? != first_pem).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    assert_ne!(second.serial, first.serial);
    wait_on(
        &fleet,
        &broker,
        true,
        "the agent to log in with the new certificate",
    )
    .await;
    works_on_its_certificate_alone(&fleet, &mut broker, "nginx:1.28").await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_clusters_password_removed_and_mosquitto_reloaded_drops_its_password_session() {
    let test = "a_clusters_password_removed_and_mosquitto_reloaded_drops_its_password_session";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    // What broker-config/README.md tells an operator to do after `cluster deny` for the
    // password listener: Mosquitto checks connected clients against the file at a reload.
    let (_certs, pki, broker, fleet, _ca) = setup(&program, |_| {}).await;
    let login = |user: &str| ProbeOptions {
        client_id: format!("{user}-agent"),
        credentials: Some((user.to_owned(), password_of(user))),
        tls: TlsFiles {
            ca_file: Some(pki.ca_file.clone()),
            ..TlsFiles::default()
        },
        ..ProbeOptions::default()
    };
    let one = Probe::connect_with(&broker.url(), login("edge-1"))
        .await
        .unwrap();
    let two = Probe::connect_with(&broker.url(), login("edge-2"))
        .await
        .unwrap();
    let mut left = users(true);
    left.retain(|(u, _)| u != "edge-1");
    broker.set_users(&left).unwrap();
    broker.reload().unwrap();
    let link = wait_for("edge-1's password session to be dropped", WAIT, || {
        let link = one.link();
        async move { (!link.connected && link.down_events >= 2).then_some(link) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    assert!(
        matches!(link.last_why, Some(LinkError::LoginRefused { .. })),
        "{:?}",
        link.last_why
    );
    assert!(two.link().connected, "another cluster's session stays");
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_agent_refused_for_a_passing_fault_of_the_broker_goes_back_to_its_certificate() {
    let test = "an_agent_refused_for_a_passing_fault_of_the_broker_goes_back_to_its_certificate";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let (_certs, pki, mut broker, mut fleet, _ca) = setup(&program, |_| {}).await;
    let url = broker.secured_url();
    fleet
        .agent("edge-1")
        .configure(|cfg| {
            cfg.broker_mtls_url = Some(url);
            cfg.health_interval = Duration::from_millis(250);
            // Tries a refused certificate again after 10 x 1 s while it works on --broker.
            cfg.join_retry = Duration::from_secs(1);
        })
        .start()
        .await;
    fleet.accept("edge-1").await;
    wait_on(
        &fleet,
        &broker,
        true,
        "the agent to log in with its certificate",
    )
    .await;
    // The broker trusts another CA for a while (a wrong file deployed): the certificate is
    // refused, the agent works on through --broker.
    let ca_file = fleet.hub_dir().join("broker-files").join("cluster-ca.pem");
    let cluster_ca = std::fs::read(&ca_file).unwrap();
    std::fs::copy(&pki.ca_file, &ca_file).unwrap();
    broker.kill9_and_restart().unwrap();
    wait_on(
        &fleet,
        &broker,
        false,
        "the agent to work on through --broker",
    )
    .await;
    // Mended (a reload keeps the agent's session on --broker): back on the certificate.
    std::fs::write(&ca_file, cluster_ca).unwrap();
    broker.reload().unwrap();
    wait_on(
        &fleet,
        &broker,
        true,
        "the agent to go back to its certificate",
    )
    .await;
    fleet.shutdown().await;
}

/// An add-on agent on Mosquitto's certificate listener: the cluster's agent writes the client
/// certificate the hub's cluster CA issued to the add-on's identity (CN
/// `addons/hello/clusters/edge-1`, for a key the agent derived) into the add-on's Secret;
/// Mosquitto's own client logs in with it alone, publishes the add-on's score (which the hub
/// takes, on the password listener) and cannot publish on another cluster's add-on topics; once
/// the add-on is disabled its certificate is on the revocation list and Mosquitto refuses it.
#[tokio::test]
async fn an_addon_agent_works_on_the_certificate_its_cluster_got_for_it_until_the_addon_is_disabled()
 {
    use crate::addon_identity::{NS, addon_objects, require_clients};
    use base64::Engine as _;
    let test = "an_addon_agent_works_on_the_certificate_its_cluster_got_for_it_until_the_addon_is_disabled";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let Some((publish, _)) = require_clients(test) else {
        return;
    };
    let (_certs, _pki, broker, mut fleet, _ca) = setup(&program, |_| {}).await;
    let url = broker.secured_url();
    start_agent(&mut fleet, &url).await;
    fleet.accept("edge-1").await;
    let admin = fleet.admin().await;
    for object in addon_objects("hello").into_iter().chain([
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
               "metadata": {"name": "default", "namespace": "default"}, "spec": {"clusterSet": "default"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "scored", "namespace": "default"},
               "spec": {"clusterSets": ["default"],
                        "prioritizerPolicy": {"mode": "Exact", "configurations": [
                           {"scoreCoordinate": {"type": "AddOn",
                                                "addOn": {"resourceName": "hello-load",
                                                          "scoreName": "devices"}},
                            "weight": 1}]}}}),
    ]) {
        admin.apply_object(object).await.unwrap();
    }
    admin
        .switch_addons(true, vec!["hello".into()], vec!["edge-1".into()], None)
        .await
        .unwrap();
    let secret = fleet
        .wait_sim(
            "edge-1",
            "the add-on's Secret with its certificate",
            |sim| {
                sim.get("Secret", NS, "hello-hub-mqtt")
                    .filter(|s| s["data"]["tls.crt"].is_string())
            },
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = |k: &str| {
        let path = dir.path().join(k);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(secret["data"][k].as_str().unwrap())
            .unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let (crt, key, ca) = (file("tls.crt"), file("tls.key"), file("ca.crt"));
    let port = url.rsplit_once(':').unwrap().1.to_owned();
    let pub_with_cert = |topic: &str, payload: &str| {
        let mut c = tokio::process::Command::new(&publish);
        c.args(["-V", "5", "-h", "127.0.0.1", "-p", &port, "-q", "1"])
            .arg("--cafile")
            .arg(&ca)
            .arg("--cert")
            .arg(&crt)
            .arg("--key")
            .arg(&key)
            .args(["-t", topic, "-m", payload])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        async move {
            tokio::time::timeout(WAIT, c.output())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let score = |value: i32| {
        json!({"metadata": {"name": "hello-load"},
               "status": {"scores": [{"name": "devices", "value": value}]}})
        .to_string()
    };
    // Another cluster's add-on topic: Mosquitto drops it (its ACL), the hub never sees it.
    pub_with_cert("addons/hello/clusters/edge-2/placementscores", &score(55)).await;
    let out = pub_with_cert("addons/hello/clusters/edge-1/placementscores", &score(77)).await;
    assert!(
        out.status.success(),
        "the add-on's certificate logs in: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scored = wait_for("the add-on's score in the placement", WAIT, || async {
        let p = admin.get_placement(Some("default"), "scored").await.ok()?;
        let text = p.explanation?.cluster("edge-1")?.score_text()?;
        text.contains("77").then_some(text)
    })
    .await
    .unwrap();
    assert!(!scored.contains("55"), "{scored}");

    // Disabled: its certificate goes on the revocation list; once Mosquitto read it, the
    // certificate logs in no more.
    admin
        .switch_addons(false, vec!["hello".into()], vec!["edge-1".into()], None)
        .await
        .unwrap();
    let refused = wait_for("the add-on's certificate refused", WAIT, || async {
        broker.reload().ok()?;
        let out = pub_with_cert("addons/hello/clusters/edge-1/to-hub", "after disable").await;
        (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
    })
    .await;
    assert!(
        refused.is_ok(),
        "the disabled add-on's certificate still logs in:\n{}",
        broker.log()
    );
    fleet.shutdown().await;
}
