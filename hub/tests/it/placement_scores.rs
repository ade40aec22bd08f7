//! Scores in PlacementDecisions (OCM's placement score visibility: `decisions[].score`,
//! `sortBy`, `scoreRateLimit`, `status.lastScoreUpdateTime`), pure, with time as an argument.

use ocm_edge_hub::placement::ScheduleOutcome;
use ocm_edge_hub::placement::testkit::*;
use ocm_edge_schemas::api::meta::Time;

/// `(cluster, score)` of every decision, in the order written.
fn decided(outcome: &ScheduleOutcome) -> Vec<(String, i64)> {
    outcome
        .decisions
        .iter()
        .flat_map(|pd| &pd.status.decisions)
        .map(|d| (d.cluster_name.clone(), d.score))
        .collect()
}

fn pairs(expected: &[(&str, i64)]) -> Vec<(String, i64)> {
    expected
        .iter()
        .map(|(c, s)| ((*c).to_owned(), *s))
        .collect()
}

/// Three clusters scored only by an add-on's `cpu` score.
fn world(cpu: &[(&str, i32)]) -> World {
    let mut world = World::bound(
        "ns",
        "edge",
        cpu.iter().map(|(c, _)| mk_cluster(c)).collect(),
    );
    world.scores = cpu
        .iter()
        .map(|(c, v)| mk_score(c, "usage", &[("cpu", *v)], None))
        .collect();
    world
}

fn by_cpu() -> PlacementBuilder {
    mk_placement("ns", "p").exact().addon("usage", "cpu", 1)
}

#[test]
fn decisions_carry_each_clusters_score_sorted_by_name_unless_sort_by_score_says_otherwise() {
    let world = world(&[("a", 10), ("b", 90), ("c", 50)]);
    let by_name = world.schedule(&by_cpu().build(), t(0));
    assert_eq!(decided(&by_name), pairs(&[("a", 10), ("b", 90), ("c", 50)]));
    assert_eq!(by_name.status.last_score_update_time, Some(Time::new(t(0))));

    let by_score = world.schedule(&by_cpu().sort_by_score().build(), t(0));
    assert_eq!(
        decided(&by_score),
        pairs(&[("b", 90), ("c", 50), ("a", 10)])
    );
    // A zero score is left out of the JSON, as OCM's omitzero.
    let mut zero = world.clone();
    zero.scores[0].status.scores[0].value = 0;
    let outcome = zero.schedule(&by_cpu().build(), t(0));
    let json = serde_json::to_value(&outcome.decisions[0].status.decisions[0]).unwrap();
    assert_eq!(json, serde_json::json!({"clusterName": "a", "reason": ""}));
}

#[test]
fn a_score_change_that_selects_the_same_clusters_waits_for_the_rate_limit_then_is_written() {
    let mut world = world(&[("a", 10), ("b", 90), ("c", 50)]);
    let mut placement = by_cpu().sort_by_score().score_rate_limit("30s").build();
    let first = world.schedule_and_bind(&placement, t(0));
    placement.status = first.status.clone();

    // a overtakes b ten seconds later: the same three clusters, so the scores written stay
    // until the limit has passed since the last update, and the scheduler comes back then.
    world.scores[0].status.scores[0].value = 95;
    let held = world.schedule_and_bind(&placement, t(10));
    assert_eq!(decided(&held), pairs(&[("b", 90), ("c", 50), ("a", 10)]));
    assert_eq!(held.status.last_score_update_time, Some(Time::new(t(0))));
    assert_eq!(held.requeue_at, Some(t(30)));
    placement.status = held.status.clone();

    let written = world.schedule_and_bind(&placement, t(30));
    assert_eq!(decided(&written), pairs(&[("a", 95), ("b", 90), ("c", 50)]));
    assert_eq!(
        written.status.last_score_update_time,
        Some(Time::new(t(30)))
    );
    assert_eq!(written.requeue_at, None);
    placement.status = written.status.clone();

    // Nothing changed: nothing is written, and the time stays.
    let again = world.schedule_and_bind(&placement, t(100));
    assert_eq!(again.status.last_score_update_time, Some(Time::new(t(30))));

    // A limit past the end of time (OCM's pattern allows any number) holds the scores for good.
    let mut forever = by_cpu().score_rate_limit("5000000000000000s").build();
    forever.status = again.status.clone();
    world.scores[1].status.scores[0].value = 20;
    let held = world.schedule_and_bind(&forever, t(200));
    assert_eq!(decided(&held), pairs(&[("a", 95), ("b", 90), ("c", 50)]));
}

#[test]
fn a_score_change_that_changes_the_selection_is_written_at_once() {
    let mut world = world(&[("a", 10), ("b", 90), ("c", 50)]);
    // Steady would keep the chosen two; this placement ranks by cpu alone.
    let mut placement = by_cpu().number(2).score_rate_limit("1h").build();
    let first = world.schedule_and_bind(&placement, t(0));
    assert_eq!(decided(&first), pairs(&[("b", 90), ("c", 50)]));
    placement.status = first.status.clone();

    world.scores[0].status.scores[0].value = 99;
    let moved = world.schedule_and_bind(&placement, t(5));
    assert_eq!(decided(&moved), pairs(&[("a", 99), ("b", 90)]));
    assert_eq!(moved.status.last_score_update_time, Some(Time::new(t(5))));
}

#[test]
fn score_rate_limits_are_read_as_ocm_s_pattern_says() {
    let limit = |text: &str| {
        by_cpu()
            .score_rate_limit(text)
            .build()
            .spec
            .score_rate_limit()
    };
    assert_eq!(limit("45s"), Ok(std::time::Duration::from_secs(45)));
    assert_eq!(limit("2m"), Ok(std::time::Duration::from_secs(120)));
    assert_eq!(limit("1h"), Ok(std::time::Duration::from_secs(3600)));
    assert_eq!(
        by_cpu().build().spec.score_rate_limit(),
        Ok(std::time::Duration::from_secs(60)),
        "OCM's default"
    );
    for bad in ["1d", "m", "1.5m", "-1m", "", "1 m", "99999999999999999999h"] {
        let err = limit(bad).unwrap_err();
        assert!(
            err.contains("spec.scoreRateLimit") && err.contains("e.g. 30s"),
            "{bad:?}: {err}"
        );
    }
}
