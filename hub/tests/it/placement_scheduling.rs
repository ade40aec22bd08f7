//! The placement scheduler end to end (pure): cluster sets, filters, prioritizers, selection,
//! decision groups, PlacementDecisions and the placement's conditions, as OCM's
//! `scheduling_controller.go` and `schedule.go` produce them.

use ocm_edge_hub::placement::testkit::*;
use ocm_edge_hub::placement::{
    ANNOTATION_SCHEDULING_DISABLE, Outcome, ScheduleOutcome, should_schedule,
};
use ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE;
use ocm_edge_schemas::api::cluster::TaintEffect::{NoSelect, NoSelectIfNew};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, IntOrString, Time, find_condition};
use ocm_edge_schemas::api::placement::{
    LABEL_DECISION_GROUP_NAME, PLACEMENT_MISCONFIGURED, PLACEMENT_SATISFIED,
};

fn satisfied(o: &ScheduleOutcome) -> &Condition {
    find_condition(&o.status.conditions, PLACEMENT_SATISFIED).expect("PlacementSatisfied")
}

fn misconfigured(o: &ScheduleOutcome) -> &Condition {
    find_condition(&o.status.conditions, PLACEMENT_MISCONFIGURED).expect("PlacementMisconfigured")
}

fn edge(n: usize) -> Vec<ClusterBuilder> {
    (1..=n).map(|i| mk_cluster(&format!("c{i}"))).collect()
}

#[test]
fn a_placement_without_a_binding_selects_nothing_and_says_no_managed_cluster_set_bindings() {
    let mut world = World::bound("other", "dev", edge(2));
    world.bindings[0].metadata.namespace = "other".into();
    let outcome = world.schedule(&mk_placement("ns", "p").build(), t(0));
    assert!(outcome.selected().is_empty());
    let c = satisfied(&outcome);
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (
            ConditionStatus::False,
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace"
        )
    );
    let m = misconfigured(&outcome);
    assert_eq!(
        (m.status, m.reason.as_str(), m.message.as_str()),
        (
            ConditionStatus::False,
            "Succeedconfigured",
            "Placement configurations check pass"
        )
    );
    // OCM still writes one empty PlacementDecision.
    assert_eq!(outcome.decisions.len(), 1);
    assert_eq!(outcome.decisions[0].metadata.name, "p-decision-1");
    assert!(outcome.decisions[0].status.decisions.is_empty());
}

#[test]
fn a_binding_to_a_set_that_does_not_exist_is_not_valid() {
    let mut world = World::bound("ns", "dev", edge(1));
    world.sets.clear();
    let outcome = world.schedule(&mk_placement("ns", "p").build(), t(0));
    assert_eq!(satisfied(&outcome).reason, "NoManagedClusterSetBindings");
}

#[test]
fn cluster_sets_named_in_the_spec_but_not_bound_give_no_intersection() {
    let world = World::bound("ns", "dev", edge(2));
    let outcome = world.schedule(
        &mk_placement("ns", "p")
            .cluster_sets(&["prod", "qa"])
            .build(),
        t(0),
    );
    let c = satisfied(&outcome);
    assert_eq!(c.reason, "NoIntersection");
    assert_eq!(
        c.message,
        "None of ManagedClusterSets [prod,qa] is bound to placement namespace"
    );
}

#[test]
fn bound_sets_without_live_members_give_all_managed_cluster_sets_empty() {
    let world = World::bound("ns", "dev", vec![mk_cluster("gone").deleting()]);
    let outcome = world.schedule(&mk_placement("ns", "p").build(), t(0));
    let c = satisfied(&outcome);
    assert_eq!(c.reason, "AllManagedClusterSetsEmpty");
    assert_eq!(
        c.message,
        "All ManagedClusterSets [dev] have no member ManagedCluster"
    );
    assert_eq!(
        outcome.explanation.cluster("gone").unwrap().reason,
        "filtered: being deleted"
    );
}

#[test]
fn predicates_matching_no_cluster_give_no_managed_cluster_matched() {
    let world = World::bound("ns", "dev", edge(2));
    let outcome = world.schedule(
        &mk_placement("ns", "p")
            .predicate_labels(&[("env", "prod")])
            .build(),
        t(0),
    );
    let c = satisfied(&outcome);
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::False, "NoManagedClusterMatched")
    );
    assert_eq!(
        c.message,
        "No ManagedCluster matches any of the cluster predicate"
    );
}

#[test]
fn fewer_feasible_clusters_than_requested_is_not_all_decisions_scheduled() {
    let world = World::bound("ns", "dev", edge(2));
    let outcome = world.schedule(&mk_placement("ns", "p").number(3).build(), t(0));
    assert_eq!(outcome.selected(), ["c1", "c2"]);
    let c = satisfied(&outcome);
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        (
            "NotAllDecisionsScheduled",
            "1 cluster decisions unscheduled"
        )
    );
    assert_eq!(outcome.status.number_of_selected_clusters, 2);
}

#[test]
fn every_requested_decision_made_is_all_decisions_scheduled() {
    let world = World::bound("ns", "dev", edge(3));
    let outcome = world.schedule(&mk_placement("ns", "p").number(2).build(), t(0));
    let c = satisfied(&outcome);
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (
            ConditionStatus::True,
            "AllDecisionsScheduled",
            "All cluster decisions scheduled"
        )
    );
    assert_eq!(c.last_transition_time, Some(Time::new(t(0))));
    // Without numberOfClusters every feasible cluster is selected.
    let all = world.schedule(&mk_placement("ns", "p").build(), t(0));
    assert_eq!(all.selected(), ["c1", "c2", "c3"]);
    assert_eq!(satisfied(&all).reason, "AllDecisionsScheduled");
}

#[test]
fn conditions_keep_their_transition_time_while_their_status_holds() {
    let world = World::bound("ns", "dev", edge(3));
    let mut placement = mk_placement("ns", "p").number(2).build();
    placement.status = world.schedule(&placement, t(0)).status;
    let again = world.schedule(&placement, t(50));
    assert_eq!(
        satisfied(&again).last_transition_time,
        Some(Time::new(t(0)))
    );
    placement.spec.number_of_clusters = Some(5);
    let changed = world.schedule(&placement, t(60));
    assert_eq!(
        satisfied(&changed).last_transition_time,
        Some(Time::new(t(60)))
    );
    assert_eq!(
        misconfigured(&changed).last_transition_time,
        Some(Time::new(t(0)))
    );
}

#[test]
fn a_misconfigured_placement_selects_nothing_and_names_the_problem() {
    let world = World::bound("ns", "dev", edge(2));
    let cases = [
        (
            mk_placement("ns", "p").prioritizer("Random", 1),
            ":incorrect builtin prioritizer: Random",
        ),
        (
            mk_placement("ns", "p").addon("", "cpu", 1),
            ":addOn resourceName should not be empty",
        ),
        (
            mk_placement("ns", "p").toleration(equal("", "x")),
            "TaintToleration:If the key is empty, operator must be Exists.",
        ),
        (
            mk_placement("ns", "p").per_group(IntOrString::String("half".into())),
            ":half invalid type: string is not a percentage",
        ),
    ];
    for (placement, message) in cases {
        let outcome = world.schedule(&placement.build(), t(0));
        let m = misconfigured(&outcome);
        assert_eq!(
            (m.status, m.reason.as_str(), m.message.as_str()),
            (ConditionStatus::True, "Misconfigured", message)
        );
        assert_eq!(
            outcome
                .misconfiguration
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some(message)
        );
    }
    let outcome = world.schedule(
        &mk_placement("ns", "p").prioritizer("Random", 1).build(),
        t(0),
    );
    assert!(outcome.selected().is_empty());
    assert_eq!(satisfied(&outcome).reason, "NoManagedClusterMatched");
    assert_eq!(
        outcome.explanation.cluster("c1").unwrap().reason,
        "not selected: placement misconfigured (:incorrect builtin prioritizer: Random)"
    );
}

#[test]
fn clusters_are_ranked_by_weighted_score_then_name_and_cut_at_number_of_clusters() {
    let world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("small").allocatable("cpu", "2"),
            mk_cluster("big").allocatable("cpu", "16"),
            mk_cluster("mid-b").allocatable("cpu", "8"),
            mk_cluster("mid-a").allocatable("cpu", "8"),
        ],
    );
    let placement = mk_placement("ns", "p")
        .number(3)
        .prioritizer("ResourceAllocatableCPU", 2)
        .build();
    let outcome = world.schedule(&placement, t(0));
    // Groups list clusters by name, like OCM; the explanation keeps the rank.
    assert_eq!(outcome.selected(), ["big", "mid-a", "mid-b"]);
    let ranked: Vec<&str> = outcome
        .explanation
        .clusters
        .iter()
        .map(|c| c.cluster.as_str())
        .collect();
    assert_eq!(ranked, ["big", "mid-a", "mid-b", "small"]);
    // big: 100; mid: (6/14 - 0.5) * 200 = -14.28 -> -14; small -100; plus Balance 100 + Steady 0.
    let scores: Vec<i64> = outcome
        .explanation
        .clusters
        .iter()
        .map(|c| c.score.unwrap())
        .collect();
    assert_eq!(scores, [300, 72, 72, -100]);
}

#[test]
fn steady_keeps_the_current_decision_when_an_equal_cluster_joins() {
    let mut world = World::bound("ns", "dev", vec![mk_cluster("b")]);
    let placement = mk_placement("ns", "p").number(1).build();
    assert_eq!(world.schedule_and_bind(&placement, t(0)).selected(), ["b"]);
    world.clusters.push(mk_cluster("a").set("dev").build());
    // a sorts first by name, but Steady gives b 100 more.
    assert_eq!(world.schedule_and_bind(&placement, t(1)).selected(), ["b"]);
}

#[test]
fn balance_sends_a_new_placement_to_the_least_used_cluster() {
    let mut world = World::bound("ns", "dev", edge(3));
    world.decisions = vec![
        mk_decision("ns", "web", 1, &["c1", "c2"]),
        mk_decision("ns", "db", 1, &["c1"]),
    ];
    let outcome = world.schedule(&mk_placement("ns", "p").number(1).build(), t(0));
    assert_eq!(outcome.selected(), ["c3"]);
}

#[test]
fn exact_mode_uses_only_the_configured_prioritizers() {
    let mut world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("a").allocatable("memory", "1Gi"),
            mk_cluster("b").allocatable("memory", "8Gi"),
        ],
    );
    world.decisions = vec![mk_decision("ns", "p", 1, &["a"])];
    let additive = mk_placement("ns", "p").number(1).build();
    assert_eq!(world.schedule(&additive, t(0)).selected(), ["a"]);
    let exact = mk_placement("ns", "p")
        .number(1)
        .exact()
        .prioritizer("ResourceAllocatableMemory", 1)
        .build();
    let outcome = world.schedule(&exact, t(0));
    assert_eq!(outcome.selected(), ["b"]);
    assert_eq!(outcome.explanation.cluster("b").unwrap().terms.len(), 1);
}

#[test]
fn addon_scores_rank_clusters_and_stale_ones_count_as_zero() {
    let mut world = World::bound("ns", "dev", edge(3));
    world.scores = vec![
        mk_score("c1", "cpuratio", &[("cpuAvailable", 90)], Some(t(100))),
        mk_score("c2", "cpuratio", &[("cpuAvailable", 40)], None),
        mk_score("c3", "cpuratio", &[("cpuAvailable", -10)], None),
    ];
    let placement = mk_placement("ns", "p")
        .number(1)
        .addon("cpuratio", "cpuAvailable", 2)
        .build();
    let fresh = world.schedule(&placement, t(100));
    assert_eq!(fresh.selected(), ["c1"]);
    // Re-schedule the first second the score is stale.
    assert_eq!(fresh.requeue_at, Some(t(101)));
    let stale = world.schedule(&placement, t(101));
    assert_eq!(stale.selected(), ["c2"]);
    let c1 = stale.explanation.cluster("c1").unwrap();
    assert!(c1.notes.iter().any(|n| n.contains("expired")), "{c1:?}");
}

#[test]
fn an_unreachable_cluster_loses_its_decision_to_another_cluster() {
    let mut world = World::bound("ns", "dev", edge(3));
    let placement = mk_placement("ns", "p").number(2).build();
    assert_eq!(
        world.schedule_and_bind(&placement, t(0)).selected(),
        ["c1", "c2"]
    );
    world.clusters[0] = mk_cluster("c1")
        .set("dev")
        .taint(TAINT_UNREACHABLE, NoSelect, Some(t(5)))
        .build();
    let moved = world.schedule_and_bind(&placement, t(6));
    assert_eq!(moved.selected(), ["c2", "c3"]);
    assert_eq!(satisfied(&moved).reason, "AllDecisionsScheduled");
    // The taint goes away; Steady keeps c2 and c3.
    world.clusters[0] = mk_cluster("c1").set("dev").build();
    assert_eq!(
        world.schedule_and_bind(&placement, t(60)).selected(),
        ["c2", "c3"]
    );
}

#[test]
fn no_select_if_new_keeps_a_current_decision_but_admits_no_new_one() {
    let mut world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("a").taint("maintenance", NoSelectIfNew, Some(t(0))),
            mk_cluster("b").taint("maintenance", NoSelectIfNew, Some(t(0))),
        ],
    );
    world.decisions = vec![mk_decision("ns", "p", 1, &["a"])];
    let outcome = world.schedule(&mk_placement("ns", "p").build(), t(1));
    assert_eq!(outcome.selected(), ["a"]);
    assert_eq!(
        outcome.explanation.cluster("b").unwrap().reason,
        "filtered: taint maintenance:NoSelectIfNew not tolerated (cluster is not already selected)"
    );
}

#[test]
fn decision_groups_are_reported_in_the_status_and_labelled_on_the_decisions() {
    let world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("canary-1").label("ring", "canary"),
            mk_cluster("e1"),
            mk_cluster("e2"),
            mk_cluster("e3"),
        ],
    );
    let placement = mk_placement("ns", "p")
        .group("canary", &[("ring", "canary")])
        .per_group(IntOrString::String("50%".into()))
        .build();
    let outcome = world.schedule(&placement, t(0));
    let groups: Vec<(i32, &str, i32, Vec<&str>)> = outcome
        .status
        .decision_groups
        .iter()
        .map(|g| {
            (
                g.decision_group_index,
                g.decision_group_name.as_str(),
                g.clusters_count,
                g.decisions.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // 50% of 4 = 2 per group: canary (1), then the rest cut in twos.
    assert_eq!(
        groups,
        vec![
            (0, "canary", 1, vec!["p-decision-1"]),
            (1, "", 2, vec!["p-decision-2"]),
            (2, "", 1, vec!["p-decision-3"]),
        ]
    );
    assert_eq!(
        outcome.decisions[0].metadata.labels[LABEL_DECISION_GROUP_NAME],
        "canary"
    );
    assert_eq!(outcome.status.number_of_selected_clusters, 4);
    let e3 = outcome.explanation.cluster("e3").unwrap();
    assert_eq!(
        e3.decision_group
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("2")
    );
    let canary = outcome.explanation.cluster("canary-1").unwrap();
    assert_eq!(
        canary
            .decision_group
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("0 (canary)")
    );
}

#[test]
fn two_hundred_fifty_clusters_need_three_placement_decisions_and_old_ones_go_stale() {
    let clusters = (0..250)
        .map(|i| mk_cluster(&format!("edge-{i:03}")))
        .collect();
    let mut world = World::bound("ns", "dev", clusters);
    let placement = mk_placement("ns", "p").build();
    world.decisions = vec![mk_decision("ns", "p", 4, &["edge-000"])];
    let outcome = world.schedule(&placement, t(0));
    let sizes: Vec<usize> = outcome
        .decisions
        .iter()
        .map(|d| d.status.decisions.len())
        .collect();
    assert_eq!(sizes, [100, 100, 50]);
    assert_eq!(
        outcome.status.decision_groups[0].decisions,
        ["p-decision-1", "p-decision-2", "p-decision-3"]
    );
    let stale: Vec<&str> = outcome
        .stale_decisions(&placement, &world.decisions)
        .iter()
        .map(|d| d.metadata.name.as_str())
        .collect();
    assert_eq!(stale, ["p-decision-4"]);
}

#[test]
fn clusters_come_from_every_bound_set_or_only_from_the_named_ones() {
    let mut world = World::bound("ns", "dev", vec![mk_cluster("d1")]);
    world.clusters.push(mk_cluster("p1").set("prod").build());
    world
        .clusters
        .push(mk_cluster("x1").label("vendor", "k3s").build());
    world.sets.push(mk_set("prod"));
    world.sets.push(mk_label_set("k3s", &[("vendor", "k3s")]));
    world.bindings.push(mk_binding("ns", "prod"));
    world.bindings.push(mk_binding("ns", "k3s"));
    let all = world.schedule(&mk_placement("ns", "p").build(), t(0));
    assert_eq!(all.selected(), ["d1", "p1", "x1"]);
    assert_eq!(
        all.explanation.eligible_cluster_sets,
        ["dev", "k3s", "prod"]
    );
    let prod = world.schedule(
        &mk_placement("ns", "p").cluster_sets(&["prod"]).build(),
        t(0),
    );
    assert_eq!(prod.selected(), ["p1"]);
    assert_eq!(
        prod.explanation.with_outcome(Outcome::Filtered),
        ["d1", "x1"]
    );
}

#[test]
fn disabled_and_deleting_placements_are_not_scheduled() {
    let mut p = mk_placement("ns", "p").build();
    assert!(should_schedule(&p));
    p.metadata
        .annotations
        .insert(ANNOTATION_SCHEDULING_DISABLE.into(), "true".into());
    assert!(!should_schedule(&p));
    let mut d = mk_placement("ns", "p").build();
    d.metadata.deletion_timestamp = Some(Time::new(t(0)));
    assert!(!should_schedule(&d));
}
