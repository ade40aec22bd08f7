//! Rollout strategies with simulated time: All, Progressive (maxConcurrency windows, mandatory
//! groups), ProgressivePerGroup, minSuccessTime, progressDeadline exactly at expiry, maxFailures,
//! and unreachable clusters that must not stall a rollout past its deadline.

use crate::rollout_kit::*;
use ocm_edge_hub::rollout::{
    ClusterRolloutStatus, GroupKey, RolloutError, RolloutStatus, rollout_clusters,
};

use RolloutStatus::{Failed, Held, Progressing, Succeeded, TimeOut, ToApply};

#[test]
fn all_sends_the_template_to_every_cluster_at_once() {
    let mut fleet = Fleet::new(all(Cfg::default()), flat(5));
    let plan = fleet.step(0);
    assert_eq!(applied_now(&plan), ["c1", "c2", "c3", "c4", "c5"]);
    let plan = fleet.step(1);
    assert!(plan.to_apply.is_empty(), "nothing is sent twice");
    assert!(
        plan.clusters
            .iter()
            .all(|c| c.status == Progressing && c.current_template)
    );
}

#[test]
fn all_times_clusters_out_exactly_at_the_progress_deadline() {
    let mut fleet = Fleet::new(all(Cfg::deadline("60s")), flat(3));
    fleet.step(0);
    fleet.succeed("c1", 10);
    let plan = fleet.step(59);
    assert_eq!(status_of(&plan, "c2"), Progressing);
    assert_eq!(plan.requeue_at, Some(t(60)));
    let plan = fleet.step(60);
    assert_eq!(
        [
            status_of(&plan, "c1"),
            status_of(&plan, "c2"),
            status_of(&plan, "c3")
        ],
        [Succeeded, TimeOut, TimeOut]
    );
    assert_eq!(plan.requeue_at, None);
}

#[test]
fn max_concurrency_sets_the_size_of_the_first_window() {
    // (maxConcurrency, clusters, window): percentages round up; 0, absent or more than the
    // clusters means all of them (sdk-go's calculateRolloutSize).
    let rows = [
        (Some(int(2)), 5, 2),
        (Some(pct("25%")), 5, 2),
        (Some(pct("20%")), 5, 1),
        (Some(pct("1%")), 5, 1),
        (Some(pct("100%")), 5, 5),
        (Some(pct("0%")), 5, 5),
        (Some(int(0)), 5, 5),
        (Some(int(9)), 5, 5),
        (None, 5, 5),
        (Some(pct("50%")), 10, 5),
    ];
    for (max_concurrency, n, window) in rows {
        let mut fleet = Fleet::new(
            progressive(Cfg::default(), max_concurrency.clone(), vec![]),
            flat(n),
        );
        let plan = fleet.step(0);
        assert_eq!(plan.to_apply.len(), window, "{max_concurrency:?} of {n}");
    }
}

#[test]
fn progressive_starts_a_new_cluster_for_each_one_that_succeeds_in_name_order() {
    let mut fleet = Fleet::new(progressive(Cfg::default(), Some(int(2)), vec![]), flat(5));
    assert_eq!(applied_now(&fleet.step(0)), ["c1", "c2"]);
    assert!(fleet.step(5).to_apply.is_empty(), "window full");
    fleet.succeed("c2", 10);
    assert_eq!(applied_now(&fleet.step(10)), ["c3"]);
    fleet.succeed("c1", 11);
    fleet.succeed("c3", 12);
    assert_eq!(applied_now(&fleet.step(12)), ["c4", "c5"]);
    fleet.succeed("c4", 20);
    fleet.succeed("c5", 21);
    let plan = fleet.step(21);
    assert!(plan.to_apply.is_empty());
    assert!(plan.clusters.iter().all(|c| c.status == Succeeded));
}

#[test]
fn a_succeeded_cluster_holds_its_slot_for_min_success_time() {
    let mut fleet = Fleet::new(
        progressive(Cfg::default().soak("60s"), Some(int(1)), vec![]),
        flat(3),
    );
    assert_eq!(applied_now(&fleet.step(0)), ["c1"]);
    fleet.succeed("c1", 10);
    let plan = fleet.step(69);
    assert!(plan.to_apply.is_empty(), "still soaking 1 s before the end");
    assert_eq!(status_of(&plan, "c1"), Succeeded);
    assert_eq!(plan.requeue_at, Some(t(70)));
    assert_eq!(applied_now(&fleet.step(70)), ["c2"]);
}

#[test]
fn an_unreachable_cluster_times_out_at_the_deadline_and_the_rollout_moves_on() {
    let cfg = Cfg::deadline("5m").failures(int(1));
    let mut fleet = Fleet::new(progressive(cfg, Some(int(1)), vec![]), flat(3));
    assert_eq!(applied_now(&fleet.step(0)), ["c1"]);
    // c1 is unreachable: its agent never reports.
    fleet.works.get_mut("c1").unwrap().reachable = false;
    let plan = fleet.step(299);
    assert!(plan.to_apply.is_empty());
    assert_eq!(status_of(&plan, "c1"), Progressing);
    assert_eq!(
        plan.requeue_at,
        Some(t(300)),
        "the shell wakes up exactly at the deadline"
    );
    let plan = fleet.step(300);
    assert_eq!(status_of(&plan, "c1"), TimeOut);
    assert_eq!(applied_now(&plan), ["c2"]);
    let view = plan.clusters.iter().find(|c| c.cluster == "c1").unwrap();
    assert!(!view.reachable);
    // c2 is unreachable too: two failures exceed maxFailures 1, the rollout stops.
    let plan = fleet.step(600);
    assert_eq!(status_of(&plan, "c2"), TimeOut);
    assert!(plan.to_apply.is_empty());
    assert_eq!(plan.max_failure_breach, ["pl"]);
    assert_eq!(status_of(&plan, "c3"), ToApply);
    assert!(fleet.step(10_000).to_apply.is_empty(), "stopped for good");
}

#[test]
fn a_held_cluster_holds_the_rollout_past_its_deadline_without_failing_and_catches_up_when_released()
{
    // maxFailures 0: a single TimeOut would stop the rollout.
    let cfg = Cfg::deadline("1m").failures(int(0));
    let mut fleet = Fleet::new(progressive(cfg, Some(int(1)), vec![]), flat(3));
    assert_eq!(applied_now(&fleet.step(0)), ["c1"]);
    // c1 stores the template but is outside its maintenance window.
    fleet.hold("c1", 5);
    let plan = fleet.step(5);
    assert_eq!(status_of(&plan, "c1"), Held);
    assert_eq!(plan.requeue_at, None, "no deadline to wake up for");
    // Hours later: still waited for, not timed out, and its slot is still taken.
    let plan = fleet.step(36_000);
    assert_eq!(status_of(&plan, "c1"), Held);
    assert!(plan.to_apply.is_empty());
    assert!(plan.max_failure_breach.is_empty());
    let row = plan.clusters.iter().find(|c| c.cluster == "c1").unwrap();
    assert_eq!(row.last_transition_time, Some(t(5)), "held since");
    assert!(
        plan.status
            .conditions
            .iter()
            .any(|c| c.message.contains("1 held by the cluster")),
        "{:?}",
        plan.status.conditions
    );
    // The window opens at 40,000: the deadline counts from there, not from the send.
    fleet.release("c1", 40_000);
    let plan = fleet.step(40_030);
    assert_eq!(status_of(&plan, "c1"), Progressing);
    assert_eq!(plan.requeue_at, Some(t(40_060)));
    fleet.succeed("c1", 40_040);
    assert_eq!(applied_now(&fleet.step(40_041)), ["c2"]);
}

#[test]
fn a_released_cluster_that_never_becomes_available_times_out_a_deadline_after_the_release() {
    let cfg = Cfg::deadline("1m").failures(int(0));
    let mut fleet = Fleet::new(progressive(cfg, Some(int(1)), vec![]), flat(2));
    fleet.step(0);
    fleet.hold("c1", 1);
    fleet.release("c1", 1_000);
    assert_eq!(status_of(&fleet.step(1_059), "c1"), Progressing);
    let plan = fleet.step(1_060);
    assert_eq!(status_of(&plan, "c1"), TimeOut);
    assert_eq!(plan.max_failure_breach, ["pl"]);
}

#[test]
fn without_a_progress_deadline_an_unreachable_cluster_is_waited_for() {
    // progressDeadline None (the default) is OCM's "wait for ever".
    let mut fleet = Fleet::new(progressive(Cfg::default(), Some(int(1)), vec![]), flat(2));
    fleet.step(0);
    let plan = fleet.step(1_000_000);
    assert!(plan.to_apply.is_empty());
    assert_eq!(status_of(&plan, "c1"), Progressing);
    assert_eq!(plan.requeue_at, None);
}

#[test]
fn max_failures_stops_the_rollout_once_exceeded() {
    // (maxFailures, clusters failing in turn, clusters started in all)
    let rows = [
        (int(0), 1),
        (int(1), 2),
        (int(2), 3),
        (pct("50%"), 3),
        (pct("25%"), 2),
        // More than there are clusters tolerates them all (sdk-go would read it as 0).
        (int(10), 4),
    ];
    for (max_failures, started) in rows {
        let cfg = Cfg::deadline("1m").failures(max_failures.clone());
        let mut fleet = Fleet::new(progressive(cfg, Some(int(1)), vec![]), flat(4));
        let mut at = 0;
        fleet.step(at);
        // Every started cluster fails (degraded) and then times out.
        for _ in 0..6 {
            for c in fleet.holding() {
                if !fleet.works[&c]
                    .conditions
                    .iter()
                    .any(|x| x.type_ == "Degraded")
                {
                    fleet.degrade(&c, at + 1);
                }
            }
            at += 60;
            fleet.step(at);
        }
        assert_eq!(
            fleet.holding().len(),
            started,
            "maxFailures {max_failures:?}"
        );
    }
}

#[test]
fn a_failed_cluster_counts_before_its_deadline() {
    // maxFailures 0: one degraded cluster stops new ones at once, deadline or not.
    let cfg = Cfg::deadline("10m").failures(int(0));
    let mut fleet = Fleet::new(progressive(cfg, Some(int(2)), vec![]), flat(4));
    fleet.step(0);
    fleet.degrade("c1", 5);
    fleet.succeed("c2", 6);
    let plan = fleet.step(6);
    assert!(plan.to_apply.is_empty());
    assert_eq!(status_of(&plan, "c1"), Failed);
    assert_eq!(plan.max_failure_breach, ["pl"]);
    assert_eq!(plan.requeue_at, Some(t(605)), "c1's deadline");
}

fn canary_fleet(strategy: ocm_edge_schemas::api::replicaset::RolloutStrategy) -> Fleet {
    Fleet::new(
        strategy,
        decisions(&[
            ("z-canary", 0, "canary"),
            ("y-canary", 0, "canary"),
            ("a1", 1, "prod"),
            ("a2", 1, "prod"),
            ("a3", 2, "prod"),
        ]),
    )
}

#[test]
fn mandatory_decision_groups_go_first_whatever_the_concurrency() {
    for groups in [mandatory(&["canary"], &[]), mandatory(&[], &[0])] {
        let mut fleet = canary_fleet(progressive(Cfg::default(), Some(int(1)), groups));
        assert_eq!(applied_now(&fleet.step(0)), ["y-canary", "z-canary"]);
        fleet.succeed("y-canary", 10);
        assert!(
            fleet.step(10).to_apply.is_empty(),
            "the whole mandatory group first"
        );
        fleet.succeed("z-canary", 20);
        assert_eq!(
            applied_now(&fleet.step(20)),
            ["a1"],
            "then maxConcurrency 1"
        );
    }
}

#[test]
fn a_failed_mandatory_group_stops_the_rollout_even_after_its_deadline() {
    // Mandatory groups tolerate no failure (OCM): the rollout stops rather than moves on.
    let cfg = Cfg::deadline("1m").failures(int(5));
    let mut fleet = canary_fleet(progressive(cfg, None, mandatory(&["canary"], &[])));
    fleet.step(0);
    fleet.succeed("y-canary", 5);
    let plan = fleet.step(60);
    assert_eq!(status_of(&plan, "z-canary"), TimeOut);
    assert!(plan.to_apply.is_empty());
    assert!(fleet.step(6000).to_apply.is_empty());
}

#[test]
fn progressive_per_group_rolls_out_one_group_after_the_other() {
    let mut fleet = canary_fleet(per_group(Cfg::default().soak("30s"), vec![]));
    assert_eq!(applied_now(&fleet.step(0)), ["y-canary", "z-canary"]);
    fleet.succeed("y-canary", 10);
    fleet.succeed("z-canary", 12);
    assert!(
        fleet.step(41).to_apply.is_empty(),
        "z-canary soaks until 42"
    );
    assert_eq!(applied_now(&fleet.step(42)), ["a1", "a2"]);
    fleet.succeed("a1", 50);
    fleet.succeed("a2", 50);
    assert_eq!(applied_now(&fleet.step(80)), ["a3"]);
}

#[test]
fn progressive_per_group_moves_on_when_a_groups_failures_are_within_max_failures() {
    // (maxFailures per group, whether group 2 starts while a2 is failed)
    for (max_failures, moves_on) in [(int(1), true), (pct("50%"), true), (int(0), false)] {
        let cfg = Cfg::deadline("10m").failures(max_failures.clone());
        let mut fleet = canary_fleet(per_group(cfg, vec![]));
        fleet.step(0);
        fleet.succeed("y-canary", 1);
        fleet.succeed("z-canary", 1);
        assert_eq!(applied_now(&fleet.step(2)), ["a1", "a2"]);
        fleet.succeed("a1", 3);
        fleet.degrade("a2", 3);
        let plan = fleet.step(4);
        assert_eq!(
            applied_now(&plan) == ["a3"],
            moves_on,
            "maxFailures {max_failures:?}"
        );
        assert_eq!(plan.max_failure_breach.is_empty(), moves_on);
    }
}

#[test]
fn progressive_per_group_gets_past_an_unreachable_cluster_at_its_deadline() {
    let cfg = Cfg::deadline("2m").failures(pct("50%"));
    let mut fleet = canary_fleet(per_group(cfg, vec![]));
    fleet.step(0);
    fleet.succeed("y-canary", 5);
    // z-canary is unreachable and never reports.
    assert!(fleet.step(119).to_apply.is_empty());
    let plan = fleet.step(120);
    assert_eq!(status_of(&plan, "z-canary"), TimeOut);
    assert_eq!(applied_now(&plan), ["a1", "a2"]);
}

#[test]
fn progressive_per_group_with_a_mandatory_group_by_index() {
    let mut fleet = canary_fleet(per_group(Cfg::default(), mandatory(&[], &[1])));
    assert_eq!(
        applied_now(&fleet.step(0)),
        ["a1", "a2"],
        "group 1 is mandatory: first"
    );
    fleet.succeed("a1", 1);
    fleet.succeed("a2", 1);
    assert_eq!(applied_now(&fleet.step(2)), ["y-canary", "z-canary"]);
}

#[test]
fn a_new_template_is_rolled_out_over_clusters_running_the_old_one() {
    let mut fleet = Fleet::new(progressive(Cfg::default(), Some(int(2)), vec![]), flat(4));
    for i in 1..=4 {
        fleet
            .works
            .insert(format!("c{i}"), outdated().succeeded(0).0);
    }
    let plan = fleet.step(100);
    assert_eq!(applied_now(&plan), ["c1", "c2"]);
    assert!(
        plan.to_delete.is_empty(),
        "old works are updated, not deleted"
    );
    assert_eq!(status_of(&plan, "c3"), ToApply);
}

#[test]
fn clusters_no_longer_selected_lose_their_work() {
    let mut fleet = Fleet::new(all(Cfg::default()), flat(3));
    fleet.step(0);
    fleet.decisions.insert("pl".into(), flat(2));
    let plan = fleet.step(1);
    assert_eq!(plan.to_delete, ["c3"]);
    assert_eq!(fleet.holding(), ["c1", "c2"]);
}

#[test]
fn malformed_strategies_are_refused_and_nothing_is_rolled_out() {
    type Row = (
        ocm_edge_schemas::api::replicaset::RolloutStrategy,
        fn(&RolloutError) -> bool,
    );
    let rows: Vec<Row> = vec![
        (all(Cfg::deadline("1.5h")), |e| {
            matches!(e, RolloutError::ProgressDeadline(_))
        }),
        (all(Cfg::deadline("5x")), |e| {
            matches!(e, RolloutError::ProgressDeadline(_))
        }),
        (all(Cfg::deadline("-1s")), |e| {
            matches!(e, RolloutError::ProgressDeadline(_))
        }),
        (progressive(Cfg::default(), Some(pct("3")), vec![]), |e| {
            matches!(e, RolloutError::MaxConcurrency(_))
        }),
        (
            progressive(Cfg::default().failures(pct("x%")), None, vec![]),
            |e| matches!(e, RolloutError::MaxFailures(_)),
        ),
        (
            per_group(Cfg::default().failures(pct("two")), vec![]),
            |e| matches!(e, RolloutError::MaxFailures(_)),
        ),
        (per_group(Cfg::default().soak("soon"), vec![]), |e| {
            matches!(e, RolloutError::MinSuccessTime(_))
        }),
    ];
    for (strategy, is_expected) in rows {
        let mut fleet = Fleet::new(strategy.clone(), flat(2));
        let plan = fleet.step(0);
        assert!(plan.to_apply.is_empty(), "{strategy:?}");
        assert_eq!(plan.errors.len(), 1, "{strategy:?}");
        assert!(
            is_expected(&plan.errors[0].1),
            "{strategy:?}: {}",
            plan.errors[0].1
        );
    }
    for ok in ["90s", "5m", "1h", "1h30m", "None"] {
        let mut fleet = Fleet::new(all(Cfg::deadline(ok)), flat(1));
        assert!(fleet.step(0).errors.is_empty(), "{ok}");
    }
}

fn st(cluster: &str, status: RolloutStatus, since: i64) -> ClusterRolloutStatus {
    ClusterRolloutStatus {
        cluster: cluster.into(),
        group: GroupKey::new(0, ""),
        status,
        last_transition_time: Some(t(since)),
        recheck_time: None,
    }
}

#[test]
fn the_strategy_handler_reports_window_timeouts_removals_and_recheck() {
    let strategy = progressive(Cfg::deadline("100s").soak("50s"), Some(int(3)), vec![]);
    let existing = [
        st("c1", Succeeded, 0),     // soak over at 50
        st("c2", Succeeded, 60),    // soaking until 110
        st("c3", Progressing, 0),   // deadline 100: timed out at 100
        st("c4", Failed, 20),       // deadline 120
        st("gone", Progressing, 0), // no longer decided
    ];
    let r = rollout_clusters(&strategy, &flat(6), &existing, t(100)).unwrap();
    let names =
        |v: &[ClusterRolloutStatus]| v.iter().map(|c| c.cluster.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&r.clusters_to_rollout),
        ["c2", "c4"],
        "no new cluster after the breach"
    );
    assert_eq!(names(&r.clusters_timeout), ["c3"]);
    assert_eq!(names(&r.clusters_removed), ["gone"]);
    assert!(
        r.max_failure_breach,
        "c3 and c4 are two failures, maxFailures defaults to 0"
    );
    assert_eq!(r.recheck_at, Some(t(110)));
    assert_eq!(r.statuses.len(), 6);
    assert_eq!(r.statuses[2].status, TimeOut);
}

#[test]
fn a_shell_that_only_wakes_at_requeue_at_still_gets_past_unreachable_clusters() {
    // No status event ever arrives: the plan's own requeue times must drive the rollout.
    let cfg = Cfg::deadline("5m").failures(int(5));
    let mut fleet = Fleet::new(progressive(cfg, Some(int(1)), vec![]), flat(3));
    let mut at = 0;
    let mut sent_order = Vec::new();
    for _ in 0..4 {
        let plan = fleet.step(at);
        sent_order.extend(applied_now(&plan).iter().map(|c| (c.to_string(), at)));
        match plan.requeue_at {
            Some(next) => at = (next - t(0)).num_seconds(),
            None => break,
        }
    }
    assert_eq!(
        sent_order,
        [
            ("c1".to_owned(), 0),
            ("c2".to_owned(), 300),
            ("c3".to_owned(), 600)
        ]
    );
}

#[test]
fn a_timed_out_cluster_that_comes_back_and_succeeds_lifts_the_stop() {
    let cfg = Cfg::deadline("1m").failures(int(0));
    let mut fleet = Fleet::new(progressive(cfg, Some(int(1)), vec![]), flat(2));
    fleet.step(0);
    let plan = fleet.step(60);
    assert_eq!(status_of(&plan, "c1"), TimeOut);
    assert_eq!(plan.max_failure_breach, ["pl"]);
    // The agent reconnects, applies the work and reports it available.
    fleet.succeed("c1", 90);
    let plan = fleet.step(90);
    assert_eq!(status_of(&plan, "c1"), Succeeded);
    assert_eq!(applied_now(&plan), ["c2"]);
}

#[test]
fn a_mandatory_group_name_spanning_several_indexes_goes_index_by_index() {
    // A named group split by clustersPerDecisionGroup has one index per part.
    let decided = decisions(&[("a", 0, "canary"), ("b", 1, "canary"), ("c", 2, "prod")]);
    let strategy = progressive(Cfg::default(), None, mandatory(&["canary"], &[]));
    let mut fleet = Fleet::new(strategy, decided);
    assert_eq!(applied_now(&fleet.step(0)), ["a"]);
    fleet.succeed("a", 1);
    assert_eq!(applied_now(&fleet.step(1)), ["b"]);
    fleet.succeed("b", 2);
    assert_eq!(applied_now(&fleet.step(2)), ["c"]);
}
