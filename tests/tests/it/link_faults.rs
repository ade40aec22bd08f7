//! Link faults with real network namespaces: the agent runs in its own process inside an edge
//! namespace, joined to the hub's broker by a veth link that the test cuts silently (blackhole
//! qdiscs: packets vanish, no FIN, no RST), or by a 2G link emulated in user space
//! (`link-shaper`: 64 kbit/s, 300 ± 100 ms, 3 % loss). Needs root; skipped with the reason
//! otherwise.

use std::path::Path;

use ocm_edge_cli::client::AdminClient;
use ocm_edge_schemas::admin::ClusterView;
use ocm_edge_tests::broker::TestBroker;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT, has_true_condition};
use ocm_edge_tests::manifests::{feedback_integer, large_work, web_with_feedback};
use ocm_edge_tests::netns::{ShapedLink, require_edge_link, require_shaped_link};
use ocm_edge_tests::probe::Probe;
use ocm_edge_tests::process::Spawned;
use ocm_edge_tests::shaper::LinkParams;
use ocm_edge_tests::wait::{wait_for, wait_until};

const UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";

fn unreachable(c: &ClusterView) -> bool {
    c.taints.iter().any(|t| t.key == UNREACHABLE)
}

#[tokio::test]
async fn a_silent_cut_taints_the_cluster_and_updates_made_meanwhile_arrive_when_the_link_returns() {
    let test =
        "a_silent_cut_taints_the_cluster_and_updates_made_meanwhile_arrive_when_the_link_returns";
    let Some(link) = require_edge_link(test) else {
        return;
    };
    let host = link.host_ip();
    let broker = tokio::task::spawn_blocking(move || TestBroker::start_on(host))
        .await
        .unwrap()
        .expect("broker on the veth address");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let (ip, args) = link.exec_args(
        Path::new(env!("CARGO_BIN_EXE_test-agent")),
        &[
            "--cluster",
            "edge-1",
            "--broker",
            &broker.url(),
            "--data-dir",
            &data_dir,
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let agent = Spawned::start("test-agent edge-1 (edge namespace)", &ip, &args).await;
    fleet.accept("edge-1").await;
    fleet
        .write_work(web_with_feedback(&["edge-1"], 1, false))
        .await;
    fleet
        .wait_work("edge-1", "web", "ReadyReplicas=1", |w| {
            feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(1)
        })
        .await
        .unwrap();

    link.cut().unwrap();
    let admin = fleet.admin().await;
    wait_for(
        "the hub to taint the cut cluster unreachable",
        WAIT,
        || async { admin.get_cluster("edge-1").await.ok().filter(unreachable) },
    )
    .await
    .unwrap();
    // Updated while the link is down: stored, sent to nobody.
    let written = fleet
        .write_work(web_with_feedback(&["edge-1"], 3, true))
        .await;
    assert_eq!(written[0].work.version, 2);

    link.restore().unwrap();
    wait_for("the cluster reachable again", WAIT, || async {
        admin
            .get_cluster("edge-1")
            .await
            .ok()
            .filter(|c| !unreachable(c))
    })
    .await
    .unwrap();
    let w = fleet
        .wait_work("edge-1", "web", "version 2 with ReadyReplicas=3", |w| {
            w.status_version == Some(2)
                && feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(3)
        })
        .await
        .unwrap();
    assert!(has_true_condition(&w.conditions, "Applied"));
    agent.stop().await;
    fleet.shutdown().await;
}

/// How long a 300 KiB work may take over the 2G link (about 45 s of bytes alone at 64 kbit/s).
const SLOW_WAIT: std::time::Duration = std::time::Duration::from_secs(400);
const WORK_KIB: usize = 300;

async fn agent_behind(link: &ShapedLink, broker_url: &str, data_dir: &str) -> Spawned {
    let (ip, args) = link.exec_args(
        Path::new(env!("CARGO_BIN_EXE_test-agent")),
        &[
            "--cluster",
            "edge-1",
            "--broker",
            broker_url,
            "--data-dir",
            data_dir,
            "--product-link-settings",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Spawned::start("test-agent edge-1 (behind a 2G link)", &ip, &args).await
}

/// Waits until the hub shows version `version` of work `big` applied on edge-1.
async fn applied(admin: &AdminClient, version: i64) {
    wait_for(
        &format!("version {version} applied over the 2G link"),
        SLOW_WAIT,
        || async {
            admin.get_work("edge-1", "big").await.ok().filter(|w| {
                w.status_version == Some(version) && has_true_condition(&w.conditions, "Applied")
            })
        },
    )
    .await
    .unwrap();
}

/// What the spy has seen the agent send so far: (births, spec resync requests).
fn seen(spy: &mut Probe, count: &mut (usize, usize)) -> (usize, usize) {
    for m in spy.drain() {
        let ty = m.user_property("ce-type").unwrap_or_default();
        if ty.contains(".presences.") && String::from_utf8_lossy(&m.payload).contains("\"online\"")
        {
            count.0 += 1;
        }
        if ty.ends_with("manifestbundles.spec.resync_request") {
            count.1 += 1;
        }
    }
    *count
}

#[tokio::test]
async fn a_300_kib_work_crosses_a_2g_link_without_a_flap_and_a_transfer_cut_by_a_killed_agent_resumes()
 {
    let test = "a_300_kib_work_crosses_a_2g_link";
    let shaper = Path::new(env!("CARGO_BIN_EXE_link-shaper"));
    let Some(link) = require_shaped_link(test, shaper, LinkParams::two_g()) else {
        return;
    };
    let host = link.host_ip();
    let broker = tokio::task::spawn_blocking(move || TestBroker::start_on(host))
        .await
        .unwrap()
        .expect("broker on the shaped link's address");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    let mut spy = Probe::connect(&broker.url()).await.unwrap();
    spy.subscribe("sources/ocm-edge/consumers/edge-1/agentevents")
        .await
        .unwrap();
    let mut born = (0, 0);
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let agent = agent_behind(&link, &broker.url(), &data_dir).await;
    fleet.accept("edge-1").await;
    // The agent's spec resync has reached the broker: the hub will not answer it with a second
    // copy of the work written next (over 2G, a resync can cross a first send).
    wait_until("the agent's spec resync", SLOW_WAIT, || {
        let n = seen(&mut spy, &mut born).1;
        async move { n >= 1 }
    })
    .await
    .unwrap();

    // 1. A 300 KiB work over the slow, lossy link: applied, and the link never dropped (one
    //    birth: the agent's first connection).
    let before = link.bytes_to_edge();
    fleet
        .write_work(large_work(&["edge-1"], WORK_KIB, "v1", false))
        .await;
    let admin = fleet.admin().await;
    let started = std::time::Instant::now();
    applied(admin, 1).await;
    let whole = link.bytes_to_edge() - before;
    eprintln!(
        "2G link: {WORK_KIB} KiB work applied in {:?}, {whole} bytes sent toward the edge",
        started.elapsed()
    );
    assert_eq!(
        seen(&mut spy, &mut born).0,
        1,
        "the agent never reconnected while the work crossed the link"
    );
    let cluster = admin.get_cluster("edge-1").await.unwrap();
    assert!(!unreachable(&cluster), "{:?}", cluster.taints);

    // 2. An update; the agent is killed when 70 % of it has been sent and started again: the
    //    chunks it stored are not sent again.
    let before = link.bytes_to_edge();
    fleet
        .write_work(large_work(&["edge-1"], WORK_KIB, "v2", true))
        .await;
    wait_until(
        "70 % of the update sent toward the edge",
        SLOW_WAIT,
        || async { link.bytes_to_edge() - before > whole * 7 / 10 },
    )
    .await
    .unwrap();
    agent.kill9().await;
    let agent = agent_behind(&link, &broker.url(), &data_dir).await;
    applied(admin, 2).await;
    let resumed = link.bytes_to_edge() - before;
    eprintln!(
        "2G link: update cut at 70 % by a killed agent, then resumed: {resumed} bytes sent toward \
         the edge ({:.2} x the uncut transfer; starting again would cost at least 1.7 x)",
        resumed as f64 / whole as f64
    );
    assert!(
        resumed < whole * 3 / 2,
        "the transfer resumed instead of starting again: {resumed} bytes vs {whole} for a whole one"
    );
    agent.stop().await;
    fleet.shutdown().await;
}
