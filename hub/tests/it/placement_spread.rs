//! The Spread prioritizer OCM's API names but does not implement: selected clusters spread
//! evenly over the values of a label or claim (see `placement::plugins::spread`).

use ocm_edge_hub::placement::testkit::*;
use ocm_edge_schemas::api::meta::find_condition;
use ocm_edge_schemas::api::placement::PLACEMENT_SATISFIED;
use ocm_edge_schemas::api::placement::TopologyKeyType::{Claim, Label};
use ocm_edge_schemas::api::placement::UnsatisfiableMaxSkewAction::DoNotSchedule;

fn zones(spec: &[(&str, &str)]) -> World {
    World::bound(
        "ns",
        "dev",
        spec.iter()
            .map(|(n, z)| mk_cluster(n).label("zone", z))
            .collect(),
    )
}

#[test]
fn selected_clusters_spread_over_zones_before_any_zone_gets_a_second() {
    let world = zones(&[
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("b1", "b"),
        ("b2", "b"),
        ("c1", "c"),
    ]);
    let placement = mk_placement("ns", "p")
        .number(4)
        .spread("zone", Label, None, None)
        .build();
    let outcome = world.schedule(&placement, t(0));
    assert_eq!(outcome.selected(), ["a1", "a2", "b1", "c1"]);
    let ranked: Vec<&str> = outcome
        .explanation
        .clusters
        .iter()
        .take(4)
        .map(|c| c.cluster.as_str())
        .collect();
    assert_eq!(ranked, ["a1", "b1", "c1", "a2"]);
    let b1 = outcome.explanation.cluster("b1").unwrap();
    assert_eq!(
        b1.score_text().unwrap(),
        "score 200 = Balance 1x100 + Steady 1x0 + Spread 1x100"
    );
    // Without spread the first four by name would all but one be in zone a.
    let plain = world.schedule(&mk_placement("ns", "p").number(4).build(), t(0));
    assert_eq!(plain.selected(), ["a1", "a2", "a3", "b1"]);
}

#[test]
fn spread_rebalances_a_placement_that_steady_would_keep_lopsided() {
    let mut world = zones(&[("a1", "a"), ("a2", "a"), ("b1", "b")]);
    world.decisions = vec![mk_decision("ns", "p", 1, &["a1", "a2"])];
    let placement = mk_placement("ns", "p")
        .number(2)
        .spread("zone", Label, None, None)
        .build();
    assert_eq!(world.schedule(&placement, t(0)).selected(), ["a1", "b1"]);
}

#[test]
fn do_not_schedule_leaves_decisions_unscheduled_rather_than_exceed_max_skew() {
    let world = zones(&[("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")]);
    let placement = mk_placement("ns", "p")
        .number(4)
        .spread("zone", Label, Some(1), Some(DoNotSchedule))
        .build();
    let outcome = world.schedule(&placement, t(0));
    assert_eq!(outcome.selected(), ["a1", "a2", "b1"]);
    let c = find_condition(&outcome.status.conditions, PLACEMENT_SATISFIED).unwrap();
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        (
            "NotAllDecisionsScheduled",
            "1 cluster decisions unscheduled"
        )
    );
    assert_eq!(
        outcome.explanation.cluster("a3").unwrap().reason,
        "not selected: rank 4, zone=a would exceed maxSkew 1 (DoNotSchedule)"
    );
    // maxSkew 2 admits the third cluster of zone a.
    let wider = mk_placement("ns", "p")
        .number(4)
        .spread("zone", Label, Some(2), Some(DoNotSchedule))
        .build();
    assert_eq!(world.schedule(&wider, t(0)).selected().len(), 4);
}

#[test]
fn spread_works_on_claims_and_exact_mode_can_leave_it_out_of_the_score() {
    let world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("x1").claim("region", "eu"),
            mk_cluster("x2").claim("region", "eu"),
            mk_cluster("y1").claim("region", "us"),
        ],
    );
    let by_claim = mk_placement("ns", "p")
        .number(2)
        .spread("region", Claim, None, None)
        .build();
    assert_eq!(world.schedule(&by_claim, t(0)).selected(), ["x1", "y1"]);
    // Exact mode without Spread: ScheduleAnyway constraints do not change the score.
    let exact = mk_placement("ns", "p")
        .number(2)
        .exact()
        .spread("region", Claim, None, None)
        .build();
    assert_eq!(world.schedule(&exact, t(0)).selected(), ["x1", "x2"]);
    // ...but DoNotSchedule constraints still hold.
    let hard = mk_placement("ns", "p")
        .number(2)
        .exact()
        .spread("region", Claim, Some(1), Some(DoNotSchedule))
        .build();
    assert_eq!(world.schedule(&hard, t(0)).selected(), ["x1", "y1"]);
}

#[test]
fn five_thousand_clusters_spread_evenly_over_fifty_zones() {
    let clusters = (0..5000)
        .map(|i| mk_cluster(&format!("edge-{i:04}")).label("zone", &format!("z{:02}", i % 50)))
        .collect();
    let world = World::bound("ns", "dev", clusters);
    let placement = mk_placement("ns", "p")
        .number(2500)
        .spread("zone", Label, Some(1), Some(DoNotSchedule))
        .build();
    let outcome = world.schedule(&placement, t(0));
    assert_eq!(outcome.selected().len(), 2500);
    let mut per_zone = std::collections::BTreeMap::<String, usize>::new();
    for name in outcome.selected() {
        let c = world
            .clusters
            .iter()
            .find(|c| c.metadata.name == name)
            .unwrap();
        *per_zone
            .entry(c.metadata.labels["zone"].clone())
            .or_default() += 1;
    }
    assert_eq!(per_zone.len(), 50);
    assert!(per_zone.values().all(|&n| n == 50), "{per_zone:?}");
    assert_eq!(outcome.decisions.len(), 25);
}
