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
        .filter(|s| s.name == score_name)
        .next_back()
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
