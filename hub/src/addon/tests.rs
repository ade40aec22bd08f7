//! The add-on manager on the core: OCM's hello-world template add-on, enabled by hand and by
//! placement, rendered per cluster, reported from its work, and removed.

use ocm_edge_schemas::admin::WriteOutcome;
use ocm_edge_schemas::api::work::{
    FeedbackValue, FieldValue, ManifestCondition, ManifestWorkStatus, ResourceMeta,
    StatusFeedbackResult,
};
use serde_json::{Value, json};

use super::*;
use crate::core::AgentInput;
use crate::core::testkit::*;

fn apply(core: &mut HubCore, v: Value) -> Result<WriteOutcome, ObjectError> {
    apply_json(core, v)
}

fn reconcile(core: &mut HubCore, secs: i64) -> Change {
    // reconcile_fleet applies what it returns.
    core.reconcile_fleet(t(secs))
}

/// OCM's hello-world template (trimmed to what is checked): a Deployment using CLUSTER_NAME,
/// HUB_KUBECONFIG and LOG_LEVEL (from the config), and a ServiceAccount.
fn template() -> Value {
    json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
    "metadata": {"name": "hello-template"},
    "spec": {"addonName": "hello-template", "agentSpec": {"workload": {"manifests": [
        {"kind": "Deployment", "apiVersion": "apps/v1",
         "metadata": {"name": "hello-template-agent", "namespace": "{{INSTALL_NAMESPACE}}"},
         "spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "hello",
            "args": ["--cluster-name={{CLUSTER_NAME}}", "--hub-kubeconfig={{HUB_KUBECONFIG}}"],
            "env": [{"name": "LOG_LEVEL", "value": "{{LOG_LEVEL}}"}]}]}}}},
        {"kind": "ServiceAccount", "apiVersion": "v1",
         "metadata": {"name": "hello-template-agent-sa", "namespace": "{{INSTALL_NAMESPACE}}"}}
    ]}}}})
}

fn config(namespace: &str, level: &str) -> Value {
    json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "AddOnDeploymentConfig",
        "metadata": {"name": "hello-template", "namespace": namespace},
        "spec": {"customizedVariables": [{"name": "LOG_LEVEL", "value": level}]}})
}

/// The add-on as OCM's example writes it (v1alpha1, supportedConfigs with defaults).
fn addon(config_namespace: &str) -> Value {
    json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
        "kind": "ClusterManagementAddOn", "metadata": {"name": "hello-template"},
        "spec": {"addOnMeta": {"displayName": "hello-template"}, "supportedConfigs": [
            {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
             "defaultConfig": {"name": "hello-template"}},
            {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
             "defaultConfig": {"name": "hello-template", "namespace": config_namespace}}]}})
}

fn enable(core: &mut HubCore, cluster: &str) {
    apply(
        core,
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello-template", "namespace": cluster},
            "spec": {"installNamespace": "hello-ns"}}),
    )
    .unwrap();
}

fn hello(core: &HubCore, cluster: &str) -> Option<Value> {
    let work = core.work(&WorkKey::new(cluster, work_name("hello-template")))?;
    work.spec
        .workload
        .manifests
        .iter()
        .find(|m| m.kind() == Some("Deployment"))
        .map(|m| m.0.clone())
}

fn cluster_addon<'a>(core: &'a HubCore, cluster: &str) -> Option<&'a ManagedClusterAddOn> {
    core.cluster_addons()
        .find(|m| m.metadata.namespace == cluster && m.metadata.name == "hello-template")
}

fn condition(core: &HubCore, cluster: &str, type_: &str) -> (ConditionStatus, String) {
    let c = cluster_addon(core, cluster)
        .unwrap()
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_}"));
    (c.status, c.reason.clone())
}

/// Accepted clusters that renewed their lease (available).
fn live(names: &[&str]) -> HubCore {
    let mut core = accepted_core(names);
    for name in names {
        step(&mut core, lease(name), 1);
    }
    core
}

fn with_hello_world() -> HubCore {
    let mut core = live(&["edge-1", "edge-2"]);
    apply(&mut core, template()).unwrap();
    apply(&mut core, config("edge-1", "4")).unwrap();
    apply(&mut core, addon("edge-1")).unwrap();
    core
}

#[test]
fn an_enabled_template_addon_is_rendered_for_its_cluster_and_reported_from_its_work() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let deployment = hello(&core, "edge-1").expect("the add-on's work on edge-1");
    assert_eq!(deployment["metadata"]["namespace"], "hello-ns");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["args"][0], "--cluster-name=edge-1");
    assert_eq!(container["env"][0]["value"], "4");
    assert!(hello(&core, "edge-2").is_none(), "only where it is enabled");
    let mca = cluster_addon(&core, "edge-1").unwrap();
    assert_eq!(mca.status.namespace, "hello-ns");
    assert_eq!(mca.status.config_references.len(), 2);
    assert_eq!(
        condition(&core, "edge-1", CONDITION_CONFIGURED).0,
        ConditionStatus::True
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_AVAILABLE),
        (ConditionStatus::False, "NoProbeResult".to_owned())
    );

    // The work asks for its Deployment's WellKnownStatus (the default health check)...
    let work = core
        .work(&WorkKey::new("edge-1", work_name("hello-template")))
        .unwrap()
        .clone();
    assert_eq!(
        work.spec.manifest_configs[0].resource_identifier.resource,
        "deployments"
    );
    // ...and the agent reports it applied, with one replica available: the add-on is available.
    let mut status = ManifestWorkStatus::default();
    for type_ in [WORK_APPLIED, WORK_AVAILABLE] {
        status
            .conditions
            .push(Condition::new(type_, ConditionStatus::True, "Done", "done"));
    }
    status.resource_status.manifests.push(ManifestCondition {
        resource_meta: ResourceMeta {
            kind: "Deployment".into(),
            name: "hello-template-agent".into(),
            namespace: "hello-ns".into(),
            ..ResourceMeta::default()
        },
        status_feedback: StatusFeedbackResult {
            values: vec![FeedbackValue {
                name: "AvailableReplicas".into(),
                field_value: FieldValue::integer(1),
            }],
        },
        conditions: vec![],
    });
    step(
        &mut core,
        status_input(
            "edge-1",
            &work.resource_id,
            work.resource_version,
            "1",
            status,
        ),
        3,
    );
    reconcile(&mut core, 3);
    assert_eq!(
        condition(&core, "edge-1", CONDITION_MANIFEST_APPLIED).0,
        ConditionStatus::True
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_AVAILABLE),
        (ConditionStatus::True, "ProbeAvailable".to_owned())
    );

    // A config change reaches the cluster; a second pass changes nothing.
    apply(&mut core, config("edge-1", "9")).unwrap();
    reconcile(&mut core, 4);
    let level = hello(&core, "edge-1").unwrap()["spec"]["template"]["spec"]["containers"][0]["env"]
        [0]["value"]
        .clone();
    assert_eq!(level, "9");
    assert!(reconcile(&mut core, 5).is_empty());
}

#[test]
fn disabling_or_deleting_the_addon_deletes_its_work() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    enable(&mut core, "edge-2");
    reconcile(&mut core, 2);
    let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, "edge-1", "hello-template");
    let c = core.delete_object(&key, t(3)).unwrap();
    core.apply(&c.records);
    let work = |core: &HubCore, cluster: &str| {
        core.work(&WorkKey::new(cluster, work_name("hello-template")))
            .map(|w| w.deleting.is_some())
    };
    assert_eq!(
        work(&core, "edge-1"),
        Some(true),
        "its work is being deleted"
    );
    assert_eq!(work(&core, "edge-2"), Some(false));
    let c = core
        .delete_object(
            &ObjectKey::new(ObjectKind::ClusterManagementAddOn, "", "hello-template"),
            t(4),
        )
        .unwrap();
    core.apply(&c.records);
    assert_eq!(work(&core, "edge-2"), Some(true));
    assert_eq!(core.cluster_addons().count(), 0);
}

#[test]
fn the_placements_strategy_installs_where_its_placement_selects_and_uninstalls_elsewhere() {
    let mut core = live(&["edge-1", "edge-2"]);
    for v in [
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding", "metadata": {"name": "default", "namespace": "default"},
            "spec": {"clusterSet": "default"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "edge-1-only", "namespace": "default"},
            "spec": {"predicates": [{"requiredClusterSelector": {"labelSelector":
                {"matchLabels": {"name": "edge-1"}}}}]}}),
        template(),
        config("default", "4"),
    ] {
        apply(&mut core, v).unwrap();
    }
    let c = core
        .label_cluster(
            "edge-1",
            &[("name".to_owned(), "edge-1".to_owned())].into(),
            &[],
        )
        .unwrap();
    core.apply(&c.records);
    let sets = core.ensure_builtin_cluster_sets(t(0));
    core.apply(&sets.records);
    let mut cma = addon("default");
    cma["spec"]["installStrategy"] = json!({"type": "Placements",
        "placements": [{"name": "edge-1-only", "namespace": "default"}]});
    apply(&mut core, cma).unwrap();
    reconcile(&mut core, 2);
    assert!(cluster_addon(&core, "edge-1").is_some());
    assert!(cluster_addon(&core, "edge-2").is_none());
    assert!(
        hello(&core, "edge-1").is_some(),
        "rendered in the same reconcile"
    );

    // The placement no longer selects edge-1: its add-on and work go.
    let c = core
        .label_cluster("edge-1", &Default::default(), &["name".to_owned()])
        .unwrap();
    core.apply(&c.records);
    reconcile(&mut core, 4);
    assert!(cluster_addon(&core, "edge-1").is_none());
    assert!(
        core.work(&WorkKey::new("edge-1", work_name("hello-template")))
            .is_some_and(|w| w.deleting.is_some())
    );
}

#[test]
fn bad_addon_objects_are_clear_errors_that_store_nothing() {
    let mut core = accepted_core(&["edge-1"]);
    // A config referencing nothing.
    let err = apply(&mut core, addon("edge-1")).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    // A template variable no config gives.
    apply(&mut core, template()).unwrap();
    let mut bare = addon("edge-1");
    bare["spec"]["supportedConfigs"]
        .as_array_mut()
        .unwrap()
        .truncate(1);
    let err = apply(&mut core, bare).unwrap_err().to_string();
    assert!(err.contains("{{LOG_LEVEL}}"), "{err}");
    // A cluster add-on of an unknown add-on, and on an unknown cluster.
    let err = apply(
        &mut core,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn", "metadata": {"name": "nope", "namespace": "edge-1"}}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no add-on \"nope\""), "{err}");
    apply(&mut core, config("edge-1", "4")).unwrap();
    apply(&mut core, addon("edge-1")).unwrap();
    let err = apply(
        &mut core,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello-template", "namespace": "ghost"}}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no cluster the hub knows"), "{err}");
    // An add-on name that is no DNS label.
    let mut bad_name = template();
    bad_name["spec"]["addonName"] = json!("Hello_World");
    let err = apply(&mut core, bad_name).unwrap_err().to_string();
    assert!(err.contains("not a DNS label"), "{err}");
    assert_eq!(core.cluster_addons().count(), 0);
    // A removed cluster's add-ons go with it.
    enable(&mut core, "edge-1");
    let c = core.remove_cluster("edge-1", true, t(9)).unwrap();
    core.apply(&c.records);
    assert_eq!(core.cluster_addons().count(), 0);
}

#[test]
fn a_status_of_one_clusters_addon_work_updates_that_addon_only_and_renders_nothing() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    enable(&mut core, "edge-2");
    reconcile(&mut core, 2);
    let work = core
        .work(&WorkKey::new("edge-2", work_name("hello-template")))
        .unwrap()
        .clone();
    let mut status = ManifestWorkStatus::default();
    status.conditions.push(Condition::new(
        WORK_APPLIED,
        ConditionStatus::True,
        "Done",
        "done",
    ));
    let reported = status_input("edge-2", &work.resource_id, 1, "1", status);
    step(&mut core, reported, 3);
    let change = reconcile(&mut core, 3);
    assert!(change.outbound.is_empty(), "nothing sent again");
    let written: Vec<String> = change
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Object(o) => Some(o.key().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(written, ["ManagedClusterAddOn edge-2/hello-template"]);
    assert_eq!(
        condition(&core, "edge-2", CONDITION_MANIFEST_APPLIED).0,
        ConditionStatus::True
    );
}

/// A placement `default/all` selecting every cluster (the `default` set bound into `default`),
/// the template and a config in `default`.
fn placed_everywhere(core: &mut HubCore) {
    for v in [
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding", "metadata": {"name": "default", "namespace": "default"},
            "spec": {"clusterSet": "default"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "all", "namespace": "default"}, "spec": {}}),
        template(),
        config("default", "4"),
    ] {
        apply(core, v).unwrap();
    }
    let sets = core.ensure_builtin_cluster_sets(t(0));
    core.apply(&sets.records);
}

/// Reports `cluster`'s add-on work applied and available for its current version.
fn report_done(core: &mut HubCore, cluster: &str, secs: i64) {
    let work = core
        .work(&WorkKey::new(cluster, work_name("hello-template")))
        .unwrap()
        .clone();
    let mut status = ManifestWorkStatus::default();
    for type_ in [WORK_APPLIED, WORK_AVAILABLE] {
        let mut c = Condition::new(type_, ConditionStatus::True, "Done", "done");
        c.observed_generation = work.resource_version;
        status.conditions.push(c);
    }
    let seq = format!("{secs}");
    let reported = status_input(
        cluster,
        &work.resource_id,
        work.resource_version,
        &seq,
        status,
    );
    step(core, reported, secs);
}

fn level(core: &HubCore, cluster: &str) -> Option<String> {
    hello(core, cluster).map(|d| {
        d["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"]
            .as_str()
            .unwrap()
            .to_owned()
    })
}

#[test]
fn a_placements_rollout_strategy_installs_and_changes_one_cluster_at_a_time() {
    let clusters = ["edge-1", "edge-2", "edge-3"];
    let mut core = live(&clusters);
    placed_everywhere(&mut core);
    let mut cma = addon("default");
    cma["spec"]["installStrategy"] = json!({"type": "Placements", "placements": [
        {"name": "all", "namespace": "default",
         "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 1}}}]});
    apply(&mut core, cma).unwrap();
    let installed = |core: &HubCore| clusters.iter().filter(|c| hello(core, c).is_some()).count();

    reconcile(&mut core, 2);
    assert_eq!(
        core.cluster_addons().count(),
        3,
        "installed everywhere it is placed"
    );
    assert_eq!(installed(&core), 1, "one cluster at a time");
    let mut secs = 3;
    while installed(&core) < 3 {
        let next = clusters
            .iter()
            .find(|c| {
                hello(&core, c).is_some()
                    && condition(&core, c, CONDITION_PROGRESSING).0 == ConditionStatus::True
            })
            .expect("a cluster taking the add-on");
        report_done(&mut core, next, secs);
        reconcile(&mut core, secs);
        secs += 1;
        assert!(secs < 10, "the rollout does not move on");
    }
    let last = clusters
        .iter()
        .find(|c| condition(&core, c, CONDITION_PROGRESSING).0 == ConditionStatus::True)
        .unwrap();
    report_done(&mut core, last, secs);
    reconcile(&mut core, secs);
    for c in clusters {
        assert_eq!(
            condition(&core, c, CONDITION_PROGRESSING),
            (ConditionStatus::False, "Completed".to_owned())
        );
    }

    let progression =
        |core: &HubCore| core.addons().next().unwrap().status.install_progressions[0].clone();
    let done = progression(&core);
    assert_eq!(done.conditions[0].reason, "Completed");
    let configs = |p: &InstallProgression| {
        p.config_references
            .iter()
            .find(|r| r.resource == ADDON_DEPLOYMENT_CONFIGS)
            .cloned()
            .unwrap()
    };
    let good = configs(&done).last_known_good_config.unwrap();
    assert_eq!(Some(&good), configs(&done).desired_config.as_ref());

    // A config change reaches one cluster; the others wait for it, on their old config.
    apply(&mut core, config("default", "9")).unwrap();
    reconcile(&mut core, 20);
    let moving = progression(&core);
    assert_eq!(moving.conditions[0].reason, "Progressing");
    assert_eq!(moving.conditions[0].message, "0/3 completed with no errors");
    assert_ne!(configs(&moving).desired_config.as_ref(), Some(&good));
    assert_eq!(
        configs(&moving).last_known_good_config,
        Some(good),
        "the last known good config stays until every cluster completed the new one"
    );
    let levels: Vec<String> = clusters.iter().map(|c| level(&core, c).unwrap()).collect();
    assert_eq!(levels.iter().filter(|l| *l == "9").count(), 1, "{levels:?}");
    let waiting = clusters
        .iter()
        .filter(|c| condition(&core, c, CONDITION_PROGRESSING).1 == "WaitingForCanary")
        .count();
    assert_eq!(waiting, 2);
}

/// The hello-world add-on whose template also has the pre-delete `hook`.
fn hooked(hook: Value) -> HubCore {
    let mut core = with_hello_world();
    let mut with_hook = template();
    with_hook["spec"]["agentSpec"]["workload"]["manifests"]
        .as_array_mut()
        .unwrap()
        .push(hook);
    apply(&mut core, with_hook).unwrap();
    core
}

#[test]
fn a_pre_delete_hook_runs_before_the_addon_is_removed_and_never_while_installed() {
    let mut core = hooked(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "cleanup", "namespace": "{{INSTALL_NAMESPACE}}",
            "labels": {"open-cluster-management.io/addon-pre-delete": ""}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}));
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let main = WorkKey::new("edge-1", work_name("hello-template"));
    let hook = WorkKey::new("edge-1", pre_delete_work_name("hello-template"));
    let kinds = |core: &HubCore, key: &WorkKey| -> Vec<String> {
        core.work(key)
            .map(|w| {
                w.spec
                    .workload
                    .manifests
                    .iter()
                    .filter_map(|m| m.kind().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        !kinds(&core, &main).contains(&"Job".to_owned()),
        "not while installed"
    );

    let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, "edge-1", "hello-template");
    let c = core.delete_object(&key, t(3)).unwrap();
    core.apply(&c.records);
    assert!(
        kinds(&core, &hook).contains(&"Job".to_owned()),
        "the hook goes first"
    );
    assert!(
        core.work(&main).is_some_and(|w| w.deleting.is_none()),
        "the agent stays while its hook runs"
    );
    assert!(cluster_addon(&core, "edge-1").is_some());
    reconcile(&mut core, 4);
    assert!(
        cluster_addon(&core, "edge-1").is_some(),
        "waits for the hook"
    );

    // The hook's Job completes: everything goes.
    let work = core.work(&hook).unwrap().clone();
    let mut status = ManifestWorkStatus::default();
    status.resource_status.manifests.push(ManifestCondition {
        resource_meta: ResourceMeta {
            kind: "Job".into(),
            name: "cleanup".into(),
            namespace: "hello-ns".into(),
            ..ResourceMeta::default()
        },
        status_feedback: StatusFeedbackResult {
            values: vec![FeedbackValue {
                name: "JobComplete".into(),
                field_value: FieldValue::string("True"),
            }],
        },
        conditions: vec![],
    });
    step(
        &mut core,
        status_input("edge-1", &work.resource_id, 1, "1", status),
        5,
    );
    reconcile(&mut core, 5);
    assert!(cluster_addon(&core, "edge-1").is_none());
    assert!(core.work(&main).is_some_and(|w| w.deleting.is_some()));
    assert!(core.work(&hook).is_some_and(|w| w.deleting.is_some()));
}

/// Reports the work `key` deleted by its agent.
fn report_deleted(core: &mut HubCore, key: &WorkKey, secs: i64) {
    report_deleted_change(core, key, secs);
}

/// [`report_deleted`], returning what it changed.
fn report_deleted_change(core: &mut HubCore, key: &WorkKey, secs: i64) -> Change {
    let work = core.work(key).unwrap().clone();
    let mut status = ManifestWorkStatus::default();
    status.conditions.push(Condition::new(
        ocm_edge_schemas::api::work::WORK_DELETED,
        ConditionStatus::True,
        "ManifestsDeleted",
        "deleted",
    ));
    let seq = format!("{secs}");
    let reported = status_input(
        &key.cluster,
        &work.resource_id,
        work.resource_version,
        &seq,
        status,
    );
    step(core, reported, secs)
}

#[test]
fn an_addon_enabled_again_while_its_old_work_is_deleted_gets_its_agent_once_the_old_one_is_gone() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, "edge-1", "hello-template");
    let c = core.delete_object(&key, t(3)).unwrap();
    core.apply(&c.records);
    enable(&mut core, "edge-1");
    reconcile(&mut core, 4);
    let main = WorkKey::new("edge-1", work_name("hello-template"));
    assert!(
        core.work(&main).unwrap().deleting.is_some(),
        "the old one is still going"
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_PROGRESSING),
        (ConditionStatus::True, "Progressing".to_owned())
    );
    let waiting = cluster_addon(&core, "edge-1")
        .unwrap()
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == CONDITION_PROGRESSING)
        .unwrap()
        .message
        .clone();
    assert_eq!(
        waiting,
        "Waiting for the cluster to remove the add-on's previous work"
    );
    report_deleted(&mut core, &main, 5);
    reconcile(&mut core, 5);
    assert!(
        core.work(&main).is_some_and(|w| w.deleting.is_none()),
        "the agent is sent again"
    );
}

#[test]
fn the_hubs_own_bookkeeping_survives_an_apply_and_bad_changes_are_refused() {
    let clusters = ["edge-1"];
    let mut core = live(&clusters);
    placed_everywhere(&mut core);
    let mut cma = addon("default");
    cma["spec"]["installStrategy"] = json!({"type": "Placements", "placements": [
        {"name": "all", "namespace": "default",
         "rolloutStrategy": {"type": "Progressive", "progressive": {"progressDeadline": "soon"}}}]});
    let err = apply(&mut core, cma.clone()).unwrap_err().to_string();
    assert!(err.contains("rolloutStrategy"), "{err}");
    cma["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] =
        json!({"type": "All", "failureStrategy": "AbortAll"});
    let err = apply(&mut core, cma.clone()).unwrap_err().to_string();
    assert!(
        err.contains("failureStrategy is for ManifestWorkReplicaSets"),
        "{err}"
    );
    cma["spec"]["installStrategy"]["placements"][0]["rolloutStrategy"] = json!({"type": "All"});
    apply(&mut core, cma).unwrap();
    reconcile(&mut core, 2);
    // An operator's apply of the cluster's add-on (its own configs) keeps who installed it.
    enable(&mut core, "edge-1");
    let mca = cluster_addon(&core, "edge-1").unwrap();
    assert!(
        mca.metadata
            .annotations
            .contains_key(INSTALLED_BY_PLACEMENT_ANNOTATION)
    );
    // It cannot be disabled by hand: the placement would install it again.
    let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, "edge-1", "hello-template");
    let err = core.delete_object(&key, t(3)).unwrap_err().to_string();
    assert!(err.contains("placements (default/all)"), "{err}");
    // A template in use cannot be deleted.
    let template_key = ObjectKey::new(ObjectKind::AddOnTemplate, "", "hello-template");
    let err = core
        .delete_object(&template_key, t(3))
        .unwrap_err()
        .to_string();
    assert!(err.contains("in use by hello-template"), "{err}");
}

#[test]
fn pre_delete_hooks_that_never_finish_stop_holding_the_removal_after_ten_minutes() {
    let mut core = hooked(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "cleanup", "namespace": "{{INSTALL_NAMESPACE}}",
            "annotations": {"open-cluster-management.io/addon-pre-delete": ""}}}));
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, "edge-1", "hello-template");
    let c = core.delete_object(&key, t(3)).unwrap();
    core.apply(&c.records);
    reconcile(&mut core, 4);
    assert!(
        core.fleet_requeue_at()
            .is_some_and(|at| at == t(3) + HOOK_TIMEOUT),
        "the hub looks again when the hooks time out"
    );
    reconcile(&mut core, 3 + 601);
    assert!(
        cluster_addon(&core, "edge-1").is_none(),
        "removed after the timeout"
    );
}

/// The hello-world template asking for a registration (OCM's KubeClient, an MQTT identity here).
fn registering_template() -> Value {
    let mut t = template();
    t["spec"]["registration"] = json!([{"type": "KubeClient"}]);
    t
}

fn registration_of(core: &HubCore, cluster: &str) -> Option<addon_identity::Registration> {
    let work = core.work(&WorkKey::new(cluster, work_name("hello-template")))?;
    let json = work
        .annotations
        .get(addon_identity::REGISTRATION_ANNOTATION)?;
    Some(serde_json::from_str(json).unwrap())
}

fn ask(core: &HubCore, cluster: &str, hash: &str) -> AgentInput {
    ask_with_key(core, cluster, hash, "")
}

fn ask_with_key(core: &HubCore, cluster: &str, hash: &str, key: &str) -> AgentInput {
    AgentInput::AddOnRegistration {
        cluster: cluster.into(),
        addon: "hello-template".into(),
        password_sha256: hash.into(),
        public_key: key.into(),
        // The nonce of the add-on's current enable, as the agent reads it from the work.
        nonce: cluster_addon(core, cluster)
            .map(|m| m.metadata.uid.clone())
            .unwrap_or_default(),
    }
}

/// A raw Ed25519 public key's base64 (32 bytes of `n`).
fn raw_key(n: u8) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [n; 32])
}

#[test]
fn a_registering_addon_binds_the_hash_its_clusters_agent_asks_for_and_sends_it_back() {
    let mut core = live(&["edge-1", "edge-2"]);
    apply(&mut core, registering_template()).unwrap();
    apply(&mut core, config("edge-1", "4")).unwrap();
    apply(&mut core, addon("edge-1")).unwrap();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let r = registration_of(&core, "edge-1").expect("the work asks for a registration");
    assert_eq!(r.identity(), "addons/hello-template/clusters/edge-1");
    assert_eq!(r.namespace, "hello-ns");
    assert_eq!(r.approved_sha256, None);
    assert_eq!(
        condition(&core, "edge-1", CONDITION_REGISTRATION_APPLIED),
        (ConditionStatus::False, "WaitingForAgent".to_owned())
    );
    let mca = cluster_addon(&core, "edge-1").unwrap();
    assert_eq!(
        mca.status.registrations[0].custom_signer.as_ref().unwrap()["subject"]["user"],
        "addons/hello-template/clusters/edge-1"
    );

    let hash = addon_identity::password_sha256("the agent's");
    {
        let input = ask(&core, "edge-1", &hash);
        step(&mut core, input, 3)
    };
    reconcile(&mut core, 3);
    assert_eq!(
        registration_of(&core, "edge-1").unwrap().approved_sha256,
        Some(hash.clone()),
        "the work goes again with the bound hash"
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_REGISTRATION_APPLIED).0,
        ConditionStatus::True
    );
    // Asking again for the same hash changes nothing.
    assert!(
        {
            let input = ask(&core, "edge-1", &hash);
            step(&mut core, input, 4)
        }
        .records
        .is_empty()
    );

    // Another cluster, where the add-on is not enabled, gets nothing bound; a bad hash neither.
    let refused = core
        .counters()
        .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED);
    {
        let input = ask(&core, "edge-2", &hash);
        step(&mut core, input, 5)
    };
    {
        let input = ask(&core, "edge-1", "not-a-hash");
        step(&mut core, input, 5)
    };
    assert_eq!(
        core.counters()
            .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED),
        refused + 2
    );
    assert_eq!(
        bound_password(cluster_addon(&core, "edge-1").unwrap()),
        Some(hash.as_str())
    );
    assert!(cluster_addon(&core, "edge-2").is_none());
}

#[test]
fn an_apply_cannot_bind_an_addon_identity() {
    let mut core = live(&["edge-1"]);
    apply(&mut core, registering_template()).unwrap();
    apply(&mut core, config("edge-1", "4")).unwrap();
    apply(&mut core, addon("edge-1")).unwrap();
    apply(
        &mut core,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello-template", "namespace": "edge-1",
                "annotations": {addon_identity::PASSWORD_SHA256_ANNOTATION:
                    addon_identity::password_sha256("chosen by an operator")}}}),
    )
    .unwrap();
    reconcile(&mut core, 2);
    assert_eq!(
        bound_password(cluster_addon(&core, "edge-1").unwrap()),
        None
    );
    assert_eq!(
        registration_of(&core, "edge-1").unwrap().approved_sha256,
        None
    );
}

#[test]
fn a_template_without_registration_asks_for_no_identity_and_its_requests_are_refused() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    assert_eq!(registration_of(&core, "edge-1"), None);
    assert!(
        cluster_addon(&core, "edge-1")
            .unwrap()
            .status
            .registrations
            .is_empty()
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_REGISTRATION_APPLIED),
        (ConditionStatus::True, "NilRegistration".to_owned()),
        "as OCM: nothing to register is configured"
    );
    {
        let input = ask(&core, "edge-1", &addon_identity::password_sha256("x"));
        step(&mut core, input, 3)
    };
    assert_eq!(
        bound_password(cluster_addon(&core, "edge-1").unwrap()),
        None
    );
    assert_eq!(
        core.counters()
            .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED),
        1
    );
}

#[test]
fn an_addon_identity_gets_a_certificate_for_its_key_renewed_and_revoked_once_disabled() {
    let mut core = live(&["edge-1"]);
    issuing(&mut core);
    apply(&mut core, registering_template()).unwrap();
    apply(&mut core, config("edge-1", "4")).unwrap();
    apply(&mut core, addon("edge-1")).unwrap();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let hash = addon_identity::password_sha256("pw");
    {
        let input = ask_with_key(&core, "edge-1", &hash, &raw_key(1));
        step(&mut core, input, 3)
    };
    reconcile(&mut core, 3);
    let cert = registration_of(&core, "edge-1")
        .unwrap()
        .certificate
        .expect("a certificate for the identity's key, in the work");
    assert_eq!(cert.key, raw_key(1));
    assert!(
        cert.pem
            .contains("of addons/hello-template/clusters/edge-1 for"),
        "CN = the identity: {}",
        cert.pem
    );
    assert!(
        core.revoked_certificates(t(3)).is_empty(),
        "held: not revoked"
    );
    let (rotated, reason) = condition(&core, "edge-1", CONDITION_CERTIFICATE_ROTATED);
    assert_eq!(
        (rotated, reason.as_str()),
        (ConditionStatus::True, "ClientCertificateUpdated"),
        "as OCM's registration agent says it"
    );
    // Asked again with the same key: nothing new. With another key: a new one.
    assert!(
        {
            let input = ask_with_key(&core, "edge-1", &hash, &raw_key(1));
            step(&mut core, input, 4)
        }
        .records
        .is_empty()
    );
    {
        let input = ask_with_key(&core, "edge-1", &hash, &raw_key(2));
        step(&mut core, input, 5)
    };
    assert_eq!(
        certificate_of(cluster_addon(&core, "edge-1").unwrap())
            .unwrap()
            .key,
        raw_key(2)
    );
    assert!(
        core.revoked_certificates(t(5)).is_empty(),
        "the one it replaces stays valid until it ends (its add-on may still use it)"
    );
    assert_eq!(
        held_serials(cluster_addon(&core, "edge-1").unwrap()),
        ["02", "01"]
    );
    // Two thirds through its life, the same key gets a new one.
    let days = |d: i64| 5 + d * 86_400;
    let input = ask_with_key(&core, "edge-1", &hash, &raw_key(2));
    step(&mut core, input, days(21));
    assert!(core.revoked_certificates(t(days(21))).is_empty());
    assert_eq!(
        held_serials(cluster_addon(&core, "edge-1").unwrap()).len(),
        3
    );
    // Disabled: its certificate is revoked too, once the add-on is gone.
    let mca = cluster_addon(&core, "edge-1").unwrap().clone();
    let change = core.disable_addon(&mca, t(days(21) + 1));
    core.apply(&change.records);
    let key = WorkKey::new("edge-1", work_name("hello-template"));
    if core.work(&key).is_some() {
        report_deleted(&mut core, &key, days(21) + 2);
    }
    reconcile(&mut core, days(21) + 3);
    assert!(
        cluster_addon(&core, "edge-1").is_none(),
        "the add-on is gone"
    );
    assert_eq!(
        core.revoked_certificates(t(days(21) + 3)).len(),
        3,
        "every certificate the identity had is on the list until it ends"
    );
    // A bad key is refused and changes nothing.
    let before = core
        .counters()
        .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED);
    let input = ask_with_key(&core, "edge-1", &hash, "not base64!");
    step(&mut core, input, days(22));
    assert_eq!(
        core.counters()
            .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED),
        before + 1
    );
}

#[test]
fn an_addons_dashboard_views_follow_it_and_are_cleared_once_it_is_gone() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    let change = reconcile(&mut core, 2);
    let view = |msgs: &[crate::dashboard::DashboardMessage], topic: &str| {
        msgs.iter()
            .find(|m| m.topic == topic)
            .map(|m| m.payload.clone())
    };
    let addon_topic = "ocm-edge/ocm-edge/dashboard/addons/hello-template";
    let cluster_topic = "ocm-edge/ocm-edge/dashboard/addons/hello-template/clusters/edge-1";
    let msgs = crate::dashboard::messages_for(&core, &change.records);
    let on_cluster: Value = serde_json::from_slice(&view(&msgs, cluster_topic).unwrap()).unwrap();
    assert_eq!(on_cluster["namespace"], "hello-ns");
    assert_eq!(on_cluster["conditions"]["Configured"], "True");
    let addon: Value = serde_json::from_slice(&view(&msgs, addon_topic).unwrap()).unwrap();
    assert_eq!(addon["enabled"], 1);

    // Disabled: the cluster's view is cleared once the add-on is forgotten there.
    let mca = cluster_addon(&core, "edge-1").unwrap().clone();
    let mut records = core.disable_addon(&mca, t(3)).records;
    core.apply(&records);
    let key = WorkKey::new("edge-1", work_name("hello-template"));
    if core.work(&key).is_some() {
        records.extend(report_deleted_change(&mut core, &key, 4).records);
    }
    records.extend(reconcile(&mut core, 5).records);
    assert!(cluster_addon(&core, "edge-1").is_none());
    let msgs = crate::dashboard::messages_for(&core, &records);
    assert_eq!(view(&msgs, cluster_topic), Some(vec![]), "cleared");
    let addon: Value = serde_json::from_slice(&view(&msgs, addon_topic).unwrap()).unwrap();
    assert_eq!(addon["enabled"], 0);
}

#[test]
fn a_work_its_cluster_cannot_apply_makes_the_addon_failed_with_ocms_reasons() {
    let mut core = with_hello_world();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    assert!(
        cluster_addon(&core, "edge-1")
            .unwrap()
            .status
            .conditions
            .iter()
            .all(|c| c.type_ != CONDITION_MANIFEST_APPLIED),
        "as OCM: no ManifestApplied before the work reports"
    );
    let work = core
        .work(&WorkKey::new("edge-1", work_name("hello-template")))
        .unwrap()
        .clone();
    let mut status = ManifestWorkStatus::default();
    let mut c = Condition::new(
        WORK_APPLIED,
        ConditionStatus::False,
        "AppliedManifestWorkFailed",
        "namespace hello-ns is forbidden",
    );
    c.observed_generation = work.resource_version;
    status.conditions.push(c);
    step(
        &mut core,
        status_input(
            "edge-1",
            &work.resource_id,
            work.resource_version,
            "3",
            status,
        ),
        3,
    );
    reconcile(&mut core, 3);
    let (applied, reason) = condition(&core, "edge-1", CONDITION_MANIFEST_APPLIED);
    assert_eq!(
        (applied, reason.as_str()),
        (ConditionStatus::False, "AddonManifestAppliedFailed")
    );
    let progressing = cluster_addon(&core, "edge-1")
        .unwrap()
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == CONDITION_PROGRESSING)
        .unwrap()
        .clone();
    assert_eq!(
        (progressing.status, progressing.reason.as_str()),
        (ConditionStatus::False, "Failed")
    );
    assert!(
        progressing.message.contains("forbidden"),
        "{}",
        progressing.message
    );
    let refs = |core: &HubCore| {
        cluster_addon(core, "edge-1")
            .unwrap()
            .status
            .config_references
            .clone()
    };
    assert!(
        refs(&core)
            .iter()
            .all(|r| r.desired_config.is_some() && r.last_applied_config.is_none()),
        "as OCM: a config is applied once the cluster applied it, not when it was sent"
    );
    // Applied at last: Completed, its configs applied.
    report_done(&mut core, "edge-1", 4);
    reconcile(&mut core, 4);
    assert!(
        refs(&core)
            .iter()
            .all(|r| r.last_applied_config.is_some() && r.last_applied_config == r.desired_config),
        "{:?}",
        refs(&core)
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_PROGRESSING),
        (ConditionStatus::False, "Completed".to_owned())
    );
    assert_eq!(
        condition(&core, "edge-1", CONDITION_MANIFEST_APPLIED),
        (ConditionStatus::True, "AddonManifestApplied".to_owned())
    );
}

#[test]
fn a_config_change_that_would_leave_a_template_variable_without_value_is_refused_naming_who_uses_it()
 {
    let mut core = with_hello_world();
    // The add-on's default config gives LOG_LEVEL: a version without it is refused.
    let mut bare = config("edge-1", "4");
    bare["spec"]["customizedVariables"] = json!([]);
    let err = apply(&mut core, bare.clone()).unwrap_err().to_string();
    assert!(
        err.contains("add-on \"hello-template\" uses this config") && err.contains("{{LOG_LEVEL}}"),
        "{err}"
    );
    let stored = core
        .objects()
        .get(&ObjectKey::new(
            ObjectKind::AddOnDeploymentConfig,
            "edge-1",
            "hello-template",
        ))
        .and_then(|o| match o {
            StoredObject::AddOnConfig(c) => Some(c.spec.customized_variables.len()),
            _ => None,
        });
    assert_eq!(stored, Some(1), "nothing stored");
    // A config no add-on uses may say anything.
    let mut other = bare;
    other["metadata"]["namespace"] = json!("edge-2");
    apply(&mut core, other).unwrap();
    // A placement's configs that miss a variable: the error names the placement.
    let mut placed = addon("edge-1");
    placed["spec"]["installStrategy"] = json!({"type": "Placements", "placements": [
        {"namespace": "default", "name": "everywhere",
         "configs": [{"group": "addon.open-cluster-management.io",
                      "resource": "addondeploymentconfigs",
                      "namespace": "edge-2", "name": "hello-template"}]}]});
    let err = apply(&mut core, placed).unwrap_err().to_string();
    assert!(
        err.contains("placement default/everywhere") && err.contains("{{LOG_LEVEL}}"),
        "{err}"
    );
}

#[test]
fn a_config_with_a_bad_container_id_is_refused_at_apply() {
    let mut core = live(&["edge-1"]);
    let mut bad = config("edge-1", "4");
    bad["spec"]["resourceRequirements"] =
        json!([{"containerID": "services:agent:main", "resources": {"limits": {"cpu": "1"}}}]);
    let err = apply(&mut core, bad).unwrap_err().to_string();
    assert!(
        err.contains("resourceRequirements") && err.contains("services:agent:main"),
        "{err}"
    );
    assert!(
        core.objects()
            .get(&ObjectKey::new(
                ObjectKind::AddOnDeploymentConfig,
                "edge-1",
                "hello-template"
            ))
            .is_none(),
        "nothing stored"
    );
}

#[test]
fn with_manual_approval_an_identity_waits_for_an_operator_then_is_bound() {
    let mut core = live(&["edge-1"]);
    issuing(&mut core);
    apply(&mut core, registering_template()).unwrap();
    apply(&mut core, config("edge-1", "4")).unwrap();
    let mut manual = addon("edge-1");
    manual["metadata"]["annotations"] = json!({APPROVAL_ANNOTATION: "Manual"});
    apply(&mut core, manual.clone()).unwrap();
    enable(&mut core, "edge-1");
    reconcile(&mut core, 2);
    let hash = addon_identity::password_sha256("pw");
    {
        let input = ask_with_key(&core, "edge-1", &hash, &raw_key(1));
        step(&mut core, input, 3)
    };
    reconcile(&mut core, 3);
    let mca = cluster_addon(&core, "edge-1").unwrap().clone();
    assert_eq!(bound_password(&mca), None, "not bound before the approval");
    assert!(certificate_of(&mca).is_none());
    let (status, reason) = condition(&core, "edge-1", CONDITION_REGISTRATION_APPLIED);
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "WaitingForApproval")
    );
    assert_eq!(
        registration_of(&core, "edge-1").unwrap().approved_sha256,
        None
    );

    let approved = core.approve_identity(&mca, t(4)).unwrap();
    core.apply(&approved.records);
    reconcile(&mut core, 4);
    let mca = cluster_addon(&core, "edge-1").unwrap().clone();
    assert_eq!(bound_password(&mca), Some(hash.as_str()));
    assert_eq!(certificate_of(&mca).unwrap().key, raw_key(1));
    assert!(
        !mca.metadata
            .annotations
            .contains_key(PENDING_SHA256_ANNOTATION)
    );
    assert_eq!(
        registration_of(&core, "edge-1").unwrap().approved_sha256,
        Some(hash.clone())
    );
    // Nothing left to approve; a bad approval value is refused at apply.
    assert!(
        core.approve_identity(&mca, t(5))
            .unwrap_err()
            .contains("already")
    );
    manual["metadata"]["annotations"] = json!({APPROVAL_ANNOTATION: "Sometimes"});
    let err = apply(&mut core, manual).unwrap_err().to_string();
    assert!(err.contains("neither Automatic nor Manual"), "{err}");
}

#[test]
fn an_addon_says_its_default_configs_with_their_spec_hashes_as_ocm() {
    let mut core = with_hello_world();
    reconcile(&mut core, 2);
    let addon = core.addon("hello-template").unwrap();
    let refs = &addon.status.default_config_references;
    assert_eq!(refs.len(), 2, "{refs:?}");
    assert!(
        refs.iter().all(|r| r
            .desired_config
            .as_ref()
            .is_some_and(|d| !d.spec_hash.is_empty())),
        "{refs:?}"
    );
    let before = refs.clone();
    apply(&mut core, config("edge-1", "7")).unwrap();
    reconcile(&mut core, 3);
    let after = &core
        .addon("hello-template")
        .unwrap()
        .status
        .default_config_references;
    assert_ne!(&before, after, "a config change changes its hash");
}

#[test]
fn a_placements_addon_gets_its_bound_identity_whatever_its_rollout_says() {
    let clusters = ["edge-1", "edge-2"];
    let mut core = live(&clusters);
    placed_everywhere(&mut core);
    apply(&mut core, registering_template()).unwrap();
    let mut cma = addon("default");
    cma["spec"]["installStrategy"] = json!({"type": "Placements", "placements": [
        {"name": "all", "namespace": "default",
         "rolloutStrategy": {"type": "Progressive",
             "progressive": {"maxConcurrency": 1, "minSuccessTime": "1h"}}}]});
    apply(&mut core, cma).unwrap();
    reconcile(&mut core, 2);
    let first = *clusters
        .iter()
        .find(|c| hello(&core, c).is_some())
        .expect("the rollout's first cluster");
    report_done(&mut core, first, 3);
    reconcile(&mut core, 3);
    // Its agent asks for the identity: bound, and the work goes again with it although the
    // rollout (soaking for an hour) lets no cluster take a change now.
    let hash = addon_identity::password_sha256("pw");
    {
        let input = ask(&core, first, &hash);
        step(&mut core, input, 4)
    };
    reconcile(&mut core, 4);
    assert_eq!(
        registration_of(&core, first).unwrap().approved_sha256,
        Some(hash),
        "the bound hash reaches the cluster"
    );
    let other = clusters.iter().find(|c| **c != first).unwrap();
    assert!(
        hello(&core, other).is_none(),
        "the other cluster still waits for the rollout"
    );
}

/// The hello-world add-on registering, enabled on `clusters`, each cluster's agent having asked
/// for an identity with key `n` (its index + 1).
fn registered(clusters: &[&str], manual: bool) -> HubCore {
    let mut core = live(clusters);
    issuing(&mut core);
    apply(&mut core, registering_template()).unwrap();
    for c in clusters {
        apply(&mut core, config(c, "4")).unwrap();
    }
    let mut a = addon("edge-1");
    if manual {
        a["metadata"]["annotations"] = json!({APPROVAL_ANNOTATION: "Manual"});
    }
    apply(&mut core, a).unwrap();
    for c in clusters {
        enable(&mut core, c);
    }
    reconcile(&mut core, 2);
    for (i, c) in clusters.iter().enumerate() {
        let input = ask_with_key(
            &core,
            c,
            &addon_identity::password_sha256(c),
            &raw_key(i as u8 + 1),
        );
        step(&mut core, input, 3);
    }
    reconcile(&mut core, 3);
    core
}

#[test]
fn approving_several_clusters_in_one_change_keeps_every_certificate_revocable() {
    let clusters = ["edge-1", "edge-2"];
    let mut core = registered(&clusters, true);
    // As `addon approve --clusters edge-1,edge-2`: both planned before either is applied.
    let mut change = Change::default();
    for c in clusters {
        let mca = cluster_addon(&core, c).unwrap().clone();
        change.extend(core.approve_identity(&mca, t(4)).unwrap());
    }
    core.apply(&change.records);
    reconcile(&mut core, 4);
    for c in clusters {
        assert!(certificate_of(cluster_addon(&core, c).unwrap()).is_some());
    }
    // Both forgotten: both certificates on the list.
    for (i, c) in clusters.iter().enumerate() {
        let mca = cluster_addon(&core, c).unwrap().clone();
        let secs = 5 + i as i64 * 3;
        let change = core.disable_addon(&mca, t(secs));
        core.apply(&change.records);
        let key = WorkKey::new(*c, work_name("hello-template"));
        if core.work(&key).is_some() {
            report_deleted(&mut core, &key, secs + 1);
        }
        reconcile(&mut core, secs + 2);
    }
    assert!(core.cluster_addons().next().is_none());
    assert_eq!(core.revoked_certificates(t(20)).len(), 2);
}

#[test]
fn a_denied_cluster_loses_its_addons_identities_and_a_stale_request_is_refused() {
    let mut core = registered(&["edge-1"], false);
    let mca = cluster_addon(&core, "edge-1").unwrap().clone();
    assert!(bound_password(&mca).is_some() && certificate_of(&mca).is_some());
    let old_nonce = mca.metadata.uid.clone();
    let change = core.deny("edge-1", t(4)).unwrap();
    core.apply(&change.records);
    let mca = cluster_addon(&core, "edge-1").unwrap().clone();
    assert_eq!(bound_password(&mca), None, "unbound at deny");
    assert!(certificate_of(&mca).is_none());
    assert!(
        core.revoked_certificates(t(4))
            .iter()
            .any(|(who, _)| who == "addons/hello-template/clusters/edge-1"),
        "its certificate revoked"
    );
    // A request made for another enable (its nonce) binds nothing.
    let change = core.accept("edge-1", t(5)).unwrap();
    core.apply(&change.records);
    let refused = core
        .counters()
        .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED);
    step(
        &mut core,
        AgentInput::AddOnRegistration {
            cluster: "edge-1".into(),
            addon: "hello-template".into(),
            password_sha256: addon_identity::password_sha256("replayed"),
            public_key: String::new(),
            nonce: format!("{old_nonce}-before"),
        },
        6,
    );
    assert_eq!(
        core.counters()
            .get(crate::core::counter::ADDON_REGISTRATIONS_REFUSED),
        refused + 1
    );
    assert_eq!(
        bound_password(cluster_addon(&core, "edge-1").unwrap()),
        None
    );
}

#[test]
fn an_identity_goes_when_its_addons_template_stops_registering() {
    let mut core = registered(&["edge-1"], false);
    assert!(bound_password(cluster_addon(&core, "edge-1").unwrap()).is_some());
    core.take_revocations_changed();
    // A status of its work changes no certificate: the list is not looked at again.
    report_done(&mut core, "edge-1", 4);
    reconcile(&mut core, 4);
    assert!(!core.take_revocations_changed());
    apply(&mut core, template()).unwrap();
    reconcile(&mut core, 4);
    assert!(
        core.take_revocations_changed(),
        "the shell is told to write the revocation list again"
    );
    let mca = cluster_addon(&core, "edge-1").unwrap();
    assert_eq!(bound_password(mca), None);
    assert!(certificate_of(mca).is_none());
    assert_eq!(core.revoked_certificates(t(4)).len(), 1);
}

/// An AddOnTemplate's manifest configs reach every agent that installs the add-on: checked at
/// apply as a work's are (jq, paths that do not read, CEL that does not compile), and nothing
/// is stored when refused.
#[test]
fn an_addon_templates_manifest_configs_are_checked_as_a_works_are() {
    let mut core = accepted_core(&["edge-1"]);
    let with_config = |config: Value| {
        let mut t = template();
        t["metadata"]["name"] = json!("checked");
        t["spec"]["agentSpec"]["manifestConfigs"] = json!([config]);
        t
    };
    let id = json!({"group": "apps", "resource": "deployments",
                    "namespace": "{{INSTALL_NAMESPACE}}", "name": "hello-template-agent"});
    for (config, says) in [
        (
            json!({"resourceIdentifier": id, "updateStrategy": {"type": "ServerSideApply",
                   "serverSideApply": {"ignoreFields": [{"jqPathExpressions": [".spec.replicas"]}]}}}),
            "ocm-edge does not run jq expressions",
        ),
        (
            json!({"resourceIdentifier": id, "feedbackRules": [{"type": "JSONPaths",
                   "jsonPaths": [{"name": "x", "path": ".status[?((("}]}]}),
            "invalid JSONPath",
        ),
        (
            json!({"resourceIdentifier": id, "conditionRules": [{"type": "CEL",
                   "condition": "Ready", "celExpressions": ["object.status =="]}]}),
            "celExpressions[0]: ERROR",
        ),
    ] {
        let err = apply(&mut core, with_config(config))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.agentSpec: spec.manifestConfigs[0]") && err.contains(says),
            "{err}"
        );
        assert!(
            core.objects()
                .get(&ObjectKey::new(ObjectKind::AddOnTemplate, "", "checked"))
                .is_none(),
            "nothing stored"
        );
    }
    let good = json!({"resourceIdentifier": id, "feedbackRules": [{"type": "JSONPaths",
                      "jsonPaths": [{"name": "ready", "path": ".status.readyReplicas"}]}]});
    apply(&mut core, with_config(good)).unwrap();
}
