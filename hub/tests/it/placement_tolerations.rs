//! Tolerations with tolerationSeconds are re-evaluated exactly at expiry: the scheduler keeps
//! a tainted cluster until `timeAdded + N` and tells the shell to come back at that instant.

use ocm_edge_hub::placement::Outcome;
use ocm_edge_hub::placement::testkit::*;
use ocm_edge_schemas::api::cluster::TaintEffect::{NoSelect, PreferNoSelect};
use ocm_edge_schemas::api::cluster::{TAINT_UNAVAILABLE, TAINT_UNREACHABLE};
use ocm_edge_schemas::api::meta::Time;

const ADDED: i64 = 1000;
const N: i64 = 30;

fn world() -> World {
    World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("a").taint(TAINT_UNREACHABLE, NoSelect, Some(t(ADDED))),
            mk_cluster("b"),
        ],
    )
}

#[test]
fn a_cluster_is_kept_one_second_before_expiry_and_dropped_at_expiry() {
    let mut world = world();
    let placement = mk_placement("ns", "p")
        .number(1)
        .toleration(exists(TAINT_UNREACHABLE).seconds(N))
        .build();
    world.decisions = vec![mk_decision("ns", "p", 1, &["a"])];

    let before = world.schedule(&placement, t(ADDED + N - 1));
    assert_eq!(before.selected(), ["a"]);
    assert_eq!(before.requeue_at, Some(t(ADDED + N)));
    assert_eq!(
        before.requeue_after(t(ADDED + N - 1)),
        Some(std::time::Duration::from_secs(1))
    );
    let a = before.explanation.cluster("a").unwrap();
    assert!(
        a.notes.contains(&format!(
            "taint {TAINT_UNREACHABLE}:NoSelect tolerated until {}",
            Time::new(t(ADDED + N))
        )),
        "{a:?}"
    );

    let at_expiry = world.schedule(&placement, before.requeue_at.unwrap());
    assert_eq!(at_expiry.selected(), ["b"]);
    assert_eq!(at_expiry.requeue_at, None);
    let a = at_expiry.explanation.cluster("a").unwrap();
    assert_eq!(a.outcome, Outcome::Filtered);
    assert_eq!(
        a.reason,
        format!(
            "filtered: taint {TAINT_UNREACHABLE}:NoSelect toleration expired at {}",
            Time::new(t(ADDED + N))
        )
    );
}

#[test]
fn a_toleration_without_seconds_keeps_the_cluster_and_needs_no_requeue() {
    let world = world();
    let placement = mk_placement("ns", "p")
        .toleration(exists(TAINT_UNREACHABLE))
        .build();
    let outcome = world.schedule(&placement, t(ADDED + 1_000_000));
    assert_eq!(outcome.selected(), ["a", "b"]);
    assert_eq!(outcome.requeue_at, None);
}

#[test]
fn the_requeue_time_is_the_earliest_expiry_over_all_clusters() {
    let world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("a").taint(TAINT_UNREACHABLE, NoSelect, Some(t(100))),
            mk_cluster("b").taint(TAINT_UNAVAILABLE, NoSelect, Some(t(10))),
            mk_cluster("c").taint(TAINT_UNREACHABLE, NoSelect, Some(t(50))),
        ],
    );
    let placement = mk_placement("ns", "p")
        .toleration(exists(TAINT_UNREACHABLE).seconds(60))
        .toleration(exists(TAINT_UNAVAILABLE).seconds(300))
        .build();
    let outcome = world.schedule(&placement, t(60));
    // a until 160, b until 310, c until 110.
    assert_eq!(outcome.selected(), ["a", "b", "c"]);
    assert_eq!(outcome.requeue_at, Some(t(110)));
    let after = world.schedule(&placement, t(110));
    assert_eq!(after.selected(), ["a", "b"]);
    assert_eq!(after.requeue_at, Some(t(160)));
}

#[test]
fn an_untolerated_unreachable_taint_filters_and_prefer_no_select_does_not() {
    let world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("a").taint(TAINT_UNREACHABLE, NoSelect, Some(t(0))),
            mk_cluster("b").taint("busy", PreferNoSelect, Some(t(0))),
        ],
    );
    let outcome = world.schedule(&mk_placement("ns", "p").build(), t(1));
    assert_eq!(outcome.selected(), ["b"]);
    assert_eq!(
        outcome.explanation.cluster("a").unwrap().reason,
        "filtered: taint cluster.open-cluster-management.io/unreachable:NoSelect not tolerated"
    );
    let b = outcome.explanation.cluster("b").unwrap();
    assert!(
        b.notes.contains(
            &"taint busy:PreferNoSelect does not filter (PreferNoSelect, as in OCM)".to_string()
        ),
        "{b:?}"
    );
}

#[test]
fn a_toleration_limited_to_another_effect_does_not_tolerate() {
    let world = world();
    let placement = mk_placement("ns", "p")
        .toleration(exists(TAINT_UNREACHABLE).effect(PreferNoSelect))
        .build();
    assert_eq!(world.schedule(&placement, t(ADDED)).selected(), ["b"]);
}
