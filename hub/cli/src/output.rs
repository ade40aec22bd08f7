//! How the CLI prints: tables (comfy-table) for people, `-o json|yaml` for scripts.
//!
//! Rendering functions return `String`s so the demo and tests can use them too; `now` is passed
//! in for the "ago" columns.

use std::io::Write;

use chrono::{DateTime, Utc};
use comfy_table::{ContentArrangement, Table, presets};
use ocm_edge_schemas::api::cluster::Taint;
use ocm_edge_schemas::api::meta::{Condition, Time, find_condition};
use ocm_edge_schemas::api::work::{
    FieldValue, ManifestCondition, ValueType, WORK_APPLIED, WORK_AVAILABLE, WORK_PROGRESSING,
};
use serde::Serialize;

use crate::CliError;
use ocm_edge_schemas::admin::{ClusterView, WorkView};

/// `-o` values: `table` (default), `json` (the admin API's view types), `yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
// Plain comments on the variants: doc comments would turn `--help` into a page per value.
pub enum OutputFormat {
    // Human-readable tables.
    #[default]
    Table,
    // JSON: the admin API's view types, pretty-printed.
    Json,
    // YAML: the same content as JSON.
    Yaml,
}

/// Serialises `value` as JSON or YAML.
///
/// # Errors
/// When serialisation fails (it does not for the view types).
pub fn to_document<T: Serialize>(value: &T, format: OutputFormat) -> Result<String, CliError> {
    match format {
        OutputFormat::Json | OutputFormat::Table => serde_json::to_string_pretty(value)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(|e| CliError::Output(e.to_string())),
        OutputFormat::Yaml => {
            serde_yaml_ng::to_string(value).map_err(|e| CliError::Output(e.to_string()))
        }
    }
}

/// Writes `text` to stdout; a closed pipe (`| head`) is not an error worth a message.
///
/// # Errors
/// Any other write error.
pub fn print(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Output(e.to_string())),
    }
}

/// A table in the CLI's style.
pub fn new_table<I, S>(header: I) -> Table
where
    I: IntoIterator<Item = S>,
    S: Into<comfy_table::Cell>,
{
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .apply_modifier(comfy_table::modifiers::UTF8_ROUND_CORNERS)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    table
}

/// `12s ago`, `5m ago`, `3h ago`, `2d ago`.
pub fn ago(then: Time, now: DateTime<Utc>) -> String {
    let secs = (now - then.as_datetime()).num_seconds().max(0);
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

fn status_of(conditions: &[Condition], type_: &str) -> String {
    find_condition(conditions, type_).map_or_else(|| "-".to_owned(), |c| c.status.to_string())
}

/// The cluster table (`cluster list`).
pub fn clusters_table(clusters: &[ClusterView], now: DateTime<Utc>) -> String {
    let mut table = new_table([
        "NAME",
        "STATE",
        "AVAILABLE",
        "TAINTS",
        "LAST LEASE",
        "WORKS",
        "LABELS",
    ]);
    for c in clusters {
        let available = c
            .available
            .as_ref()
            .map_or_else(|| "-".to_owned(), |a| a.status.to_string());
        let lease = c.last_lease.map_or_else(|| "-".to_owned(), |t| ago(t, now));
        let labels = labels_text(&c.labels);
        let state = match c.removing {
            Some(_) => format!("{} (removing)", c.state),
            None => c.state.to_string(),
        };
        table.add_row(vec![
            c.name.clone(),
            state,
            available,
            taints_text(&c.taints),
            lease,
            c.works.to_string(),
            labels,
        ]);
    }
    table.to_string()
}

/// Labels as `k=v,k2=v2` (empty when there are none).
pub fn labels_text(labels: &std::collections::BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Taints as `unreachable:NoSelect` (the OCM key prefix dropped), `-` when none.
pub fn taints_text(taints: &[Taint]) -> String {
    if taints.is_empty() {
        return "-".to_owned();
    }
    taints
        .iter()
        .map(|t| {
            let key = t
                .key
                .strip_prefix("cluster.open-cluster-management.io/")
                .unwrap_or(&t.key);
            format!("{key}:{:?}", t.effect)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `cluster get`: a summary, the claims and every condition.
pub fn cluster_detail(c: &ClusterView, now: DateTime<Utc>) -> String {
    let mut out = String::new();
    out.push_str(&format!("Cluster:     {}\n", c.name));
    out.push_str(&format!("State:       {}\n", c.state));
    if let Some(since) = c.removing {
        out.push_str(&format!(
            "Removing:    since {since} ({}): the hub forgets it once its agent removed its {} \
             work(s) (`ocm-edge cluster remove {} --force` forgets it now)\n",
            ago(since, now),
            c.works,
            c.name
        ));
    }
    let available = c.available.as_ref().map_or_else(
        || "-".to_owned(),
        |a| format!("{} ({})", a.status, a.reason),
    );
    out.push_str(&format!("Available:   {available}\n"));
    // The operator's half of the double opt-in: the key the agent logs at start must be this one.
    match &c.agent_key {
        Some(k) => out.push_str(&format!("Agent key:   {k}\n")),
        None => out.push_str(
            "Agent key:   none (the agent does not sign; its events are taken unsigned)\n",
        ),
    }
    if let Some(cert) = &c.certificate {
        let end = cert.not_after.as_datetime();
        let state = if cert.waits_for_operator {
            " ENDED beyond the grace: waits for `ocm-edge cluster accept` to issue a new one"
        } else if end <= now {
            " ended: the agent gets a new one when it is back"
        } else {
            ""
        };
        out.push_str(&format!(
            "Certificate: serial {} until {}{state}\n",
            cert.serial, cert.not_after
        ));
    }
    let lease = c
        .last_lease
        .map_or_else(|| "never".to_owned(), |t| format!("{t} ({})", ago(t, now)));
    out.push_str(&format!(
        "Last lease:  {lease} (every {} s)\n",
        c.lease_duration_seconds
    ));
    if let Some(v) = &c.kubernetes_version {
        out.push_str(&format!("Kubernetes:  {v}\n"));
    }
    out.push_str(&format!("Works:       {}\n", c.works));
    // What the ResourceAllocatable prioritizers rank by, as the agent reports it.
    for (title, amounts) in [("Capacity:", &c.capacity), ("Allocatable:", &c.allocatable)] {
        if !amounts.is_empty() {
            let text = amounts
                .iter()
                .map(|(k, v)| format!("{k}={}", v.0))
                .collect::<Vec<_>>()
                .join(" ");
            out.push_str(&format!("{title:<12} {text}\n"));
        }
    }
    if !c.labels.is_empty() {
        out.push_str("Labels:\n");
        for (k, v) in &c.labels {
            out.push_str(&format!("  {k}={v}\n"));
        }
    }
    if !c.reported_labels.is_empty() {
        out.push_str("Labels the agent sent since acceptance (not used: an accepted cluster's labels are the hub's):\n");
        for (k, v) in &c.reported_labels {
            out.push_str(&format!("  {k}={v}\n"));
        }
    }
    if !c.claims.is_empty() {
        out.push_str("Claims:\n");
        for claim in &c.claims {
            out.push_str(&format!("  {}={}\n", claim.name, claim.value));
        }
    }
    if !c.taints.is_empty() {
        out.push_str("Taints:\n");
        for t in &c.taints {
            let added = t
                .time_added
                .map(|a| format!(" (added {a}, {})", ago(a, now)))
                .unwrap_or_default();
            out.push_str(&format!("  {}:{:?}{added}\n", t.key, t.effect));
        }
    }
    if !c.maintenance_windows.is_empty() {
        out.push_str("Maintenance windows (set on the hub):\n");
        for w in &c.maintenance_windows {
            out.push_str(&format!("  {w}\n"));
        }
    }
    if !c.conditions.is_empty() {
        out.push_str(&conditions_table(&c.conditions, now));
        out.push('\n');
    }
    out
}

/// Conditions as a table.
pub fn conditions_table(conditions: &[Condition], now: DateTime<Utc>) -> String {
    let mut table = new_table(["CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE"]);
    for c in conditions {
        table.add_row(vec![
            c.type_.clone(),
            c.status.to_string(),
            c.reason.clone(),
            c.last_transition_time
                .map_or_else(|| "-".to_owned(), |t| ago(t, now)),
            c.message.clone(),
        ]);
    }
    table.to_string()
}

/// One word for a work's state ([`ocm_edge_schemas::admin::WorkPhase`]): `Deleting`,
/// `Updating` (the status is for an older version), `Held` (the cluster waits for a maintenance
/// window or the end of a hold), `Degraded`, `Available`, `Applied`, `Progressing`, `Pending` (no
/// status yet).
pub fn work_phase(w: &WorkView) -> &'static str {
    w.phase().as_str()
}

/// `Name=value` pairs of every manifest's feedback, e.g. `ReadyReplicas=3`.
pub fn feedback_text(m: &ManifestCondition) -> String {
    m.status_feedback
        .values
        .iter()
        .map(|v| format!("{}={}", v.name, field_value_text(&v.field_value)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn field_value_text(v: &FieldValue) -> String {
    match v.type_ {
        ValueType::Integer => v.integer.map(|i| i.to_string()),
        ValueType::String => v.string.clone(),
        ValueType::Boolean => v.boolean.map(|b| b.to_string()),
        ValueType::JsonRaw => v.json_raw.clone(),
    }
    .unwrap_or_default()
}

/// The desired version, followed by the one the status reports on while the agent has not
/// confirmed the desired one: `3`, or `3 (status of 2)`.
pub fn version_text(w: &WorkView) -> String {
    match w.status_version {
        Some(v) if v != w.version => format!("{} (status of {v})", w.version),
        _ => w.version.to_string(),
    }
}

/// The works table (`work list`, the demo).
pub fn works_table(works: &[WorkView], now: DateTime<Utc>) -> String {
    let mut table = new_table([
        "CLUSTER",
        "WORK",
        "VERSION",
        "APPLIED",
        "AVAILABLE",
        "PHASE",
        "FEEDBACK",
        "STATUS AT",
    ]);
    for w in works {
        let feedback = w
            .resource_status
            .iter()
            .filter(|m| !m.status_feedback.values.is_empty())
            .map(|m| format!("{}: {}", m.resource_meta.name, feedback_text(m)))
            .collect::<Vec<_>>()
            .join("; ");
        table.add_row(vec![
            w.cluster.clone(),
            w.name.clone(),
            version_text(w),
            status_of(&w.conditions, WORK_APPLIED),
            status_of(&w.conditions, WORK_AVAILABLE),
            work_phase(w).to_owned(),
            if feedback.is_empty() {
                "-".to_owned()
            } else {
                feedback
            },
            w.status_updated
                .map_or_else(|| "-".to_owned(), |t| ago(t, now)),
        ]);
    }
    table.to_string()
}

/// `work get`: a summary, the work conditions, and one row per manifest with its feedback.
pub fn work_detail(w: &WorkView, now: DateTime<Utc>) -> String {
    let mut out = String::new();
    out.push_str(&format!("Work:        {}\n", w.name));
    out.push_str(&format!("Cluster:     {}\n", w.cluster));
    out.push_str(&format!("Resource id: {}\n", w.resource_id));
    out.push_str(&format!("Version:     {}\n", version_text(w)));
    out.push_str(&format!("Phase:       {}\n", work_phase(w)));
    if let Some(t) = w.created {
        out.push_str(&format!("Created:     {t}\n"));
    }
    let status = w.status_updated.map_or_else(
        || "none yet (the agent has not reported)".to_owned(),
        |t| format!("{t} ({})", ago(t, now)),
    );
    out.push_str(&format!("Last status: {status}\n"));
    if !w.conditions.is_empty() {
        out.push_str(&conditions_table(&w.conditions, now));
        out.push('\n');
    }
    let mut table = new_table([
        "#",
        "KIND",
        "NAMESPACE/NAME",
        "APPLIED",
        "AVAILABLE",
        "FEEDBACK",
    ]);
    let mut rows = 0;
    for (i, m) in w.manifests.iter().enumerate() {
        let status = w
            .resource_status
            .iter()
            .find(|s| s.resource_meta.ordinal == m.ordinal);
        let id = if m.namespace.is_empty() {
            m.name.clone()
        } else {
            format!("{}/{}", m.namespace, m.name)
        };
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        table.add_row(vec![
            i.to_string(),
            m.kind.clone(),
            id,
            status_of(conditions, WORK_APPLIED),
            status_of(conditions, WORK_AVAILABLE),
            status
                .map(feedback_text)
                .filter(|f| !f.is_empty())
                .unwrap_or_else(|| "-".into()),
        ]);
        rows += 1;
    }
    // A hub that sends no manifest summaries still has the statuses to show.
    if rows == 0 {
        for s in &w.resource_status {
            let meta = &s.resource_meta;
            let id = if meta.namespace.is_empty() {
                meta.name.clone()
            } else {
                format!("{}/{}", meta.namespace, meta.name)
            };
            table.add_row(vec![
                meta.ordinal.to_string(),
                meta.kind.clone(),
                id,
                status_of(&s.conditions, WORK_APPLIED),
                status_of(&s.conditions, WORK_AVAILABLE),
                Some(feedback_text(s))
                    .filter(|f| !f.is_empty())
                    .unwrap_or_else(|| "-".into()),
            ]);
        }
    }
    out.push_str(&table.to_string());
    out.push('\n');
    let progressing = status_of(&w.conditions, WORK_PROGRESSING);
    if progressing == "True" {
        out.push_str("The agent is still applying this work.\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::meta::ConditionStatus;
    use ocm_edge_schemas::api::work::{FeedbackValue, StatusFeedbackResult};
    use ocm_edge_schemas::api::work::{WORK_DEGRADED, WORK_HELD};

    fn work(conditions: &[(&str, ConditionStatus)]) -> WorkView {
        WorkView {
            cluster: "edge-1".into(),
            name: "web".into(),
            resource_id: "id".into(),
            version: 1,
            deleting: false,
            created: None,
            labels: Default::default(),
            manifests: vec![],
            conditions: conditions
                .iter()
                .map(|(t, s)| Condition::new(*t, *s, "Reason", ""))
                .collect(),
            resource_status: vec![],
            status_updated: None,
            status_version: Some(1),
            spec: None,
        }
    }

    #[test]
    fn the_phase_says_what_an_operator_needs_first() {
        assert_eq!(work_phase(&work(&[])), "Pending");
        let applied = work(&[(WORK_APPLIED, ConditionStatus::True)]);
        assert_eq!(work_phase(&applied), "Applied");
        let available = work(&[
            (WORK_APPLIED, ConditionStatus::True),
            (WORK_AVAILABLE, ConditionStatus::True),
        ]);
        assert_eq!(work_phase(&available), "Available");
        let degraded = work(&[
            (WORK_AVAILABLE, ConditionStatus::True),
            (WORK_DEGRADED, ConditionStatus::True),
        ]);
        assert_eq!(work_phase(&degraded), "Degraded");
        let failing = work(&[(WORK_APPLIED, ConditionStatus::False)]);
        assert_eq!(work_phase(&failing), "Progressing");
        // The version before is available, the new one waits for a maintenance window.
        let held = work(&[
            (WORK_AVAILABLE, ConditionStatus::True),
            (WORK_HELD, ConditionStatus::True),
        ]);
        assert_eq!(work_phase(&held), "Held");
        let mut updating = available.clone();
        updating.version = 2;
        assert_eq!(work_phase(&updating), "Updating");
        assert_eq!(version_text(&updating), "2 (status of 1)");
        assert_eq!(version_text(&available), "1");
        let mut deleting = available;
        deleting.deleting = true;
        assert_eq!(work_phase(&deleting), "Deleting");
    }

    #[test]
    fn feedback_is_printed_as_name_value_pairs_of_every_type() {
        let m = ManifestCondition {
            status_feedback: StatusFeedbackResult {
                values: vec![
                    FeedbackValue {
                        name: "ReadyReplicas".into(),
                        field_value: FieldValue::integer(3),
                    },
                    FeedbackValue {
                        name: "phase".into(),
                        field_value: FieldValue::string("Running"),
                    },
                    FeedbackValue {
                        name: "ok".into(),
                        field_value: FieldValue::boolean(true),
                    },
                ],
            },
            ..Default::default()
        };
        assert_eq!(feedback_text(&m), "ReadyReplicas=3 phase=Running ok=true");
    }

    #[test]
    fn ages_are_rounded_to_the_largest_unit() {
        let now = chrono::DateTime::from_timestamp(1_000_000, 0).unwrap();
        let at = |secs_ago: i64| Time::from_unix_seconds(1_000_000 - secs_ago);
        assert_eq!(ago(at(5), now), "5s ago");
        assert_eq!(ago(at(125), now), "2m ago");
        assert_eq!(ago(at(7200), now), "2h ago");
        assert_eq!(ago(at(3 * 86400), now), "3d ago");
        // A clock slightly ahead of ours is not "in the future".
        assert_eq!(ago(at(-3), now), "0s ago");
    }

    #[test]
    fn the_works_table_has_one_row_per_work_with_its_conditions() {
        let w = work(&[
            (WORK_APPLIED, ConditionStatus::True),
            (WORK_AVAILABLE, ConditionStatus::False),
        ]);
        let text = works_table(&[w], chrono::Utc::now());
        let row = text.lines().find(|l| l.contains("edge-1")).unwrap();
        assert!(
            row.contains("True") && row.contains("False") && row.contains("Applied"),
            "{row}"
        );
    }

    #[test]
    fn a_cluster_shows_the_labels_its_agent_sent_apart_from_the_ones_selected_on() {
        const SET: &str = "cluster.open-cluster-management.io/clusterset";
        let c: ClusterView = serde_json::from_value(serde_json::json!({
            "name": "edge-1", "state": "Accepted", "works": 0,
            "labels": {SET: "eu"}, "reportedLabels": {SET: "payments"}}))
        .unwrap();
        let text = cluster_detail(&c, Utc::now());
        let (selected, sent) = text
            .split_once("Labels the agent sent since acceptance")
            .expect(&text);
        assert!(selected.contains(&format!("{SET}=eu")), "{text}");
        assert!(!selected.contains("payments"), "{text}");
        assert!(sent.contains(&format!("{SET}=payments")), "{text}");
        assert!(sent.contains("not used"), "{text}");
    }
}
