//! The pure core: plan ordering, strategies, delete options, inventory removal, conditions,
//! status feedback, the outbox, spec version rules and the lease schedule.

use chrono::{TimeZone, Utc};
use ocm_edge_agent::lease::schedule::LeaseSchedule;
use ocm_edge_agent::work::acceptance::{SpecDecision, decide_spec};
use ocm_edge_agent::work::outbox::{Envelope, Outbox};
use ocm_edge_agent::work::plan::{
    ApplyStrategy, DeletePropagation, RemoveAction, plan_apply, plan_delete,
};
use ocm_edge_agent::work::resource::ResourceRef;
use ocm_edge_agent::work::status::{
    ManifestFailure, ManifestOutcome, StatusContext, deleted_status, feedback_values,
    json_path_value, well_known_status, work_status,
};
use ocm_edge_schemas::api::meta::{ConditionStatus, Time, find_condition};
use ocm_edge_schemas::api::work::{
    ConditionRule, ConditionRuleType, DeleteOption, FeedbackRule, FeedbackType, FieldValue,
    JsonPath, Manifest, ManifestBundle, ManifestConfigOption, PropagationPolicy,
    ResourceIdentifier, SelectivelyOrphan, ServerSideApplyConfig, UpdateStrategy,
    UpdateStrategyType, ValueType,
};
use ocm_edge_schemas::wire::resync::StatusHash;
use serde_json::{Value, json};

fn deployment(name: &str, ns: &str) -> Value {
    json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":name,"namespace":ns},"spec":{"replicas":2}})
}
fn namespace(name: &str) -> Value {
    json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":name}})
}
fn crd(name: &str) -> Value {
    json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":name}})
}
fn bundle(manifests: Vec<Value>) -> ManifestBundle {
    ManifestBundle {
        manifests: manifests.into_iter().map(Manifest).collect(),
        ..ManifestBundle::default()
    }
}
fn rref(v: &Value) -> ResourceRef {
    ResourceRef::from_manifest(&Manifest(v.clone()), 0).unwrap()
}
fn id(group: &str, resource: &str, ns: &str, name: &str) -> ResourceIdentifier {
    ResourceIdentifier {
        group: group.into(),
        resource: resource.into(),
        namespace: ns.into(),
        name: name.into(),
    }
}
fn at(secs: i64) -> Time {
    Time::new(Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap())
}

#[test]
fn namespaces_and_crds_are_applied_before_what_needs_them_and_the_rest_keeps_manifest_order() {
    let b = bundle(vec![
        deployment("a", "shop"),
        crd("widgets.example.com"),
        deployment("b", "shop"),
        namespace("shop"),
    ]);
    let plan = plan_apply(&b, &[], "fm");
    let order: Vec<(&str, &str)> = plan
        .applies
        .iter()
        .map(|a| (a.resource.kind.as_str(), a.resource.name.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![
            ("Namespace", "shop"),
            ("CustomResourceDefinition", "widgets.example.com"),
            ("Deployment", "a"),
            ("Deployment", "b")
        ]
    );
    assert_eq!(
        plan.applies[2].ordinal, 0,
        "ordinals stay those of the spec"
    );
}

#[test]
fn manifest_configs_choose_the_update_strategy_and_ssa_defaults_to_the_agent_field_manager() {
    let mut b = bundle(vec![
        deployment("a", "default"),
        deployment("b", "default"),
        deployment("c", "default"),
        deployment("d", "default"),
    ]);
    let cfg = |name: &str, type_, ssa: Option<ServerSideApplyConfig>| ManifestConfigOption {
        resource_identifier: id("apps", "deployments", "default", name),
        update_strategy: Some(UpdateStrategy {
            type_,
            server_side_apply: ssa,
        }),
        ..ManifestConfigOption::default()
    };
    b.manifest_configs = vec![
        cfg(
            "a",
            UpdateStrategyType::ServerSideApply,
            Some(ServerSideApplyConfig {
                force: true,
                field_manager: "maestro-agent".into(),
                ..Default::default()
            }),
        ),
        cfg("b", UpdateStrategyType::ServerSideApply, None),
        cfg("c", UpdateStrategyType::CreateOnly, None),
        cfg("d", UpdateStrategyType::ReadOnly, None),
    ];
    b.manifests.push(Manifest(deployment("e", "default")));
    let plan = plan_apply(&b, &[], "ocm-edge-agent");
    let strategies: Vec<ApplyStrategy> = plan.applies.iter().map(|a| a.strategy.clone()).collect();
    assert_eq!(
        strategies,
        vec![
            ApplyStrategy::ServerSideApply {
                force: true,
                field_manager: "maestro-agent".into(),
                ignore_fields: vec![]
            },
            ApplyStrategy::ServerSideApply {
                force: false,
                field_manager: "ocm-edge-agent".into(),
                ignore_fields: vec![]
            },
            ApplyStrategy::CreateOnly,
            ApplyStrategy::ReadOnly,
            ApplyStrategy::Update,
        ]
    );
}

#[test]
fn objects_dropped_from_a_bundle_are_deleted_and_kept_ones_are_not() {
    let old = vec![
        rref(&namespace("shop")),
        rref(&deployment("a", "shop")),
        rref(&deployment("gone", "shop")),
    ];
    let b = bundle(vec![namespace("shop"), deployment("a", "shop")]);
    let plan = plan_apply(&b, &old, "fm");
    assert_eq!(
        plan.removals,
        vec![RemoveAction::Delete {
            resource: rref(&deployment("gone", "shop")),
            propagation: DeletePropagation::Foreground
        }]
    );
}

#[test]
fn an_object_moved_to_another_api_version_is_not_removed() {
    let mut v1beta1 = deployment("a", "shop");
    v1beta1["apiVersion"] = json!("apps/v1beta1");
    let plan = plan_apply(
        &bundle(vec![deployment("a", "shop")]),
        &[rref(&v1beta1)],
        "fm",
    );
    assert!(plan.removals.is_empty());
}

#[test]
fn a_foreground_delete_removes_everything_namespaces_last() {
    let applied = vec![
        rref(&namespace("shop")),
        rref(&crd("w.example.com")),
        rref(&deployment("a", "shop")),
        rref(&deployment("b", "shop")),
    ];
    let removals = plan_delete(&bundle(vec![]), &applied);
    let order: Vec<&str> = removals
        .iter()
        .map(|r| r.resource().name.as_str())
        .collect();
    assert_eq!(order, vec!["b", "a", "w.example.com", "shop"]);
    assert!(
        removals
            .iter()
            .all(|r| matches!(r, RemoveAction::Delete { .. }))
    );
}

#[test]
fn an_orphan_delete_leaves_every_object_on_the_cluster() {
    let mut b = bundle(vec![]);
    b.delete_option = Some(DeleteOption {
        propagation_policy: PropagationPolicy::Orphan,
        ..Default::default()
    });
    let removals = plan_delete(
        &b,
        &[rref(&deployment("a", "shop")), rref(&namespace("shop"))],
    );
    assert!(
        removals
            .iter()
            .all(|r| matches!(r, RemoveAction::Orphan { .. }))
    );
}

#[test]
fn selectively_orphan_keeps_only_the_listed_objects() {
    let mut b = bundle(vec![]);
    b.delete_option = Some(DeleteOption {
        propagation_policy: PropagationPolicy::SelectivelyOrphan,
        selectively_orphans: Some(SelectivelyOrphan {
            orphaning_rules: vec![id("apps", "deployments", "shop", "keep")],
        }),
        ..Default::default()
    });
    let removals = plan_delete(
        &b,
        &[
            rref(&deployment("keep", "shop")),
            rref(&deployment("drop", "shop")),
        ],
    );
    assert!(removals.contains(&RemoveAction::Orphan {
        resource: rref(&deployment("keep", "shop"))
    }));
    assert!(removals.contains(&RemoveAction::Delete {
        resource: rref(&deployment("drop", "shop")),
        propagation: DeletePropagation::Foreground
    }));
}

#[test]
fn manifests_without_a_name_are_reported_invalid_and_the_others_still_applied() {
    let b = bundle(vec![
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{}}),
        deployment("a", "default"),
    ]);
    let plan = plan_apply(&b, &[], "fm");
    assert_eq!(plan.applies.len(), 1);
    assert_eq!(plan.invalid[0].0, 0);
}

fn ready_deployment(ready: i64) -> Value {
    let mut d = deployment("web", "default");
    d["status"] = json!({"readyReplicas": ready, "replicas": 2, "availableReplicas": ready});
    d
}

fn ctx(
    previous: Option<&ocm_edge_schemas::api::work::ManifestWorkStatus>,
    now: Time,
) -> StatusContext<'_> {
    StatusContext {
        generation: 3,
        previous,
        simulated: false,
        now,
    }
}

#[test]
fn a_fully_applied_ready_work_is_applied_available_not_progressing_not_degraded() {
    let b = bundle(vec![deployment("web", "default")]);
    let outcomes = vec![ManifestOutcome {
        ordinal: 0,
        resource: Some(rref(&deployment("web", "default"))),
        result: Ok(ready_deployment(2)),
    }];
    let s = work_status(&b, &outcomes, ctx(None, at(0)));
    let status_of = |t: &str| find_condition(&s.conditions, t).unwrap().status;
    assert_eq!(status_of("Applied"), ConditionStatus::True);
    assert_eq!(status_of("Available"), ConditionStatus::True);
    assert_eq!(status_of("Progressing"), ConditionStatus::False);
    assert_eq!(status_of("Degraded"), ConditionStatus::False);
    assert!(s.conditions.iter().all(|c| c.observed_generation == 3));
    let m = &s.resource_status.manifests[0];
    assert_eq!(m.resource_meta.resource, "deployments");
    assert_eq!(
        find_condition(&m.conditions, "Applied").unwrap().reason,
        "AppliedManifestComplete"
    );
}

#[test]
fn a_deployment_not_ready_yet_makes_the_work_progressing() {
    let b = bundle(vec![deployment("web", "default")]);
    let outcomes = vec![ManifestOutcome {
        ordinal: 0,
        resource: Some(rref(&deployment("web", "default"))),
        result: Ok(ready_deployment(0)),
    }];
    let s = work_status(&b, &outcomes, ctx(None, at(0)));
    assert_eq!(
        find_condition(&s.conditions, "Progressing").unwrap().status,
        ConditionStatus::True
    );
}

#[test]
fn a_failed_manifest_makes_the_work_not_applied_and_degraded_with_the_error_on_the_manifest() {
    let b = bundle(vec![deployment("web", "nope")]);
    let outcomes = vec![ManifestOutcome {
        ordinal: 0,
        resource: Some(rref(&deployment("web", "nope"))),
        result: Err(ManifestFailure::failed(
            "not found: namespaces \"nope\" not found",
        )),
    }];
    let s = work_status(&b, &outcomes, ctx(None, at(0)));
    assert_eq!(
        find_condition(&s.conditions, "Applied").unwrap().status,
        ConditionStatus::False
    );
    assert_eq!(
        find_condition(&s.conditions, "Degraded").unwrap().status,
        ConditionStatus::True
    );
    let m = find_condition(&s.resource_status.manifests[0].conditions, "Applied").unwrap();
    assert!(m.message.contains("namespaces \"nope\""), "{}", m.message);
}

#[test]
fn transition_times_only_move_when_a_status_changes() {
    let b = bundle(vec![deployment("web", "default")]);
    let r = Some(rref(&deployment("web", "default")));
    let first = work_status(
        &b,
        &[ManifestOutcome {
            ordinal: 0,
            resource: r.clone(),
            result: Ok(ready_deployment(0)),
        }],
        ctx(None, at(0)),
    );
    let second = work_status(
        &b,
        &[ManifestOutcome {
            ordinal: 0,
            resource: r.clone(),
            result: Ok(ready_deployment(2)),
        }],
        ctx(Some(&first), at(60)),
    );
    let applied = find_condition(&second.conditions, "Applied").unwrap();
    assert_eq!(
        applied.last_transition_time,
        Some(at(0)),
        "Applied stayed True"
    );
    let progressing = find_condition(&second.conditions, "Progressing").unwrap();
    assert_eq!(
        progressing.last_transition_time,
        Some(at(60)),
        "Progressing went False"
    );
}

#[test]
fn a_simulated_cluster_says_so_in_the_available_messages() {
    let b = bundle(vec![deployment("web", "default")]);
    let outcomes = vec![ManifestOutcome {
        ordinal: 0,
        resource: Some(rref(&deployment("web", "default"))),
        result: Ok(ready_deployment(2)),
    }];
    let s = work_status(
        &b,
        &outcomes,
        StatusContext {
            generation: 1,
            previous: None,
            simulated: true,
            now: at(0),
        },
    );
    assert!(
        find_condition(&s.conditions, "Available")
            .unwrap()
            .message
            .contains("simulated")
    );
}

#[test]
fn a_deleted_status_adds_the_deleted_condition_with_reason_manifests_deleted() {
    let s = deleted_status(None, 2, at(0));
    let d = find_condition(&s.conditions, "Deleted").unwrap();
    assert_eq!(
        (d.status, d.reason.as_str()),
        (ConditionStatus::True, "ManifestsDeleted")
    );
}

#[test]
fn well_known_status_reports_ocm_names_for_each_kind() {
    let names = |kind: &str, obj: Value| -> Vec<(String, FieldValue)> {
        well_known_status(kind, &obj)
            .into_iter()
            .map(|v| (v.name, v.field_value))
            .collect()
    };
    assert_eq!(
        names("Deployment", ready_deployment(1)),
        vec![
            ("ReadyReplicas".into(), FieldValue::integer(1)),
            ("Replicas".into(), FieldValue::integer(2)),
            ("AvailableReplicas".into(), FieldValue::integer(1))
        ]
    );
    let ds = json!({"status":{"numberReady":3,"desiredNumberScheduled":3,"numberAvailable":2}});
    assert_eq!(names("DaemonSet", ds).len(), 3);
    let job = json!({"status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}});
    assert_eq!(
        names("Job", job),
        vec![
            ("JobComplete".into(), FieldValue::string("True")),
            ("JobSucceeded".into(), FieldValue::integer(1))
        ]
    );
    let pod = json!({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}});
    assert_eq!(
        names("Pod", pod),
        vec![
            ("PodReady".into(), FieldValue::string("True")),
            ("PodPhase".into(), FieldValue::string("Running"))
        ]
    );
    assert!(names("ConfigMap", json!({})).is_empty());
}

#[test]
fn json_paths_read_scalars_as_themselves_and_objects_as_json_raw() {
    let obj = json!({"status":{"readyReplicas":2,"phase":"Ok","paused":false,
        "conditions":[{"type":"A","status":"True"},{"type":"B","status":"False"}]}});
    assert_eq!(
        json_path_value(&obj, ".status.readyReplicas").unwrap(),
        Some(FieldValue::integer(2))
    );
    let mut b = bundle(vec![deployment("web", "default")]);
    let path = |name: &str, p: &str| JsonPath {
        name: name.into(),
        path: p.into(),
        ..Default::default()
    };
    b.manifest_configs = vec![ManifestConfigOption {
        resource_identifier: id("apps", "deployments", "default", "web"),
        feedback_rules: vec![FeedbackRule {
            type_: FeedbackType::JsonPaths,
            json_paths: vec![
                path("ready", ".status.readyReplicas"),
                path("phase", ".status.phase"),
                path("paused", ".status.paused"),
                path("all", ".status"),
                path("none", ".status.missing"),
                // kubectl's filters, as OCM's users write them.
                path("b", r#".status.conditions[?(@.type=="B")].status"#),
                // Several values: a list, as OCM's RawFeedbackJsonString.
                path("types", "{.status.conditions[*].type}"),
                JsonPath {
                    version: "v1beta2".into(),
                    ..path("old", ".status.readyReplicas")
                },
                path("broken", ".status.conditions[0"),
            ],
        }],
        ..Default::default()
    }];
    let (values, problems) = feedback_values(&b, &rref(&deployment("web", "default")), &obj);
    let got: Vec<(&str, ValueType)> = values
        .iter()
        .map(|v| (v.name.as_str(), v.field_value.type_))
        .collect();
    assert_eq!(
        got,
        vec![
            ("ready", ValueType::Integer),
            ("phase", ValueType::String),
            ("paused", ValueType::Boolean),
            ("all", ValueType::JsonRaw),
            ("b", ValueType::String),
            ("types", ValueType::JsonRaw),
        ]
    );
    assert_eq!(values[4].field_value, FieldValue::string("False"));
    assert_eq!(
        values[5].field_value.json_raw.as_deref(),
        Some(r#"["A","B"]"#)
    );
    assert_eq!(
        values[3]
            .field_value
            .json_raw
            .as_deref()
            .map(|s| s.starts_with('{')),
        Some(true)
    );
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert_eq!(problems[0], "no value at .status.missing");
    assert!(
        problems[1].contains("version v1beta2 set in the path old")
            && problems[1].contains("version v1"),
        "{problems:?}"
    );
    assert!(problems[2].contains("never closed"), "{problems:?}");
}

fn env(v: i64) -> Envelope {
    Envelope {
        resource_version: v,
        source: "ocm-edge".into(),
        metadata: None,
    }
}

#[test]
fn the_outbox_keeps_only_the_latest_status_per_bundle() {
    let mut o = Outbox::default();
    assert!(o.record("r1", env(1), deleted_status(None, 1, at(0)), false));
    assert!(o.record("r1", env(2), deleted_status(None, 2, at(1)), false));
    assert!(
        !o.record("r1", env(2), deleted_status(None, 2, at(1)), false),
        "the same status is not queued again"
    );
    let pending = o.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].1.envelope.resource_version, 2);
}

#[test]
fn sent_statuses_are_sent_again_after_a_reconnect_until_the_hub_confirms_them() {
    let mut o = Outbox::default();
    o.record("r1", env(1), deleted_status(None, 1, at(0)), false);
    o.mark_sent("r1");
    assert!(o.pending().is_empty());
    o.on_reconnect();
    assert_eq!(o.pending().len(), 1);
    let hash = o.get("r1").unwrap().hash.clone();
    o.mark_sent("r1");
    o.on_status_resync(&[StatusHash {
        resource_id: "r1".into(),
        status_hash: hash,
    }]);
    o.on_reconnect();
    assert!(o.pending().is_empty(), "confirmed by the hub's resync");
}

#[test]
fn a_status_resync_with_a_different_hash_or_an_empty_list_republishes() {
    let mut o = Outbox::default();
    o.record("r1", env(1), deleted_status(None, 1, at(0)), false);
    o.record("r2", env(1), deleted_status(None, 1, at(0)), false);
    o.mark_sent("r1");
    o.mark_sent("r2");
    o.on_status_resync(&[StatusHash {
        resource_id: "r1".into(),
        status_hash: "other".into(),
    }]);
    assert_eq!(
        o.pending().iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        vec!["r1"]
    );
    o.mark_sent("r1");
    o.on_status_resync(&[]);
    assert_eq!(o.pending().len(), 2);
}

#[test]
fn a_deleted_bundles_status_is_forgotten_once_sent() {
    let mut o = Outbox::default();
    o.record("r1", env(1), deleted_status(None, 1, at(0)), true);
    o.mark_sent("r1");
    assert!(o.is_empty());
    assert_eq!(o.take_dirty(), vec![("r1".to_owned(), None)]);
}

#[test]
fn spec_versions_lower_than_held_are_dropped_equal_reapplied_and_deletes_of_older_versions_too() {
    assert_eq!(decide_spec(None, 1, false), SpecDecision::Apply);
    assert_eq!(decide_spec(Some(1), 2, false), SpecDecision::Apply);
    assert_eq!(decide_spec(Some(2), 2, false), SpecDecision::Reapply);
    assert_eq!(
        decide_spec(Some(3), 2, false),
        SpecDecision::DropStale {
            held: 3,
            received: 2
        }
    );
    // The hub deletes the version it holds; an older delete is a replay.
    assert_eq!(decide_spec(Some(3), 3, true), SpecDecision::Delete);
    assert_eq!(decide_spec(Some(3), 4, true), SpecDecision::Delete);
    assert_eq!(
        decide_spec(Some(3), 1, true),
        SpecDecision::DropStale {
            held: 3,
            received: 1
        }
    );
    assert_eq!(decide_spec(None, 1, true), SpecDecision::DeleteUnknown);
}

#[test]
fn the_lease_is_renewed_at_once_then_every_third_of_its_duration() {
    let t0 = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
    let mut l = LeaseSchedule::new(60);
    assert!(l.due(t0));
    l.renewed(t0);
    assert!(!l.due(t0 + chrono::Duration::seconds(19)));
    assert!(l.due(t0 + chrono::Duration::seconds(20)));
    l.reset();
    assert!(l.due(t0));
    assert_eq!(
        LeaseSchedule::new(5).interval(),
        chrono::Duration::milliseconds(1666)
    );
}

#[test]
fn well_known_completion_rules_set_complete_on_the_manifest_and_the_work() {
    let job =
        json!({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default"}});
    let mut b = bundle(vec![job.clone()]);
    b.manifest_configs = vec![ManifestConfigOption {
        resource_identifier: id("batch", "jobs", "default", "j"),
        condition_rules: vec![ConditionRule {
            type_: ConditionRuleType::WellKnownConditions,
            ..Default::default()
        }],
        ..Default::default()
    }];
    let mut running = job.clone();
    running["status"] = json!({"active": 1});
    let mut done = job.clone();
    done["status"] =
        json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]});
    let outcome = |obj: Value| {
        vec![ManifestOutcome {
            ordinal: 0,
            resource: Some(rref(&job)),
            result: Ok(obj),
        }]
    };

    let s = work_status(&b, &outcome(running), ctx(None, at(0)));
    assert_eq!(
        find_condition(&s.resource_status.manifests[0].conditions, "Complete")
            .unwrap()
            .status,
        ConditionStatus::False
    );
    assert!(find_condition(&s.conditions, "Complete").is_none());

    let s = work_status(&b, &outcome(done), ctx(Some(&s), at(10)));
    assert_eq!(
        find_condition(&s.resource_status.manifests[0].conditions, "Complete")
            .unwrap()
            .status,
        ConditionStatus::True
    );
    assert_eq!(
        find_condition(&s.conditions, "Complete").unwrap().status,
        ConditionStatus::True
    );
}

#[test]
fn cel_condition_rules_set_the_manifest_s_condition_and_a_bad_one_is_false_with_its_error() {
    let cm =
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}});
    let mut b = bundle(vec![cm.clone()]);
    b.manifest_configs = vec![ManifestConfigOption {
        resource_identifier: id("", "configmaps", "default", "c"),
        condition_rules: vec![
            ConditionRule {
                type_: ConditionRuleType::Cel,
                condition: "Ready".into(),
                cel_expressions: vec!["object.data.mode == 'on'".into()],
                ..Default::default()
            },
            ConditionRule {
                type_: ConditionRuleType::Cel,
                condition: "Complete".into(),
                cel_expressions: vec!["object.data.missing == 'x'".into()],
                ..Default::default()
            },
        ],
        ..Default::default()
    }];
    let observe =
        |data: Value, previous: Option<&ocm_edge_schemas::api::work::ManifestWorkStatus>, secs| {
            let mut obj = cm.clone();
            obj["data"] = data;
            work_status(
                &b,
                &[ManifestOutcome {
                    ordinal: 0,
                    resource: Some(rref(&cm)),
                    result: Ok(obj),
                }],
                ctx(previous, at(secs)),
            )
        };
    let off = observe(json!({"mode": "off"}), None, 0);
    let manifest = &off.resource_status.manifests[0].conditions;
    let ready = find_condition(manifest, "Ready").unwrap();
    assert_eq!(
        (ready.status, ready.reason.as_str(), ready.message.as_str()),
        (
            ConditionStatus::False,
            "ConditionRuleEvaluated",
            "Manifest is not Ready"
        )
    );
    let complete = find_condition(manifest, "Complete").unwrap();
    assert_eq!(
        (
            complete.status,
            complete.reason.as_str(),
            complete.message.as_str()
        ),
        (
            ConditionStatus::False,
            "ConditionRuleExpressionError",
            "no such key: missing"
        )
    );
    // Complete is False, so the work is not Complete; the work's other conditions are unharmed.
    assert!(find_condition(&off.conditions, "Complete").is_none());
    assert_eq!(
        find_condition(&off.conditions, "Applied").unwrap().status,
        ConditionStatus::True
    );

    let on = observe(json!({"mode": "on"}), Some(&off), 10);
    let ready = find_condition(&on.resource_status.manifests[0].conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status, ready.message.as_str()),
        (ConditionStatus::True, "Manifest is Ready")
    );
}

#[test]
fn ssa_ignore_fields_are_left_out_only_once_the_object_exists() {
    let mut b = bundle(vec![deployment("a", "default")]);
    b.manifest_configs = vec![ManifestConfigOption {
        resource_identifier: id("apps", "deployments", "default", "a"),
        update_strategy: Some(UpdateStrategy {
            type_: UpdateStrategyType::ServerSideApply,
            server_side_apply: Some(ServerSideApplyConfig {
                ignore_fields: vec![ocm_edge_schemas::api::work::IgnoreField {
                    json_paths: vec![".spec.replicas".into()],
                    ..Default::default()
                }],
                ..Default::default()
            }),
        }),
        ..Default::default()
    }];
    let plan = plan_apply(&b, &[], "fm");
    let strategy = &plan.applies[0].strategy;
    assert!(strategy.needs_existence_check());
    let manifest = &plan.applies[0].manifest;
    let created = strategy
        .effective_manifest(manifest, None)
        .unwrap()
        .unwrap();
    assert_eq!(created["spec"]["replicas"], 2, "set on create");
    let hash =
        created["metadata"]["annotations"]["open-cluster-management.io/config-spec-hash"].clone();
    assert!(hash.is_string(), "{created}");
    // The cluster's object as the agent created it: nothing to do, whatever the cluster did to
    // the object since.
    let mut on_cluster = created.clone();
    on_cluster["spec"]["replicas"] = json!(7);
    assert_eq!(
        strategy.effective_manifest(manifest, Some(&on_cluster)),
        Ok(None)
    );
    // The work changed: applied again, without the ignored field.
    let mut changed = manifest.clone();
    changed["spec"]["paused"] = json!(true);
    let patch = strategy
        .effective_manifest(&changed, Some(&on_cluster))
        .unwrap()
        .unwrap();
    assert!(patch["spec"].get("replicas").is_none(), "{patch}");
    assert_eq!(patch["spec"]["paused"], true);
    assert_ne!(
        patch["metadata"]["annotations"]["open-cluster-management.io/config-spec-hash"],
        hash
    );
}

/// OCM's three ways of naming an ignored field: a kubectl JSONPath (filters included), an RFC
/// 6901 JSON Pointer, and jq, which ocm-edge refuses with OCM's reason instead of applying the
/// object whole.
#[test]
fn ignore_fields_are_named_by_json_path_filters_and_json_pointers_and_jq_is_refused() {
    use ocm_edge_agent::applier::ApplyError;
    use ocm_edge_agent::work::plan::{FieldSelector, IgnoredField};
    use ocm_edge_schemas::api::work::IgnoreFieldsCondition;
    let manifest = json!({"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 2, "template": {"spec": {"containers": [
        {"name": "app", "image": "app:2"}, {"name": "proxy", "image": "proxy:2"}
    ]}}}});
    let ignoring = |selectors: Vec<FieldSelector>| ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "fm".into(),
        ignore_fields: selectors
            .into_iter()
            .map(|selector| IgnoredField {
                selector,
                condition: IgnoreFieldsCondition::OnSpokePresent,
            })
            .collect(),
    };
    let strategy = ignoring(vec![
        FieldSelector::JsonPointer("/spec/replicas".into()),
        FieldSelector::JsonPath(r#".spec.template.spec.containers[?(@.name=="app")].image"#.into()),
    ]);
    // The object exists (someone scaled it and pinned the app's image): neither is applied.
    let on_cluster = json!({"metadata": {"name": "web"}});
    let patch = strategy
        .effective_manifest(&manifest, Some(&on_cluster))
        .unwrap()
        .unwrap();
    assert!(patch["spec"].get("replicas").is_none(), "{patch}");
    assert_eq!(
        patch["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app"}, {"name": "proxy", "image": "proxy:2"}])
    );

    for (selector, says) in [
        (
            FieldSelector::Jq(".spec.replicas".into()),
            "JQ expression error in '.spec.replicas': ocm-edge does not run jq",
        ),
        (
            FieldSelector::JsonPointer("spec/replicas".into()),
            "JSON Pointer error in 'spec/replicas'",
        ),
        (
            FieldSelector::JsonPath(".spec[".into()),
            "JSONPath error in '.spec['",
        ),
    ] {
        let err = ignoring(vec![selector])
            .effective_manifest(&manifest, Some(&on_cluster))
            .unwrap_err();
        assert!(matches!(err, ApplyError::IgnoreFields(_)), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
        assert_eq!(err.applied_reason(), "AppliedManifestSSAIgnoreFieldError");
        assert!(!err.is_retryable());
    }

    // OCM's agent never reads an OnSpokeChange entry; this one refuses it all the same, as the
    // hub does.
    let on_change = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "fm".into(),
        ignore_fields: vec![IgnoredField {
            selector: FieldSelector::Jq(".spec.replicas".into()),
            condition: IgnoreFieldsCondition::OnSpokeChange,
        }],
    };
    assert!(matches!(
        on_change.effective_manifest(&manifest, Some(&on_cluster)),
        Err(ApplyError::IgnoreFields(_))
    ));

    // The status says it with OCM's reason, and the other manifests are not affected.
    let status = work_status(
        &bundle(vec![manifest.clone()]),
        &[ManifestOutcome {
            ordinal: 0,
            resource: Some(rref(&manifest)),
            result: Err(ManifestFailure {
                reason: "AppliedManifestSSAIgnoreFieldError",
                message: "JQ expression error in '.x': refused".into(),
            }),
        }],
        StatusContext {
            generation: 1,
            previous: None,
            simulated: false,
            now: at(0),
        },
    );
    let applied =
        find_condition(&status.resource_status.manifests[0].conditions, "Applied").unwrap();
    assert_eq!(
        (applied.status, applied.reason.as_str()),
        (ConditionStatus::False, "AppliedManifestSSAIgnoreFieldError")
    );
}

#[test]
fn a_works_executor_is_the_service_account_every_action_is_applied_as() {
    let mut b = bundle(vec![namespace("shop"), deployment("a", "shop")]);
    assert!(
        plan_apply(&b, &[], "fm")
            .applies
            .iter()
            .all(|a| a.executor.is_none()),
        "without an executor the agent applies as itself"
    );
    b.executer = Some(
        serde_json::from_value(json!({"subject": {"type": "ServiceAccount",
        "serviceAccount": {"namespace": "shop", "name": "deployer"}}}))
        .unwrap(),
    );
    let plan = plan_apply(&b, &[], "fm");
    assert!(plan.invalid.is_empty());
    assert!(
        plan.applies
            .iter()
            .all(|a| a.executor.as_deref() == Some("system:serviceaccount:shop:deployer"))
    );
    // An executor naming no service account, or a bad one, applies nothing, saying why.
    for executor in [
        json!({"subject": {"type": "ServiceAccount"}}),
        json!({"subject": {"type": "ServiceAccount",
            "serviceAccount": {"namespace": "shop", "name": "Deployer:x"}}}),
    ] {
        b.executer = Some(serde_json::from_value(executor).unwrap());
        let plan = plan_apply(&b, &[], "fm");
        assert!(plan.applies.is_empty());
        assert_eq!(plan.invalid.len(), 2);
        assert!(plan.invalid[0].1.to_string().contains("executor"));
    }
}
