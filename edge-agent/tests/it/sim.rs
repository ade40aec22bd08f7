//! The simulated cluster through the Applier trait, with time passed in (no timers, no sleeps).

use std::time::Duration;

use chrono::{TimeZone, Utc};
use ocm_edge_agent::applier::sim::SimApplier;
use ocm_edge_agent::applier::{Applier, ApplyError};
use ocm_edge_agent::store::Store;
use ocm_edge_agent::work::plan::{ApplyAction, ApplyStrategy, DeletePropagation, IgnoredField};
use ocm_edge_agent::work::resource::ResourceRef;
use ocm_edge_agent::work::status::workload_ready;
use ocm_edge_schemas::api::work::{IgnoreFieldsCondition, Manifest};
use serde_json::{Value, json};

fn sim(dir: &std::path::Path, delay: Duration) -> (Store, SimApplier) {
    let store = Store::open(dir).unwrap();
    let sim = SimApplier::new(store.database(), delay).unwrap();
    (store, sim)
}

fn action(manifest: Value, strategy: ApplyStrategy) -> ApplyAction {
    let resource = ResourceRef::from_manifest(&Manifest(manifest.clone()), 0).unwrap();
    ApplyAction {
        ordinal: 0,
        resource,
        manifest,
        strategy,
        executor: None,
    }
}

fn t(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap()
}

#[tokio::test]
async fn workloads_become_ready_exactly_after_the_delay_counted_from_their_last_change() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, sim) = sim(dir.path(), Duration::from_secs(5));
    let workloads = [
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"replicas":3}}),
        json!({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds","namespace":"default"}}),
        json!({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default"}}),
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"}}),
    ];
    for w in &workloads {
        let a = action(w.clone(), ApplyStrategy::Update);
        let kind = a.resource.kind.clone();
        let observed = sim.apply(&a, t(0)).await.unwrap();
        assert_eq!(
            workload_ready(&kind, &observed),
            Some(false),
            "{kind} not ready at once"
        );
        let early = sim.get(&a.resource, t(4)).await.unwrap().unwrap();
        assert_eq!(
            workload_ready(&kind, &early),
            Some(false),
            "{kind} not ready before the delay"
        );
        let later = sim.get(&a.resource, t(5)).await.unwrap().unwrap();
        assert_eq!(
            workload_ready(&kind, &later),
            Some(true),
            "{kind} ready after the delay"
        );
    }
    // A spec change starts the delay again.
    let mut scaled = workloads[0].clone();
    scaled["spec"]["replicas"] = json!(4);
    let observed = sim
        .apply(&action(scaled, ApplyStrategy::Update), t(10))
        .await
        .unwrap();
    assert_eq!(observed["metadata"]["generation"], 2);
    assert_eq!(workload_ready("Deployment", &observed), Some(false));
}

#[tokio::test]
async fn namespaced_objects_need_their_namespace_and_deleting_it_deletes_them() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, sim) = sim(dir.path(), Duration::ZERO);
    let cm =
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}});
    let err = sim
        .apply(&action(cm.clone(), ApplyStrategy::Update), t(0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ApplyError::NotFound(ref m) if m.contains("namespaces \"shop\"")),
        "{err}"
    );
    let ns = action(
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}),
        ApplyStrategy::Update,
    );
    sim.apply(&ns, t(0)).await.unwrap();
    let cm = action(cm, ApplyStrategy::Update);
    sim.apply(&cm, t(0)).await.unwrap();
    sim.delete(&ns.resource, DeletePropagation::Foreground)
        .await
        .unwrap();
    assert!(sim.get(&cm.resource, t(1)).await.unwrap().is_none());
}

#[tokio::test]
async fn strategies_behave_as_on_a_real_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, sim) = sim(dir.path(), Duration::ZERO);
    let control = sim.control();
    let cm = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"a":"1"}});

    let missing = sim
        .apply(&action(cm.clone(), ApplyStrategy::ReadOnly), t(0))
        .await
        .unwrap_err();
    assert!(matches!(missing, ApplyError::NotFound(_)));

    sim.apply(&action(cm.clone(), ApplyStrategy::CreateOnly), t(0))
        .await
        .unwrap();
    control.modify("ConfigMap", "default", "c", |o| {
        o["data"]["a"] = json!("changed")
    });
    let kept = sim
        .apply(&action(cm.clone(), ApplyStrategy::CreateOnly), t(1))
        .await
        .unwrap();
    assert_eq!(kept["data"]["a"], "changed", "CreateOnly never updates");

    control.modify("ConfigMap", "default", "c", |o| {
        o["data"]["extra"] = json!("x")
    });
    let ssa = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "m".into(),
        ignore_fields: vec![],
    };
    let merged = sim.apply(&action(cm.clone(), ssa), t(2)).await.unwrap();
    assert_eq!(
        (
            merged["data"]["a"].as_str(),
            merged["data"]["extra"].as_str()
        ),
        (Some("1"), Some("x")),
        "SSA merges"
    );

    control.modify("ConfigMap", "default", "c", |o| {
        o["data"]["a"] = json!("drift")
    });
    let replaced = sim
        .apply(&action(cm, ApplyStrategy::Update), t(3))
        .await
        .unwrap();
    assert_eq!(
        replaced["data"],
        json!({"a":"1"}),
        "Update replaces the whole object"
    );
    assert!(
        replaced["metadata"]["uid"].is_string(),
        "server-set fields are kept"
    );
}

#[tokio::test]
async fn a_down_api_server_refuses_every_call_and_reports_unhealthy() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, sim) = sim(dir.path(), Duration::ZERO);
    sim.control().set_api_healthy(false);
    assert!(!sim.health().await);
    let cm = action(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}),
        ApplyStrategy::Update,
    );
    let err = sim.apply(&cm, t(0)).await.unwrap_err();
    assert!(err.is_retryable() && matches!(err, ApplyError::Unavailable(_)));
    sim.control().set_api_healthy(true);
    assert!(sim.health().await);
    assert!(sim.simulated());
    assert!(sim.version().await.unwrap().contains("sim"));
}

fn ssa_ignoring_replicas(condition: IgnoreFieldsCondition) -> ApplyStrategy {
    ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "m".into(),
        ignore_fields: vec![IgnoredField::json_path(".spec.replicas", condition)],
    }
}

/// OCM's ignoreFields: the cluster's value of an ignored field stays while the work does not
/// change; when it changes, OnSpokeChange fields take the work's value again and OnSpokePresent
/// ones never do.
#[tokio::test]
async fn ssa_ignore_fields_keep_the_clusters_value_as_ocm_s_conditions_say() {
    for (condition, after_work_change) in [
        (IgnoreFieldsCondition::OnSpokePresent, 5),
        (IgnoreFieldsCondition::OnSpokeChange, 2),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_store, sim) = sim(dir.path(), Duration::ZERO);
        let d = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"replicas":2,"paused":false}});
        let ssa = ssa_ignoring_replicas(condition);
        let created = sim
            .apply(&action(d.clone(), ssa.clone()), t(0))
            .await
            .unwrap();
        assert_eq!(created["spec"]["replicas"], 2);
        sim.control().modify("Deployment", "default", "d", |o| {
            o["spec"]["replicas"] = json!(5);
            o["spec"]["paused"] = json!(true);
        });
        let kept = sim
            .apply(&action(d.clone(), ssa.clone()), t(1))
            .await
            .unwrap();
        assert_eq!(
            (
                kept["spec"]["replicas"].clone(),
                kept["spec"]["paused"].clone()
            ),
            (json!(5), json!(true)),
            "{condition:?}: an unchanged work leaves the cluster's edits"
        );
        let mut changed = d.clone();
        changed["metadata"]["labels"] = json!({"v": "2"});
        let applied = sim.apply(&action(changed, ssa), t(2)).await.unwrap();
        assert_eq!(
            applied["spec"]["replicas"], after_work_change,
            "{condition:?}: after the work changed"
        );
        assert_eq!(applied["spec"]["paused"], false, "{condition:?}");
    }
}
