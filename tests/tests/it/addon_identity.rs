//! Add-on agents' own MQTT identities on the hub's embedded broker, used by an add-on agent that
//! is not ours: Mosquitto's command-line clients read the Secret the edge agent wrote, log in as
//! the add-on on that cluster, talk with the add-on's hub-side controller on the add-on's
//! topics, publish an AddOnPlacementScore that moves a placement, are refused on another
//! cluster's and another add-on's topics, and no longer get in once the add-on is disabled or
//! the cluster removed.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use base64::Engine as _;
use ocm_edge_schemas::admin::PlacementView;
use ocm_edge_schemas::wire::addon_identity;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::mosquitto::find_program;
use ocm_edge_tests::wait::{wait_for, wait_until};
use serde_json::{Value, json};

const ADDON: &str = "hello";
pub(crate) const NS: &str = "hello-agent";

/// `mosquitto_pub` and `mosquitto_sub`, or `None` after saying why the test is skipped (a
/// failure when `CI` is set: `.ci/run` installs mosquitto-clients).
pub(crate) fn require_clients(test: &str) -> Option<(PathBuf, PathBuf)> {
    match (find_program("mosquitto_pub"), find_program("mosquitto_sub")) {
        (Some(p), Some(s)) => Some((p, s)),
        _ if std::env::var_os("CI").is_some() => panic!(
            "{test}: mosquitto_pub/mosquitto_sub are not installed but CI is set; install them (apt-get install mosquitto-clients, as .ci/run does)"
        ),
        _ => {
            eprintln!(
                "SKIPPED {test}: mosquitto_pub/mosquitto_sub are not installed (apt-get install mosquitto-clients); set CI=1 to make this a failure"
            );
            None
        }
    }
}

/// What an add-on agent reads from its Secret (the keys the edge agent writes).
#[derive(Debug, Clone)]
struct Login {
    host: String,
    port: String,
    ca: PathBuf,
    username: String,
    password: String,
}

/// The MQTT clients, as an add-on agent in any language would use them.
struct Clients {
    publish: PathBuf,
    subscribe: PathBuf,
}

impl Clients {
    fn args(login: &Login, client_id: &str) -> Vec<String> {
        [
            "-V",
            "5",
            "-h",
            &login.host,
            "-p",
            &login.port,
            "--cafile",
            login.ca.to_str().unwrap(),
            "-u",
            &login.username,
            "-P",
            &login.password,
            "-i",
            client_id,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Publishes `payload` (QoS 1, retained) on `topic`; waits for the broker's answer.
    async fn publish(&self, login: &Login, topic: &str, payload: &str) -> Output {
        run(tokio::process::Command::new(&self.publish)
            .args(Self::args(login, &login.username))
            .args(["-q", "1", "-r", "-t", topic, "-m", payload]))
        .await
    }

    /// The first message on `filter` (retained ones included), waiting at most `WAIT`.
    async fn first(&self, login: &Login, client_id: &str, filter: &str) -> Output {
        run(tokio::process::Command::new(&self.subscribe)
            .args(Self::args(login, client_id))
            .args(["-q", "1", "-C", "1", "-t", filter])
            .args(["-W", &WAIT.as_secs().to_string()]))
        .await
    }
}

async fn run(command: &mut tokio::process::Command) -> Output {
    let child = command
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(WAIT + Duration::from_secs(10), child)
        .await
        .expect("the MQTT client ends within its own bound")
        .expect("the MQTT client runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn received(out: &Output) -> String {
    assert!(out.status.success(), "expected a message: {}", text(out));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The add-on's objects: a template asking for a registration (OCM's KubeClient; an MQTT
/// identity here), its config (the install namespace) and the add-on.
pub(crate) fn addon_objects(name: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
            "metadata": {"name": name},
            "spec": {"addonName": name,
                "registration": [{"type": "KubeClient"}],
                "agentSpec": {"workload": {"manifests": [
                    {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": format!("{name}-settings"), "namespace": "{{INSTALL_NAMESPACE}}"},
                     "data": {"cluster": "{{CLUSTER_NAME}}"}}]}}}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"agentInstallNamespace": NS}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": name},
            "spec": {"defaultConfigs": [
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                 "name": name},
                {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                 "namespace": "default", "name": name}]}}),
    ]
}

/// Waits for `addon`'s Secret on `cluster` and reads it as its agent would.
async fn login_from_secret(fleet: &Fleet, cluster: &str, addon: &str, dir: &Path) -> Login {
    let secret = fleet
        .wait_sim(cluster, "the add-on's Secret", |sim| {
            sim.get("Secret", NS, &addon_identity::secret_name(addon))
        })
        .await
        .unwrap();
    let field = |k: &str| {
        let b64 = secret["data"][k]
            .as_str()
            .unwrap_or_else(|| panic!("the Secret has no {k}: {secret}"));
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap(),
        )
        .unwrap()
    };
    let broker = field("broker");
    let (host, port) = broker
        .strip_prefix("mqtts://")
        .and_then(|hp| hp.rsplit_once(':'))
        .unwrap_or_else(|| panic!("broker {broker:?} is mqtts://HOST:PORT"));
    let ca = dir.join(format!("{addon}-{cluster}-ca.crt"));
    std::fs::write(&ca, field("ca.crt")).unwrap();
    assert_eq!(field("clientId"), field("username"));
    assert_eq!(field("topicPrefix"), field("username"));
    assert_eq!(
        field("scoresTopic"),
        addon_identity::scores_topic(addon, cluster)
    );
    Login {
        host: host.to_owned(),
        port: port.to_owned(),
        ca,
        username: field("username"),
        password: field("password"),
    }
}

/// The controller's login, from what `ocm-edge addon broker-config` writes on the hub's machine.
fn controller_login(fleet: &Fleet, addon: &str, agent: &Login, dir: &Path) -> Login {
    use ocm_edge_cli::commands::addon::{BrokerConfigArgs, broker_config};
    let yaml = broker_config(&BrokerConfigArgs {
        name: addon.to_owned(),
        broker_host: format!("{}:{}", agent.host, agent.port),
        out: "-".into(),
        data: ocm_edge_cli::DataDirArg {
            data_dir: fleet.hub_dir(),
        },
    })
    .unwrap();
    let config: Value = serde_yaml_ng::from_str(&yaml).unwrap();
    let field = |k: &str| config[k].as_str().unwrap().to_owned();
    assert_eq!(
        field("broker"),
        format!("mqtts://{}:{}", agent.host, agent.port)
    );
    let ca = dir.join(format!("{addon}-controller-ca.crt"));
    std::fs::write(&ca, field("caData")).unwrap();
    Login {
        host: agent.host.clone(),
        port: agent.port.clone(),
        ca,
        username: field("username"),
        password: field("password"),
    }
}

fn decided(p: &PlacementView) -> Vec<String> {
    p.decisions.iter().map(|d| d.cluster.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_addon_agent_that_is_not_ours_talks_to_its_controller_scores_and_is_kept_to_its_own_topics()
 {
    let test = "an_addon_agent_that_is_not_ours_talks_to_its_controller_scores_and_is_kept_to_its_own_topics";
    let Some((publish, subscribe)) = require_clients(test) else {
        return;
    };
    let clients = Clients { publish, subscribe };
    let mut fleet = Fleet::start_with(FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    fleet.start_accepted("edge-a", &[]).await;
    fleet.start_accepted("edge-b", &[]).await;
    // An agent that trusts the hub's broker by its pin alone (no CA file), as the quickstart's.
    fleet
        .agent("edge-c")
        .configure(|c| {
            c.tls.ca_pin = c.hub_ca_pin;
            c.tls.ca_file = None;
        })
        .start()
        .await;
    fleet.accept("edge-c").await;
    let admin = fleet.admin().await;
    for object in addon_objects(ADDON)
        .into_iter()
        .chain(addon_objects("other"))
    {
        admin.apply_object(object).await.unwrap();
    }
    let both = vec!["edge-a".to_owned(), "edge-b".to_owned()];
    admin
        .switch_addons(true, vec![ADDON.into(), "other".into()], both.clone(), None)
        .await
        .unwrap();

    // Each cluster's agent wrote the add-on's Secret once the hub bound its identity.
    let a = login_from_secret(&fleet, "edge-a", ADDON, dir.path()).await;
    let b = login_from_secret(&fleet, "edge-b", ADDON, dir.path()).await;
    let other_a = login_from_secret(&fleet, "edge-a", "other", dir.path()).await;
    // The pinned agent writes the CA it verified by the pin.
    admin
        .switch_addons(true, vec![ADDON.into()], vec!["edge-c".into()], None)
        .await
        .unwrap();
    let c = login_from_secret(&fleet, "edge-c", ADDON, dir.path()).await;
    let out = clients
        .publish(
            &c,
            "addons/hello/clusters/edge-c/pin-check",
            "ready on edge-c",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(a.username, "addons/hello/clusters/edge-a");
    assert_ne!(a.password, b.password, "one password per cluster");
    assert_ne!(a.password, other_a.password, "one password per add-on");

    // The hub-side controller logs in with what `ocm-edge addon broker-config` writes.
    let controller = controller_login(&fleet, ADDON, &a, dir.path());

    // Agent to controller, and controller to agent, on the add-on's topics.
    let out = clients
        .publish(&a, "addons/hello/clusters/edge-a/to-hub", "ready on edge-a")
        .await;
    assert!(out.status.success(), "{}", text(&out));
    let got = clients
        .first(
            &controller,
            "addons/hello/controller",
            "addons/hello/clusters/+/to-hub",
        )
        .await;
    assert_eq!(received(&got), "ready on edge-a");
    let out = clients
        .publish(
            &controller,
            "addons/hello/clusters/edge-a/to-agent",
            "sample every 5s",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out));
    let got = clients
        .first(
            &a,
            "addons/hello/clusters/edge-a/r1",
            "addons/hello/clusters/edge-a/to-agent",
        )
        .await;
    assert_eq!(received(&got), "sample every 5s");

    // Another cluster's topic: edge-b's own retained message stays, edge-a's write is refused.
    let out = clients
        .publish(&b, "addons/hello/clusters/edge-b/to-hub", "ready on edge-b")
        .await;
    assert!(out.status.success(), "{}", text(&out));
    let refused_before = fleet
        .hub()
        .embedded_broker()
        .unwrap()
        .stats()
        .refused_topics();
    clients
        .publish(
            &a,
            "addons/hello/clusters/edge-b/to-hub",
            "forged by edge-a",
        )
        .await;
    clients
        .publish(&a, "addons/other/clusters/edge-a/to-hub", "forged by hello")
        .await;
    let got = clients
        .first(
            &controller,
            "addons/hello/controller/r2",
            "addons/hello/clusters/edge-b/to-hub",
        )
        .await;
    assert_eq!(received(&got), "ready on edge-b");
    let other_controller = controller_login(&fleet, "other", &a, dir.path());
    let out = clients
        .publish(
            &other_a,
            "addons/other/clusters/edge-a/to-hub",
            "ready, other",
        )
        .await;
    assert!(out.status.success(), "{}", text(&out));
    let got = clients
        .first(
            &other_controller,
            "addons/other/controller",
            "addons/other/clusters/edge-a/to-hub",
        )
        .await;
    assert_eq!(received(&got), "ready, other");
    // Reading another cluster's or another add-on's topics is refused too.
    for filter in [
        "addons/hello/clusters/edge-b/#",
        "addons/other/clusters/edge-a/#",
        "addons/hello/clusters/+/#",
        "sources/ocm-edge/consumers/edge-a/sourceevents",
    ] {
        let out = clients
            .first(&a, "addons/hello/clusters/edge-a", filter)
            .await;
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("subscription requests were denied"),
            "{filter} must be refused: {}",
            text(&out)
        );
    }
    assert!(
        fleet
            .hub()
            .embedded_broker()
            .unwrap()
            .stats()
            .refused_topics()
            >= refused_before + 6,
        "two publishes and four subscriptions refused"
    );
    // A cluster's add-on password opens no other cluster, nor the controller's identity.
    let mut stolen = b.clone();
    stolen.password = a.password.clone();
    let out = clients
        .publish(&stolen, "addons/hello/clusters/edge-b/to-hub", "x")
        .await;
    assert!(
        !out.status.success(),
        "edge-a's password for edge-b: {}",
        text(&out)
    );

    // A score from the add-on agent moves a placement; one for another cluster is dropped.
    for object in [
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
               "metadata": {"name": "default", "namespace": "default"}, "spec": {"clusterSet": "default"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "busiest", "namespace": "default"},
               "spec": {"numberOfClusters": 1, "clusterSets": ["default"],
                        "prioritizerPolicy": {"mode": "Exact", "configurations": [
                           {"scoreCoordinate": {"type": "AddOn",
                                                "addOn": {"resourceName": "hello-load",
                                                          "scoreName": "devices"}},
                            "weight": 1}]}}}),
    ] {
        admin.apply_object(object).await.unwrap();
    }
    let score = |value: i32, namespace: &str| {
        json!({"apiVersion": "cluster.open-cluster-management.io/v1alpha1",
               "kind": "AddOnPlacementScore",
               "metadata": {"name": "hello-load", "namespace": namespace},
               "status": {"scores": [{"name": "devices", "value": value}]}})
        .to_string()
    };
    let wait_decided = |cluster: &'static str| {
        let admin = &admin;
        async move {
            wait_for(&format!("placement busiest on {cluster}"), WAIT, || async {
                let p = admin.get_placement(Some("default"), "busiest").await.ok()?;
                (decided(&p) == [cluster]).then_some(())
            })
            .await
            .unwrap();
        }
    };
    let scores_a = addon_identity::scores_topic(ADDON, "edge-a");
    let scores_b = addon_identity::scores_topic(ADDON, "edge-b");
    assert!(
        clients
            .publish(&a, &scores_a, &score(10, "edge-a"))
            .await
            .status
            .success()
    );
    assert!(
        clients
            .publish(&b, &scores_b, &score(90, "edge-b"))
            .await
            .status
            .success()
    );
    wait_decided("edge-b").await;
    let dropped = || async {
        fleet
            .stats()
            .await
            .counters
            .get("addonScoresRefused")
            .copied()
            .unwrap_or(0)
    };
    let dropped_before = dropped().await;
    // edge-a's add-on on its own topic, naming edge-b: dropped and counted.
    assert!(
        clients
            .publish(&a, &scores_a, &score(0, "edge-b"))
            .await
            .status
            .success()
    );
    wait_until("the forged score counted", WAIT, || async {
        dropped().await > dropped_before
    })
    .await
    .unwrap();
    // A score named for something else than the add-on (another team's resource): dropped too.
    let dropped_before = dropped().await;
    let foreign = score(100, "edge-a").replace("hello-load", "cpu-ratio");
    assert!(
        clients
            .publish(&a, &scores_a, &foreign)
            .await
            .status
            .success()
    );
    wait_until("the foreign score counted", WAIT, || async {
        dropped().await > dropped_before
    })
    .await
    .unwrap();
    assert!(
        clients
            .publish(&a, &scores_a, &score(100, "edge-a"))
            .await
            .status
            .success()
    );
    wait_decided("edge-a").await;

    // Disabled on edge-a: the identity no longer logs in and the Secret goes; edge-b's stays.
    admin
        .switch_addons(false, vec![ADDON.into()], vec!["edge-a".into()], None)
        .await
        .unwrap();
    wait_until("edge-a's add-on identity refused", WAIT, || async {
        !clients
            .publish(&a, "addons/hello/clusters/edge-a/to-hub", "still here?")
            .await
            .status
            .success()
    })
    .await
    .unwrap();
    fleet
        .wait_sim("edge-a", "the Secret removed", |sim| {
            sim.get("Secret", NS, &addon_identity::secret_name(ADDON))
                .is_none()
                .then_some(())
        })
        .await
        .unwrap();
    let out = clients
        .publish(&b, "addons/hello/clusters/edge-b/to-hub", "edge-b goes on")
        .await;
    assert!(out.status.success(), "{}", text(&out));

    // edge-b removed from the hub: its add-ons' identities go with it.
    admin.remove_cluster("edge-b", false).await.unwrap();
    wait_until("edge-b's add-on identity refused", WAIT, || async {
        !clients
            .publish(&b, "addons/hello/clusters/edge-b/to-hub", "after removal")
            .await
            .status
            .success()
    })
    .await
    .unwrap();

    fleet.stop_agents().await;
    fleet.shutdown().await;
}
