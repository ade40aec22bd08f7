//! Offline-first: the agent reconciles from its redb cache with no broker at all, corrects drift,
//! and picks up where it left off after a restart while offline.

use std::time::Duration;

use crate::support::*;
use ocm_edge_agent::store::{DesiredBundle, Store};
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::work::{Manifest, ManifestBundle};
use serde_json::json;

/// A broker URL nobody listens on.
fn dead_broker() -> String {
    format!("mqtt://127.0.0.1:{}", free_port())
}

fn offline_config(dir: &std::path::Path) -> AgentConfig {
    let mut cfg = AgentConfig::new("edge-offline", dead_broker(), dir);
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::ZERO,
    };
    cfg.reconcile_interval = Duration::from_millis(100);
    cfg
}

fn web_bundle() -> DesiredBundle {
    DesiredBundle {
        resource_id: "6b3a1d7e-0000-5000-8000-000000000001".into(),
        resource_version: 1,
        source: "ocm-edge".into(),
        metadata: Some(ObjectMeta::namespaced("edge-offline", "web")),
        generation: 1,
        bundle: ManifestBundle {
            manifests: vec![
                Manifest(
                    json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}),
                ),
                Manifest(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}})),
            ],
            ..ManifestBundle::default()
        },
        deleting: false,
        decided_at: None,
        waiting: None,
    }
}

fn seed(dir: &std::path::Path, bundle: &DesiredBundle) {
    let store = Store::open(dir).unwrap();
    store.put_desired(bundle).unwrap();
}

#[tokio::test]
async fn with_no_broker_at_all_the_agent_applies_its_cached_bundles_namespace_first() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &web_bundle());
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    let c = wait_counters(&mut counters, "both objects applied", |c| {
        c.objects_applied >= 2
    })
    .await;
    assert!(!c.connected);
    assert_eq!(
        c.apply_errors, 0,
        "the namespace was created before the deployment in it"
    );
    let sim = agent.sim().unwrap();
    assert!(sim.get("Namespace", "", "shop").is_some());
    assert_eq!(
        sim.get("Deployment", "shop", "web").unwrap()["spec"]["replicas"],
        2
    );
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn drift_is_corrected_by_the_next_reconcile_while_offline() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &web_bundle());
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "applied", |c| c.objects_applied >= 2).await;
    let sim = agent.sim().unwrap();

    assert!(
        sim.modify("Deployment", "shop", "web", |d| d["spec"]["replicas"] =
            json!(7))
    );
    assert!(
        sim.delete("Namespace", "", "shop"),
        "deleting the namespace also deletes the deployment"
    );
    assert!(sim.get("Deployment", "shop", "web").is_none());
    let before = counters.borrow().reconciles;
    wait_counters(&mut counters, "two more reconciles", |c| {
        c.reconciles >= before + 2
    })
    .await;
    assert_eq!(
        sim.get("Deployment", "shop", "web").unwrap()["spec"]["replicas"],
        2
    );
    assert!(sim.get("Namespace", "", "shop").is_some());
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_restart_while_offline_reconciles_from_the_redb_cache() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &web_bundle());
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "applied", |c| c.objects_applied >= 2).await;
    agent.sim().unwrap().delete("Deployment", "shop", "web");
    agent.kill().await;

    // The simulated cluster lives in the same file: the deleted Deployment is still gone.
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    let c = wait_counters(&mut counters, "restored", |c| {
        c.reconciles >= 1 && c.bundles_held == 1
    })
    .await;
    assert!(!c.connected);
    let sim = agent.sim().unwrap();
    assert_eq!(
        sim.get("Deployment", "shop", "web").unwrap()["spec"]["replicas"],
        2
    );
    let store_status = {
        agent.shutdown().await.unwrap();
        Store::open(dir.path()).unwrap().all_status().unwrap()
    };
    assert_eq!(
        store_status.len(),
        1,
        "the status waits in the outbox for the hub"
    );
    assert!(store_status[0].1.pending);
}

#[tokio::test]
async fn while_the_api_server_is_down_drift_stays_and_is_corrected_when_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &web_bundle());
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "applied", |c| c.objects_applied >= 2).await;
    let sim = agent.sim().unwrap();

    sim.set_api_healthy(false);
    assert!(
        sim.modify("Deployment", "shop", "web", |d| d["spec"]["replicas"] =
            json!(9))
    );
    let errors = counters.borrow().apply_errors;
    wait_counters(&mut counters, "failed applies", |c| {
        c.apply_errors >= errors + 2
    })
    .await;
    assert_eq!(
        sim.get("Deployment", "shop", "web").unwrap()["spec"]["replicas"],
        9
    );

    sim.set_api_healthy(true);
    let before = counters.borrow().reconciles;
    wait_counters(&mut counters, "two more reconciles", |c| {
        c.reconciles >= before + 2
    })
    .await;
    assert_eq!(
        sim.get("Deployment", "shop", "web").unwrap()["spec"]["replicas"],
        2
    );
    agent.shutdown().await.unwrap();
}

/// The whole agent on a real cluster with no broker: the cached bundle is applied with the kube applier.
#[tokio::test]
async fn e2e_the_agent_applies_its_cached_bundle_to_a_real_cluster() {
    let Some(path) = ocm_edge_tests::kube::kubeconfig(
        "e2e_the_agent_applies_its_cached_bundle_to_a_real_cluster",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut bundle = web_bundle();
    bundle.bundle.manifests[1] =
        Manifest(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ocm-edge-e2e"}}));
    bundle.bundle.manifests[0] = Manifest(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e","namespace":"ocm-edge-e2e"},"data":{"k":"v"}}),
    );
    seed(dir.path(), &bundle);
    let mut cfg = offline_config(dir.path());
    cfg.applier = ApplierConfig::Kube {
        kubeconfig: Some(path),
    };
    let agent = start_agent(cfg).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "applied on the cluster", |c| {
        c.objects_applied >= 2 && c.apply_errors == 0
    })
    .await;
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_missing_ca_file_for_an_mqtts_broker_fails_the_start_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = AgentConfig::new("edge-tls", "mqtts://127.0.0.1:8883", dir.path());
    cfg.tls.ca_file = Some(dir.path().join("nope-ca.pem"));
    let err = start_agent(cfg).await.unwrap_err();
    assert!(err.to_string().contains("nope-ca.pem"), "{err}");
}

#[tokio::test]
async fn a_delete_held_while_offline_removes_the_objects_and_keeps_the_deleted_status_for_the_hub()
{
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &web_bundle());
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "applied", |c| c.objects_applied >= 2).await;
    agent.shutdown().await.unwrap();

    // The delete arrived (say, just before the link went down) and was stored.
    {
        let store = Store::open(dir.path()).unwrap();
        let mut held = store.desired(&web_bundle().resource_id).unwrap().unwrap();
        held.deleting = true;
        store.put_desired(&held).unwrap();
    }
    let agent = start_agent(offline_config(dir.path())).await.unwrap();
    let mut counters = agent.counters();
    let c = wait_counters(&mut counters, "removed", |c| c.bundles_deleted == 1).await;
    assert_eq!(c.objects_deleted, 2);
    let sim = agent.sim().unwrap();
    assert!(sim.get("Deployment", "shop", "web").is_none());
    assert!(sim.get("Namespace", "", "shop").is_none());
    drop(sim);
    agent.shutdown().await.unwrap();

    let store = Store::open(dir.path()).unwrap();
    assert!(
        store.all_desired().unwrap().is_empty(),
        "the bundle is forgotten"
    );
    let outbox = store.all_status().unwrap();
    assert_eq!(outbox.len(), 1, "its Deleted status waits for the hub");
    let record = &outbox[0].1;
    assert!(record.deleted && record.pending);
    assert!(ocm_edge_schemas::api::meta::is_condition_true(
        &record.status.conditions,
        "Deleted"
    ));
}
