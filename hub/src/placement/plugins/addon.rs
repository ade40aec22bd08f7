//! AddOn prioritizer (OCM `pkg/placement/plugins/addon/addon.go`): the score named
//! `scoreName` in the cluster's AddOnPlacementScore named `resourceName` (namespace = cluster
//! name). No such object or score: 0. Past `validUntil` (strictly after, as Go's
//! `Now().After`): 0. When several scores share the name the last wins, as in Go's loop.
//!
//! ocm-edge also returns the next instant a used score goes stale, so the shell re-schedules
//! then instead of waiting for the next event (OCM only reacts to score updates).

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::placement::AddOnPlacementScore;

use super::{Context, PluginScores};

/// The score of one cluster and, when it counts, until when.
///
/// Returns `(score, note, valid_until)`; an expired score is `(0, Some(note), None)`.
pub fn cluster_score(
    scores: &[AddOnPlacementScore],
    cluster: &str,
    resource_name: &str,
    score_name: &str,
    now: DateTime<Utc>,
) -> (i64, Option<String>, Option<DateTime<Utc>>) {
    let Some(object) = scores
        .iter()
        .find(|s| s.metadata.namespace == cluster && s.metadata.name == resource_name)
    else {
        return (
            0,
            Some(format!("no AddOnPlacementScore {resource_name}")),
            None,
        );
    };
    let valid_until = object.status.valid_until.map(|t| t.as_datetime());
    if let Some(until) = valid_until
        && now > until
    {
        return (
            0,
            Some(format!(
                "AddOnPlacementScore {cluster}/{resource_name} expired at {}",
                object.status.valid_until.unwrap_or_default()
            )),
            None,
        );
    }
    let value = object
        .status
        .scores
        .iter()
        .rfind(|s| s.name == score_name)
        .map(|s| i64::from(s.value));
    match value {
        Some(v) => (v, None, valid_until),
        None => (
            0,
            Some(format!(
                "no score {score_name} in AddOnPlacementScore {resource_name}"
            )),
            None,
        ),
    }
}

/// Scores `clusters`.
pub fn score(
    ctx: &Context<'_>,
    clusters: &[&ManagedCluster],
    resource_name: &str,
    score_name: &str,
) -> PluginScores {
    let mut out = PluginScores::zeroed(clusters.len());
    for (i, cluster) in clusters.iter().enumerate() {
        let (value, note, valid_until) = cluster_score(
            ctx.scores,
            cluster.name(),
            resource_name,
            score_name,
            ctx.now,
        );
        out.scores[i] = value;
        out.notes[i] = note;
        // Stale from the first instant strictly after validUntil; Time has whole seconds.
        if let Some(stale) = valid_until.and_then(|t| t.checked_add_signed(TimeDelta::seconds(1))) {
            out.requeue_at = Some(out.requeue_at.map_or(stale, |r| r.min(stale)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{mk_score, t};

    /// OCM `addon.go`: missing object or score -> 0; `Now().After(validUntil)` -> 0;
    /// the last score with the name wins.
    #[test]
    fn addon_scores_follow_ocm() {
        let scores = vec![
            mk_score("c1", "cpuratio", &[("cpu", 70), ("mem", -20)], None),
            mk_score("c2", "cpuratio", &[("cpu", 30)], Some(t(100))),
            mk_score("c3", "cpuratio", &[("cpu", 10), ("cpu", 90)], None),
            mk_score("c4", "other", &[("cpu", 50)], None),
        ];
        let cases = [
            // (cluster, score name, now, score, counts until)
            ("c1", "cpu", t(0), 70, None),
            ("c1", "mem", t(0), -20, None),
            ("c1", "disk", t(0), 0, None),
            ("c2", "cpu", t(99), 30, Some(t(100))),
            ("c2", "cpu", t(100), 30, Some(t(100))), // not yet *after* validUntil
            ("c2", "cpu", t(101), 0, None),
            ("c3", "cpu", t(0), 90, None),
            ("c4", "cpu", t(0), 0, None),
            ("c5", "cpu", t(0), 0, None),
        ];
        for (cluster, name, now, want, until) in cases {
            let (got, _, valid) = cluster_score(&scores, cluster, "cpuratio", name, now);
            assert_eq!((got, valid), (want, until), "{cluster} {name} at {now}");
        }
        let (_, note, _) = cluster_score(&scores, "c2", "cpuratio", "cpu", t(101));
        assert!(note.unwrap().contains("expired"));
    }
}
