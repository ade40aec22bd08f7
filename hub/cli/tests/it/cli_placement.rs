//! The `ocm-edge` binary for cluster sets, placements and rollouts: `apply -f` with OCM's YAML,
//! `clusterset list`, `placement get` (decisions and the EXPLANATION table), `rollout status`,
//! `delete`, against a real hub and simulated agents.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::wait::wait_for;
use tokio::time::timeout;

/// A fleet with the hub on its own defaults (as these tests always ran it) and a patient admin
/// client: the agents' short keepalive and lease are the harness's.
async fn fleet() -> Fleet {
    Fleet::start_with(
        FleetOptions {
            admin_timeout: WAIT,
            ..FleetOptions::default()
        }
        .hub_defaults(),
    )
    .await
}

const BIN: &str = env!("CARGO_BIN_EXE_ocm-edge");

/// `ocm-edge ARGS` as the hub's first admin.
async fn ocm_edge(fleet: &Fleet, args: &[&str]) -> Output {
    ocm_edge_as(fleet, &fleet.admin_credentials(), args).await
}

/// `ocm-edge ARGS` with the credential file `credentials`.
async fn ocm_edge_as(fleet: &Fleet, credentials: &Path, args: &[&str]) -> Output {
    let child = tokio::process::Command::new(BIN)
        .args(args)
        .args(["--broker", fleet.broker_url()])
        .arg("--credentials")
        .arg(credentials)
        .env_remove("OCM_EDGE_BROKER")
        .env_remove("OCM_EDGE_SOURCE_ID")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    timeout(Duration::from_secs(60), child)
        .await
        .expect("ocm-edge finishes")
        .expect("ocm-edge runs")
}

#[track_caller]
fn ok(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "expected success, got {:?}\nstdout:\n{text}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_of_a_placement_and_replica_set_yaml_rolls_out_and_the_cli_explains_it() {
    let mut fleet = fleet().await;
    let set = ("cluster.open-cluster-management.io/clusterset", "edge");
    fleet
        .start_accepted("edge-1", &[set, ("env", "edge")])
        .await;
    fleet
        .start_accepted("edge-2", &[set, ("env", "edge")])
        .await;
    fleet.start_accepted("edge-3", &[set, ("env", "lab")]).await;
    let admin = fleet.admin().await;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli/fleet/rollout.yaml");

    let out = ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    for line in [
        "managedclusterset edge created",
        "managedclustersetbinding default/edge created",
        "placement default/web created",
        "manifestworkreplicaset default/web created",
    ] {
        assert!(out.contains(line), "{out}");
    }
    let again = ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    assert!(again.contains("placement default/web unchanged"), "{again}");

    let sets = ok(&ocm_edge(&fleet, &["clusterset", "list"]).await);
    assert!(sets.contains("edge-1,edge-2,edge-3"), "{sets}");

    // Both edge clusters end up with the work, one after the other (maxConcurrency 1).
    let rolled = wait_for("the rollout to reach both clusters", WAIT, || async {
        let r = admin.get_replica_set(Some("default"), "web").await.unwrap();
        (r.set.status.summary.total == 2).then_some(r)
    })
    .await;
    assert!(rolled.is_ok(), "the rollout reached both clusters");

    let placement = ok(&ocm_edge(&fleet, &["placement", "get", "web"]).await);
    assert!(placement.contains("Explanation"), "{placement}");
    for needle in [
        "CLUSTER",
        "WHY",
        "edge-1",
        "edge-2",
        "edge-3",
        "PlacementSatisfied",
    ] {
        assert!(placement.contains(needle), "{needle}: {placement}");
    }
    let status = ok(&ocm_edge(&fleet, &["rollout", "status", "web", "-n", "default"]).await);
    for needle in [
        "ManifestWorkReplicaSet: default/web",
        "edge-1",
        "edge-2",
        "REACHABLE",
    ] {
        assert!(status.contains(needle), "{needle}: {status}");
    }
    assert!(
        !status.contains("edge-3"),
        "edge-3 is not selected: {status}"
    );
    let json = ok(&ocm_edge(&fleet, &["placement", "get", "web", "-o", "json"]).await);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["decisions"].as_array().unwrap().len(), 2);

    let deleted = ok(&ocm_edge(&fleet, &["delete", "manifestworkreplicaset", "web"]).await);
    assert!(deleted.contains("deleted"), "{deleted}");
    let gone = wait_for("the set and its works to go", WAIT, || async {
        let works = admin.list_works(None).await.unwrap();
        let sets = admin.list_replica_sets(None).await.unwrap();
        (works.is_empty() && sets.is_empty()).then_some(())
    })
    .await;
    assert!(gone.is_ok(), "the set and its works are gone");

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[track_caller]
fn fails_mentioning(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "expected a failure, got success: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
}

/// A cluster chooses no cluster set: the operator takes its labels at `cluster accept` (the
/// set it asked for only reported), then moves it with `clusterset set` and binds sets with
/// `clusterset bind|unbind`; the built-in sets hold every cluster and cannot be deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_get_their_sets_from_the_operator_and_clusterset_commands_move_and_bind_them() {
    use ocm_edge_schemas::admin::ClusterState;
    const SET: &str = "cluster.open-cluster-management.io/clusterset";
    let mut fleet = fleet().await;
    fleet
        .agent("edge-1")
        .label(SET, "payments")
        .label("site", "lyon")
        .start()
        .await;
    fleet.agent("edge-2").start().await;
    for c in ["edge-1", "edge-2"] {
        fleet
            .wait_cluster_state(c, ClusterState::Pending)
            .await
            .expect("the join request reaches the hub");
    }

    let accepted = ok(&ocm_edge(&fleet, &["cluster", "accept", "edge-1"]).await);
    for label in [format!("{SET}=default"), "site=lyon".to_owned()] {
        assert!(accepted.contains(&label), "{label}: {accepted}");
    }
    assert!(
        accepted.contains("asked for cluster set \"payments\""),
        "{accepted}"
    );
    let accepted = ok(&ocm_edge(
        &fleet,
        &[
            "cluster",
            "accept",
            "edge-2",
            "--clusterset",
            "eu",
            "--label",
            "tier=canary",
            "--drop-agent-labels",
        ],
    )
    .await);
    for label in [format!("{SET}=eu"), "tier=canary".to_owned()] {
        assert!(accepted.contains(&label), "{label}: {accepted}");
    }
    // The label its (simulated) agent sent is dropped; the operator's are kept.
    assert!(!accepted.contains("ocm-edge.io/simulated"), "{accepted}");
    assert!(!accepted.contains("asked for"), "{accepted}");

    let sets = ok(&ocm_edge(&fleet, &["clusterset", "list", "-o", "json"]).await);
    let sets: serde_json::Value = serde_json::from_str(&sets).unwrap();
    let members = |name: &str| {
        sets.as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no set {name}: {sets}"))["clusters"]
            .clone()
    };
    assert_eq!(members("default"), serde_json::json!(["edge-1"]));
    assert_eq!(members("global"), serde_json::json!(["edge-1", "edge-2"]));

    // Only a set that exists and selects by membership takes clusters, all or nothing.
    fails_mentioning(
        &ocm_edge(&fleet, &["clusterset", "set", "eu", "--clusters", "edge-1"]).await,
        &["cluster set \"eu\" does not exist"],
    );
    fails_mentioning(
        &ocm_edge(
            &fleet,
            &["clusterset", "set", "global", "--clusters", "edge-1"],
        )
        .await,
        &["label selector"],
    );
    let file = fleet.dir().join("eu.yaml");
    std::fs::write(
        &file,
        "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\n\
         metadata:\n  name: eu\n",
    )
    .unwrap();
    ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    fails_mentioning(
        &ocm_edge(
            &fleet,
            &["clusterset", "set", "eu", "--clusters", "edge-1,ghost"],
        )
        .await,
        &["\"ghost\" is not known"],
    );
    let moved = ok(&ocm_edge(&fleet, &["clusterset", "set", "eu", "--clusters", "edge-1"]).await);
    assert!(moved.contains("edge-1 put in it"), "{moved}");

    let bound = ok(&ocm_edge(&fleet, &["clusterset", "bind", "eu", "-n", "team-a"]).await);
    assert!(bound.contains("bound to namespace team-a"), "{bound}");
    let again = ok(&ocm_edge(&fleet, &["clusterset", "bind", "eu", "-n", "team-a"]).await);
    assert!(again.contains("already bound"), "{again}");
    let eu = ok(&ocm_edge(&fleet, &["clusterset", "get", "eu", "-o", "json"]).await);
    let eu: serde_json::Value = serde_json::from_str(&eu).unwrap();
    assert_eq!(eu["clusters"], serde_json::json!(["edge-1", "edge-2"]));
    assert_eq!(eu["boundNamespaces"], serde_json::json!(["team-a"]));
    assert_eq!(eu["conditions"][0]["type"], "ClusterSetEmpty");
    assert_eq!(eu["conditions"][0]["message"], "2 ManagedClusters selected");

    ok(&ocm_edge(&fleet, &["clusterset", "unbind", "eu", "-n", "team-a"]).await);
    fails_mentioning(
        &ocm_edge(&fleet, &["clusterset", "unbind", "eu", "-n", "team-a"]).await,
        &["not bound in namespace \"team-a\""],
    );
    fails_mentioning(
        &ocm_edge(&fleet, &["delete", "clusterset", "default"]).await,
        &["built in"],
    );
}

/// `cluster get` shows the capacity the (simulated) agent reports; `cluster remove --wait`
/// waits until the agent removed the cluster's work and the hub forgot it; `--force` forgets a
/// cluster whose agent is gone; removing it again says it is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_get_shows_capacity_and_cluster_remove_waits_for_the_agent_or_forces() {
    let mut fleet = fleet().await;
    for cluster in ["edge-1", "edge-2"] {
        fleet
            .agent(cluster)
            .configure(|c| {
                c.sim_facts.capacity = [(
                    "cpu".to_owned(),
                    ocm_edge_schemas::api::meta::Quantity("8".into()),
                )]
                .into_iter()
                .collect();
            })
            .start()
            .await;
        fleet.accept(cluster).await;
        fleet
            .create_work(
                "web",
                &[cluster],
                vec![ocm_edge_tests::manifests::namespace("web")],
            )
            .await;
        fleet
            .wait_work_condition(cluster, "web", "Applied")
            .await
            .unwrap();
    }
    let detail = fleet
        .wait_cluster("edge-1", WAIT, "with its capacity", |c| {
            c.capacity.contains_key("cpu")
        })
        .await;
    assert_eq!(detail.capacity["cpu"].0, "8");
    let shown = ok(&ocm_edge(&fleet, &["cluster", "get", "edge-1"]).await);
    assert!(shown.contains("Capacity:    cpu=8"), "{shown}");

    let removed = ok(&ocm_edge(&fleet, &["cluster", "remove", "edge-1", "--wait"]).await);
    assert!(removed.contains("cluster edge-1 removed"), "{removed}");
    assert!(fleet.sim("edge-1").get("Namespace", "", "web").is_none());

    fleet.stop_agent("edge-2").await;
    let waiting = ocm_edge(
        &fleet,
        &[
            "cluster",
            "remove",
            "edge-2",
            "--wait",
            "--wait-timeout",
            "2s",
        ],
    )
    .await;
    fails_mentioning(&waiting, &["still being removed", "--force"]);
    let listed = ok(&ocm_edge(&fleet, &["cluster", "list"]).await);
    assert!(listed.contains("Accepted (removing)"), "{listed}");
    let forced = ok(&ocm_edge(&fleet, &["cluster", "remove", "edge-2", "--force"]).await);
    assert!(forced.contains("cluster edge-2 removed"), "{forced}");
    let again = ocm_edge(&fleet, &["cluster", "remove", "edge-2"]).await;
    fails_mentioning(&again, &["not known to the hub"]);
    fleet.shutdown().await;
}

/// A scoped operator (`user create --namespace --clusterset`) deploys to the clusters of its set
/// bound into its namespace, and is refused another team's cluster and another team's set, with
/// the right it lacks named; `cluster list` shows it only its clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_operator_deploys_only_to_its_teams_clusters_and_binds_only_its_sets() {
    const SET: &str = "cluster.open-cluster-management.io/clusterset";
    let mut fleet = fleet().await;
    fleet.start_accepted("eu-1", &[(SET, "eu")]).await;
    fleet.start_accepted("us-1", &[(SET, "us")]).await;
    let teams = fleet.dir().join("teams.yaml");
    let mut yaml = String::new();
    for (set, namespace) in [("eu", "team-a"), ("us", "team-b")] {
        yaml.push_str(&format!(
            "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\n\
             metadata:\n  name: {set}\n---\n\
             apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\n\
             metadata:\n  name: {set}\n  namespace: {namespace}\nspec:\n  clusterSet: {set}\n---\n"
        ));
    }
    std::fs::write(&teams, yaml).unwrap();
    ok(&ocm_edge(&fleet, &["apply", "-f", teams.to_str().unwrap()]).await);

    let alice = fleet.dir().join("alice.pem");
    let created = crate::cli_commands::run_user_create(
        &fleet.hub_dir(),
        &alice,
        "alice",
        "operator",
        &["--namespace", "team-a", "--clusterset", "eu"],
    )
    .await;
    let created = ok(&created);
    assert!(
        created.contains("user alice (role operator of namespaces team-a; cluster sets eu,"),
        "{created}"
    );

    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli/web");
    let web = web.to_str().unwrap();
    let deployed = ok(&ocm_edge_as(
        &fleet,
        &alice,
        &["work", "create", "web", "-f", web, "--clusters", "eu-1"],
    )
    .await);
    assert!(deployed.contains("eu-1"), "{deployed}");
    let admin = fleet.admin().await;
    let applied = wait_for("the work to be applied on eu-1", WAIT, || async {
        let w = admin.get_work("eu-1", "web").await.ok()?;
        ocm_edge_schemas::api::meta::is_condition_true(&w.conditions, "Applied").then_some(())
    })
    .await;
    assert!(applied.is_ok(), "alice's work reached eu-1");

    fails_mentioning(
        &ocm_edge_as(
            &fleet,
            &alice,
            &["work", "create", "web", "-f", web, "--clusters", "us-1"],
        )
        .await,
        &[
            "forbidden: user \"alice\" (operator of namespaces team-a; cluster sets eu)",
            "may not write works to cluster \"us-1\"",
            "ocm-edge clusterset set eu --clusters us-1",
        ],
    );
    assert!(
        admin.get_work("us-1", "web").await.is_err(),
        "the refused work was not stored"
    );
    fails_mentioning(
        &ocm_edge_as(
            &fleet,
            &alice,
            &["clusterset", "bind", "us", "-n", "team-a"],
        )
        .await,
        &[
            "may not bind or unbind cluster set \"us\" in namespace \"team-a\"",
            "the credential binds only the cluster sets eu",
        ],
    );
    let sets = ok(&ocm_edge(&fleet, &["clusterset", "get", "us", "-o", "json"]).await);
    assert!(
        !sets.contains("team-a"),
        "us was not bound into team-a: {sets}"
    );

    let list = ok(&ocm_edge_as(&fleet, &alice, &["cluster", "list"]).await);
    assert!(list.contains("eu-1"), "{list}");
    assert!(
        !list.contains("us-1"),
        "alice sees only her clusters: {list}"
    );
    let all = ok(&ocm_edge(&fleet, &["cluster", "list"]).await);
    assert!(all.contains("eu-1") && all.contains("us-1"), "{all}");
}

/// `ocm-edge addon enable|disable --names NAMES --clusters CLUSTERS`.
async fn addon(fleet: &Fleet, verb: &str, names: &str, clusters: &str) -> Output {
    ocm_edge(
        fleet,
        &["addon", verb, "--names", names, "--clusters", clusters],
    )
    .await
}

/// OCM's hello-world template add-on, as OCM publishes it, through the binary: `apply -f`
/// takes it unedited (templates and configs before the add-on whatever the order), `addon
/// enable` installs it on a cluster, whose agent applies the rendered Deployment, `addon get`
/// shows it configured, applied and available, and `addon disable` removes it from the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocms_hello_world_template_addon_is_applied_enabled_rendered_and_disabled() {
    let mut fleet = fleet().await;
    // The example's AddOnDeploymentConfig lives in namespace cluster1: OCM's first cluster.
    fleet.start_accepted("cluster1", &[]).await;
    fleet.start_accepted("edge-2", &[]).await;
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ocm-hello-template-addon.yaml");
    let applied = ok(&ocm_edge(&fleet, &["apply", "-f", fixture.to_str().unwrap()]).await);
    assert!(
        applied.contains("addontemplate hello-template created")
            && applied.contains("clustermanagementaddon hello-template created")
            && applied.contains("addondeploymentconfig cluster1/hello-template created"),
        "{applied}"
    );
    let listed = ok(&ocm_edge(&fleet, &["addon", "list"]).await);
    assert!(
        listed.contains("hello-template") && listed.contains("Manual"),
        "{listed}"
    );

    ok(&addon(&fleet, "enable", "hello-template", "cluster1").await);
    let deployment = fleet
        .wait_sim("cluster1", "the add-on's Deployment", |sim| {
            sim.get(
                "Deployment",
                "open-cluster-management-agent-addon",
                "hello-template-agent",
            )
        })
        .await
        .unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["args"][2], "--cluster-name=cluster1");
    assert_eq!(container["env"][0]["value"], "4");
    assert!(
        fleet
            .sim("edge-2")
            .get(
                "Deployment",
                "open-cluster-management-agent-addon",
                "hello-template-agent"
            )
            .is_none(),
        "enabled on cluster1 only"
    );
    let shown = wait_for("the add-on available on cluster1", WAIT, || async {
        let out = ocm_edge(&fleet, &["addon", "get", "hello-template"]).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("True (ProbeAvailable)").then_some(text)
    })
    .await
    .unwrap();
    assert!(
        shown.contains("cluster1") && shown.contains("manual"),
        "{shown}"
    );

    // Unknown add-ons and clusters are refused, naming them.
    let refused = addon(&fleet, "enable", "nope", "cluster1").await;
    fails_mentioning(&refused, &["no add-on \"nope\""]);
    let refused = addon(&fleet, "enable", "hello-template", "ghost").await;
    fails_mentioning(&refused, &["cluster \"ghost\" is not known"]);

    // Enabled on edge-2 too, then the add-on deleted: gone from every cluster.
    ok(&addon(&fleet, "enable", "hello-template", "edge-2").await);
    ok(&addon(&fleet, "disable", "hello-template", "cluster1").await);
    fleet
        .wait_sim("cluster1", "the add-on's Deployment gone", |sim| {
            sim.get(
                "Deployment",
                "open-cluster-management-agent-addon",
                "hello-template-agent",
            )
            .is_none()
            .then_some(())
        })
        .await
        .unwrap();
    fleet
        .wait_sim("edge-2", "the add-on's Deployment", |sim| {
            sim.get(
                "Deployment",
                "open-cluster-management-agent-addon",
                "hello-template-agent",
            )
        })
        .await
        .unwrap();
    ok(&ocm_edge(
        &fleet,
        &["delete", "clustermanagementaddon", "hello-template"],
    )
    .await);
    fleet
        .wait_sim("edge-2", "the add-on's Deployment gone", |sim| {
            sim.get(
                "Deployment",
                "open-cluster-management-agent-addon",
                "hello-template-agent",
            )
            .is_none()
            .then_some(())
        })
        .await
        .unwrap();
    let none = ok(&ocm_edge(&fleet, &["addon", "list"]).await);
    assert!(none.contains("No add-ons yet"), "{none}");
    fleet.shutdown().await;
}

/// A Placements add-on through the binary: installed on every cluster its placement selects,
/// then a config change rolled out progressively (one cluster at a time, each soaking an hour),
/// so that one cluster runs the new config and the others wait, as `addon get` shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placements_addon_installs_everywhere_and_rolls_a_config_change_out_progressively() {
    let mut fleet = fleet().await;
    let clusters = ["edge-1", "edge-2", "edge-3"];
    for c in clusters {
        fleet.start_accepted(c, &[]).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.yaml");
    let write = |level: &str, strategy: &str| {
        std::fs::write(
            &file,
            format!(
                "apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {{name: default, namespace: default}}
spec: {{clusterSet: default}}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {{name: all, namespace: default}}
spec: {{}}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {{name: probe}}
spec:
  addonName: probe
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {{name: probe, namespace: '{{{{INSTALL_NAMESPACE}}}}'}}
        data: {{level: '{{{{LOG_LEVEL}}}}', cluster: '{{{{CLUSTER_NAME}}}}'}}
---
apiVersion: addon.open-cluster-management.io/v1beta1
kind: AddOnDeploymentConfig
metadata: {{name: probe, namespace: default}}
spec:
  customizedVariables: [{{name: LOG_LEVEL, value: '{level}'}}]
---
apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {{name: probe}}
spec:
  defaultConfigs:
  - {{group: addon.open-cluster-management.io, resource: addontemplates, name: probe}}
  - {{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, namespace: default, name: probe}}
  installStrategy:
    type: Placements
    placements:
    - name: all
      namespace: default
      rolloutStrategy: {strategy}
"
            ),
        )
        .unwrap();
    };
    let level_on = |fleet: &Fleet, cluster: &str| {
        fleet
            .sim(cluster)
            .get("ConfigMap", "open-cluster-management-agent-addon", "probe")
            .and_then(|c| c["data"]["level"].as_str().map(str::to_owned))
    };
    write("1", "{type: All}");
    ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    wait_for("the add-on on every cluster", WAIT, || async {
        clusters
            .iter()
            .all(|c| level_on(&fleet, c).as_deref() == Some("1"))
            .then_some(())
    })
    .await
    .unwrap();
    let shown = wait_for("the install completed", WAIT, || async {
        let text = ok(&ocm_edge(&fleet, &["addon", "get", "probe"]).await);
        text.contains("Rollout:     default/all: Completed (3/3")
            .then_some(text)
    })
    .await
    .unwrap();
    assert_eq!(shown.matches("placement").count(), 3, "{shown}");

    // Level 2, one cluster at a time, each soaking an hour before the next, in one file with
    // the new strategy: `apply` puts the add-on's new strategy in force before the config it
    // rolls out changes (by the old one, All, every cluster would take level 2 at once).
    let progressive = "{type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 1h}}";
    write("2", progressive);
    ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    let first = wait_for("one cluster on level 2", WAIT, || async {
        clusters
            .iter()
            .find(|c| level_on(&fleet, c).as_deref() == Some("2"))
            .copied()
    })
    .await
    .unwrap();
    let shown = wait_for(
        "the first cluster soaking, the others waiting",
        WAIT,
        || async {
            let text = ok(&ocm_edge(&fleet, &["addon", "get", "probe"]).await);
            (text.matches("WaitingForCanary").count() == 2
                && text.contains("default/all: Progressing (1/3 completed"))
            .then_some(text)
        },
    )
    .await
    .unwrap();
    for c in clusters.iter().filter(|c| **c != first) {
        assert_eq!(level_on(&fleet, c).as_deref(), Some("1"), "{c}: {shown}");
    }
    fleet.shutdown().await;
}

/// An add-on whose template has a pre-delete hook (OCM's label on a Job): `addon disable` runs
/// the Job on the cluster first, and only once it completed removes the add-on's agent and the
/// Job's work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_an_addon_runs_its_pre_delete_job_before_removing_its_agent() {
    let mut fleet = fleet().await;
    fleet.start_accepted("edge-1", &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hooked.yaml");
    std::fs::write(
        &file,
        "apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: hooked}
spec:
  addonName: hooked
  agentSpec:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: hooked-agent, namespace: '{{INSTALL_NAMESPACE}}'}
        spec:
          selector: {matchLabels: {app: hooked}}
          template:
            metadata: {labels: {app: hooked}}
            spec: {containers: [{name: agent, image: busybox}]}
      - apiVersion: batch/v1
        kind: Job
        metadata:
          name: hooked-cleanup
          namespace: '{{INSTALL_NAMESPACE}}'
          labels: {open-cluster-management.io/addon-pre-delete: ''}
        spec:
          template:
            spec: {restartPolicy: Never, containers: [{name: cleanup, image: busybox}]}
---
apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: hooked}
spec:
  defaultConfigs:
  - {group: addon.open-cluster-management.io, resource: addontemplates, name: hooked}
",
    )
    .unwrap();
    ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    ok(&addon(&fleet, "enable", "hooked", "edge-1").await);
    let ns = "open-cluster-management-agent-addon";
    fleet
        .wait_sim("edge-1", "the agent running", |sim| {
            sim.get("Deployment", ns, "hooked-agent")
        })
        .await
        .unwrap();
    assert!(
        fleet
            .sim("edge-1")
            .get("Job", ns, "hooked-cleanup")
            .is_none(),
        "the hook does not run while the add-on is installed"
    );

    ok(&addon(&fleet, "disable", "hooked", "edge-1").await);
    // The Job ran (the simulated cluster completes it), then the agent and the Job went.
    fleet
        .wait_sim("edge-1", "the add-on and its hook gone", |sim| {
            (sim.get("Deployment", ns, "hooked-agent").is_none()
                && sim.get("Job", ns, "hooked-cleanup").is_none())
            .then_some(())
        })
        .await
        .unwrap();
    // Two works went from the agent: the add-on's and its hook's (which it ran).
    wait_for("the agent to remove both works", WAIT, || async {
        (fleet.counters("edge-1").bundles_deleted == 2).then_some(())
    })
    .await
    .unwrap();
    let shown = ok(&ocm_edge(&fleet, &["addon", "get", "hooked"]).await);
    assert!(shown.contains("Enabled on no cluster"), "{shown}");
    let stats = ok(&ocm_edge(&fleet, &["work", "list"]).await);
    assert!(!stats.contains("hooked"), "{stats}");
    fleet.shutdown().await;
}

/// `addon create` makes an add-on of an agent's manifests (as clusteradm's), with
/// `--hub-registration` its agent gets its own MQTT identity: once enabled, the cluster's agent
/// writes the Secret `probe-hub-mqtt` next to the agent and `addon get` shows the identity
/// bound; `addon broker-config` writes its controller's login on the hub's machine. Bad names
/// and manifests are refused before anything reaches the hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addon_create_with_hub_registration_gives_the_agent_its_own_identity() {
    let mut fleet = fleet().await;
    fleet.start_accepted("edge-1", &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("probe.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n  namespace: '{{INSTALL_NAMESPACE}}'\ndata:\n  cluster: '{{CLUSTER_NAME}}'\n",
    )
    .unwrap();
    let file = manifests.to_str().unwrap();
    let created = ok(&ocm_edge(
        &fleet,
        &["addon", "create", "probe", "-f", file, "--hub-registration"],
    )
    .await);
    assert!(
        created.contains("created add-on probe") && created.contains("own MQTT identity"),
        "{created}"
    );
    ok(&addon(&fleet, "enable", "probe", "edge-1").await);
    let ns = "open-cluster-management-agent-addon";
    let settings = fleet
        .wait_sim("edge-1", "the add-on's ConfigMap", |sim| {
            sim.get("ConfigMap", ns, "probe")
        })
        .await
        .unwrap();
    assert_eq!(settings["data"]["cluster"], "edge-1");
    fleet
        .wait_sim("edge-1", "the add-on's MQTT Secret", |sim| {
            sim.get("Secret", ns, "probe-hub-mqtt")
        })
        .await
        .unwrap();
    let shown = wait_for("the identity bound", WAIT, || async {
        let out = ocm_edge(&fleet, &["addon", "get", "probe"]).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("bound").then_some(text)
    })
    .await
    .unwrap();
    assert!(shown.contains("MQTT IDENTITY"), "{shown}");

    let config = dir.path().join("probe-controller.yaml");
    let written = std::process::Command::new(BIN)
        .args([
            "addon",
            "broker-config",
            "probe",
            "--broker-host",
            "hub.example:8883",
        ])
        .arg("--data-dir")
        .arg(fleet.hub_dir())
        .arg("-o")
        .arg(&config)
        .output()
        .unwrap();
    assert!(written.status.success(), "{written:?}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("username: addons/probe/controller")
            && text.contains("mqtts://hub.example:8883")
            && text.contains("BEGIN CERTIFICATE"),
        "{text}"
    );
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&config).unwrap().permissions())
            & 0o777,
        0o600,
        "it holds a secret"
    );

    // An add-on of that name is not replaced by accident.
    let again = ocm_edge(&fleet, &["addon", "create", "probe", "-f", file]).await;
    fails_mentioning(&again, &["exists", "--overwrite"]);
    // Bad input changes nothing on the hub.
    let bad = ocm_edge(&fleet, &["addon", "create", "Probe_2", "-f", file]).await;
    fails_mentioning(&bad, &["\"Probe_2\" is not a DNS label"]);
    // A variable of its own needs a config: refused before anything is sent; with a config the
    // hub does not hold, the template this command made goes again.
    let regional = dir.path().join("regional.yaml");
    std::fs::write(
        &regional,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: regional\n  namespace: '{{INSTALL_NAMESPACE}}'\ndata:\n  region: '{{REGION}}'\n",
    )
    .unwrap();
    let regional = regional.to_str().unwrap();
    let bad = ocm_edge(&fleet, &["addon", "create", "regional", "-f", regional]).await;
    fails_mentioning(&bad, &["{{REGION}}", "--config NAMESPACE/NAME"]);
    let bad = ocm_edge(
        &fleet,
        &[
            "addon",
            "create",
            "regional",
            "-f",
            regional,
            "--config",
            "default/nowhere",
        ],
    )
    .await;
    fails_mentioning(&bad, &["does not exist"]);
    let gone = ocm_edge(&fleet, &["delete", "addontemplate", "regional"]).await;
    assert!(
        !gone.status.success(),
        "the template went with the refused add-on"
    );
    let config = dir.path().join("eu.yaml");
    std::fs::write(
        &config,
        "apiVersion: addon.open-cluster-management.io/v1beta1\nkind: AddOnDeploymentConfig\nmetadata: {name: eu, namespace: default}\nspec:\n  customizedVariables: [{name: REGION, value: eu}]\n",
    )
    .unwrap();
    ok(&ocm_edge(&fleet, &["apply", "-f", config.to_str().unwrap()]).await);
    ok(&ocm_edge(
        &fleet,
        &[
            "addon",
            "create",
            "regional",
            "-f",
            regional,
            "--config",
            "default/eu",
        ],
    )
    .await);
    ok(&addon(&fleet, "enable", "regional", "edge-1").await);
    let cm = fleet
        .wait_sim("edge-1", "the regional ConfigMap", |sim| {
            sim.get("ConfigMap", ns, "regional")
        })
        .await
        .unwrap();
    assert_eq!(cm["data"]["region"], "eu");
    std::fs::write(&manifests, "kind: ConfigMap\nmetadata: {}\n").unwrap();
    let bad = ocm_edge(&fleet, &["addon", "create", "probe-2", "-f", file]).await;
    assert!(!bad.status.success());
    let listed = ok(&ocm_edge(&fleet, &["addon", "list"]).await);
    assert!(
        !listed.contains("probe-2") && !listed.contains("Probe_2"),
        "{listed}"
    );
    fleet.shutdown().await;
}

/// An add-on whose identities need an operator's approval: its agent's Secret appears only
/// after `addon approve`, which `addon get` asks for; approving again changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manually_approved_addon_identity_waits_for_addon_approve() {
    let mut fleet = fleet().await;
    fleet.start_accepted("edge-1", &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.yaml");
    std::fs::write(
        &file,
        "apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: probe}
spec:
  addonName: probe
  registration: [{type: KubeClient}]
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: probe, namespace: '{{INSTALL_NAMESPACE}}'}}
---
apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata:
  name: probe
  annotations: {edge.open-cluster-management.io/registration-approval: Manual}
spec:
  defaultConfigs: [{group: addon.open-cluster-management.io, resource: addontemplates, name: probe}]
",
    )
    .unwrap();
    ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    ok(&addon(&fleet, "enable", "probe", "edge-1").await);
    let waiting = wait_for("the identity waiting for approval", WAIT, || async {
        let out = ocm_edge(&fleet, &["addon", "get", "probe"]).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("WaitingForApproval").then_some(text)
    })
    .await
    .unwrap();
    assert!(waiting.contains("edge-1"), "{waiting}");
    let ns = "open-cluster-management-agent-addon";
    assert!(
        fleet
            .sim("edge-1")
            .get("Secret", ns, "probe-hub-mqtt")
            .is_none(),
        "no Secret before the approval"
    );
    let approved = ok(&addon(&fleet, "approve", "probe", "edge-1").await);
    assert!(approved.contains("approved"), "{approved}");
    fleet
        .wait_sim("edge-1", "the Secret after the approval", |sim| {
            sim.get("Secret", ns, "probe-hub-mqtt")
        })
        .await
        .unwrap();
    // Approving again is no error (a region approved again), and changes nothing.
    ok(&addon(&fleet, "approve", "probe", "edge-1").await);
    assert!(
        fleet
            .sim("edge-1")
            .get("Secret", ns, "probe-hub-mqtt")
            .is_some(),
        "the identity stays"
    );
    fleet.shutdown().await;
}

/// `work render` shows what one cluster would get (from the hub's set, or from a file before it
/// is applied), `apply` refuses a placeholder that cannot work anywhere, a value one cluster lacks
/// fails that cluster alone in `rollout status`, and `work get` shows the rendered manifests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_render_and_rollout_status_show_each_clusters_values_and_what_is_missing() {
    let mut fleet = fleet().await;
    let set = ("cluster.open-cluster-management.io/clusterset", "edge");
    fleet
        .start_accepted("edge-1", &[set, ("region", "eu-west"), ("size", "big")])
        .await;
    fleet
        .start_accepted("edge-2", &[set, ("region", "eu-south")])
        .await;
    fleet
        .start_accepted("edge-3", &[set, ("region", "eu-north")])
        .await;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli/fleet");
    let base = fixtures.join("rollout.yaml");
    ok(&ocm_edge(&fleet, &["apply", "-f", base.to_str().unwrap()]).await);
    let file = fixtures.join("per-cluster.yaml");
    let file = file.to_str().unwrap();

    // Before it is applied: rendered from the file for one cluster, nothing sent.
    let preview = ok(&ocm_edge(
        &fleet,
        &["work", "render", "store", "--cluster", "edge-1", "-f", file],
    )
    .await);
    for needle in [
        "rendered for cluster edge-1 (nothing sent)",
        "storeId: '0001'",
        "registry: mirror.eu.example.com",
        "region: eu-west",
        "pool: big",
    ] {
        assert!(preview.contains(needle), "{needle}: {preview}");
    }
    let missing = ocm_edge(
        &fleet,
        &["work", "render", "store", "--cluster", "edge-3", "-f", file],
    )
    .await;
    fails_mentioning(
        &missing,
        &["cluster edge-3 has no .Values.storeId", ".clusters.edge-3"],
    );
    let admin = fleet.admin().await;
    assert!(
        admin
            .list_works(None)
            .await
            .unwrap()
            .iter()
            .all(|w| w.name != "store")
    );

    // A placeholder no cluster can render is refused at apply, with where it is.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(file)
            .unwrap()
            .replace("{{ .ClusterLabels.region }}", "{{ .ClusterLabel.region }}"),
    )
    .unwrap();
    let refused = ocm_edge(&fleet, &["apply", "-f", bad.to_str().unwrap()]).await;
    fails_mentioning(
        &refused,
        &[
            "manifest 0 (v1 ConfigMap store) /data/region",
            "unknown variable .ClusterLabel",
        ],
    );

    let applied = ocm_edge(&fleet, &["apply", "-f", file]).await;
    ok(&applied);
    assert!(
        String::from_utf8_lossy(&applied.stderr).is_empty(),
        "every field is known: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    // A field ocm-edge does not know is named, not silently dropped.
    let unknown = dir.path().join("unknown.yaml");
    std::fs::write(
        &unknown,
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n\
         metadata: {name: sorted, namespace: default}\nspec: {sortBy: Score, shuffle: {seed: 1}}\n",
    )
    .unwrap();
    let warned = ocm_edge(&fleet, &["apply", "-f", unknown.to_str().unwrap()]).await;
    ok(&warned);
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(
        stderr.contains("(document 1): ocm-edge does not know spec.shuffle and ignores it"),
        "{stderr}"
    );
    // A scoreRateLimit outside OCM's pattern is refused, saying how to write it.
    let limited = dir.path().join("limited.yaml");
    std::fs::write(
        &limited,
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n\
         metadata: {name: limited, namespace: default}\nspec: {scoreRateLimit: 5 minutes}\n",
    )
    .unwrap();
    let refused = ocm_edge(&fleet, &["apply", "-f", limited.to_str().unwrap()]).await;
    fails_mentioning(
        &refused,
        &["spec.scoreRateLimit \"5 minutes\"", "e.g. 30s, 5m, 1h"],
    );
    for cluster in ["edge-1", "edge-2"] {
        fleet
            .wait_work_condition(cluster, "store", "Applied")
            .await
            .unwrap();
    }
    let status = wait_for("edge-3 to be reported as not rendered", WAIT, || async {
        let out = ok(&ocm_edge(&fleet, &["rollout", "status", "store"]).await);
        out.contains("Notes:").then_some(out)
    })
    .await
    .unwrap();
    assert!(
        status.contains("edge-3: manifest 0 (v1 ConfigMap store) /data/storeId"),
        "{status}"
    );
    assert!(
        status
            .lines()
            .any(|l| l.contains("edge-3") && l.contains("Failed")),
        "{status}"
    );
    let got = ok(&ocm_edge(
        &fleet,
        &["work", "get", "store", "--cluster", "edge-2", "-o", "yaml"],
    )
    .await);
    for needle in ["storeId: '0002'", "region: eu-south", "pool: small"] {
        assert!(got.contains(needle), "{needle}: {got}");
    }
    assert!(
        admin.get_work("edge-3", "store").await.is_err(),
        "nothing sent to edge-3"
    );

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

/// `rollout history` lists the kept revisions, `rollout undo` goes back to the previous one (or the
/// one named) and the set rolls it out; an unknown revision is refused with what is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_history_and_undo_go_back_to_an_earlier_template() {
    let mut fleet = fleet().await;
    let set = ("cluster.open-cluster-management.io/clusterset", "edge");
    fleet
        .start_accepted("edge-1", &[set, ("env", "edge")])
        .await;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli/fleet/rollout.yaml");
    ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    let admin = fleet.admin().await;
    let greeting = || async {
        admin
            .get_work("edge-1", "web")
            .await
            .ok()
            .and_then(|w| w.spec)
            .map(|s| s.workload.manifests[0].0["data"]["greeting"].clone())
    };
    let rolled_out = |want: &'static str| {
        let admin = &admin;
        async move {
            wait_for(&format!("greeting {want} rolled out"), WAIT, || async {
                let r = admin.get_replica_set(Some("default"), "web").await.unwrap();
                let done = r.set.status.current_revision == r.set.status.update_revision
                    && !r.set.status.current_revision.is_empty();
                let w = admin.get_work("edge-1", "web").await.ok()?;
                let g = w.spec?.workload.manifests[0].0["data"]["greeting"].clone();
                (done && g == serde_json::json!(want)).then_some(())
            })
            .await
            .unwrap();
        }
    };
    rolled_out("hello").await;
    let dir = tempfile::tempdir().unwrap();
    let v2 = dir.path().join("v2.yaml");
    std::fs::write(
        &v2,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("greeting: hello", "greeting: bonjour"),
    )
    .unwrap();
    ok(&ocm_edge(&fleet, &["apply", "-f", v2.to_str().unwrap()]).await);
    rolled_out("bonjour").await;

    let history = ok(&ocm_edge(&fleet, &["rollout", "history", "web"]).await);
    for needle in [
        "REVISION",
        "ConfigMap web",
        "template, rolled out everywhere",
    ] {
        assert!(history.contains(needle), "{needle}: {history}");
    }
    assert_eq!(history.matches("ConfigMap web").count(), 2, "{history}");
    let status = ok(&ocm_edge(&fleet, &["rollout", "status", "web"]).await);
    assert!(status.contains("Revision: 2 ("), "{status}");

    let undone = ok(&ocm_edge(&fleet, &["rollout", "undo", "web"]).await);
    assert!(undone.contains("rolled back to revision 1"), "{undone}");
    rolled_out("hello").await;
    assert_eq!(greeting().await, Some(serde_json::json!("hello")));
    let history = ok(&ocm_edge(&fleet, &["rollout", "history", "web", "-o", "json"]).await);
    let revisions: serde_json::Value = serde_json::from_str(&history).unwrap();
    let numbers: Vec<i64> = revisions
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [2, 3], "revision 1 came back as 3");

    let refused = ocm_edge(&fleet, &["rollout", "undo", "web", "--to-revision", "9"]).await;
    fails_mentioning(&refused, &["no revision 9", "kept: 2, 3"]);

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

/// `work create --values`: a work sent to several clusters, rendered for each by the hub; a
/// cluster it cannot be rendered for fails the command and nothing is written anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_create_with_values_renders_each_clusters_work_all_or_nothing() {
    let mut fleet = fleet().await;
    fleet
        .start_accepted("edge-1", &[("region", "eu-west")])
        .await;
    fleet
        .start_accepted("edge-2", &[("region", "eu-south")])
        .await;
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("store.yaml");
    std::fs::write(
        &manifests,
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: store
  namespace: default
data:
  storeId: "{{ .Values.storeId }}"
  region: "{{ .ClusterLabels.region }}"
"#,
    )
    .unwrap();
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, "clusters:\n  edge-1: {storeId: \"0001\"}\n").unwrap();
    let (m, v) = (manifests.to_str().unwrap(), values.to_str().unwrap());

    let refused = ocm_edge(
        &fleet,
        &[
            "work",
            "create",
            "store",
            "-f",
            m,
            "--clusters",
            "edge-1,edge-2",
            "--values",
            v,
        ],
    )
    .await;
    fails_mentioning(
        &refused,
        &[
            "cannot be rendered for 1 cluster(s); nothing was written",
            "edge-2:",
            "no .Values.storeId",
        ],
    );
    let admin = fleet.admin().await;
    assert!(
        admin.list_works(None).await.unwrap().is_empty(),
        "nothing written"
    );

    let typo = dir.path().join("typo.yaml");
    std::fs::write(&typo, "cluster:\n  edge-1: {storeId: \"0001\"}\n").unwrap();
    let refused = ocm_edge(
        &fleet,
        &[
            "work",
            "create",
            "store",
            "-f",
            m,
            "--clusters",
            "edge-1",
            "--values",
            typo.to_str().unwrap(),
        ],
    )
    .await;
    fails_mentioning(&refused, &["--values", "unknown field `cluster`"]);

    std::fs::write(
        &values,
        "clusters:\n  edge-1: {storeId: \"0001\"}\n  edge-2: {storeId: \"0002\"}\n",
    )
    .unwrap();
    ok(&ocm_edge(
        &fleet,
        &[
            "work",
            "create",
            "store",
            "-f",
            m,
            "--clusters",
            "edge-1,edge-2",
            "--values",
            v,
        ],
    )
    .await);
    for (cluster, id, region) in [
        ("edge-1", "0001", "eu-west"),
        ("edge-2", "0002", "eu-south"),
    ] {
        let cm = fleet
            .wait_sim(cluster, "the rendered ConfigMap", |sim| {
                sim.get("ConfigMap", "default", "store")
            })
            .await
            .unwrap();
        assert_eq!(cm["data"]["storeId"], serde_json::json!(id));
        assert_eq!(cm["data"]["region"], serde_json::json!(region));
    }
    fleet.stop_agents().await;
    fleet.shutdown().await;
}
