//! How an add-on's health is told (OCM's health probers), from its work's status. Pure.
//!
//! The mode is the add-on's annotation [`HEALTH_CHECK_ANNOTATION`]:
//! - `WorkloadAvailability` (the default, as OCM's template add-ons): every Deployment and
//!   DaemonSet of the agent is available (the hub asks the work for their WellKnownStatus);
//! - `DeploymentAvailability`: every Deployment;
//! - `Work`: the work's own `Available` condition;
//! - `None`: no health check (always available);
//! - `Lease` (OCM's default for add-ons built on its framework): the add-on's agent renews a
//!   `coordination.k8s.io` Lease named after the add-on in its install namespace. The work
//!   creates it (CreateOnly: never overwritten, so the agent's renewals stand) and reports its
//!   `spec.renewTime`; the add-on is unavailable once it is older than five lease durations
//!   (OCM's grace), or before the first renewal.
//!
//! An agent with no workload is judged by its work.

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::work::{
    FeedbackRule, FeedbackType, JsonPath, Manifest, ManifestConfigOption, ManifestResourceStatus,
    ManifestWorkSpec, ResourceIdentifier, UpdateStrategy, UpdateStrategyType,
};

/// Annotation of a ClusterManagementAddOn choosing its health check.
pub const HEALTH_CHECK_ANNOTATION: &str = "edge.open-cluster-management.io/health-check";

/// An add-on's health check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    WorkloadAvailability,
    DeploymentAvailability,
    Work,
    None,
    Lease,
}

/// How many lease durations a Lease may go unrenewed (OCM's grace).
pub const LEASE_GRACE_DURATIONS: i64 = 5;
/// The Lease's duration when it names none (OCM's).
pub const DEFAULT_LEASE_DURATION_SECONDS: i64 = 60;

impl Mode {
    /// The mode an annotation value names (`None` for a value that is none of them).
    pub fn parse(value: Option<&str>) -> Option<Mode> {
        Some(match value {
            None | Some("WorkloadAvailability") => Mode::WorkloadAvailability,
            Some("DeploymentAvailability") => Mode::DeploymentAvailability,
            Some("Work") => Mode::Work,
            Some("None") => Mode::None,
            Some("Lease") => Mode::Lease,
            Some(_) => return None,
        })
    }

    /// OCM's `status.healthCheck.mode` for it (the probes are `Customized`).
    pub fn ocm_mode(self) -> &'static str {
        match self {
            Mode::Lease => "Lease",
            _ => "Customized",
        }
    }

    fn probes(self, kind: &str) -> bool {
        match self {
            Mode::WorkloadAvailability => kind == "Deployment" || kind == "DaemonSet",
            Mode::DeploymentAvailability => kind == "Deployment",
            Mode::Work | Mode::None | Mode::Lease => false,
        }
    }
}

/// The values [`HEALTH_CHECK_ANNOTATION`] takes.
pub const MODES: &str = "WorkloadAvailability, DeploymentAvailability, Work, None or Lease";

/// Asks the work for what `mode` judges by: the WellKnownStatus of each workload it probes
/// (unless the template already asks for it), or, for `Lease`, the add-on's Lease created in
/// `install_namespace` and its renewal time.
pub fn ask_feedback(spec: &mut ManifestWorkSpec, mode: Mode, addon: &str, install_namespace: &str) {
    if mode == Mode::Lease {
        spec.workload.manifests.push(Manifest(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": addon, "namespace": install_namespace},
            "spec": {"leaseDurationSeconds": DEFAULT_LEASE_DURATION_SECONDS}
        })));
        spec.manifest_configs.push(ManifestConfigOption {
            resource_identifier: lease_id(addon, install_namespace),
            feedback_rules: vec![FeedbackRule {
                type_: FeedbackType::JsonPaths,
                json_paths: ["renewTime", "leaseDurationSeconds"]
                    .into_iter()
                    .map(|field| JsonPath {
                        name: field.to_owned(),
                        version: String::new(),
                        path: format!(".spec.{field}"),
                    })
                    .collect(),
            }],
            update_strategy: Some(UpdateStrategy {
                type_: UpdateStrategyType::CreateOnly,
                server_side_apply: None,
            }),
            ..ManifestConfigOption::default()
        });
        return;
    }
    ask_well_known(spec, |kind| mode.probes(kind));
}

fn lease_id(addon: &str, namespace: &str) -> ResourceIdentifier {
    ResourceIdentifier {
        group: "coordination.k8s.io".into(),
        resource: "leases".into(),
        name: addon.to_owned(),
        namespace: namespace.to_owned(),
    }
}

/// Asks the work for the WellKnownStatus of each manifest whose kind `wanted` takes.
pub fn ask_well_known(spec: &mut ManifestWorkSpec, wanted: impl Fn(&str) -> bool) {
    let probed: Vec<ResourceIdentifier> = spec
        .workload
        .manifests
        .iter()
        .filter(|m| m.kind().is_some_and(&wanted))
        .map(Manifest::resource_identifier)
        .collect();
    for id in probed {
        let well_known = FeedbackRule {
            type_: FeedbackType::WellKnownStatus,
            json_paths: vec![],
        };
        match spec
            .manifest_configs
            .iter_mut()
            .find(|c| c.resource_identifier == id)
        {
            Some(c)
                if c.feedback_rules
                    .iter()
                    .any(|r| r.type_ == FeedbackType::WellKnownStatus) => {}
            Some(c) => c.feedback_rules.push(well_known),
            None => spec.manifest_configs.push(ManifestConfigOption {
                resource_identifier: id,
                feedback_rules: vec![well_known],
                ..ManifestConfigOption::default()
            }),
        }
    }
}

/// Whether every pre-delete hook of `spec` finished, as `status` reports: a Job complete, a Pod
/// succeeded.
pub fn hooks_done(spec: &ManifestWorkSpec, status: Option<&ManifestResourceStatus>) -> bool {
    spec.workload.manifests.iter().all(|m| {
        let Some(kind @ ("Job" | "Pod")) = m.kind() else {
            return true;
        };
        let reported = status.and_then(|s| {
            s.manifests.iter().find(|r| {
                r.resource_meta.kind == kind
                    && r.resource_meta.name == m.name().unwrap_or_default()
                    && r.resource_meta.namespace == m.namespace().unwrap_or_default()
            })
        });
        let value = |name: &str| {
            reported.and_then(|r| {
                r.status_feedback
                    .values
                    .iter()
                    .find(|v| v.name == name)
                    .and_then(|v| v.field_value.string.clone())
            })
        };
        match kind {
            "Job" => value("JobComplete").as_deref() == Some("True"),
            _ => value("PodPhase").as_deref() == Some("Succeeded"),
        }
    })
}

/// The add-on's `Available` from its work's manifests' feedback (`None` when `mode` judges by
/// the work's own condition).
pub fn probe(
    mode: Mode,
    spec: &ManifestWorkSpec,
    status: Option<&ManifestResourceStatus>,
    now: DateTime<Utc>,
) -> Option<(ConditionStatus, &'static str, String)> {
    if mode == Mode::Lease {
        return Some(lease_health(spec, status, now));
    }
    if mode == Mode::None {
        return Some((
            ConditionStatus::True,
            "NoHealthCheck",
            "The add-on has no health check".to_owned(),
        ));
    }
    let workloads: Vec<(&str, &str, &str)> = spec
        .workload
        .manifests
        .iter()
        .filter_map(|m| {
            let kind = m.kind()?;
            mode.probes(kind).then(|| {
                (
                    kind,
                    m.namespace().unwrap_or_default(),
                    m.name().unwrap_or_default(),
                )
            })
        })
        .collect();
    if workloads.is_empty() {
        return None;
    }
    let mut unavailable = Vec::new();
    let mut unknown = Vec::new();
    for (kind, namespace, name) in workloads {
        let values = status.and_then(|s| {
            s.manifests.iter().find(|m| {
                m.resource_meta.kind == kind
                    && m.resource_meta.namespace == namespace
                    && m.resource_meta.name == name
            })
        });
        let value = |field: &str| {
            values.and_then(|m| {
                m.status_feedback
                    .values
                    .iter()
                    .find(|v| v.name == field)
                    .and_then(|v| v.field_value.integer)
            })
        };
        let available = match kind {
            "Deployment" => value("AvailableReplicas").map(|a| a >= 1),
            _ => match (value("NumberAvailable"), value("DesiredNumberScheduled")) {
                (Some(a), Some(d)) => Some(d >= 1 && a >= d),
                _ => None,
            },
        };
        match available {
            None => unknown.push(format!("{kind} {namespace}/{name}")),
            Some(false) => unavailable.push(format!("{kind} {namespace}/{name}")),
            Some(true) => {}
        }
    }
    Some(if !unavailable.is_empty() {
        (
            ConditionStatus::False,
            "ProbeUnavailable",
            format!("Not available: {}", unavailable.join(", ")),
        )
    } else if !unknown.is_empty() {
        (
            ConditionStatus::False,
            "NoProbeResult",
            format!("No status yet of {}", unknown.join(", ")),
        )
    } else {
        (
            ConditionStatus::True,
            "ProbeAvailable",
            "The add-on's workloads are available".to_owned(),
        )
    })
}

/// The add-on's Lease as the work reports it: its renewal time and duration.
fn lease_of(
    spec: &ManifestWorkSpec,
    status: Option<&ManifestResourceStatus>,
) -> Option<(DateTime<Utc>, i64)> {
    let lease = spec
        .workload
        .manifests
        .iter()
        .find(|m| m.kind() == Some("Lease"))?;
    let reported = status?.manifests.iter().find(|r| {
        r.resource_meta.kind == "Lease"
            && r.resource_meta.name == lease.name().unwrap_or_default()
            && r.resource_meta.namespace == lease.namespace().unwrap_or_default()
    })?;
    let value = |name: &str| {
        reported
            .status_feedback
            .values
            .iter()
            .find(|v| v.name == name)
            .map(|v| &v.field_value)
    };
    let renewed = value("renewTime")
        .and_then(|v| v.string.as_deref())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())?
        .with_timezone(&Utc);
    let duration = value("leaseDurationSeconds")
        .and_then(|v| v.integer)
        .filter(|d| *d > 0)
        .unwrap_or(DEFAULT_LEASE_DURATION_SECONDS);
    Some((renewed, duration))
}

/// When the add-on's Lease goes stale unless renewed (`None` before its first renewal).
pub fn lease_deadline(
    spec: &ManifestWorkSpec,
    status: Option<&ManifestResourceStatus>,
) -> Option<DateTime<Utc>> {
    // The duration comes from the agent's feedback: a forged one past the end of time is
    // treated as a Lease that never goes stale rather than trusted into an overflow.
    lease_of(spec, status).and_then(|(renewed, duration)| {
        renewed.checked_add_signed(chrono::Duration::try_seconds(
            duration.checked_mul(LEASE_GRACE_DURATIONS)?,
        )?)
    })
}

fn lease_health(
    spec: &ManifestWorkSpec,
    status: Option<&ManifestResourceStatus>,
    now: DateTime<Utc>,
) -> (ConditionStatus, &'static str, String) {
    match lease_deadline(spec, status) {
        None => (
            ConditionStatus::False,
            "ManagedClusterAddOnLeaseNotFound",
            "The add-on's agent has not renewed its Lease yet".to_owned(),
        ),
        Some(deadline) if now > deadline => (
            ConditionStatus::False,
            "ManagedClusterAddOnLeaseUpdateStopped",
            format!("The add-on's agent stopped renewing its Lease (stale since {deadline})"),
        ),
        Some(_) => (
            ConditionStatus::True,
            "ManagedClusterAddOnLeaseUpdated",
            "The add-on's agent renews its Lease".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::work::{
        FeedbackValue, FieldValue, Manifest, ManifestCondition, ResourceMeta,
    };
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-27T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_lease_add_on_is_available_while_its_agent_renews_its_lease() {
        let mut s = ManifestWorkSpec::default();
        ask_feedback(&mut s, Mode::Lease, "logs", "ns");
        assert_eq!(s.workload.manifests[0].kind(), Some("Lease"));
        let config = &s.manifest_configs[0];
        assert_eq!(
            config.update_strategy.as_ref().unwrap().type_,
            UpdateStrategyType::CreateOnly,
            "the work never overwrites the agent's renewals"
        );
        let renewed = |at: &str| {
            let mut status = ManifestResourceStatus::default();
            status.manifests.push(ManifestCondition {
                resource_meta: ResourceMeta {
                    kind: "Lease".into(),
                    name: "logs".into(),
                    namespace: "ns".into(),
                    ..ResourceMeta::default()
                },
                status_feedback: ocm_edge_schemas::api::work::StatusFeedbackResult {
                    values: vec![
                        FeedbackValue {
                            name: "renewTime".into(),
                            field_value: FieldValue::string(at),
                        },
                        FeedbackValue {
                            name: "leaseDurationSeconds".into(),
                            field_value: FieldValue::integer(60),
                        },
                    ],
                },
                conditions: vec![],
            });
            status
        };
        let at = |status: ManifestResourceStatus| {
            probe(Mode::Lease, &s, Some(&status), now()).unwrap().1
        };
        assert_eq!(
            probe(Mode::Lease, &s, None, now()).unwrap().1,
            "ManagedClusterAddOnLeaseNotFound"
        );
        assert_eq!(
            at(renewed("2026-11-27T11:58:00.000000Z")),
            "ManagedClusterAddOnLeaseUpdated"
        );
        assert_eq!(
            at(renewed("2026-11-27T11:54:59.000000Z")),
            "ManagedClusterAddOnLeaseUpdateStopped",
            "five minutes at 60 s"
        );
        assert_eq!(
            lease_deadline(&s, Some(&renewed("2026-11-27T11:58:00Z"))),
            Some(now() + chrono::Duration::seconds(180))
        );
    }

    fn spec() -> ManifestWorkSpec {
        let mut s = ManifestWorkSpec::default();
        s.workload.manifests = vec![
            Manifest(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "agent", "namespace": "ns"}})),
            Manifest(json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "node", "namespace": "ns"}})),
            Manifest(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "ns"}})),
        ];
        s
    }

    fn reported(values: &[(&str, &str, i64)]) -> ManifestResourceStatus {
        let mut status = ManifestResourceStatus::default();
        for (kind, field, value) in values {
            let name = if *kind == "Deployment" {
                "agent"
            } else {
                "node"
            };
            let entry = match status
                .manifests
                .iter_mut()
                .position(|m| m.resource_meta.kind == *kind)
            {
                Some(i) => &mut status.manifests[i],
                None => {
                    status.manifests.push(ManifestCondition {
                        resource_meta: ResourceMeta {
                            kind: (*kind).into(),
                            name: name.into(),
                            namespace: "ns".into(),
                            ..ResourceMeta::default()
                        },
                        ..ManifestCondition::default()
                    });
                    status.manifests.last_mut().unwrap()
                }
            };
            entry.status_feedback.values.push(FeedbackValue {
                name: (*field).into(),
                field_value: FieldValue::integer(*value),
            });
        }
        status
    }

    #[test]
    fn the_probed_workloads_report_their_well_known_status() {
        let mut s = spec();
        ask_feedback(&mut s, Mode::WorkloadAvailability, "a", "ns");
        let asked: Vec<&str> = s
            .manifest_configs
            .iter()
            .map(|c| c.resource_identifier.resource.as_str())
            .collect();
        assert_eq!(asked, ["deployments", "daemonsets"]);
        ask_feedback(&mut s, Mode::WorkloadAvailability, "a", "ns");
        assert_eq!(s.manifest_configs.len(), 2, "asked once");
        let mut d = spec();
        ask_feedback(&mut d, Mode::DeploymentAvailability, "a", "ns");
        assert_eq!(d.manifest_configs.len(), 1);
    }

    #[test]
    fn every_workload_must_be_available() {
        let s = spec();
        let status = |v: &[(&str, &str, i64)]| {
            probe(Mode::WorkloadAvailability, &s, Some(&reported(v)), now()).unwrap()
        };
        assert_eq!(status(&[]).1, "NoProbeResult");
        let partly = status(&[
            ("Deployment", "AvailableReplicas", 1),
            ("DaemonSet", "NumberAvailable", 1),
            ("DaemonSet", "DesiredNumberScheduled", 2),
        ]);
        assert_eq!(
            (partly.0, partly.1),
            (ConditionStatus::False, "ProbeUnavailable")
        );
        assert!(partly.2.contains("DaemonSet ns/node"), "{}", partly.2);
        let all = status(&[
            ("Deployment", "AvailableReplicas", 1),
            ("DaemonSet", "NumberAvailable", 2),
            ("DaemonSet", "DesiredNumberScheduled", 2),
        ]);
        assert_eq!((all.0, all.1), (ConditionStatus::True, "ProbeAvailable"));
        // Only Deployments count in DeploymentAvailability.
        let deployments = probe(
            Mode::DeploymentAvailability,
            &s,
            Some(&reported(&[("Deployment", "AvailableReplicas", 1)])),
            now(),
        )
        .unwrap();
        assert_eq!(deployments.0, ConditionStatus::True);
        assert!(probe(Mode::Work, &s, None, now()).is_none());
        assert_eq!(
            probe(Mode::None, &s, None, now()).unwrap().0,
            ConditionStatus::True
        );
        assert_eq!(Mode::parse(Some("Lease?")), None);
    }
}
