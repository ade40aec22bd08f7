//! One cluster's rollout status from its work's conditions (ocm's clusterRolloutStatusFunc),
//! with ocm-edge's "counted from the send" rule.

use crate::rollout_kit::*;
use ocm_edge_hub::rollout::{RolloutStatus, work_rollout_status};
use ocm_edge_schemas::api::meta::ConditionStatus::{False, True, Unknown};

use RolloutStatus::{Failed, Held, Progressing, Succeeded};

#[test]
fn the_status_of_a_work_follows_its_conditions() {
    // (case, work, expected (status, since seconds)); the template was sent at t=100.
    type Row = (&'static str, W, Option<(RolloutStatus, i64)>);
    let rows: Vec<Row> = vec![
        ("outdated template", outdated(), None),
        ("being deleted", sent(100).succeeded(120).deleting(), None),
        (
            "sent, nothing heard (OCM: ToApply without time)",
            sent(100),
            Some((Progressing, 100)),
        ),
        (
            "unreachable, nothing heard",
            sent(100).unreachable(),
            Some((Progressing, 100)),
        ),
        (
            "applied, no Available yet",
            sent(100).applied(110),
            Some((Progressing, 100)),
        ),
        (
            "applied and available",
            sent(100).succeeded(130),
            Some((Succeeded, 130)),
        ),
        (
            "applied, not available",
            sent(100).applied(110).available(False, 115),
            Some((Progressing, 115)),
        ),
        (
            "Available Unknown",
            sent(100).applied(110).available(Unknown, 115),
            Some((Progressing, 115)),
        ),
        (
            "progressing",
            sent(100).applied(110).progressing(True, 112),
            Some((Progressing, 112)),
        ),
        (
            "progressing done",
            sent(100).applied(110).progressing(False, 140),
            Some((Succeeded, 140)),
        ),
        (
            "progressing Unknown",
            sent(100).applied(110).progressing(Unknown, 113),
            Some((Progressing, 113)),
        ),
        (
            "progressing and degraded",
            sent(100).applied(110).progressing(True, 112).degraded(118),
            Some((Failed, 118)),
        ),
        (
            "degraded, no Progressing",
            sent(100).applied(110).available(False, 111).degraded(119),
            Some((Failed, 119)),
        ),
        (
            "degraded but done progressing",
            sent(100).applied(110).progressing(False, 150).degraded(119),
            Some((Succeeded, 150)),
        ),
        (
            "Applied of the previous generation",
            sent(100)
                .generation(2)
                .applied_gen(1, 50)
                .available(True, 50),
            Some((Progressing, 100)),
        ),
        (
            "Degraded of the previous generation",
            sent(100)
                .applied(110)
                .available(True, 110)
                .degraded_gen(0, 20),
            Some((Progressing, 100)),
        ),
        (
            "Available left over from the previous template",
            sent(100).applied(110).available(True, 40),
            Some((Succeeded, 100)),
        ),
        (
            "held by the cluster (maintenance window, hold on site)",
            sent(100).held(True, 105),
            Some((Held, 105)),
        ),
        (
            "held, the version before still applied and available",
            sent(100)
                .generation(2)
                .applied_gen(1, 50)
                .available(True, 50)
                .held(True, 101),
            Some((Held, 101)),
        ),
        (
            "released: progressing counts from the release, not the send",
            sent(100).held(False, 400).applied(400),
            Some((Progressing, 400)),
        ),
        (
            "released and available",
            sent(100).held(False, 400).succeeded(410),
            Some((Succeeded, 410)),
        ),
        (
            "a hold of the previous generation is not this one's",
            sent(100).generation(2).held_gen(1, True, 50),
            Some((Progressing, 100)),
        ),
    ];
    for (case, work, expected) in rows {
        let got = work_rollout_status(&work.0).map(|(s, since)| (s, since.unwrap()));
        assert_eq!(got, expected.map(|(s, at)| (s, t(at))), "{case}");
    }
}

#[test]
fn applied_false_keeps_the_cluster_waiting_for_the_agent() {
    let mut w = sent(100).succeeded(120);
    w.0.conditions[0].status = False; // Applied False
    assert_eq!(work_rollout_status(&w.0), Some((Progressing, Some(t(100)))));
}
