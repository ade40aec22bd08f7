//! Placement and ManifestWorkReplicaSets on a real broker with three in-process simulated
//! agents: when the chosen cluster's agent is killed its cluster is tainted unreachable, the
//! placement moves to another cluster and the work follows; when the agent returns the taint
//! goes; a placement that tolerates the taint for N seconds keeps the cluster until then.

use std::time::Duration;

use clap::Parser;
use ocm_edge_agent::applier::sim::SimFacts;
use ocm_edge_agent::flags::Cli;
use ocm_edge_schemas::admin::PlacementView;
use ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT, is_available, is_unreachable};
use ocm_edge_tests::probe::AgentPeer;
use ocm_edge_tests::wait::wait_for;
use serde_json::json;

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

const SET_LABEL: (&str, &str) = ("cluster.open-cluster-management.io/clusterset", "edge");
const CLUSTERS: [&str; 3] = ["edge-1", "edge-2", "edge-3"];

async fn apply_fleet_objects(fleet: &Fleet) {
    apply(
        fleet,
        [
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
               "metadata": {"name": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
               "metadata": {"name": "edge", "namespace": "default"}, "spec": {"clusterSet": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"numberOfClusters": 1, "clusterSets": ["edge"]}}),
        json!({"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"placementRefs": [{"name": "web"}],
                        "manifestWorkTemplate": {"workload": {"manifests": [
                            {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "web", "namespace": "default"},
                             "data": {"greeting": "hello"}}]}}}}),
        ],
    )
    .await;
}

/// Applies OCM objects through the admin API, failing the test on any refusal.
async fn apply(fleet: &Fleet, objects: impl IntoIterator<Item = serde_json::Value>) {
    let admin = fleet.admin().await;
    for object in objects {
        admin.apply_object(object).await.unwrap();
    }
}

/// A Placement of every cluster of set `edge` (no number: all of them).
fn every_edge() -> serde_json::Value {
    json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
           "metadata": {"name": "every-edge", "namespace": "default"},
           "spec": {"clusterSets": ["edge"]}})
}

/// Waits until the placement's decisions satisfy `done`.
async fn wait_placement(
    fleet: &Fleet,
    name: &str,
    what: &str,
    done: impl Fn(&PlacementView) -> bool,
) -> PlacementView {
    let admin = fleet.admin().await;
    let last = std::cell::RefCell::new(None);
    let found = wait_for(&format!("placement {name}: {what}"), WAIT, || async {
        let p = admin.get_placement(Some("default"), name).await.unwrap();
        let ok = done(&p);
        *last.borrow_mut() = Some(p.clone());
        ok.then_some(p)
    })
    .await;
    found.unwrap_or_else(|_| {
        panic!(
            "placement {name}: {what} did not happen within {WAIT:?}: {:#?}",
            last.borrow()
        )
    })
}

fn decided(p: &PlacementView) -> Vec<String> {
    p.decisions.iter().map(|d| d.cluster.clone()).collect()
}

/// Waits until the hub holds the replica set's work on `cluster` (not being deleted).
async fn wait_work_on(fleet: &Fleet, cluster: &str) {
    let admin = fleet.admin().await;
    let found = wait_for(&format!("work web on {cluster}"), WAIT, || async {
        admin
            .get_work(cluster, "web")
            .await
            .ok()
            .filter(|w| !w.deleting)
    })
    .await;
    let w = found.unwrap_or_else(|_| panic!("no work web on {cluster} within {WAIT:?}"));
    assert_eq!(
        w.labels
            .get("work.open-cluster-management.io/manifestworkreplicaset")
            .map(String::as_str),
        Some("default.web")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placement_moves_off_a_killed_cluster_and_the_work_follows() {
    let mut fleet = fleet().await;
    for name in CLUSTERS {
        fleet.start_accepted(name, &[SET_LABEL]).await;
    }
    apply_fleet_objects(&fleet).await;

    let p = wait_placement(&fleet, "web", "one decision", |p| p.decisions.len() == 1).await;
    let first = decided(&p).remove(0);
    let explanation = p.explanation.as_ref().expect("the hub explains its choice");
    assert_eq!(explanation.clusters.len(), 3, "{explanation}");
    wait_work_on(&fleet, &first).await;
    let rollout = fleet
        .admin()
        .await
        .get_replica_set(Some("default"), "web")
        .await
        .unwrap();
    assert_eq!(rollout.clusters.len(), 1);
    assert_eq!(rollout.clusters[0].cluster, first);

    // The chosen cluster's agent dies.
    fleet.kill_agent(&first).await;
    fleet
        .wait_cluster(&first, WAIT, "unreachable", is_unreachable)
        .await;
    let p = wait_placement(&fleet, "web", "a move to a live cluster", |p| {
        p.decisions.len() == 1 && decided(p)[0] != first
    })
    .await;
    let second = decided(&p).remove(0);
    let why = p.explanation.as_ref().unwrap().cluster(&first).unwrap();
    assert!(
        why.reason.contains("taint") || why.reason.contains(TAINT_UNREACHABLE),
        "{why:?}"
    );
    wait_work_on(&fleet, &second).await;
    // The dead cluster's work leaves the hub's desired state (deleted once its agent confirms).
    let admin = fleet.admin().await;
    let gone = wait_for(
        "the work on the dead cluster to be deleted",
        WAIT,
        || async {
            match admin.get_work(&first, "web").await {
                Ok(w) if w.deleting => Some(()),
                Ok(_) => None,
                Err(_) => Some(()),
            }
        },
    )
    .await;
    assert!(gone.is_ok(), "the work on {first} is not being deleted");

    // The agent comes back: the taint goes, the placement stays where it is (Steady).
    fleet.restart_agent(&first).await;
    fleet
        .wait_cluster(&first, WAIT, "available again", is_available)
        .await;
    let admin = fleet.admin().await;
    let gone = wait_for(
        "the returning agent to confirm the deletion",
        WAIT,
        || async { admin.get_work(&first, "web").await.err().map(|_| ()) },
    )
    .await;
    assert!(gone.is_ok(), "the returning agent confirms the deletion");

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placement_tolerating_unreachable_for_n_seconds_keeps_the_cluster_until_then() {
    const N: i64 = 5;
    let mut fleet = fleet().await;
    for name in CLUSTERS {
        fleet.start_accepted(name, &[SET_LABEL]).await;
    }
    apply_fleet_objects(&fleet).await;
    fleet
        .admin()
        .await
        .apply_object(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "tolerant", "namespace": "default"},
            "spec": {"numberOfClusters": 1, "clusterSets": ["edge"],
                     "tolerations": [{"key": TAINT_UNREACHABLE, "operator": "Exists",
                                      "tolerationSeconds": N}]}}))
        .await
        .unwrap();
    let p = wait_placement(&fleet, "tolerant", "one decision", |p| {
        p.decisions.len() == 1
    })
    .await;
    let chosen = decided(&p).remove(0);

    fleet.kill_agent(&chosen).await;
    let view = fleet
        .wait_cluster(&chosen, WAIT, "unreachable", is_unreachable)
        .await;
    let added = view
        .taints
        .iter()
        .find(|t| t.key == TAINT_UNREACHABLE)
        .and_then(|t| t.time_added)
        .unwrap()
        .as_datetime();

    // Tolerated: still decided, with a re-check when the toleration expires.
    let kept = wait_placement(&fleet, "tolerant", "a re-check at the expiry", |p| {
        p.requeue_at.is_some()
    })
    .await;
    assert_eq!(decided(&kept), vec![chosen.clone()]);
    assert_eq!(
        kept.requeue_at,
        Some(added + chrono::TimeDelta::seconds(N)),
        "kept exactly until timeAdded + tolerationSeconds"
    );
    // ... then dropped for a live cluster.
    let moved = wait_placement(&fleet, "tolerant", "the drop after N seconds", |p| {
        p.decisions.len() == 1 && decided(p)[0] != chosen
    })
    .await;
    assert!(moved.requeue_at.is_none_or(|t| t > added));

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_on_placement_scores_from_clusters_steer_a_placement() {
    let mut fleet = fleet().await;
    for name in CLUSTERS {
        fleet.start_accepted(name, &[SET_LABEL]).await;
    }
    apply_fleet_objects(&fleet).await;
    fleet
        .admin()
        .await
        .apply_object(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "roomy", "namespace": "default"},
            "spec": {"numberOfClusters": 1, "clusterSets": ["edge"],
                     "prioritizerPolicy": {"mode": "Exact", "configurations": [
                        {"scoreCoordinate": {"type": "AddOn",
                                             "addOn": {"resourceName": "cpu-ratio",
                                                       "scoreName": "cpuAvailable"}},
                         "weight": 1}]}}}))
        .await
        .unwrap();
    // An add-on beside each agent publishes its score on the cluster's agentevents, signed
    // with the cluster's key (the hub takes a bound cluster's events only so).
    let publish = |cluster: &'static str, value: i32| {
        let url = fleet.broker_url().to_owned();
        let dir = fleet.agent_dir(cluster);
        async move {
            let raw = AgentPeer::connect(&url, "ocm-edge", cluster)
                .await
                .signing_with(&dir);
            let score = raw.event(
                "cluster.open-cluster-management.io.v1alpha1.addonplacementscores.status.update_request",
                json!({"metadata": {"name": "cpu-ratio"},
                       "status": {"scores": [{"name": "cpuAvailable", "value": value}]}}),
            );
            raw.send(&score).await;
            raw
        }
    };
    let _a = publish("edge-1", 10).await;
    let _b = publish("edge-3", 90).await;
    wait_placement(&fleet, "roomy", "the best-scored cluster", |p| {
        decided(p) == vec!["edge-3".to_owned()]
    })
    .await;
    let _c = publish("edge-1", 100).await;
    let p = wait_placement(&fleet, "roomy", "a move to the new best", |p| {
        decided(p) == vec!["edge-1".to_owned()]
    })
    .await;
    let why = p.explanation.unwrap();
    assert!(
        why.cluster("edge-1")
            .unwrap()
            .score_text()
            .unwrap()
            .contains("100"),
        "{why}"
    );

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_cluster_labelling_itself_into_another_set_gets_none_of_its_works() {
    let mut fleet = fleet().await;
    fleet.start_accepted("edge-1", &[SET_LABEL]).await;
    fleet
        .start_accepted("rogue", &[(SET_LABEL.0, "other")])
        .await;
    // A newcomer whose agent asks for set `edge` from its first join request, accepted without
    // a set: the set it asked for is only reported, and it lands in `default`.
    fleet
        .agent("newcomer")
        .label(SET_LABEL.0, SET_LABEL.1)
        .start()
        .await;
    fleet.accept("newcomer").await;
    let newcomer = fleet.admin().await.get_cluster("newcomer").await.unwrap();
    assert_eq!(
        newcomer.labels.get(SET_LABEL.0).map(String::as_str),
        Some("default")
    );
    assert_eq!(
        newcomer
            .reported_labels
            .get(SET_LABEL.0)
            .map(String::as_str),
        Some("edge")
    );
    apply_fleet_objects(&fleet).await;
    // Every cluster of set `edge` gets the work `everywhere`.
    let everywhere = json!({"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
               "metadata": {"name": "everywhere", "namespace": "default"},
               "spec": {"placementRefs": [{"name": "every-edge"}],
                        "manifestWorkTemplate": {"workload": {"manifests": [
                            {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "everywhere", "namespace": "default"}}]}}}});
    apply(&fleet, [every_edge(), everywhere]).await;
    wait_placement(&fleet, "every-edge", "the set's one cluster", |p| {
        decided(p) == vec!["edge-1".to_owned()]
    })
    .await;
    fleet
        .wait_work_condition("edge-1", "everywhere", "Applied")
        .await
        .unwrap();

    // A process holding the rogue cluster's key asks to join again, labelled into set `edge`
    // (as its agent would at a certificate renewal): signed right, so the hub takes it.
    let peer = AgentPeer::connect(fleet.broker_url(), "ocm-edge", "rogue")
        .await
        .signing_with(&fleet.agent_dir("rogue"));
    let forged = peer.event(
        "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
        json!({"metadata": {"name": "rogue", "labels": {SET_LABEL.0: SET_LABEL.1}},
               "spec": {"leaseDurationSeconds": 60}}),
    );
    peer.send(&forged).await;
    let admin = fleet.admin().await;
    let in_edge = |labels: &std::collections::BTreeMap<String, String>| {
        labels.get(SET_LABEL.0).map(String::as_str) == Some("edge")
    };
    let rogue = wait_for(
        "the hub to have handled rogue's new labels",
        WAIT,
        || async {
            admin
                .get_cluster("rogue")
                .await
                .ok()
                .filter(|c| in_edge(&c.reported_labels) || in_edge(&c.labels))
        },
    )
    .await
    .expect("the forged join request reached the hub");
    assert_eq!(
        rogue.labels.get(SET_LABEL.0).map(String::as_str),
        Some("other"),
        "the hub kept the set it accepted"
    );
    // The join request and the placement's reaction are one batch: what the hub shows now is
    // what it decided.
    let p = admin
        .get_placement(Some("default"), "every-edge")
        .await
        .unwrap();
    assert_eq!(decided(&p), vec!["edge-1".to_owned()]);
    let everywhere = admin.get_work("rogue", "everywhere").await;
    assert!(
        everywhere.is_err(),
        "rogue got the set's work: {everywhere:?}"
    );
    let newcomer_work = admin.get_work("newcomer", "everywhere").await;
    assert!(
        newcomer_work.is_err(),
        "newcomer got the set's work: {newcomer_work:?}"
    );
    assert_eq!(
        fleet.stats().await.counters.get("agentLabelsIgnored"),
        Some(&1)
    );

    // The hub decides: labelled into the set by the admin, the cluster gets the set's work.
    let relabelled = admin
        .label_cluster(
            "rogue",
            [(SET_LABEL.0.to_owned(), SET_LABEL.1.to_owned())].into(),
            vec![],
        )
        .await
        .unwrap();
    assert!(in_edge(&relabelled.labels), "{relabelled:?}");
    wait_placement(&fleet, "every-edge", "both clusters of the set", |p| {
        decided(p) == vec!["edge-1".to_owned(), "rogue".to_owned()]
    })
    .await;
    fleet
        .wait_work_condition("rogue", "everywhere", "Applied")
        .await
        .unwrap();

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_taint_takes_a_cluster_out_of_placements_that_do_not_tolerate_it() {
    let mut fleet = fleet().await;
    for name in CLUSTERS {
        fleet.start_accepted(name, &[SET_LABEL]).await;
    }
    apply_fleet_objects(&fleet).await;
    let maintainers = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
           "metadata": {"name": "maintainers", "namespace": "default"},
           "spec": {"clusterSets": ["edge"],
                    "tolerations": [{"key": "maintenance", "operator": "Exists"}]}});
    apply(&fleet, [every_edge(), maintainers]).await;
    let admin = fleet.admin().await;
    let all: Vec<String> = CLUSTERS.iter().map(|c| (*c).to_owned()).collect();
    wait_placement(&fleet, "every-edge", "every cluster", |p| decided(p) == all).await;

    let maintenance = ocm_edge_schemas::api::cluster::Taint {
        key: "maintenance".into(),
        value: "firmware".into(),
        effect: ocm_edge_schemas::api::cluster::TaintEffect::NoSelect,
        time_added: None,
    };
    let tainted = admin
        .taint_cluster("edge-2", vec![maintenance], vec![])
        .await
        .unwrap();
    let stamped = tainted.taints.iter().find(|t| t.key == "maintenance");
    assert!(
        stamped.is_some_and(|t| t.time_added.is_some()),
        "{tainted:?}"
    );
    wait_placement(&fleet, "every-edge", "edge-2 left", |p| {
        decided(p) == vec!["edge-1".to_owned(), "edge-3".to_owned()]
    })
    .await;
    let p = admin
        .get_placement(Some("default"), "maintainers")
        .await
        .unwrap();
    assert_eq!(
        decided(&p),
        all,
        "a placement tolerating the taint keeps the cluster"
    );

    admin
        .taint_cluster("edge-2", vec![], vec!["maintenance".into()])
        .await
        .unwrap();
    wait_placement(&fleet, "every-edge", "edge-2 back", |p| decided(p) == all).await;

    fleet.stop_agents().await;
    fleet.shutdown().await;
}

/// What `ocm-edge-agent --applier sim --sim-capacity CAPACITY` reports (parsed by the agent's
/// own flags).
fn sim_capacity(capacity: &str) -> SimFacts {
    let cli = Cli::try_parse_from([
        "ocm-edge-agent",
        "--cluster-name",
        "any",
        "--applier",
        "sim",
        "--sim-capacity",
        capacity,
    ])
    .unwrap();
    cli.agent_config().unwrap().sim_facts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placement_ranked_by_allocatable_cpu_picks_the_roomiest_clusters_and_follows_a_change() {
    let mut fleet = fleet().await;
    for (name, capacity) in [
        ("edge-1", "cpu=2,memory=4Gi,pods=110"),
        ("edge-2", "cpu=8,memory=4Gi,pods=110"),
        ("edge-3", "cpu=4500m,memory=4Gi,pods=110"),
    ] {
        fleet
            .agent(name)
            .configure(|c| {
                c.sim_facts = sim_capacity(capacity);
                // Read often (on a tick as often), so the test sees a change within a second,
                // and several reads of unchanged facts within a few.
                c.facts_interval = Duration::from_millis(500);
                c.health_interval = Duration::from_millis(500);
            })
            .start()
            .await;
        // The operator puts it in the set (the agent's set label is only reported).
        fleet
            .accept_labelled(
                name,
                [(SET_LABEL.0.to_owned(), SET_LABEL.1.to_owned())].into(),
            )
            .await;
        fleet
            .wait_cluster(name, WAIT, "available", is_available)
            .await;
    }
    apply_fleet_objects(&fleet).await;
    apply(
        &fleet,
        [json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "roomy-cpu", "namespace": "default"},
               "spec": {"numberOfClusters": 2, "clusterSets": ["edge"],
                        "prioritizerPolicy": {"mode": "Exact", "configurations": [
                           {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"},
                            "weight": 1}]}}})],
    )
    .await;
    let sorted = |p: &PlacementView| {
        let mut d = decided(p);
        d.sort();
        d
    };
    let p = wait_placement(&fleet, "roomy-cpu", "the two clusters with most CPU", |p| {
        sorted(p) == ["edge-2", "edge-3"]
    })
    .await;
    let why = p.explanation.unwrap();
    assert!(
        why.cluster("edge-2")
            .unwrap()
            .score_text()
            .unwrap()
            .contains("100"),
        "the roomiest cluster scores the most: {why}"
    );

    // edge-1 grows to 16 CPUs (a node added): its agent reports it at its next read, and the
    // placement takes it instead of the now smallest edge-3.
    let mut grown = sim_capacity("cpu=16,memory=8Gi,pods=220");
    grown.nodes = 2;
    let sent_before = fleet.counters("edge-1").cluster_statuses;
    fleet.sim("edge-1").set_facts(grown);
    wait_placement(&fleet, "roomy-cpu", "a move to the grown cluster", |p| {
        sorted(p) == ["edge-1", "edge-2"]
    })
    .await;
    // One status for the change, not one per read.
    let sent = fleet.counters("edge-1").cluster_statuses - sent_before;
    assert_eq!(sent, 1, "cluster statuses sent for one change");
    // Unchanged facts send nothing more over a few reads.
    let settled = fleet.counters("edge-1").cluster_statuses;
    let more = wait_for(
        "another cluster status from edge-1",
        Duration::from_secs(3),
        || async { (fleet.counters("edge-1").cluster_statuses != settled).then_some(()) },
    )
    .await;
    assert!(more.is_err(), "unchanged facts were sent again");

    fleet.stop_agents().await;
    fleet.shutdown().await;
}
