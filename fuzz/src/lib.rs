//! Shared by the fuzz targets: how a fuzz input becomes an MQTT message, and a hub core with an
//! accepted cluster holding a work, so agent events and admin requests reach deep code; admin
//! requests are also planned for scoped senders on the hub's two-team fixture
//! ([`admin_request_from_everyone`]).
//!
//! A message input is one byte choosing the topic and the MQTT content type (valid topics mostly,
//! so the fuzzer spends its time in the decoders behind them), then the payload. Seeds are real
//! events (`seeds/`), prefixed with that byte.

use chrono::{DateTime, TimeZone, Utc};
use ocm_edge_hub::admin::scope::{Access, authorize};
use ocm_edge_hub::admin::server::{handle_request, parse_request};
use ocm_edge_hub::admin::testkit::{alice, bob, two_teams, vera};
use ocm_edge_hub::availability::AvailabilityConfig;
use ocm_edge_hub::core::Record;
use ocm_edge_hub::core::objects::ObjectKind;
use ocm_edge_hub::core::{AgentInput, CoreConfig, HubCore};
use ocm_edge_schemas::admin::{AdminRequest, AdminResponse, CreateWork};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::wire::MqttMessage;

/// The hub's source id in every target.
pub const SOURCE: &str = "ocm-edge";
/// The cluster the agent side is, and the one the hub has accepted.
pub const CLUSTER: &str = "edge-1";

/// The response topic every `admin_credential` input is checked with (its seeds are signed for it).
pub const ADMIN_REPLY: &str = "ocm-edge/ocm-edge/admin/responses/ocm-edge-cli-fuzz";
/// The correlation data every `admin_credential` input is checked with.
pub const ADMIN_CORRELATION: &[u8] = b"fuzz-correlation";
/// The only user the fixture CA (`fixtures/hub-ca.der`) signed a credential for.
pub const ADMIN_USER: &str = "fuzz-admin";
/// The fixture hub's CA, DER (written with the seeds).
pub const HUB_CA: &[u8] = include_bytes!("../fixtures/hub-ca.der");
/// The fixture hub's signing certificate, DER (written with the seeds, which it signed).
pub const HUB_SIGNER: &[u8] = include_bytes!("../fixtures/hub-signer.der");

/// The fixture hub's signer, as an agent keeps it.
pub fn hub_signer() -> ocm_edge_agent::registration::trust::HubSigner {
    ocm_edge_agent::registration::trust::HubSigner {
        ca: HUB_CA.to_vec(),
        cert: HUB_SIGNER.to_vec(),
    }
}

/// The hub's admin authenticator with the fixture CA.
pub fn admin_authenticator() -> ocm_edge_hub::admin::auth::Authenticator {
    ocm_edge_hub::admin::auth::Authenticator::new(HUB_CA.to_vec())
}

/// The hub's own password in the `broker_login` target.
pub const HUB_SECRET: &str = "fuzz-hub-secret";
/// The dashboard password in the `broker_login` target.
pub const DASHBOARD_SECRET: &str = "fuzz-dashboard-secret";
/// The join token key in the `broker_login` target (its seeds carry a token made with it).
pub const TOKEN_SECRET: [u8; 32] = [2; 32];
/// The Ed25519 public key of the seed [1; 32], base64: [`CLUSTER`] is accepted with it in the
/// `broker_login` target, and no seed or input is signed with it.
pub const BOUND_KEY_BASE64: &str = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=";

/// The embedded broker's login check as the hub builds it, with fixed secrets: [`CLUSTER`]
/// accepted with [`BOUND_KEY_BASE64`], operators by the fixture CA, tokens by [`TOKEN_SECRET`].
pub fn broker_logins() -> (
    ocm_edge_hub::registration::logins::HubLogins,
    std::sync::Arc<ocm_edge_hub::registration::join_token::JoinTokens>,
) {
    broker_logins_with(HUB_CA.to_vec())
}

/// [`broker_logins`] with operators checked against the CA `ca_der`.
pub fn broker_logins_with(
    ca_der: Vec<u8>,
) -> (
    ocm_edge_hub::registration::logins::HubLogins,
    std::sync::Arc<ocm_edge_hub::registration::join_token::JoinTokens>,
) {
    let core = hub_core();
    let mut record = core
        .cluster(CLUSTER)
        .cloned()
        .expect("the fixture cluster joined");
    record.agent_key = Some(BOUND_KEY_BASE64.to_owned());
    let tokens = std::sync::Arc::new(
        ocm_edge_hub::registration::join_token::JoinTokens::from_secret(
            &TOKEN_SECRET,
            std::path::PathBuf::from("/nonexistent/ocm-edge-fuzz/revoked-join-tokens"),
        ),
    );
    let logins = ocm_edge_hub::registration::logins::HubLogins::new(
        HUB_SECRET.to_owned(),
        Some(DASHBOARD_SECRET.to_owned()),
        Some(ocm_edge_hub::admin::auth::Authenticator::new(ca_der)),
        ocm_edge_hub::registration::logins::Standings::of(&[record]),
        tokens.clone(),
    );
    (logins, tokens)
}

/// A `broker_login` input: username, client id and password, separated by NUL bytes.
pub fn login_of(data: &[u8]) -> Option<(String, String, &[u8])> {
    let mut parts = data.splitn(3, |&b| b == 0);
    let user = String::from_utf8(parts.next()?.to_vec()).ok()?;
    let client = String::from_utf8(parts.next()?.to_vec()).ok()?;
    Some((user, client, parts.next().unwrap_or_default()))
}

/// The `broker_login` input [`login_of`] reads back as these.
pub fn login_input(user: &str, client_id: &str, password: &str) -> Vec<u8> {
    [user.as_bytes(), client_id.as_bytes(), password.as_bytes()].join(&0u8)
}

/// A fixed clock: fuzzing must be repeatable.
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap()
}

/// An MQTT message from a fuzz input, in binary content mode as ocm-edge and OCM publish:
/// `data[0]` picks the topic (of `topics`, low 7 bits) and whether the Content Type property is
/// `application/json` (bit 7); then the user properties (the CloudEvents attributes), one per line
/// as `name=value`, up to an empty line; the rest is the payload.
pub fn message(data: &[u8], topics: &[String]) -> Option<MqttMessage> {
    let (&selector, mut rest) = data.split_first()?;
    let topic = topics[usize::from(selector & 0x7f) % topics.len()].clone();
    let content_type = (selector & 0x80 != 0).then(|| "application/json".to_owned());
    let mut user_properties = Vec::new();
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 1..];
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once('=').unwrap_or((&line, ""));
        user_properties.push((name.to_owned(), value.to_owned()));
    }
    Some(MqttMessage {
        topic,
        payload: rest.to_vec(),
        content_type,
        user_properties,
    })
}

/// The fuzz input [`message`] reads back as `msg` (for seeds), topic index 0.
pub fn input_of(msg: &MqttMessage) -> Vec<u8> {
    let mut bytes = vec![if msg.content_type.is_some() { 0x80 } else { 0 }];
    for (name, value) in &msg.user_properties {
        bytes.extend_from_slice(format!("{name}={value}\n").as_bytes());
    }
    bytes.push(b'\n');
    bytes.extend_from_slice(&msg.payload);
    bytes
}

/// A hub core where [`CLUSTER`] asked to join, was accepted, and holds the work `web`.
pub fn hub_core() -> HubCore {
    let mut core = HubCore::new(CoreConfig {
        source_id: SOURCE.to_owned(),
        availability: AvailabilityConfig::new(1.5).expect("a valid grace"),
        status_resync_batch: 1000,
    });
    let mut request = ManagedCluster::new(CLUSTER);
    request.spec.lease_duration_seconds = 60;
    let joined = core.handle_agent(
        AgentInput::JoinRequest {
            cluster: CLUSTER.to_owned(),
            request: Box::new(request),
        },
        now(),
    );
    core.apply(&joined.records);
    for request in [
        AdminRequest::accept_cluster(CLUSTER),
        AdminRequest::CreateWork(CreateWork {
            name: "web".to_owned(),
            clusters: vec![CLUSTER.to_owned()],
            manifests: vec![serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "default"}
            })],
            delete_option: None,
            manifest_configs: vec![],
            overwrite: false,
            per_cluster: None,
        }),
    ] {
        let (change, _) = handle_request(&core, &Access::Everything, request, now());
        core.apply(&change.records);
    }
    core
}

/// The `hub_admin_request` target: `data` as the hub reads it from its request topic, planned
/// for an unscoped sender on [`hub_core`] and for each scoped one of the two-team hub
/// (`ocm_edge_hub::admin::testkit`: alice, operator of team-a limited to the set eu; bob, operator
/// of team-b; vera, viewer of team-a) after the role and scope check, and the change applied.
///
/// # Panics
/// When a refused request changes something, or a scoped sender's request writes a work to a
/// cluster it does not reach, an object outside its namespaces, a new cluster set or a cluster.
pub fn admin_request_from_everyone(data: &[u8]) {
    let Ok(request) = parse_request(data) else {
        return;
    };
    let mut core = hub_core();
    let (change, response) = handle_request(&core, &Access::Everything, request.clone(), now());
    assert!(
        matches!(response, AdminResponse::Ok(_)) || change.is_empty(),
        "a refused request changed something"
    );
    core.apply(&change.records);

    let mut teams = two_teams(now());
    for who in [alice(), bob(), vera()] {
        let Ok(access) = authorize(&who, &request, &teams) else {
            continue;
        };
        let (change, response) = handle_request(&teams, &access, request.clone(), now());
        if !matches!(response, AdminResponse::Ok(_)) {
            assert!(change.is_empty(), "a refused request changed something");
            continue;
        }
        for record in &change.records {
            let out_of_scope = match record {
                Record::Work(w) => !access.sees_cluster(&w.key.cluster),
                Record::ForgetWork(key) => !access.sees_cluster(&key.cluster),
                Record::Object(o) => {
                    let key = o.key();
                    if key.kind == ObjectKind::ManagedClusterSet {
                        // A set's status may follow a binding; a new set is the admin's.
                        teams.objects().get(&key).is_none()
                    } else {
                        !access.sees_namespace(&key.namespace)
                    }
                }
                Record::ForgetObject(key) => {
                    key.kind == ObjectKind::ManagedClusterSet
                        || !access.sees_namespace(&key.namespace)
                }
                Record::Cluster(_) => true,
                _ => false,
            };
            assert!(
                !out_of_scope,
                "{} ({:?}) reached out of its scope with {}: {record:?}",
                who.user,
                who.scope,
                request.command()
            );
        }
        teams.apply(&change.records);
    }
}

/// Writes `seeds/` (run after a wire or admin change: `cargo test --manifest-path fuzz/Cargo.toml
/// -- --ignored write_seeds`): real messages as ocm-edge's agent, hub and CLI build them, maestro's
/// published events (the copies in `schemas/tests/fixtures/vectors/maestro/`), and the CLI's YAML
/// fixtures.
#[cfg(test)]
mod seeds {
    use std::path::{Path, PathBuf};

    use ocm_edge_agent::events::AgentIdentity;
    use ocm_edge_hub::process::events::encode_outbound;
    use ocm_edge_schemas::admin::AdminRequest;
    use ocm_edge_schemas::api::cluster::ManagedCluster;
    use ocm_edge_schemas::wire::{MqttMessage, encode};

    use super::*;

    fn dir(target: &str) -> PathBuf {
        let d = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("seeds")
            .join(target);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write_message(target: &str, name: &str, msg: &MqttMessage) {
        assert_eq!(
            &message(&input_of(msg), std::slice::from_ref(&msg.topic)).unwrap(),
            msg
        );
        std::fs::write(dir(target).join(name), input_of(msg)).unwrap();
    }

    /// Only the `cluster_certificate` seeds (`cargo test --manifest-path fuzz/Cargo.toml --
    /// --ignored write_cluster_certificate_seeds`): certificates the hub's cluster CA issues, for
    /// [`BOUND_KEY_BASE64`] and [`CLUSTER`] and for another cluster, as PEM text (first byte 0)
    /// and as DER (first byte 1).
    #[test]
    #[ignore = "writes the seed files"]
    fn write_cluster_certificate_seeds() {
        let data = tempfile::tempdir().unwrap();
        let ca =
            ocm_edge_hub::registration::cluster_ca::ClusterCa::load_or_create(data.path(), now())
                .unwrap();
        for cluster in [CLUSTER, "edge-2"] {
            let cert = ca
                .issue_for_key(cluster, BOUND_KEY_BASE64, chrono::Duration::days(30), now())
                .unwrap();
            let mut text = vec![0u8];
            text.extend_from_slice(cert.pem.as_bytes());
            std::fs::write(
                dir("cluster_certificate").join(format!("{cluster}-pem")),
                text,
            )
            .unwrap();
            // The first PEM block (the cluster's certificate; the CA follows it).
            let b64: String = cert
                .pem
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with("-----END"))
                .collect();
            let der =
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
            let mut bytes = vec![1u8];
            bytes.extend_from_slice(&der);
            std::fs::write(
                dir("cluster_certificate").join(format!("{cluster}-der")),
                bytes,
            )
            .unwrap();
        }
    }

    #[test]
    #[ignore = "writes the seed files"]
    fn write_seeds() {
        let agent = AgentIdentity {
            cluster: CLUSTER.to_owned(),
            agent_id: format!("{CLUSTER}-work-agent"),
        };
        let topic = ocm_edge_schemas::wire::topic::agent_events(SOURCE, CLUSTER).unwrap();
        let mut cluster = ManagedCluster::new(CLUSTER);
        cluster.spec.lease_duration_seconds = 60;
        cluster
            .metadata
            .labels
            .insert("region".into(), "eu-west".into());
        for (name, event) in [
            ("join", agent.join_request(&cluster, now()).unwrap()),
            (
                "cluster-status",
                agent.cluster_status(&cluster, now()).unwrap(),
            ),
            ("lease", agent.lease_renewal(60, now()).unwrap()),
            ("presence", agent.presence(false, 3, now()).unwrap()),
            (
                "spec-resync",
                agent.spec_resync_request(vec![], None, now()).unwrap(),
            ),
        ] {
            write_message(
                "hub_agent_message",
                name,
                &encode(&event, topic.clone()).unwrap(),
            );
        }

        // One hub CA for everything signed below, written as a fixture with its signing
        // certificate (the targets compile both in at their next build).
        let pki_dir = tempfile::tempdir().unwrap();
        let pki = ocm_edge_hub::pki::HubPki::load_or_create(pki_dir.path(), now()).unwrap();
        let signer = ocm_edge_hub::pki::signing::EventSigner::load_or_create(&pki, now()).unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        std::fs::write(fixtures.join("hub-ca.der"), pki.ca_der().unwrap()).unwrap();
        std::fs::write(fixtures.join("hub-signer.der"), signer.certificate()).unwrap();
        let fresh = ocm_edge_agent::registration::trust::HubSigner {
            ca: pki.ca_der().unwrap(),
            cert: signer.certificate().to_vec(),
        };
        let trust =
            ocm_edge_agent::registration::trust::HubTrust::new(Some(fresh.ca_pin()), Some(fresh));

        // What the hub sends, signed: the accepted cluster's view and the work's spec event.
        let core = hub_core();
        let (change, _) = handle_request(
            &core,
            &Access::Everything,
            AdminRequest::CreateWork(CreateWork {
                name: "web2".to_owned(),
                clusters: vec![CLUSTER.to_owned()],
                manifests: vec![serde_json::json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"replicas": 2}
                })],
                delete_option: None,
                manifest_configs: vec![],
                overwrite: false,
            }),
            now(),
        );
        let views = core.all_hub_views();
        for (i, out) in change.outbound.iter().chain(&views.outbound).enumerate() {
            let msg = encode_outbound(SOURCE, out, now(), &signer).unwrap();
            // Checked against the fixture just written.
            assert_eq!(
                trust.check(&msg, now()),
                Ok(ocm_edge_agent::registration::trust::Checked::Trusted)
            );
            write_message("agent_inbound", &format!("hub-{i}"), &msg);
        }

        // Admin requests as the CLI sends them.
        for (name, request) in [
            ("accept", AdminRequest::accept_cluster(CLUSTER)),
            (
                "list-works",
                AdminRequest::ListWorks {
                    cluster: None,
                    after: None,
                    limit: None,
                },
            ),
            (
                "create-work",
                AdminRequest::CreateWork(CreateWork {
                    name: "db".to_owned(),
                    clusters: vec![CLUSTER.to_owned()],
                    manifests: vec![serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": "db"}})],
                    delete_option: None,
                    manifest_configs: vec![],
                    overwrite: true,
                }),
            ),
            // An admin's: the built-in set of the fixture's cluster.
            (
                "set-cluster-set",
                AdminRequest::SetClusterSet {
                    set: "default".to_owned(),
                    clusters: vec![CLUSTER.to_owned()],
                },
            ),
            // As the two-team hub names them, so scoped senders reach deep.
            (
                "bind-cluster-set",
                AdminRequest::BindClusterSet {
                    set: "eu".to_owned(),
                    namespace: Some("team-a".to_owned()),
                },
            ),
            (
                "unbind-cluster-set",
                AdminRequest::UnbindClusterSet {
                    set: "eu".to_owned(),
                    namespace: Some("team-a".to_owned()),
                },
            ),
        ] {
            std::fs::write(
                dir("hub_admin_request").join(name),
                serde_json::to_vec(&request).unwrap(),
            )
            .unwrap();
        }

        // Signed admin requests, by a credential of the same CA.
        let (pem, _) = ocm_edge_hub::admin::users::issue(
            &pki,
            ADMIN_USER,
            ocm_edge_schemas::admin::Role::Admin,
            chrono::Duration::days(3650),
            now(),
        )
        .unwrap();
        let credential =
            ocm_edge_cli::client::credential::Credential::from_pem(pem.as_bytes()).unwrap();
        let topic = ocm_edge_schemas::wire::topic::admin_requests(SOURCE).unwrap();
        for (name, payload) in [
            ("stats", br#"{"command":"stats"}"#.to_vec()),
            (
                "accept",
                br#"{"command":"acceptCluster","name":"edge-1"}"#.to_vec(),
            ),
        ] {
            let user_properties = credential.sign_at(
                &topic,
                ADMIN_REPLY,
                ADMIN_CORRELATION,
                &payload,
                now().timestamp(),
            );
            let msg = MqttMessage {
                topic: topic.clone(),
                payload,
                content_type: None,
                user_properties,
            };
            // Checked against the CA just written (the targets compile it in at their next build).
            let fresh = ocm_edge_hub::admin::auth::Authenticator::new(pki.ca_der().unwrap());
            assert!(
                fresh
                    .authenticate(&msg, ADMIN_REPLY, ADMIN_CORRELATION, now())
                    .is_ok()
            );
            write_message("admin_credential", name, &msg);
        }

        // Logins to the embedded broker, as the hub, a dashboard, the CLI and agents make them.
        let logins = [
            (
                "hub",
                ocm_edge_mqtt::acl::HUB_USER,
                "ocm-edge-hub",
                HUB_SECRET.to_owned(),
            ),
            (
                "dashboard",
                ocm_edge_mqtt::acl::DASHBOARD_USER,
                "grafana",
                DASHBOARD_SECRET.to_owned(),
            ),
            (
                "operator",
                ocm_edge_mqtt::acl::OPERATOR_USER,
                "ocm-edge-cli-fuzz",
                credential.login_password(ocm_edge_mqtt::acl::OPERATOR_USER, "ocm-edge-cli-fuzz"),
            ),
        ];
        let key_dir = tempfile::tempdir().unwrap();
        let key =
            ocm_edge_agent::registration::key::AgentKey::load_or_create(key_dir.path()).unwrap();
        let token = ocm_edge_hub::registration::join_token::JoinTokens::from_secret(
            &TOKEN_SECRET,
            PathBuf::from("/nonexistent"),
        )
        .create(chrono::Duration::days(365 * 70), now())
        .unwrap()
        .token;
        // Checked against the CA just written (the targets compile it in at their next build).
        let (check, _) = broker_logins_with(pki.ca_der().unwrap());
        use ocm_edge_mqtt::broker::LoginCheck as _;
        for (name, user, client, password) in logins.into_iter().chain([
            (
                "joining",
                "edge-2",
                "edge-2-agent",
                key.login_password("edge-2", "edge-2-agent", Some(&token)),
            ),
            (
                "accepted-other-key",
                CLUSTER,
                "edge-1-agent",
                key.login_password(CLUSTER, "edge-1-agent", None),
            ),
        ]) {
            let ok = check.check(user, client, password.as_bytes()).is_ok();
            assert_eq!(ok, name != "accepted-other-key", "{name}");
            std::fs::write(
                dir("broker_login").join(name),
                login_input(user, client, &password),
            )
            .unwrap();
        }

        // maestro's events, and the CLI's YAML fixtures.
        let vectors =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/tests/fixtures/vectors/maestro");
        for (file, target) in [
            ("cloudevents.agent.json", "hub_agent_message"),
            ("cloudevents.spec.maestro.json", "agent_inbound"),
        ] {
            if let Ok(json) = std::fs::read(vectors.join(file)) {
                let event = ocm_edge_schemas::wire::structured::parse(&json).unwrap();
                let msg = encode(&event, "t").unwrap();
                write_message(target, &format!("maestro-{file}"), &msg);
            }
        }
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hub/cli/tests/fixtures/cli");
        for entry in walk(&fixtures) {
            if entry.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let name = entry
                    .strip_prefix(&fixtures)
                    .unwrap()
                    .display()
                    .to_string()
                    .replace('/', "-");
                std::fs::copy(&entry, dir("yaml_input").join(name)).unwrap();
            }
        }
    }

    /// Every seed of `hub_admin_request` goes through the target's checks (a stable build runs
    /// them; the fuzzer runs them on its mutations).
    #[test]
    fn the_admin_request_seeds_pass_the_target() {
        for entry in std::fs::read_dir(dir("hub_admin_request")).unwrap() {
            admin_request_from_everyone(&std::fs::read(entry.unwrap().path()).unwrap());
        }
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
