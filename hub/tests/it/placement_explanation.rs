//! The explanation `ocm-edge placement get NAME` prints: every cluster, selected or not, and
//! why, in words an operator can act on.

use ocm_edge_hub::placement::testkit::*;
use ocm_edge_hub::placement::{Explanation, Outcome};
use ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE;
use ocm_edge_schemas::api::cluster::TaintEffect::NoSelect;
use ocm_edge_schemas::api::meta::Time;

fn fleet() -> World {
    let mut world = World::bound(
        "ns",
        "dev",
        vec![
            mk_cluster("steady").label("env", "prod"),
            mk_cluster("fresh-a").label("env", "prod"),
            mk_cluster("fresh-b").label("env", "prod"),
            mk_cluster("tolerated").label("env", "prod").taint(
                TAINT_UNREACHABLE,
                NoSelect,
                Some(t(0)),
            ),
            mk_cluster("dev-box").label("env", "dev"),
        ],
    );
    world.clusters.push(mk_cluster("loner").build());
    world
        .clusters
        .push(mk_cluster("elsewhere").set("qa").build());
    world.sets.push(mk_set("qa"));
    world.decisions = vec![
        mk_decision("ns", "p", 1, &["steady"]),
        mk_decision("ns", "other", 1, &["fresh-b", "steady"]),
        mk_decision("ns", "third", 1, &["steady"]),
    ];
    world
}

fn placement() -> ocm_edge_schemas::api::placement::Placement {
    mk_placement("ns", "p")
        .number(3)
        .predicate_labels(&[("env", "prod")])
        .toleration(exists(TAINT_UNREACHABLE).seconds(30))
        .build()
}

#[test]
fn every_cluster_gets_an_outcome_and_a_reason() {
    let outcome = fleet().schedule(&placement(), t(10));
    let e = &outcome.explanation;
    let rows: Vec<(&str, Outcome, Option<u32>, &str)> = e
        .clusters
        .iter()
        .map(|c| (c.cluster.as_str(), c.outcome, c.rank, c.reason.as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("fresh-a", Outcome::Selected, Some(1), "selected: rank 1"),
            ("tolerated", Outcome::Selected, Some(2), "selected: rank 2"),
            // steady's Steady 100 is cancelled by Balance -100; the tie goes to the name.
            ("fresh-b", Outcome::Selected, Some(3), "selected: rank 3"),
            (
                "steady",
                Outcome::NotSelected,
                Some(4),
                "not selected: rank 4, numberOfClusters 3",
            ),
            (
                "dev-box",
                Outcome::Filtered,
                None,
                "filtered: matches no predicate (label env=prod not met)"
            ),
            (
                "elsewhere",
                Outcome::Filtered,
                None,
                "filtered: not in any bound cluster set (member of qa)"
            ),
            (
                "loner",
                Outcome::Filtered,
                None,
                "filtered: not in any bound cluster set (member of no set)"
            ),
        ]
    );
}

#[test]
fn scores_are_broken_down_by_prioritizer_and_weight() {
    let outcome = fleet().schedule(&placement(), t(10));
    let e = &outcome.explanation;
    let text = |c: &str| e.cluster(c).unwrap().score_text().unwrap();
    // Balance: steady is in 2 other decisions (max 2) -> -100; fresh-b in 1 of 2 -> 0.
    assert_eq!(text("fresh-a"), "score 100 = Balance 1x100 + Steady 1x0");
    assert_eq!(text("steady"), "score 0 = Balance 1x-100 + Steady 1x100");
    assert_eq!(text("fresh-b"), "score 0 = Balance 1x0 + Steady 1x0");
    let prioritizers: Vec<(&str, i32)> = e
        .prioritizers
        .iter()
        .map(|p| (p.prioritizer.as_str(), p.weight))
        .collect();
    assert_eq!(prioritizers, [("Balance", 1), ("Steady", 1)]);
}

#[test]
fn a_tolerated_taint_says_until_when() {
    let outcome = fleet().schedule(&placement(), t(10));
    let tolerated = outcome.explanation.cluster("tolerated").unwrap();
    assert_eq!(
        tolerated.notes,
        [format!(
            "taint {TAINT_UNREACHABLE}:NoSelect tolerated until {}",
            Time::new(t(30))
        )]
    );
    assert!(
        tolerated
            .details()
            .starts_with("selected: rank 2; score 100 = Balance 1x100 + Steady 1x0; taint ")
    );
    let later = fleet().schedule(&placement(), t(30));
    assert_eq!(
        later.explanation.cluster("tolerated").unwrap().reason,
        format!(
            "filtered: taint {TAINT_UNREACHABLE}:NoSelect toleration expired at {}",
            Time::new(t(30))
        )
    );
}

#[test]
fn the_explanation_prints_as_a_table() {
    let outcome = fleet().schedule(&placement(), t(10));
    let table = outcome.explanation.to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 1 + 7);
    for header in Explanation::HEADERS {
        assert!(lines[0].contains(header), "{}", lines[0]);
    }
    assert!(lines[1].starts_with("fresh-a "), "{}", lines[1]);
    assert!(lines[1].contains("Selected"));
    assert!(lines[1].contains("100 = Balance 1x100 + Steady 1x0"));
    assert!(
        lines[4].contains("not selected: rank 4, numberOfClusters 3"),
        "{}",
        lines[4]
    );
    let rows = outcome.explanation.rows();
    assert_eq!(rows[0][4], "0"); // decision group
    assert_eq!(rows[6][2], "-"); // a filtered cluster has no rank
}

#[test]
fn the_explanation_survives_a_json_round_trip_to_the_cli() {
    let outcome = fleet().schedule(&placement(), t(10));
    let json = serde_json::to_string(&outcome.explanation).unwrap();
    assert!(json.contains("\"outcome\":\"Selected\""), "{json}");
    let back: Explanation = serde_json::from_str(&json).unwrap();
    assert_eq!(back, outcome.explanation);
}
