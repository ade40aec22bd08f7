//! The whole path on a real Kubernetes control plane (`tests/kube/e2e.sh` starts one): the hub on
//! its secure defaults, the real `ocm-edge-agent --applier kube` binary with the ServiceAccount and
//! RBAC of its Helm chart (the work rights narrowed to the kinds these tests' works contain,
//! `tests/kube/agent-e2e-values.yaml`) and a service-account token (not the admin's), and a
//! ManifestWork with a Namespace, a CRD, a custom resource of it, a ConfigMap and a Deployment. The
//! resources appear in the API server, the hub sees the work Applied with the Deployment's
//! WellKnownStatus and JSONPaths feedback, an update reaches the cluster and deletes the resource it
//! dropped, a work deleted with the Orphan policy leaves its resource behind, and a delete removes
//! what the work created.

use std::time::Duration;

use ocm_edge_agent::applier::Applier as _;
use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_agent::work::plan::{ApplyAction, ApplyStrategy};
use ocm_edge_agent::work::resource::ResourceRef;
use ocm_edge_schemas::api::cluster::{CLAIM_ID, CLAIM_KUBE_VERSION, CLAIM_PRODUCT};
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::work::{Manifest, ManifestWork};
use ocm_edge_tests::fleet::{Fleet, FleetOptions};
use ocm_edge_tests::kube::{agent_kubeconfig, get};
use ocm_edge_tests::wait::wait_until;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const CLUSTER: &str = "kube-1";

/// The work `shop`: a Namespace, a CRD, a custom resource of it (left out when `with_cart` is
/// false: the agent then deletes it), a ConfigMap with `mode: config_value` and a Deployment whose
/// readiness comes back as WellKnownStatus and whose `spec.replicas` as a JSONPaths feedback.
fn manifest_work(config_value: &str, with_cart: bool) -> ManifestWork {
    let cart = json!({"apiVersion": "shop.ocm-edge.test/v1", "kind": "Cart",
        "metadata": {"name": "main", "namespace": "e2e-shop"}, "spec": {"items": 3}});
    let mut work = json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "shop", "namespace": CLUSTER},
        "spec": {
            "workload": {"manifests": [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e-shop"}},
                {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "carts.shop.ocm-edge.test"},
                 "spec": {"group": "shop.ocm-edge.test", "scope": "Namespaced",
                   "names": {"plural": "carts", "singular": "cart", "kind": "Cart"},
                   "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object",
                       "x-kubernetes-preserve-unknown-fields": true}}}]}},
                cart,
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "settings", "namespace": "e2e-shop"},
                 "data": {"mode": config_value}},
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "e2e-shop"},
                 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}
            ]},
            "manifestConfigs": [{
                "resourceIdentifier": {"group": "apps", "resource": "deployments",
                  "namespace": "e2e-shop", "name": "web"},
                "feedbackRules": [{"type": "WellKnownStatus"},
                    {"type": "JSONPaths", "jsonPaths": [{"name": "desired", "path": ".spec.replicas"}]}]
            }]
        }
    });
    if !with_cart {
        let manifests = work["spec"]["workload"]["manifests"]
            .as_array_mut()
            .unwrap();
        manifests.retain(|m| m["kind"] != "Cart");
    }
    serde_json::from_value(work).unwrap()
}

/// The work `keep`: one ConfigMap in `default`, deleted with the Orphan policy (left behind).
fn orphaning_work() -> ManifestWork {
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "keep", "namespace": CLUSTER},
        "spec": {
            "workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "e2e-kept", "namespace": "default"},
                 "data": {"kept": "yes"}}
            ]},
            "deleteOption": {"propagationPolicy": "Orphan"}
        }
    }))
    .unwrap()
}

/// What an end-to-end test runs on: the real cluster's admin, a directory, a kubeconfig of the
/// agent's service account (its chart's RBAC, `tests/kube/agent-e2e.yaml`), a fleet on the hub's
/// own broker.
struct E2e {
    admin: KubeApplier,
    dir: tempfile::TempDir,
    kubeconfig: std::path::PathBuf,
    fleet: Fleet,
}

impl E2e {
    /// `None` (skipped, or a failure in CI) when there is no real cluster.
    async fn start(test: &str) -> Option<E2e> {
        let admin_kubeconfig = ocm_edge_tests::kube::kubeconfig(test)?;
        let admin = KubeApplier::connect(Some(&admin_kubeconfig)).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = agent_kubeconfig(&admin, &admin_kubeconfig, dir.path()).await;
        let fleet = Fleet::start_with(FleetOptions {
            hub_broker: true,
            ..FleetOptions::default()
        })
        .await;
        Some(E2e {
            admin,
            dir,
            kubeconfig,
            fleet,
        })
    }
}

/// The real agent binary for `cluster` on `fleet`'s hub broker, on the real cluster through
/// `kubeconfig`, with its store in `data_dir` (add `unjoin` for that subcommand).
/// An add-on agent's login from its Secret's fields (`field`), for Mosquitto's clients.
fn addon_login(field: &dyn Fn(&str) -> String, dir: &std::path::Path) -> Vec<String> {
    let broker = field("broker");
    let (host, port) = broker
        .strip_prefix("mqtts://")
        .and_then(|hp| hp.rsplit_once(':'))
        .unwrap();
    let ca = dir.join("addon-ca.crt");
    std::fs::write(&ca, field("ca.crt")).unwrap();
    [
        "-V",
        "5",
        "-h",
        host,
        "-p",
        port,
        "--cafile",
        ca.to_str().unwrap(),
        "-u",
        &field("username"),
        "-P",
        &field("password"),
        "-i",
        &field("clientId"),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Runs a Mosquitto client with `login` and `args`.
async fn mqtt(program: &std::path::Path, login: &[String], args: &[&str]) -> std::process::Output {
    let run = tokio::process::Command::new(program)
        .args(login)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(WAIT + Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
}

fn agent_command(
    fleet: &Fleet,
    cluster: &str,
    kubeconfig: &std::path::Path,
    data_dir: &std::path::Path,
) -> tokio::process::Command {
    let mut command = fleet.agent_command(cluster, data_dir);
    command
        .args(["--applier", "kube"])
        .arg("--kubeconfig")
        .arg(kubeconfig);
    command
}

/// A work `site` of a Namespace `ns` and a ConfigMap in it, for `cluster`.
fn site_work(cluster: &str, ns: &str) -> ManifestWork {
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "site", "namespace": cluster},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "site", "namespace": ns}, "data": {"site": cluster}}
        ]}}
    }))
    .unwrap()
}

/// Two clusters on one real API server, each with the real agent binary: one removed from the
/// hub (`cluster remove`), the other leaving by itself (`ocm-edge-agent unjoin`, run as a
/// process after its agent was killed). Both times what their works applied is gone from the
/// API server and the hub forgets the cluster. On the way, the hub shows the real cluster's
/// capacity.
#[tokio::test]
async fn e2e_a_removed_and_an_unjoined_cluster_leave_nothing_on_a_real_api_server() {
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start("e2e_a_removed_and_an_unjoined_cluster_leave_nothing_on_a_real_api_server")
        .await
    else {
        return;
    };
    let hub = fleet.admin().await;
    let mut agents = Vec::new();
    for cluster in ["kube-removed", "kube-unjoined"] {
        let data_dir = dir.path().join(cluster);
        let agent = agent_command(&fleet, cluster, &kubeconfig, &data_dir)
            .spawn()
            .unwrap();
        agents.push((agent, data_dir));
        fleet.accept(cluster).await;
        hub.apply_manifest_work(site_work(cluster, &format!("e2e-{cluster}")))
            .await
            .unwrap();
    }
    let config_map = |cluster: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "site", "namespace": format!("e2e-{cluster}")}})
    };
    let namespace = |cluster: &str| {
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("e2e-{cluster}")}})
    };
    wait_until("both works on the cluster", WAIT, || async {
        get(&admin, &config_map("kube-removed")).await.is_some()
            && get(&admin, &config_map("kube-unjoined")).await.is_some()
    })
    .await
    .unwrap();
    // The real cluster's capacity, as `ocm-edge cluster get` shows it.
    let view = fleet
        .wait_cluster("kube-removed", WAIT, "with the cluster's capacity", |c| {
            ["cpu", "memory", "pods", "nodes"]
                .iter()
                .all(|k| c.capacity.contains_key(*k))
        })
        .await;
    eprintln!(
        "capacity of the e2e cluster: {:?}; allocatable: {:?}",
        view.capacity, view.allocatable
    );

    // Removed from the hub: the agent removes the work, then the hub forgets the cluster.
    let removing = hub.remove_cluster("kube-removed", false).await.unwrap();
    assert!(removing.removing.is_some(), "{removing:?}");
    wait_until("kube-removed forgotten by the hub", WAIT, || async {
        hub.get_cluster("kube-removed").await.is_err()
    })
    .await
    .unwrap();
    assert!(get(&admin, &config_map("kube-removed")).await.is_none());
    wait_until("kube-removed's namespace gone", WAIT, || async {
        get(&admin, &namespace("kube-removed")).await.is_none()
    })
    .await
    .unwrap();

    // Unjoined from the edge, by the real binary, with the agent killed first.
    let (mut agent, data_dir) = agents.pop().unwrap();
    agent.kill().await.unwrap();
    let out = agent_command(&fleet, "kube-unjoined", &kubeconfig, &data_dir)
        .arg("unjoin")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "unjoin failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("2 resource(s) removed"), "{stdout}");
    assert!(get(&admin, &namespace("kube-unjoined")).await.is_none());
    assert!(!data_dir.join("agent-key.p8").exists(), "key wiped");
    wait_until("kube-unjoined forgotten by the hub", WAIT, || async {
        hub.get_cluster("kube-unjoined").await.is_err()
    })
    .await
    .unwrap();
    for (mut agent, _) in agents {
        agent.kill().await.unwrap();
    }
}

#[tokio::test]
async fn e2e_a_work_goes_through_the_real_agent_binary_to_a_real_api_server_and_back() {
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start("e2e_a_work_goes_through_the_real_agent_binary_to_a_real_api_server_and_back")
        .await
    else {
        return;
    };

    let data_dir = dir.path().join("agent");
    let mut agent = agent_command(&fleet, CLUSTER, &kubeconfig, &data_dir)
        .spawn()
        .unwrap();
    fleet.accept(CLUSTER).await;
    // The agent reports the real cluster's facts once accepted: its id and product claims.
    let view = fleet
        .wait_cluster(CLUSTER, WAIT, "with the real cluster's claims", |c| {
            c.claims.iter().any(|c| c.name == CLAIM_ID)
        })
        .await;
    let claim = |name: &str| {
        view.claims
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.clone())
    };
    assert_eq!(claim(CLAIM_PRODUCT).as_deref(), Some("Other"), "{view:?}");
    assert!(
        claim(CLAIM_KUBE_VERSION).is_some_and(|v| v.starts_with('v')),
        "{view:?}"
    );
    let hub = fleet.admin().await;
    hub.apply_manifest_work(manifest_work("blue", true))
        .await
        .expect("the hub takes the work");
    hub.apply_manifest_work(orphaning_work())
        .await
        .expect("the hub takes the orphaning work");

    // Applied on the cluster, by the service account.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "e2e-shop"}});
    let cart = json!({"apiVersion": "shop.ocm-edge.test/v1", "kind": "Cart",
        "metadata": {"name": "main", "namespace": "e2e-shop"}});
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "e2e-shop"}});
    wait_until("the work's objects on the cluster", WAIT, || async {
        get(&admin, &deployment).await.is_some() && get(&admin, &cart).await.is_some()
    })
    .await
    .unwrap();
    assert_eq!(
        get(&admin, &config_map).await.unwrap()["data"]["mode"],
        "blue"
    );

    // Back at the hub: Applied, and the Deployment's readiness (WellKnownStatus) and replicas
    // (JSONPaths) as feedback.
    let ready_at_hub = || async {
        let Ok(work) = hub.get_work(CLUSTER, "shop").await else {
            return false;
        };
        let applied = work
            .conditions
            .iter()
            .any(|c| c.type_ == "Applied" && c.status == ConditionStatus::True);
        let feedback = |name: &str| {
            work.resource_status.iter().any(|m| {
                m.resource_meta.kind == "Deployment"
                    && m.status_feedback
                        .values
                        .iter()
                        .any(|v| v.name == name && v.field_value.integer == Some(2))
            })
        };
        applied && feedback("ReadyReplicas") && feedback("desired")
    };
    wait_until(
        "Applied with ReadyReplicas=2 and desired=2 at the hub",
        WAIT,
        ready_at_hub,
    )
    .await
    .unwrap();

    // An update reaches the cluster, and the Cart it no longer has is deleted.
    hub.apply_manifest_work(manifest_work("green", false))
        .await
        .unwrap();
    wait_until("the update on the cluster", WAIT, || async {
        get(&admin, &config_map)
            .await
            .is_some_and(|c| c["data"]["mode"] == "green")
    })
    .await
    .unwrap();
    wait_until("the Cart dropped from the work deleted", WAIT, || async {
        get(&admin, &cart).await.is_none()
    })
    .await
    .unwrap();
    assert!(get(&admin, &deployment).await.is_some());

    // The orphaning work's delete leaves its ConfigMap behind, once the hub has it gone.
    let kept = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "e2e-kept", "namespace": "default"}});
    assert!(get(&admin, &kept).await.is_some());
    hub.delete_work(CLUSTER, "keep").await.unwrap();
    wait_until("the orphaning work gone at the hub", WAIT, || async {
        hub.get_work(CLUSTER, "keep").await.is_err()
    })
    .await
    .unwrap();
    assert_eq!(
        get(&admin, &kept)
            .await
            .expect("an orphaned ConfigMap stays")["data"]["kept"],
        "yes"
    );

    // A delete removes what the work created.
    hub.delete_work(CLUSTER, "shop").await.unwrap();
    wait_until("the work's objects gone", WAIT, || async {
        get(&admin, &config_map).await.is_none() && get(&admin, &cart).await.is_none()
    })
    .await
    .unwrap();
    agent.kill().await.unwrap();
}

/// A template add-on on a real API server, through the real agent binary: its agent's
/// Deployment, ServiceAccount, Role, RoleBinding and a ConfigMap rendered with the cluster's
/// variables land in the install namespace its AddOnDeploymentConfig names (which the hub creates
/// for it); the hub sees the add-on applied; disabling it removes them and leaves the namespace.
#[tokio::test]
async fn e2e_a_template_addon_is_installed_with_the_clusters_variables_on_a_real_api_server() {
    const ADDON_CLUSTER: &str = "kube-addon";
    const NS: &str = "e2e-addon-ns";
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start(
        "e2e_a_template_addon_is_installed_with_the_clusters_variables_on_a_real_api_server",
    )
    .await
    else {
        return;
    };
    let mut agent = agent_command(
        &fleet,
        ADDON_CLUSTER,
        &kubeconfig,
        &dir.path().join("agent"),
    )
    .spawn()
    .unwrap();
    fleet.accept(ADDON_CLUSTER).await;
    let hub = fleet.admin().await;
    let template = json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
    "kind": "AddOnTemplate", "metadata": {"name": "probe"},
    "spec": {"addonName": "probe", "registration": [{"type": "KubeClient"}],
    "agentSpec": {"workload": {"manifests": [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "probe-agent", "namespace": "{{INSTALL_NAMESPACE}}"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "probe-agent", "namespace": "{{INSTALL_NAMESPACE}}"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "probe-agent", "namespace": "{{INSTALL_NAMESPACE}}"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "probe-agent"},
         "subjects": [{"kind": "ServiceAccount", "name": "probe-agent",
                       "namespace": "{{INSTALL_NAMESPACE}}"}]},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "probe-settings", "namespace": "{{INSTALL_NAMESPACE}}"},
         "data": {"cluster": "{{CLUSTER_NAME}}", "level": "{{LOG_LEVEL}}"}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "probe-agent", "namespace": "{{INSTALL_NAMESPACE}}"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe"}},
            "template": {"metadata": {"labels": {"app": "probe"}}, "spec": {
                "serviceAccountName": "probe-agent",
                "containers": [{"name": "probe", "image": "busybox",
                    "args": ["--cluster={{CLUSTER_NAME}}"]}]}}}}
    ]}}}});
    let config = json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": "probe", "namespace": ADDON_CLUSTER},
        "spec": {"agentInstallNamespace": NS,
                 "customizedVariables": [{"name": "LOG_LEVEL", "value": "2"}]}});
    let addon = json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "ClusterManagementAddOn", "metadata": {"name": "probe"},
        "spec": {"defaultConfigs": [
            {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
             "name": "probe"},
            {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
             "namespace": ADDON_CLUSTER, "name": "probe"}]}});
    for object in [template, config, addon] {
        hub.apply_object(object).await.unwrap();
    }
    hub.switch_addons(true, vec!["probe".into()], vec![ADDON_CLUSTER.into()], None)
        .await
        .unwrap();

    let object = |kind: &str, api_version: &str, name: &str| {
        json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": NS}})
    };
    let settings = object("ConfigMap", "v1", "probe-settings");
    wait_until("the add-on's objects on the cluster", WAIT, || async {
        get(&admin, &settings).await.is_some()
            && get(&admin, &object("Deployment", "apps/v1", "probe-agent"))
                .await
                .is_some()
    })
    .await
    .unwrap();
    let data = get(&admin, &settings).await.unwrap()["data"].clone();
    assert_eq!(data, json!({"cluster": ADDON_CLUSTER, "level": "2"}));
    let binding = get(
        &admin,
        &object("RoleBinding", "rbac.authorization.k8s.io/v1", "probe-agent"),
    )
    .await
    .expect("the add-on's RoleBinding");
    assert_eq!(binding["subjects"][0]["namespace"], NS);
    let deployment = get(&admin, &object("Deployment", "apps/v1", "probe-agent"))
        .await
        .unwrap();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["args"][0],
        format!("--cluster={ADDON_CLUSTER}")
    );
    // Its own MQTT identity: the agent wrote the Secret next to it on the real API server, and
    // Mosquitto's clients log in with what it holds and use the add-on's topics.
    let secret_ref = object("Secret", "v1", "probe-hub-mqtt");
    wait_until("the add-on's MQTT Secret", WAIT, || async {
        get(&admin, &secret_ref).await.is_some()
    })
    .await
    .unwrap();
    let secret = get(&admin, &secret_ref).await.unwrap();
    assert_eq!(secret["type"], "Opaque");
    let field = |k: &str| {
        use base64::Engine as _;
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(
                    secret["data"][k]
                        .as_str()
                        .unwrap_or_else(|| panic!("no {k}")),
                )
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        field("username"),
        format!("addons/probe/clusters/{ADDON_CLUSTER}")
    );
    let login = addon_login(&field, dir.path());
    if let Some(clients) = crate::addon_identity::require_clients(
        "e2e_a_template_addon_is_installed_with_the_clusters_variables_on_a_real_api_server",
    ) {
        let topic = format!("addons/probe/clusters/{ADDON_CLUSTER}/to-hub");
        let out = mqtt(
            &clients.0,
            &login,
            &["-q", "1", "-r", "-t", &topic, "-m", "ready"],
        )
        .await;
        assert!(out.status.success(), "{out:?}");
        let out = mqtt(&clients.1, &login, &["-C", "1", "-W", "30", "-t", &topic]).await;
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ready");
    }
    wait_until("the add-on applied at the hub", WAIT, || async {
        hub.get_addon("probe", Some(ADDON_CLUSTER))
            .await
            .is_ok_and(|a| {
                a.clusters.iter().any(|r| {
                    r.conditions
                        .iter()
                        .any(|c| c.type_ == "ManifestApplied" && c.status == ConditionStatus::True)
                })
            })
    })
    .await
    .unwrap();

    hub.switch_addons(
        false,
        vec!["probe".into()],
        vec![ADDON_CLUSTER.into()],
        None,
    )
    .await
    .unwrap();
    wait_until("the add-on's objects gone", WAIT, || async {
        get(&admin, &secret_ref).await.is_none()
            && get(&admin, &settings).await.is_none()
            && get(&admin, &object("Deployment", "apps/v1", "probe-agent"))
                .await
                .is_none()
    })
    .await
    .unwrap();
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    assert!(
        get(&admin, &namespace).await.is_some(),
        "the install namespace stays (other add-ons may share it)"
    );
    if let Some(clients) = crate::addon_identity::require_clients("e2e (disabled add-on)") {
        let topic = format!("addons/probe/clusters/{ADDON_CLUSTER}/to-hub");
        let out = mqtt(
            &clients.0,
            &login,
            &["-q", "1", "-t", &topic, "-m", "gone?"],
        )
        .await;
        assert!(
            !out.status.success(),
            "a disabled add-on's identity logs in no more"
        );
    }
    agent.kill().await.unwrap();
}

/// OCM's Lease health check on a real API server: the add-on's work creates its Lease in the
/// install namespace, the add-on is unavailable until its agent (here the test, as the add-on's
/// agent would) renews the Lease, available while the renewal is fresh, and unavailable again once
/// the renewal is older than five lease durations.
#[tokio::test]
async fn e2e_a_lease_addon_is_available_while_its_lease_is_renewed_on_a_real_api_server() {
    const LEASE_CLUSTER: &str = "kube-lease";
    const NS: &str = "e2e-lease-ns";
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start(
        "e2e_a_lease_addon_is_available_while_its_lease_is_renewed_on_a_real_api_server",
    )
    .await
    else {
        return;
    };
    // A Lease an earlier run left on the same control plane would count as renewed already.
    let leftover = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                          "metadata": {"name": "pulse", "namespace": NS}});
    let _ = admin
        .delete(
            &ResourceRef::from_manifest(&Manifest(leftover), 0).unwrap(),
            ocm_edge_agent::work::plan::DeletePropagation::Background,
        )
        .await;
    // Reconciles often, so that a renewal is read back soon.
    let mut agent = agent_command(
        &fleet,
        LEASE_CLUSTER,
        &kubeconfig,
        &dir.path().join("agent"),
    )
    .args(["--reconcile-seconds", "2"])
    .spawn()
    .unwrap();
    fleet.accept(LEASE_CLUSTER).await;
    let hub = fleet.admin().await;
    for object in [
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnTemplate", "metadata": {"name": "pulse"},
            "spec": {"addonName": "pulse", "agentSpec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "pulse", "namespace": "{{INSTALL_NAMESPACE}}"},
                 "data": {"cluster": "{{CLUSTER_NAME}}"}}]}}}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": "pulse", "namespace": LEASE_CLUSTER},
            "spec": {"agentInstallNamespace": NS}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": "pulse",
                "annotations": {"edge.open-cluster-management.io/health-check": "Lease"}},
            "spec": {"defaultConfigs": [
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                 "name": "pulse"},
                {"group": "addon.open-cluster-management.io",
                 "resource": "addondeploymentconfigs", "namespace": LEASE_CLUSTER,
                 "name": "pulse"}]}}),
    ] {
        hub.apply_object(object).await.unwrap();
    }
    hub.switch_addons(true, vec!["pulse".into()], vec![LEASE_CLUSTER.into()], None)
        .await
        .unwrap();
    let lease = |renewed: chrono::DateTime<chrono::Utc>| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "pulse", "namespace": NS},
            "spec": {"leaseDurationSeconds": 60,
                     "renewTime": renewed.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()}})
    };
    wait_until("the add-on's Lease created by its work", WAIT, || async {
        get(&admin, &lease(chrono::Utc::now())).await.is_some()
    })
    .await
    .unwrap();
    let available = |reason: &'static str| {
        let hub = &hub;
        async move {
            hub.get_addon("pulse", Some(LEASE_CLUSTER))
                .await
                .is_ok_and(|a| {
                    a.clusters.iter().any(|r| {
                        r.conditions
                            .iter()
                            .any(|c| c.type_ == "Available" && c.reason == reason)
                    })
                })
        }
    };
    wait_until("not available before the first renewal", WAIT, || {
        available("ManagedClusterAddOnLeaseNotFound")
    })
    .await
    .unwrap();
    ocm_edge_tests::kube::apply(&admin, lease(chrono::Utc::now())).await;
    wait_until("available once renewed", WAIT, || {
        available("ManagedClusterAddOnLeaseUpdated")
    })
    .await
    .unwrap();
    ocm_edge_tests::kube::apply(
        &admin,
        lease(chrono::Utc::now() - chrono::Duration::minutes(10)),
    )
    .await;
    wait_until("unavailable once the renewal is stale", WAIT, || {
        available("ManagedClusterAddOnLeaseUpdateStopped")
    })
    .await
    .unwrap();
    agent.kill().await.unwrap();
}

/// OCM's pre-delete hook on a real API server: disabling the add-on first applies its hook (a
/// Pod labelled `open-cluster-management.io/addon-pre-delete`) while its agent keeps running;
/// once the hook has succeeded (the test sets the Pod's phase, as a kubelet would) the agent and
/// the hook are removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_disabling_an_addon_runs_its_pre_delete_hook_then_removes_it_on_a_real_api_server() {
    const HOOK_CLUSTER: &str = "kube-hook";
    const NS: &str = "e2e-hook-ns";
    let test =
        "e2e_disabling_an_addon_runs_its_pre_delete_hook_then_removes_it_on_a_real_api_server";
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start(test).await
    else {
        return;
    };
    let mut agent = agent_command(&fleet, HOOK_CLUSTER, &kubeconfig, &dir.path().join("agent"))
        .args(["--reconcile-seconds", "2"])
        .spawn()
        .unwrap();
    fleet.accept(HOOK_CLUSTER).await;
    let hub = fleet.admin().await;
    for object in [
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnTemplate", "metadata": {"name": "tidy"},
            "spec": {"addonName": "tidy", "agentSpec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "tidy-agent", "namespace": "{{INSTALL_NAMESPACE}}"},
                 "data": {"cluster": "{{CLUSTER_NAME}}"}},
                {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "tidy-cleanup", "namespace": "{{INSTALL_NAMESPACE}}",
                     "labels": {"open-cluster-management.io/addon-pre-delete": ""}},
                 "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "cleanup", "image": "busybox",
                         "args": ["echo", "cleaning {{CLUSTER_NAME}}"]}]}}]}}}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": "tidy", "namespace": HOOK_CLUSTER},
            "spec": {"agentInstallNamespace": NS}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "tidy"},
            "spec": {"defaultConfigs": [
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                 "name": "tidy"},
                {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                 "namespace": HOOK_CLUSTER, "name": "tidy"}]}}),
    ] {
        hub.apply_object(object).await.unwrap();
    }
    hub.switch_addons(true, vec!["tidy".into()], vec![HOOK_CLUSTER.into()], None)
        .await
        .unwrap();
    let object = |kind: &str, name: &str| json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NS}});
    let agent_cm = object("ConfigMap", "tidy-agent");
    let hook = object("Pod", "tidy-cleanup");
    wait_until("the add-on's agent on the cluster", WAIT, || async {
        get(&admin, &agent_cm).await.is_some()
    })
    .await
    .unwrap();
    assert!(
        get(&admin, &hook).await.is_none(),
        "the hook never runs while the add-on is installed"
    );

    hub.switch_addons(false, vec!["tidy".into()], vec![HOOK_CLUSTER.into()], None)
        .await
        .unwrap();
    wait_until("the pre-delete hook applied", WAIT, || async {
        get(&admin, &hook).await.is_some()
    })
    .await
    .unwrap();
    assert!(
        get(&admin, &agent_cm).await.is_some(),
        "the agent stays while its hook runs"
    );
    // The bare API server runs no pod: the test finishes it as a kubelet would.
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(
                ocm_edge_tests::kube::kubeconfig(test).expect("the e2e kubeconfig"),
            )
            .unwrap(),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(client, NS);
    pods.patch_status(
        "tidy-cleanup",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    wait_until("the add-on and its hook removed", WAIT, || async {
        get(&admin, &agent_cm).await.is_none() && get(&admin, &hook).await.is_none()
    })
    .await
    .unwrap();
    let gone = wait_until(
        "the cluster's add-on forgotten at the hub",
        WAIT,
        || async {
            hub.get_addon("tidy", None)
                .await
                .is_ok_and(|a| a.clusters.is_empty())
        },
    )
    .await;
    assert!(gone.is_ok());
    agent.kill().await.unwrap();
}

/// OCM's `executor` on a real API server with RBAC: a work applied as a ServiceAccount that may
/// write ConfigMaps in its namespace but not Deployments. The agent impersonates it: the
/// ConfigMap is applied, the Deployment refused with OCM's wording, named in the work's status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_a_work_with_an_executor_is_applied_with_its_service_accounts_rights_only() {
    const EXEC_CLUSTER: &str = "kube-exec";
    const NS: &str = "e2e-exec";
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start("e2e_a_work_with_an_executor_is_applied_with_its_service_accounts_rights_only")
        .await
    else {
        return;
    };
    for object in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "limited", "namespace": NS}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "configmaps", "namespace": NS},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "limited-configmaps", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmaps"},
            "subjects": [{"kind": "ServiceAccount", "name": "limited", "namespace": NS}]}),
    ] {
        ocm_edge_tests::kube::apply(&admin, object).await;
    }
    let mut agent = agent_command(&fleet, EXEC_CLUSTER, &kubeconfig, &dir.path().join("agent"))
        .args(["--reconcile-seconds", "2"])
        .spawn()
        .unwrap();
    fleet.accept(EXEC_CLUSTER).await;
    let hub = fleet.admin().await;
    let work: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "limited", "namespace": EXEC_CLUSTER},
        "spec": {
            "executor": {"subject": {"type": "ServiceAccount",
                "serviceAccount": {"namespace": NS, "name": "limited"}}},
            "workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "allowed", "namespace": NS}, "data": {"k": "v"}},
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "refused", "namespace": NS},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                   "template": {"metadata": {"labels": {"app": "x"}},
                     "spec": {"containers": [{"name": "x", "image": "busybox"}]}}}}]}}}))
    .unwrap();
    hub.apply_manifest_work(work).await.unwrap();
    let object = |kind: &str, api_version: &str, name: &str| {
        json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": NS}})
    };
    wait_until("the ConfigMap applied as the executor", WAIT, || async {
        get(&admin, &object("ConfigMap", "v1", "allowed"))
            .await
            .is_some()
    })
    .await
    .unwrap();
    let refusal = ocm_edge_tests::wait::wait_for(
        "the Deployment's refusal in the work's status",
        WAIT,
        || async {
            let w = hub.get_work(EXEC_CLUSTER, "limited").await.ok()?;
            w.resource_status.iter().find_map(|m| {
                (m.resource_meta.kind == "Deployment")
                    .then(|| {
                        m.conditions
                            .iter()
                            .find(|c| c.type_ == "Applied" && c.status == ConditionStatus::False)
                            .map(|c| c.message.clone())
                    })
                    .flatten()
            })
        },
    )
    .await
    .unwrap();
    assert!(
        refusal.contains("not allowed to apply the resource")
            && refusal.contains("system:serviceaccount:e2e-exec:limited"),
        "{refusal}"
    );
    assert!(
        get(&admin, &object("Deployment", "apps/v1", "refused"))
            .await
            .is_none(),
        "the executor may not create Deployments"
    );

    // An executor whose ServiceAccount does not exist has no rights at all: OCM's condition,
    // nothing applied, the agent still running.
    let ghost: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "ghost", "namespace": EXEC_CLUSTER},
        "spec": {
            "executor": {"subject": {"type": "ServiceAccount",
                "serviceAccount": {"namespace": NS, "name": "does-not-exist"}}},
            "workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "ghost", "namespace": NS}}]}}}))
    .unwrap();
    hub.apply_manifest_work(ghost).await.unwrap();
    let refusal = ocm_edge_tests::wait::wait_for(
        "the missing executor's refusal in the work's status",
        WAIT,
        || async {
            let w = hub.get_work(EXEC_CLUSTER, "ghost").await.ok()?;
            w.resource_status.iter().find_map(|m| {
                m.conditions
                    .iter()
                    .find(|c| c.type_ == "Applied" && c.status == ConditionStatus::False)
                    .map(|c| c.message.clone())
            })
        },
    )
    .await
    .unwrap();
    assert!(
        refusal.contains("not allowed to apply the resource")
            && refusal.contains("system:serviceaccount:e2e-exec:does-not-exist"),
        "{refusal}"
    );
    assert!(
        get(&admin, &object("ConfigMap", "v1", "ghost"))
            .await
            .is_none()
    );
    assert!(
        agent.try_wait().unwrap().is_none(),
        "the agent is still running"
    );
    agent.kill().await.unwrap();
}

/// `feedbackScrapeType: Watch` on a real API server: the agent (the real binary, its reconcile
/// an hour away) watches a ConfigMap it only reads, and a change made to it by someone else
/// reaches the hub's status feedback at once.
#[tokio::test]
async fn e2e_a_watched_objects_change_reaches_the_hub_without_waiting_for_a_reconcile() {
    const WATCH_CLUSTER: &str = "kube-watch";
    const NS: &str = "e2e-watch";
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) = E2e::start("e2e_a_watched_objects_change_reaches_the_hub_without_waiting_for_a_reconcile")
        .await
    else {
        return;
    };
    let config_map = |level: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "watched", "namespace": NS}, "data": {"level": level}})
    };
    ocm_edge_tests::kube::apply(
        &admin,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .await;
    ocm_edge_tests::kube::apply(&admin, config_map("1")).await;
    let mut agent = agent_command(
        &fleet,
        WATCH_CLUSTER,
        &kubeconfig,
        &dir.path().join("agent"),
    )
    .args(["--reconcile-seconds", "3600"])
    .spawn()
    .unwrap();
    fleet.accept(WATCH_CLUSTER).await;
    let hub = fleet.admin().await;
    let work: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "watch", "namespace": WATCH_CLUSTER},
        "spec": {
            "workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "watched", "namespace": NS}}]},
            "manifestConfigs": [{
                "resourceIdentifier": {"group": "", "resource": "configmaps",
                                       "name": "watched", "namespace": NS},
                "updateStrategy": {"type": "ReadOnly"},
                "feedbackRules": [{"type": "JSONPaths",
                                   "jsonPaths": [{"name": "level", "path": ".data.level"}]}],
                "feedbackScrapeType": "Watch"}]}}))
    .unwrap();
    hub.apply_manifest_work(work).await.unwrap();
    let level_at_hub = |want: &'static str| {
        let hub = &hub;
        async move {
            wait_until(
                &format!("level={want} in the hub's feedback"),
                WAIT,
                || async {
                    let Ok(w) = hub.get_work(WATCH_CLUSTER, "watch").await else {
                        return false;
                    };
                    w.resource_status.iter().any(|m| {
                        m.status_feedback.values.iter().any(|v| {
                            v.name == "level" && v.field_value.string.as_deref() == Some(want)
                        })
                    })
                },
            )
            .await
            .unwrap();
        }
    };
    level_at_hub("1").await;
    ocm_edge_tests::kube::apply(&admin, config_map("2")).await;
    level_at_hub("2").await;
    agent.kill().await.unwrap();
}

/// OCM's `Deleting` condition on a real API server: a work whose ConfigMap carries a finalizer
/// someone else owns stays `Deleting` on the hub, naming what it waits for, until the
/// finalizer is removed; then the object is gone and the hub forgets the work.
#[tokio::test]
async fn e2e_a_deleted_work_is_deleting_on_the_hub_until_its_objects_finalizers_let_go() {
    const DELETING_CLUSTER: &str = "kube-deleting";
    let Some(E2e {
        admin,
        dir,
        kubeconfig,
        fleet,
    }) =
        E2e::start("e2e_a_deleted_work_is_deleting_on_the_hub_until_its_objects_finalizers_let_go")
            .await
    else {
        return;
    };
    let name = format!("held-{}", std::process::id());
    let config_map = |finalizers: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "finalizers": finalizers},
            "data": {"a": "1"}})
    };
    let mut agent = agent_command(
        &fleet,
        DELETING_CLUSTER,
        &kubeconfig,
        &dir.path().join("agent"),
    )
    .args(["--reconcile-seconds", "2"])
    .spawn()
    .unwrap();
    fleet.accept(DELETING_CLUSTER).await;
    let hub = fleet.admin().await;
    let work: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "finalized", "namespace": DELETING_CLUSTER},
        "spec": {"workload": {"manifests": [config_map(json!(["example.com/keep"]))]}}
    }))
    .unwrap();
    hub.apply_manifest_work(work).await.unwrap();
    wait_until("the ConfigMap on the API server", WAIT, || async {
        get(&admin, &config_map(json!([]))).await.is_some()
    })
    .await
    .unwrap();
    hub.delete_work(DELETING_CLUSTER, "finalized")
        .await
        .unwrap();
    wait_until("Deleting=True on the hub", WAIT, || async {
        hub.get_work(DELETING_CLUSTER, "finalized")
            .await
            .is_ok_and(|w| {
                w.conditions.iter().any(|c| {
                    c.type_ == "Deleting"
                        && c.status == ConditionStatus::True
                        && c.reason == "WorkDeleting"
                        && c.message.contains(&format!("ConfigMap default/{name}"))
                })
            })
    })
    .await
    .unwrap();
    // Still there while the finalizer holds it, and so is the work.
    let held = get(&admin, &config_map(json!([]))).await.unwrap();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert!(hub.get_work(DELETING_CLUSTER, "finalized").await.is_ok());

    // The finalizer's owner lets go (a replace: server-side apply would keep the items the
    // agent's field manager owns).
    let released = config_map(json!([]));
    let release = ApplyAction {
        ordinal: 0,
        resource: ResourceRef::from_manifest(&Manifest(released.clone()), 0).unwrap(),
        manifest: released,
        strategy: ApplyStrategy::Update,
        executor: None,
    };
    admin.apply(&release, chrono::Utc::now()).await.unwrap();
    wait_until(
        "the ConfigMap gone and the work forgotten",
        WAIT,
        || async {
            get(&admin, &config_map(json!([]))).await.is_none()
                && hub.get_work(DELETING_CLUSTER, "finalized").await.is_err()
        },
    )
    .await
    .unwrap();
    agent.kill().await.unwrap();
}
