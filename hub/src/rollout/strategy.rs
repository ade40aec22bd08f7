//! Which clusters get the current template next, per rollout strategy (sdk-go's
//! `RolloutHandler.GetRolloutCluster`, `progressivePerCluster`, `progressivePerGroup`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::meta::IntOrString;
use ocm_edge_schemas::api::replicaset::{
    MandatoryDecisionGroup, RolloutConfig, RolloutStrategy, RolloutType, parse_go_duration,
};

use super::RolloutError;
use super::cluster_status::{
    ClusterDecision, ClusterRolloutStatus, Determined, GroupKey, RolloutStatus, determine,
};

/// What a strategy decided (sdk-go's `RolloutResult`, plus every decided cluster's status).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RolloutResult {
    /// The rollout window: clusters to send the template to now (ToApply) or still being
    /// waited for (Progressing, Failed within the deadline, Succeeded within minSuccessTime).
    pub clusters_to_rollout: Vec<ClusterRolloutStatus>,
    /// Clusters whose deadline passed during this evaluation.
    pub clusters_timeout: Vec<ClusterRolloutStatus>,
    /// Clusters with a status that the placement no longer selects.
    pub clusters_removed: Vec<ClusterRolloutStatus>,
    /// More clusters failed or timed out than maxFailures allows: no new cluster is started.
    pub max_failure_breach: bool,
    /// The earliest future recheck time in the window.
    pub recheck_at: Option<DateTime<Utc>>,
    /// Every decided cluster with its status at `now` (ToApply when it has none), by name.
    pub statuses: Vec<ClusterRolloutStatus>,
}

/// The decided clusters by group (sdk-go's `ClusterGroupsMap`).
type Groups = BTreeMap<GroupKey, BTreeSet<String>>;

struct Timing {
    min_success: Duration,
    /// None: progressDeadline `None`.
    timeout: Option<Duration>,
}

/// sdk-go's `GetRolloutCluster` for one placement: `decisions` are its clusters, `existing` the
/// statuses of clusters whose work carries the current template.
///
/// # Errors
/// [`RolloutError`] for a malformed progressDeadline, minSuccessTime, maxFailures or
/// maxConcurrency; nothing is rolled out then (as in OCM).
pub fn rollout_clusters(
    strategy: &RolloutStrategy,
    decisions: &[ClusterDecision],
    existing: &[ClusterRolloutStatus],
    now: DateTime<Utc>,
) -> Result<RolloutResult, RolloutError> {
    let mut groups = Groups::new();
    for d in decisions {
        groups
            .entry(d.group.clone())
            .or_default()
            .insert(d.cluster.clone());
    }
    let decided: BTreeSet<&str> = decisions.iter().map(|d| d.cluster.as_str()).collect();
    let (current, removed): (Vec<_>, Vec<_>) = existing
        .iter()
        .cloned()
        .partition(|s| decided.contains(s.cluster.as_str()));

    let (timing, mut result) = match strategy.effective_type() {
        RolloutType::All => {
            let config = strategy.all.as_ref().map(|a| &a.config);
            let timing = Timing {
                min_success: Duration::ZERO,
                timeout: parse_timeout(config)?,
            };
            let total = cluster_count(&groups);
            let result = progressive_per_cluster(&groups, total, total, &timing, &current, now);
            (timing, result)
        }
        RolloutType::Progressive => {
            let p = strategy.progressive.clone().unwrap_or_default();
            let timing = parse_timing(&p.config)?;
            let max_failures =
                rollout_size(p.config.max_failures.as_ref(), cluster_count(&groups), 0)
                    .map_err(RolloutError::MaxFailures)?;
            let (mandatory, rest) = split_mandatory(&groups, &p.mandatory_decision_groups);
            let early = if mandatory.is_empty() {
                None
            } else {
                let r =
                    progressive_per_group(&mandatory, &IntOrString::Int(0), &timing, &current, now);
                (!r.clusters_to_rollout.is_empty() || !r.clusters_timeout.is_empty()).then_some(r)
            };
            let result = match early {
                Some(r) => r,
                None => {
                    let rest_count = cluster_count(&rest);
                    let size = rollout_size(p.max_concurrency.as_ref(), rest_count, rest_count)
                        .map_err(RolloutError::MaxConcurrency)?;
                    progressive_per_cluster(&rest, size, max_failures, &timing, &current, now)
                }
            };
            (timing, result)
        }
        RolloutType::ProgressivePerGroup => {
            let p = strategy.progressive_per_group.clone().unwrap_or_default();
            let timing = parse_timing(&p.config)?;
            let max_failures = p.config.max_failures.clone().unwrap_or_default();
            // Checked once here; progressive_per_group scales it per group.
            rollout_size(Some(&max_failures), 1, 0).map_err(RolloutError::MaxFailures)?;
            let (mandatory, rest) = split_mandatory(&groups, &p.mandatory_decision_groups);
            let early = if mandatory.is_empty() {
                None
            } else {
                let r =
                    progressive_per_group(&mandatory, &IntOrString::Int(0), &timing, &current, now);
                (!r.clusters_to_rollout.is_empty() || !r.clusters_timeout.is_empty()).then_some(r)
            };
            let result = match early {
                Some(r) => r,
                None => progressive_per_group(&rest, &max_failures, &timing, &current, now),
            };
            (timing, result)
        }
    };
    // A cluster sent the template now has its deadline from now; without this a shell that
    // only re-plans on status events would never wake up for an unreachable cluster.
    if let Some(deadline) = timing.timeout.and_then(|d| TimeDelta::from_std(d).ok()) {
        for c in &mut result.clusters_to_rollout {
            if c.status == RolloutStatus::ToApply {
                c.recheck_time = now.checked_add_signed(deadline);
            }
        }
        result.recheck_at = min_recheck(&result.clusters_to_rollout, now);
    }
    result.clusters_removed = removed;
    result.statuses = all_statuses(decisions, &current, &timing, now);
    // All starts every cluster at once, so OCM ignores its maxFailures; with a failureStrategy
    // it says when to abort (OCM's rollback enhancement).
    if strategy.effective_type() == RolloutType::All && strategy.failure_strategy.is_some() {
        let config = strategy.all.as_ref().map(|a| &a.config);
        let allowed = rollout_size(
            config.and_then(|c| c.max_failures.as_ref()),
            decisions.len(),
            0,
        )
        .map_err(RolloutError::MaxFailures)?;
        let failed = result
            .statuses
            .iter()
            .filter(|s| matches!(s.status, RolloutStatus::Failed | RolloutStatus::TimeOut))
            .count();
        result.max_failure_breach = failed > allowed;
    }
    Ok(result)
}

fn parse_timing(config: &RolloutConfig) -> Result<Timing, RolloutError> {
    let min_success = config.min_success_duration().ok_or_else(|| {
        RolloutError::MinSuccessTime(config.min_success_time.clone().unwrap_or_default())
    })?;
    Ok(Timing {
        min_success,
        timeout: parse_timeout(Some(config))?,
    })
}

/// sdk-go's `parseTimeout`: "" and "None" mean no deadline; otherwise the value must start with
/// digits and a unit (the CRD's pattern `^(([0-9])+[h|m|s])|None$`) and parse as a Go duration.
fn parse_timeout(config: Option<&RolloutConfig>) -> Result<Option<Duration>, RolloutError> {
    let text = config
        .and_then(|c| c.progress_deadline.as_deref())
        .unwrap_or("");
    if text.is_empty() || text == "None" {
        return Ok(None);
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let pattern_ok = digits > 0 && matches!(text.as_bytes().get(digits), Some(b'h' | b'm' | b's'));
    match parse_go_duration(text) {
        Some(d) if pattern_ok => Ok(Some(d)),
        _ => Err(RolloutError::ProgressDeadline(text.to_owned())),
    }
}

/// sdk-go's `calculateRolloutSize`: an int, or a percentage of `total` rounded up; a value that
/// is not positive gives `default`. A string without `%` is an error.
///
/// One difference: sdk-go also gives `default` for a value above `total`, which turns
/// maxFailures 10 on a 3-cluster placement into 0 (stop at the first failure). Here a value above
/// `total` is `total` (for maxConcurrency that is sdk-go's default anyway).
fn rollout_size(
    value: Option<&IntOrString>,
    total: usize,
    default: usize,
) -> Result<usize, String> {
    let length: i64 = match value {
        None => return Ok(default),
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => {
            let pct = s.strip_suffix('%').ok_or_else(|| {
                format!("'{s}' is an invalid maximum threshold value: string is not a percentage")
            })?;
            let f: f64 = pct
                .parse()
                .map_err(|e| format!("'{s}' is an invalid percentage: {e}"))?;
            (f / 100.0 * total as f64).ceil() as i64
        }
    };
    Ok(if length <= 0 {
        default
    } else {
        (length as usize).min(total)
    })
}

fn cluster_count(groups: &Groups) -> usize {
    groups.values().map(BTreeSet::len).sum()
}

/// Mandatory groups and the rest. A mandatory group named by name selects every group of that
/// name (a named group may span several indexes); otherwise by index (sdk-go's group keys).
fn split_mandatory(groups: &Groups, mandatory: &[MandatoryDecisionGroup]) -> (Groups, Groups) {
    let is_mandatory = |key: &GroupKey| {
        mandatory.iter().any(|m| {
            if m.group_name.is_empty() {
                key.group_index == m.group_index
            } else {
                key.group_name == m.group_name
            }
        })
    };
    groups
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| is_mandatory(k))
}

fn group_of(groups: &Groups) -> BTreeMap<String, GroupKey> {
    groups
        .iter()
        .flat_map(|(k, clusters)| clusters.iter().map(move |c| (c.clone(), k.clone())))
        .collect()
}

fn min_recheck(clusters: &[ClusterRolloutStatus], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    clusters
        .iter()
        .filter_map(|c| c.recheck_time)
        .filter(|t| *t > now)
        .min()
}

/// sdk-go's `progressivePerCluster`: existing statuses first (by name), then new clusters in
/// alphabetical order, until the window holds `rollout_size` clusters; no new cluster once more
/// than `max_failures` clusters failed or timed out.
fn progressive_per_cluster(
    groups: &Groups,
    rollout_size: usize,
    max_failures: usize,
    timing: &Timing,
    existing: &[ClusterRolloutStatus],
    now: DateTime<Utc>,
) -> RolloutResult {
    let mut existing: Vec<ClusterRolloutStatus> = existing.to_vec();
    existing.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    let mut rollout = Vec::new();
    let mut timeout = Vec::new();
    let mut seen = BTreeSet::new();
    let mut failures = 0usize;
    let mut breach = false;
    let done = |rollout: Vec<ClusterRolloutStatus>, timeout, breach| RolloutResult {
        recheck_at: min_recheck(&rollout, now),
        clusters_to_rollout: rollout,
        clusters_timeout: timeout,
        max_failure_breach: breach,
        ..RolloutResult::default()
    };
    for mut status in existing {
        if status.cluster.is_empty() {
            continue;
        }
        seen.insert(status.cluster.clone());
        // After a breach only clusters that already have the template are looked at.
        if !breach || status.status != RolloutStatus::ToApply {
            match determine(&mut status, timing.min_success, timing.timeout, now) {
                Determined::Rollout => rollout.push(status.clone()),
                Determined::TimedOut => timeout.push(status.clone()),
                Determined::Settled => {}
            }
        }
        if matches!(
            status.status,
            RolloutStatus::TimeOut | RolloutStatus::Failed
        ) {
            failures += 1;
            breach = failures > max_failures;
        }
        if rollout.len() >= rollout_size {
            return done(rollout, timeout, breach);
        }
    }
    if breach {
        return done(rollout, timeout, breach);
    }
    for (cluster, group) in group_of(groups) {
        if seen.contains(&cluster) {
            continue;
        }
        rollout.push(ClusterRolloutStatus {
            cluster,
            group,
            status: RolloutStatus::ToApply,
            last_transition_time: None,
            recheck_time: None,
        });
        if rollout.len() >= rollout_size {
            break;
        }
    }
    done(rollout, timeout, false)
}

/// sdk-go's `progressivePerGroup`: groups in index order; the window is the first group that
/// still has clusters to start or wait for; a group with more failures than its share of
/// `max_failures` stops the rollout.
///
/// One difference: sdk-go moves on when `len(window) - failures so far <= 0`, subtracting
/// timed-out clusters that are not in the window, which lets two groups start at once. Here the
/// rollout moves on when every cluster left in the window has failed (within maxFailures), which
/// is what its comment says it means.
fn progressive_per_group(
    groups: &Groups,
    max_failures: &IntOrString,
    timing: &Timing,
    existing: &[ClusterRolloutStatus],
    now: DateTime<Utc>,
) -> RolloutResult {
    let mut rollout = Vec::new();
    let mut timeout = Vec::new();
    let mut known = BTreeMap::new();
    for status in existing {
        if status.cluster.is_empty() || status.status == RolloutStatus::ToApply {
            continue;
        }
        let mut status = status.clone();
        match determine(&mut status, timing.min_success, timing.timeout, now) {
            Determined::Rollout => rollout.push(status.clone()),
            Determined::TimedOut => timeout.push(status.clone()),
            Determined::Settled => {}
        }
        known.insert(status.cluster.clone(), status.status);
    }
    let mut breach = false;
    for (key, clusters) in groups {
        let allowed = rollout_size(Some(max_failures), clusters.len(), 0).unwrap_or(0);
        let mut group_failures = 0usize;
        for cluster in clusters {
            if let Some(status) = known.get(cluster) {
                if matches!(status, RolloutStatus::TimeOut | RolloutStatus::Failed) {
                    group_failures += 1;
                    breach = group_failures > allowed;
                }
                continue;
            }
            rollout.push(ClusterRolloutStatus {
                cluster: cluster.clone(),
                group: key.clone(),
                status: RolloutStatus::ToApply,
                last_transition_time: None,
                recheck_time: None,
            });
        }
        let waiting = rollout
            .iter()
            .filter(|c| c.status != RolloutStatus::Failed)
            .count();
        if waiting > 0 || breach {
            break;
        }
    }
    RolloutResult {
        recheck_at: min_recheck(&rollout, now),
        clusters_to_rollout: rollout,
        clusters_timeout: timeout,
        max_failure_breach: breach,
        ..RolloutResult::default()
    }
}

/// Every decided cluster's status at `now`, for display: existing ones re-evaluated (TimeOut
/// once past the deadline), the rest ToApply.
fn all_statuses(
    decisions: &[ClusterDecision],
    current: &[ClusterRolloutStatus],
    timing: &Timing,
    now: DateTime<Utc>,
) -> Vec<ClusterRolloutStatus> {
    let by_name: BTreeMap<&str, &ClusterRolloutStatus> =
        current.iter().map(|s| (s.cluster.as_str(), s)).collect();
    let mut out: BTreeMap<String, ClusterRolloutStatus> = BTreeMap::new();
    for d in decisions {
        let status = match by_name.get(d.cluster.as_str()) {
            Some(s) => {
                let mut s = (*s).clone();
                s.group = d.group.clone();
                determine(&mut s, timing.min_success, timing.timeout, now);
                s
            }
            None => ClusterRolloutStatus {
                cluster: d.cluster.clone(),
                group: d.group.clone(),
                status: RolloutStatus::ToApply,
                last_transition_time: None,
                recheck_time: None,
            },
        };
        out.insert(d.cluster.clone(), status);
    }
    out.into_values().collect()
}
