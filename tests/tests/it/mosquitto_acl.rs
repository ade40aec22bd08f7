//! Mosquitto with ocm-edge's per-cluster ACL (`broker-config/mosquitto/ocm-edge.acl`) and a password
//! file made with `mosquitto_passwd`: one cluster cannot read another's works nor forge its statuses.
//! Add-on identities on Mosquitto as shipped (`mosquitto.conf`, both ACL files, the add-on
//! templates of `ocm-edge.acl` filled in): each identity reads and publishes what
//! `ocm_edge_mqtt::acl` allows it, but for the differences `broker-config/README.md` documents.
//!
//! Each negative check is ordered against a marker from the same publisher on a topic it may use,
//! so "nothing arrived" is observed without waiting on a clock.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_edge_hub::registration::cluster_ca::ClusterCa;
use ocm_edge_mqtt::TlsFiles;
use ocm_edge_mqtt::acl::{self, Access};
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::addon_identity::{self, AddOnIdentity};
use ocm_edge_tests::fleet::{Fleet, FleetOptions, HUB_USER, password_of};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::mosquitto::{Mosquitto, MosquittoAuth, free_port, require_mosquitto};
use ocm_edge_tests::pki::TestPki;
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

const AGENT_A: &str = "addons/hello/clusters/cluster-a";
const AGENT_B: &str = "addons/hello/clusters/cluster-b";
const OTHER_ADDON_A: &str = "addons/other/clusters/cluster-a";
/// An add-on agent given a password (the template of `ocm-edge.acl`) rather than a certificate.
const AGENT_C: &str = "addons/hello/clusters/cluster-c";
const CONTROLLER: &str = "addons/hello/controller";
const CLUSTER_A: &str = "cluster-a";
/// A cluster named like the first level of the add-on topics (`%u/#` would be `addons/#`).
const CLUSTER_ADDONS: &str = "addons";
/// Cluster names `ocm-edge-clusters.acl` shuts out (its `user ... / topic deny #` lines).
const SHUT_OUT_CLUSTERS: [&str; 3] = ["sources", "ocm-edge", "addons"];

/// Topic names every identity is tried on (publish) and the hub publishes on (read).
const TOPICS: &[&str] = &[
    "addons/hello/clusters/cluster-a",
    "addons/hello/clusters/cluster-a/to-hub",
    "addons/hello/clusters/cluster-a/placementscores",
    "addons/hello/clusters/cluster-a/deeper/level",
    "addons/hello/clusters/cluster-b/to-agent",
    "addons/hello/clusters/cluster-c/to-agent",
    "addons/other/clusters/cluster-a/to-hub",
    "addons/hello/controller/x",
    "addons/hello",
    "sources/ocm-edge/consumers/cluster-a/sourceevents",
    "sources/ocm-edge/consumers/cluster-a/agentevents",
    "sources/ocm-edge/consumers/addons/sourceevents",
    "sources/ocm-edge/consumers/addons/agentevents",
    "sources/ocm-edge/sourcebroadcast",
    "sources/cluster-a/agentbroadcast",
    "ocm-edge/ocm-edge/admin/requests",
    "ocm-edge/ocm-edge/dashboard/summary",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Login {
    /// On the certificate listener with a certificate of the hub's cluster CA (CN = identity).
    Certificate,
    /// On the password listener.
    Password,
}

struct Identity {
    name: &'static str,
    login: Login,
    /// A topic it may read, where the hub publishes its marker; `None` for one that may read
    /// nothing (its reads are not tried).
    marker: Option<&'static str>,
}

const IDENTITIES: [Identity; 7] = [
    Identity {
        name: AGENT_A,
        login: Login::Certificate,
        marker: Some("addons/hello/clusters/cluster-a/marker"),
    },
    Identity {
        name: AGENT_B,
        login: Login::Certificate,
        marker: Some("addons/hello/clusters/cluster-b/marker"),
    },
    Identity {
        name: OTHER_ADDON_A,
        login: Login::Certificate,
        marker: Some("addons/other/clusters/cluster-a/marker"),
    },
    Identity {
        name: AGENT_C,
        login: Login::Password,
        marker: Some("addons/hello/clusters/cluster-c/marker"),
    },
    Identity {
        name: CONTROLLER,
        login: Login::Password,
        marker: Some("addons/hello/clusters/cluster-b/marker"),
    },
    Identity {
        name: CLUSTER_A,
        login: Login::Certificate,
        marker: Some("sources/ocm-edge/consumers/cluster-a/sourceevents"),
    },
    Identity {
        name: CLUSTER_ADDONS,
        login: Login::Certificate,
        marker: None,
    },
];

/// What the shipped Mosquitto ACLs let `user` (logged in by `login`) do: the embedded broker's
/// rules ([`acl::allowed`]) but where `broker-config/README.md` ("Add-on identities") says
/// Mosquitto's patterns cannot follow them, on the certificate listener only:
/// - every username gets the tree of its own name (`pattern readwrite %u/#`, for add-on
///   agents), so a cluster gets `<cluster>/#`;
/// - add-on agents match the cluster patterns too: they read a source's broadcast;
/// - a cluster named like the first level of ocm-edge's topics may use nothing.
fn mosquitto_allows(user: &str, login: Login, access: Access, topic: &str) -> bool {
    if login == Login::Certificate {
        if SHUT_OUT_CLUSTERS.contains(&user) {
            return false;
        }
        let agent = matches!(
            addon_identity::parse_identity(user),
            Some(AddOnIdentity::Agent { .. })
        );
        let broadcast = matches!(
            topic.split('/').collect::<Vec<_>>().as_slice(),
            ["sources", _, "sourcebroadcast"]
        );
        if agent && access == Access::Subscribe && broadcast {
            return true;
        }
        if topic == user || topic.starts_with(&format!("{user}/")) {
            return true;
        }
    }
    acl::allowed(user, access, topic)
}

/// PEM of a DER block.
fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A certificate of the hub's cluster CA with CN `cn`, and its key, as files in `dir`.
fn certificate_files(ca: &ClusterCa, cn: &str, dir: &Path) -> (PathBuf, PathBuf) {
    let (chain, key) = ca
        .issue_ephemeral(cn, None, chrono::Duration::hours(1), chrono::Utc::now())
        .expect("the cluster CA issues a certificate");
    let stem = cn.replace('/', "_");
    let cert_file = dir.join(format!("{stem}.pem"));
    let key_file = dir.join(format!("{stem}-key.der"));
    let chain_pem: String = chain.iter().map(|c| pem("CERTIFICATE", c)).collect();
    std::fs::write(&cert_file, chain_pem).unwrap();
    std::fs::write(&key_file, key.secret_der()).unwrap();
    (cert_file, key_file)
}

/// The add-on templates of the shipped `ocm-edge.acl`, uncommented, for `addon` and `cluster`.
fn addon_blocks(addon: &str, cluster: &str) -> String {
    let shipped = std::fs::read_to_string(acl_file()).unwrap();
    let begin = shipped
        .find("# --- BEGIN add-on templates")
        .expect("ocm-edge.acl marks its add-on templates (BEGIN)");
    let end = shipped
        .find("# --- END add-on templates")
        .expect("ocm-edge.acl marks its add-on templates (END)");
    let mut out = String::from("\n");
    for line in shipped[begin..end].lines().skip(1) {
        let line = line.strip_prefix('#').unwrap_or(line);
        let line = line.strip_prefix(' ').unwrap_or(line);
        out.push_str(&line.replace("<addon>", addon).replace("<cluster>", cluster));
        out.push('\n');
    }
    out
}

#[tokio::test]
async fn mosquitto_as_shipped_confines_addon_identities_to_their_own_topics() {
    let test = "mosquitto_as_shipped_confines_addon_identities_to_their_own_topics";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::create(dir.path(), "mosquitto");
    // Mosquitto reads the hub's cluster CA and revocation list as its own user: the way to them
    // must be open to it.
    let hub_dir = dir.path().join("hub");
    std::fs::create_dir_all(&hub_dir).unwrap();
    let cluster_ca = ClusterCa::load_or_create(&hub_dir, chrono::Utc::now()).unwrap();
    for d in [dir.path(), hub_dir.as_path()] {
        std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    cluster_ca.write_crl(&[], chrono::Utc::now()).unwrap();
    let users: Vec<(String, String)> = [HUB_USER, CONTROLLER, AGENT_C]
        .iter()
        .map(|u| (u.to_string(), password_of(u)))
        .collect();
    let ports = (free_port().unwrap(), free_port().unwrap());
    let broker = Mosquitto::start_shipped(&program, &pki, &users, &hub_dir, ports)
        .expect("mosquitto starts with the shipped configuration");
    // The operator's part: the controller's block and the password agent's, from the templates.
    broker
        .append_to_file("ocm-edge.acl", &addon_blocks("hello", "cluster-c"))
        .unwrap();
    broker.reload().unwrap();

    let login = async |name: &str, how: Login| -> Probe {
        let mut tls = TlsFiles {
            ca_file: Some(pki.ca_file.clone()),
            ..TlsFiles::default()
        };
        let (url, credentials) = match how {
            Login::Password => (broker.url(), Some((name.to_owned(), password_of(name)))),
            Login::Certificate => {
                let (cert, key) = certificate_files(&cluster_ca, name, dir.path());
                tls.client_cert_file = Some(cert);
                tls.client_key_file = Some(key);
                (broker.secured_url(), None)
            }
        };
        Probe::connect_with(
            &url,
            ProbeOptions {
                // The certificate listener makes the CN the client id whatever this says.
                client_id: name.to_owned(),
                credentials,
                tls,
                ..ProbeOptions::default()
            },
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{name} could not log in ({how:?}): {e}; log:\n{}",
                broker.log()
            )
        })
    };
    let mut clients = Vec::new();
    for id in &IDENTITIES {
        let client = login(id.name, id.login).await;
        // Mosquitto grants any subscription and checks each message it would deliver.
        client.subscribe("#").await.unwrap();
        clients.push(client);
    }
    let hub = login(HUB_USER, Login::Password).await;
    let message = |topic: &str, body: &str| MqttMessage {
        topic: topic.to_owned(),
        payload: body.as_bytes().to_vec(),
        ..MqttMessage::default()
    };

    // Reads: the hub publishes on every topic, then each reader's marker; what a reader got
    // before its marker is all it will get of them.
    for topic in TOPICS {
        hub.publish(&message(topic, "probe")).await.unwrap();
    }
    for id in &IDENTITIES {
        if let Some(marker) = id.marker {
            hub.publish(&message(marker, "marker")).await.unwrap();
        }
    }
    let mut failures = Vec::new();
    for (id, client) in IDENTITIES.iter().zip(clients.iter_mut()) {
        let Some(marker) = id.marker else {
            continue;
        };
        let mut read = BTreeSet::new();
        let got = client
            .recv_matching(WAIT, |m| {
                if m.payload == b"probe" {
                    read.insert(m.topic.clone());
                }
                m.payload == b"marker" && m.topic == marker
            })
            .await;
        assert!(
            got.is_some(),
            "{} receives its marker on {marker}; log:\n{}",
            id.name,
            broker.log()
        );
        let expected: BTreeSet<String> = TOPICS
            .iter()
            .filter(|t| mosquitto_allows(id.name, id.login, Access::Subscribe, t))
            .map(|t| t.to_string())
            .collect();
        if read != expected {
            failures.push(format!(
                "{} ({:?}) read {read:?}, expected {expected:?}",
                id.name, id.login
            ));
        }
    }

    // Publishes: each identity tries every topic; each publish is acknowledged (so routed or
    // dropped) before the next, and the hub's own marker comes after them all.
    let mut observer = Probe::connect_with(
        &broker.url(),
        ProbeOptions {
            client_id: "ocm-edge-observer-hub".into(),
            credentials: Some((HUB_USER.to_owned(), password_of(HUB_USER))),
            tls: TlsFiles {
                ca_file: Some(pki.ca_file.clone()),
                ..TlsFiles::default()
            },
            subscriptions: vec!["addons/#".into(), "sources/#".into(), "ocm-edge/#".into()],
            ..ProbeOptions::default()
        },
    )
    .await
    .expect("the hub's identity logs in");
    for (id, client) in IDENTITIES.iter().zip(&clients) {
        for topic in TOPICS {
            client.publish(&message(topic, id.name)).await.unwrap();
        }
    }
    hub.publish(&message("addons/observer-marker", "marker"))
        .await
        .unwrap();
    let mut published = Vec::new();
    let got = observer
        .recv_matching(WAIT, |m| {
            published.push((
                String::from_utf8_lossy(&m.payload).into_owned(),
                m.topic.clone(),
            ));
            m.topic == "addons/observer-marker"
        })
        .await;
    assert!(
        got.is_some(),
        "the observer receives the hub's marker; log:\n{}",
        broker.log()
    );
    for id in &IDENTITIES {
        let sent: BTreeSet<String> = published
            .iter()
            .filter(|(from, _)| from == id.name)
            .map(|(_, topic)| topic.clone())
            .collect();
        let expected: BTreeSet<String> = TOPICS
            .iter()
            .filter(|t| mosquitto_allows(id.name, id.login, Access::Publish, t))
            .map(|t| t.to_string())
            .collect();
        if sent != expected {
            failures.push(format!(
                "{} ({:?}) published on {sent:?}, expected {expected:?}",
                id.name, id.login
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "the shipped Mosquitto ACLs differ from ocm_edge_mqtt::acl beyond what \
         broker-config/README.md says:\n{}\nlog:\n{}",
        failures.join("\n"),
        broker.log()
    );

    // Where they differ, as documented: a cluster's certificate has a tree of its own name.
    let i = IDENTITIES
        .iter()
        .position(|id| id.name == CLUSTER_A)
        .unwrap();
    let cluster_a = &mut clients[i];
    cluster_a.drain();
    cluster_a
        .publish(&message("cluster-a/own-tree", "own"))
        .await
        .unwrap();
    let own = cluster_a
        .recv_matching(WAIT, |m| m.topic == "cluster-a/own-tree")
        .await;
    assert!(
        own.is_some(),
        "a cluster's certificate publishes and reads below its own name (`pattern readwrite %u/#`)"
    );
}
