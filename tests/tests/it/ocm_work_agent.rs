//! OCM's own work agent served by our hub: `work agent` of open-cluster-management.io/ocm v1.2.0,
//! built from its Go module (`tests/ocm/build.sh`), applying to the real control plane of
//! `tests/kube/` and talking to the hub through the hub's own embedded broker on its secure
//! defaults (TLS with the hub's CA, a login per cluster, per-cluster topics). The cluster is added
//! with `cluster add` (OCM's agent never sends our join request) and the agent's MQTT config is
//! the file `cluster broker-config` writes. A ManifestWork goes to the agent, its resources appear
//! in the API server, the agent's status (conditions and WellKnownStatus feedback) comes back to
//! the hub, and an update and a delete go through.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_cli::DataDirArg;
use ocm_edge_cli::commands::cluster::{BrokerConfigArgs, broker_config};
use ocm_edge_mqtt::BrokerUrl;
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::work::ManifestWork;
use ocm_edge_tests::fleet::{Fleet, FleetOptions};
use ocm_edge_tests::kube::{apply, get};
use ocm_edge_tests::wait::wait_until;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);
const CLUSTER: &str = "ocm-1";
/// Environment variable naming the directory `tests/ocm/build.sh` prints (`work` and the
/// AppliedManifestWork CRD).
const AGENT_DIR_ENV: &str = "OCM_EDGE_OCM_WORK_AGENT_DIR";

/// The directory of OCM's work agent; `None` (skipped, with a line saying so) without it, unless
/// `CI` is set: then it panics, since `.ci/run` builds it.
fn work_agent_dir(test: &str) -> Option<PathBuf> {
    match std::env::var_os(AGENT_DIR_ENV) {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: CI is set but {AGENT_DIR_ENV} is not; .ci/run builds OCM's work agent \
             (tests/ocm/build.sh) and sets it"
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: no OCM work agent; set {AGENT_DIR_ENV} to the directory \
                 tests/ocm/build.sh prints; set CI=1 to make this a failure"
            );
            None
        }
    }
}

fn manifest_work(mode: &str) -> ManifestWork {
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "shop", "namespace": CLUSTER},
        "spec": {
            "workload": {"manifests": [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ocm-shop"}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "settings", "namespace": "ocm-shop"},
                 "data": {"mode": mode}},
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "ocm-shop"},
                 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}
            ]},
            "manifestConfigs": [{
                "resourceIdentifier": {"group": "apps", "resource": "deployments",
                  "namespace": "ocm-shop", "name": "web"},
                "feedbackRules": [{"type": "WellKnownStatus"}]
            }]
        }
    }))
    .unwrap()
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

#[tokio::test]
async fn e2e_ocm_work_agent_built_from_its_module_is_served_by_the_hub() {
    let test = "e2e_ocm_work_agent_built_from_its_module_is_served_by_the_hub";
    if std::env::var_os("OCM_EDGE_TEST_LOG").is_some() {
        ocm_edge_tests::process::init_child_logging();
    }
    let Some(admin_kubeconfig) = ocm_edge_tests::kube::kubeconfig(test) else {
        return;
    };
    let Some(agent_dir) = work_agent_dir(test) else {
        return;
    };
    let admin = KubeApplier::connect(Some(&admin_kubeconfig)).await.unwrap();
    // The CRD OCM's agent keeps its AppliedManifestWorks in (OCM's operator installs it).
    let crd: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(agent_dir.join("appliedmanifestworks.crd.yaml")).unwrap(),
    )
    .unwrap();
    apply(&admin, crd).await;

    let fleet = Fleet::start_with(FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    })
    .await;
    let hub = fleet.admin().await;
    let added = hub
        .add_cluster(CLUSTER)
        .await
        .expect("the hub adds the cluster");
    assert_eq!(added.name, CLUSTER);
    let again = hub.add_cluster(CLUSTER).await.unwrap_err().to_string();
    assert!(again.contains("already known"), "{again}");

    let dir = tempfile::tempdir().unwrap();
    let url = BrokerUrl::parse(fleet.broker_url()).unwrap();
    let config_file = dir.path().join("mqtt.yaml");
    let config = broker_config(&BrokerConfigArgs {
        name: CLUSTER.to_owned(),
        broker_host: format!("{}:{}", url.host(), url.port()),
        source: fleet.options().source_id.clone(),
        days: 1,
        out: config_file.clone(),
        data: DataDirArg {
            data_dir: fleet.hub_dir(),
        },
    })
    .unwrap();
    std::fs::write(&config_file, config).unwrap();
    let log = dir.path().join("work-agent.log");
    let err_log = dir.path().join("work-agent.err");
    let start_agent = || {
        tokio::process::Command::new(agent_dir.join("work"))
            .arg("agent")
            .arg(format!("--spoke-cluster-name={CLUSTER}"))
            .arg(format!("--cloudevents-client-id={CLUSTER}"))
            .arg("--workload-source-driver=mqtt")
            .arg(format!(
                "--workload-source-config={}",
                config_file.display()
            ))
            .arg(format!("--spoke-kubeconfig={}", admin_kubeconfig.display()))
            .arg(format!("--kubeconfig={}", admin_kubeconfig.display()))
            .arg("--disable-leader-election")
            .arg("--status-sync-interval=1s")
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&err_log)
                    .unwrap(),
            )
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let mut agent = start_agent();

    hub.apply_manifest_work(manifest_work("blue"))
        .await
        .expect("the hub takes the work");
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "ocm-shop"}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ocm-shop"}});
    if let Err(e) = wait_until("OCM's agent applies the work", WAIT, || async {
        get(&admin, &config_map).await.is_some() && get(&admin, &deployment).await.is_some()
    })
    .await
    {
        panic!("{e}; OCM work agent log:\n{}", log_tail(&err_log));
    }
    assert_eq!(
        get(&admin, &config_map).await.unwrap()["data"]["mode"],
        "blue"
    );

    // Its status at the hub: Applied and Available, and the Deployment's readiness.
    let status_at_hub = || async {
        let Ok(work) = hub.get_work(CLUSTER, "shop").await else {
            return false;
        };
        let condition = |t: &str| {
            work.conditions
                .iter()
                .any(|c| c.type_ == t && c.status == ConditionStatus::True)
        };
        let ready = work.resource_status.iter().any(|m| {
            m.resource_meta.kind == "Deployment"
                && m.status_feedback
                    .values
                    .iter()
                    .any(|v| v.name == "ReadyReplicas" && v.field_value.integer == Some(2))
        });
        condition("Applied") && condition("Available") && ready
    };
    if let Err(e) = wait_until(
        "Applied, Available, ReadyReplicas=2 at the hub",
        WAIT,
        status_at_hub,
    )
    .await
    {
        panic!(
            "{e}; the hub has {:?}; OCM work agent log:\n{}",
            hub.get_work(CLUSTER, "shop").await,
            log_tail(&err_log)
        );
    }

    // Nothing OCM's agent sent was unreadable to the hub, refused or from a source it does not
    // serve (its first resync answer has `"conditions":null`, a Go nil slice: fixed in
    // schemas/src/api/work.rs, golden test in schemas/tests/it/golden_ocm_work_agent.rs).
    let counters = hub.stats().await.unwrap().counters;
    for counter in [
        "messagesMalformed",
        "agentEventsRefusedSignature",
        "statusesForeignSource",
        "eventsIgnoredNotAccepted",
    ] {
        assert_eq!(
            counters.get(counter).copied().unwrap_or(0),
            0,
            "{counter}: {counters:?}"
        );
    }

    // An update reaches the cluster.
    hub.apply_manifest_work(manifest_work("green"))
        .await
        .unwrap();
    wait_until("the update on the cluster", WAIT, || async {
        get(&admin, &config_map)
            .await
            .is_some_and(|c| c["data"]["mode"] == "green")
    })
    .await
    .unwrap();

    // An update made while the agent is down reaches the cluster when it is back: it connects with
    // a clean session and asks the hub for every spec it should hold (spec resync on its
    // broadcast topic), as OCM's agents do.
    agent.kill().await.unwrap();
    hub.apply_manifest_work(manifest_work("red")).await.unwrap();
    let mut agent = start_agent();
    if let Err(e) = wait_until("the update made while the agent was down", WAIT, || async {
        get(&admin, &config_map)
            .await
            .is_some_and(|c| c["data"]["mode"] == "red")
    })
    .await
    {
        panic!("{e}; OCM work agent log:\n{}", log_tail(&err_log));
    }

    // A delete: the agent removes what it applied and the hub forgets the work.
    hub.delete_work(CLUSTER, "shop").await.unwrap();
    if let Err(e) = wait_until(
        "the work's objects gone and the work gone at the hub",
        WAIT,
        || async {
            get(&admin, &config_map).await.is_none() && hub.get_work(CLUSTER, "shop").await.is_err()
        },
    )
    .await
    {
        panic!("{e}; OCM work agent log:\n{}", log_tail(&err_log));
    }
    agent.kill().await.unwrap();
}
