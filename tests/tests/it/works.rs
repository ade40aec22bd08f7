//! Works end to end: deploy, update, status feedback, delete.

use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::admin::{AdminErrorKind, WriteOutcome};
use ocm_edge_tests::fleet::{Fleet, WAIT};
use ocm_edge_tests::manifests::{
    config_map, deployment, deployment_image, feedback_integer, namespace,
    well_known_status_feedback,
};
use ocm_edge_tests::wait::wait_until;
use serde_json::json;

async fn fleet_of(clusters: &[&str]) -> Fleet {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(clusters).await;
    fleet.accept_all(clusters).await;
    fleet
}

#[tokio::test]
async fn a_work_deployed_to_two_of_three_clusters_reaches_only_those_two() {
    let fleet = fleet_of(&["c1", "c2", "c3"]).await;
    let written = fleet
        .create_work(
            "web",
            &["c1", "c2"],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    assert_eq!(written.len(), 2);
    assert!(
        written
            .iter()
            .all(|w| w.outcome == WriteOutcome::Created && w.work.version == 1)
    );

    for c in ["c1", "c2"] {
        fleet
            .wait_work_condition(c, "web", "Applied")
            .await
            .unwrap();
        fleet
            .wait_sim(c, "Deployment web/web exists", |sim| {
                sim.get("Deployment", "web", "web")
            })
            .await
            .unwrap();
    }
    // The third cluster got nothing: the hub holds no work for it, its agent holds no bundle and
    // its cluster has no objects.
    let err = fleet.admin().await.get_work("c3", "web").await.unwrap_err();
    assert_eq!(err.hub_kind(), Some(AdminErrorKind::NotFound), "{err}");
    assert!(
        fleet
            .admin()
            .await
            .list_works(Some("c3"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(fleet.counters("c3").bundles_held, 0);
    assert_eq!(fleet.counters("c3").specs_applied, 0);
    assert!(
        fleet.sim("c3").objects().is_empty(),
        "{:?}",
        fleet.sim("c3").objects()
    );
    fleet.shutdown().await;
}

#[tokio::test]
async fn updating_a_work_bumps_its_resourceversion_and_the_cluster_runs_the_new_spec() {
    let fleet = fleet_of(&["c1"]).await;
    fleet
        .create_work(
            "web",
            &["c1"],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    let v1 = fleet
        .wait_work_condition("c1", "web", "Applied")
        .await
        .unwrap();
    assert_eq!(v1.version, 1);

    let written = fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 2, "nginx:1.28")],
            overwrite: true,
            ..CreateWork::default()
        })
        .await;
    assert_eq!(written[0].outcome, WriteOutcome::Updated);
    assert_eq!(written[0].work.version, 2);

    let on_cluster = fleet
        .wait_sim("c1", "Deployment web/web runs nginx:1.28", |sim| {
            sim.get("Deployment", "web", "web")
                .filter(|d| deployment_image(d) == Some("nginx:1.28"))
        })
        .await
        .unwrap();
    assert_eq!(on_cluster.pointer("/spec/replicas"), Some(&json!(2)));
    // The hub's status is for the new spec: Applied with observedGeneration 2.
    let view = fleet
        .wait_work("c1", "web", "Applied=True for generation 2", |w| {
            w.conditions
                .iter()
                .any(|c| c.type_ == "Applied" && c.is_true() && c.observed_generation == 2)
        })
        .await
        .unwrap();
    assert_eq!(view.version, 2);

    // Writing the same spec again changes nothing.
    let again = fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 2, "nginx:1.28")],
            overwrite: true,
            ..CreateWork::default()
        })
        .await;
    assert_eq!(again[0].outcome, WriteOutcome::Unchanged);
    assert_eq!(again[0].work.version, 2);
    fleet.shutdown().await;
}

#[tokio::test]
async fn status_feedback_reports_ready_replicas_of_a_deployment_at_the_hub() {
    let fleet = fleet_of(&["c1"]).await;
    fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 3, "nginx:1.27")],
            manifest_configs: vec![well_known_status_feedback(
                "apps",
                "deployments",
                "web",
                "web",
            )],
            ..CreateWork::default()
        })
        .await;
    // Ordinal 1 is the Deployment; the simulated cluster makes it ready after its ready delay.
    let view = fleet
        .wait_work(
            "c1",
            "web",
            "ReadyReplicas=3 in the Deployment's feedback",
            |w| feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(3),
        )
        .await
        .unwrap();
    assert_eq!(
        feedback_integer(&view.resource_status, 1, "Replicas"),
        Some(3)
    );
    assert_eq!(
        feedback_integer(&view.resource_status, 1, "AvailableReplicas"),
        Some(3)
    );
    fleet.shutdown().await;
}

#[tokio::test]
async fn deleting_a_work_removes_its_resources_and_the_hub_forgets_it_after_the_agent_confirms() {
    let fleet = fleet_of(&["c1"]).await;
    fleet
        .create_work(
            "web",
            &["c1"],
            vec![
                namespace("web"),
                deployment("web", "web", 1, "nginx:1.27"),
                config_map("web", "web-config", json!({"greeting": "hello"})),
            ],
        )
        .await;
    fleet
        .wait_work_condition("c1", "web", "Applied")
        .await
        .unwrap();
    fleet
        .wait_sim("c1", "the ConfigMap exists", |sim| {
            sim.get("ConfigMap", "web", "web-config")
        })
        .await
        .unwrap();

    let deleting = fleet.admin().await.delete_work("c1", "web").await.unwrap();
    assert!(
        deleting.deleting,
        "the hub marks the work deleting until the agent confirms"
    );

    let admin = fleet.admin().await;
    wait_until("the hub to forget the work", WAIT, || async {
        matches!(admin.get_work("c1", "web").await, Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound))
    })
    .await
    .unwrap();
    let sim = fleet.sim("c1");
    for (kind, ns, name) in [
        ("Deployment", "web", "web"),
        ("ConfigMap", "web", "web-config"),
        ("Namespace", "", "web"),
    ] {
        assert!(
            sim.get(kind, ns, name).is_none(),
            "{kind} {ns}/{name} is gone from the cluster"
        );
    }
    assert_eq!(fleet.counters("c1").bundles_held, 0);
    assert_eq!(
        fleet.admin().await.get_cluster("c1").await.unwrap().works,
        0
    );
    assert_eq!(fleet.stats().await.works, 0);
    fleet.shutdown().await;
}

/// Waits until `cluster`'s agent has reconciled its works twice more.
async fn two_more_reconciles(fleet: &Fleet, cluster: &str) {
    let reconciles = fleet.counters(cluster).reconciles;
    wait_until("two more reconciles", WAIT, || async {
        fleet.counters(cluster).reconciles >= reconciles + 2
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_change_made_behind_the_agents_back_is_corrected() {
    let fleet = fleet_of(&["c1"]).await;
    fleet
        .create_work(
            "web",
            &["c1"],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    fleet
        .wait_work_condition("c1", "web", "Applied")
        .await
        .unwrap();
    fleet
        .wait_sim("c1", "the Deployment exists", |sim| {
            sim.get("Deployment", "web", "web")
        })
        .await
        .unwrap();
    // Reconciles that find everything as it was applied correct nothing.
    two_more_reconciles(&fleet, "c1").await;
    assert_eq!(fleet.counters("c1").drift_corrections, 0);
    let sim = fleet.sim("c1");
    assert!(sim.modify("Deployment", "web", "web", |d| {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("evil:latest");
    }));
    assert_eq!(
        sim.get("Deployment", "web", "web")
            .as_ref()
            .and_then(deployment_image),
        Some("evil:latest")
    );
    fleet
        .wait_sim("c1", "the image to be put back", |sim| {
            sim.get("Deployment", "web", "web")
                .filter(|d| deployment_image(d) == Some("nginx:1.27"))
        })
        .await
        .unwrap();
    // Counted once (ocm_edge_agent_drift_corrections_total), not at every reconcile after it.
    wait_until("the correction counted", WAIT, || async {
        fleet.counters("c1").drift_corrections == 1
    })
    .await
    .unwrap();
    two_more_reconciles(&fleet, "c1").await;
    assert_eq!(fleet.counters("c1").drift_corrections, 1);
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_update_that_drops_a_manifest_removes_it_from_the_cluster() {
    let fleet = fleet_of(&["c1"]).await;
    let cm = config_map("web", "web-config", json!({"k": "v"}));
    fleet
        .create_work(
            "web",
            &["c1"],
            vec![
                namespace("web"),
                deployment("web", "web", 1, "nginx:1.27"),
                cm,
            ],
        )
        .await;
    fleet
        .wait_sim("c1", "the ConfigMap exists", |sim| {
            sim.get("ConfigMap", "web", "web-config")
        })
        .await
        .unwrap();
    fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
            overwrite: true,
            ..CreateWork::default()
        })
        .await;
    fleet
        .wait_sim("c1", "the dropped ConfigMap to be removed", |sim| {
            sim.get("ConfigMap", "web", "web-config")
                .is_none()
                .then_some(())
        })
        .await
        .unwrap();
    assert!(
        fleet.sim("c1").get("Deployment", "web", "web").is_some(),
        "the rest stays"
    );
    let view = fleet
        .wait_work(
            "c1",
            "web",
            "status for generation 2 lists two manifests",
            |w| {
                w.conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.is_true() && c.observed_generation == 2)
                    && w.resource_status.len() == 2
            },
        )
        .await
        .unwrap();
    assert_eq!(view.version, 2);
    fleet.shutdown().await;
}

#[tokio::test]
async fn deleting_a_work_with_the_orphan_policy_leaves_its_resources_on_the_cluster() {
    let fleet = fleet_of(&["c1"]).await;
    fleet
        .write_work(CreateWork {
            name: "keep".into(),
            clusters: vec!["c1".into()],
            manifests: vec![config_map("default", "kept", json!({"k": "v"}))],
            delete_option: Some(
                serde_json::from_value(json!({"propagationPolicy": "Orphan"})).unwrap(),
            ),
            ..CreateWork::default()
        })
        .await;
    fleet
        .wait_work_condition("c1", "keep", "Applied")
        .await
        .unwrap();
    fleet.admin().await.delete_work("c1", "keep").await.unwrap();
    let admin = fleet.admin().await;
    wait_until("the hub to forget the work", WAIT, || async {
        matches!(admin.get_work("c1", "keep").await, Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound))
    })
    .await
    .unwrap();
    assert!(
        fleet
            .sim("c1")
            .get("ConfigMap", "default", "kept")
            .is_some(),
        "an orphaned resource stays on the cluster"
    );
    assert_eq!(fleet.counters("c1").bundles_held, 0);
    fleet.shutdown().await;
}

/// A CEL condition rule for the Deployment `web/web`: Complete once every replica is ready.
fn complete_when_ready() -> ocm_edge_schemas::api::work::ManifestConfigOption {
    serde_json::from_value(json!({
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "namespace": "web", "name": "web"},
        "conditionRules": [{
            "condition": "Complete",
            "type": "CEL",
            "celExpressions": ["has(object.status.readyReplicas)",
                               "object.status.readyReplicas == object.spec.replicas"],
            "messageExpression": "result ? 'all ' + string(object.spec.replicas) + ' replicas ready' : 'waiting'",
        }],
    }))
    .expect("OCM's ManifestConfigOption shape")
}

#[tokio::test]
async fn a_cel_condition_rule_is_evaluated_by_the_agent_and_reaches_the_hub() {
    let fleet = fleet_of(&["c1"]).await;
    fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 2, "nginx:1.27")],
            manifest_configs: vec![complete_when_ready()],
            ..CreateWork::default()
        })
        .await;
    // The simulated Deployment becomes ready after its delay; the rule then holds, and the
    // work is Complete.
    let view = fleet
        .wait_work_condition("c1", "web", "Complete")
        .await
        .unwrap();
    let deployment = view
        .resource_status
        .iter()
        .find(|m| m.resource_meta.ordinal == 1)
        .unwrap();
    let complete = ocm_edge_schemas::api::meta::find_condition(&deployment.conditions, "Complete")
        .expect("the rule's condition on the Deployment");
    assert_eq!(
        (complete.reason.as_str(), complete.message.as_str()),
        ("ConditionRuleEvaluated", "all 2 replicas ready")
    );
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_rule_that_does_not_compile_is_refused_and_a_finished_work_goes_after_its_ttl() {
    let fleet = fleet_of(&["c1"]).await;
    let mut broken = complete_when_ready();
    broken.condition_rules[0].cel_expressions[1] = "object.status.readyReplicas ==".into();
    let refused = fleet
        .admin()
        .await
        .create_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
            manifest_configs: vec![broken],
            ..CreateWork::default()
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains(
            "spec.manifestConfigs[0].conditionRules[0].celExpressions[1]: ERROR: <input>:1:"
        ),
        "{refused}"
    );

    fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
            manifest_configs: vec![complete_when_ready()],
            delete_option: Some(ocm_edge_schemas::api::work::DeleteOption {
                ttl_seconds_after_finished: Some(0),
                ..Default::default()
            }),
            ..CreateWork::default()
        })
        .await;
    // Complete as soon as the Deployment is ready, then deleted by the hub: the agent removes
    // the objects and the hub forgets the work.
    let admin = fleet.admin().await;
    wait_until("the hub to delete the finished work", WAIT, || async {
        matches!(admin.get_work("c1", "web").await, Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound))
    })
    .await
    .unwrap();
    fleet
        .wait_sim("c1", "the Deployment is removed", |sim| {
            sim.get("Deployment", "web", "web").is_none().then_some(())
        })
        .await
        .unwrap();
    fleet.shutdown().await;
}

/// `feedbackScrapeType: Watch`: the agent reads a watched object's status when it changes, not
/// at its next reconcile. With a reconcile an hour away, the Deployment turning ready reaches the
/// hub's feedback, and drift put into it is corrected, only because it is watched.
#[tokio::test]
async fn a_watched_deployments_status_and_drift_are_seen_when_they_change_not_at_the_next_reconcile()
 {
    let mut fleet = Fleet::start_with(ocm_edge_tests::fleet::FleetOptions {
        reconcile_interval: std::time::Duration::from_secs(3600),
        ready_delay: std::time::Duration::from_secs(1),
        ..Default::default()
    })
    .await;
    fleet.start_agents(&["c1"]).await;
    fleet.accept_all(&["c1"]).await;
    let mut feedback = well_known_status_feedback("apps", "deployments", "web", "web");
    feedback.feedback_scrape_type = Some(ocm_edge_schemas::api::work::FeedbackScrapeType::Watch);
    fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["c1".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 2, "nginx:1.27")],
            manifest_configs: vec![feedback],
            ..CreateWork::default()
        })
        .await;
    // Applied at once (ready 0), ready a second later: only the watch can tell the hub.
    fleet
        .wait_work("c1", "web", "ReadyReplicas=2 from the watch", |w| {
            feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(2)
        })
        .await
        .unwrap();
    assert_eq!(fleet.counters("c1").objects_watched, 1);
    assert!(fleet.counters("c1").watch_reconciles >= 1);

    // Drift in the watched Deployment is put back at once.
    assert!(fleet.sim("c1").modify("Deployment", "web", "web", |d| {
        d["spec"]["replicas"] = json!(5);
    }));
    fleet
        .wait_sim("c1", "the Deployment back to 2 replicas", |sim| {
            sim.get("Deployment", "web", "web")
                .filter(|d| d["spec"]["replicas"] == json!(2))
        })
        .await
        .unwrap();
    fleet.shutdown().await;
}
