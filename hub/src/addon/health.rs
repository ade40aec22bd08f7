//! How an add-on's health is told (OCM's health probers), from its work's status. Pure.
//!
//! The mode is the add-on's annotation [`HEALTH_CHECK_ANNOTATION`]:
//! - `WorkloadAvailability` (the default, as OCM's template add-ons): every Deployment and
//!   DaemonSet of the agent is available (the hub asks the work for their WellKnownStatus);
//! - `DeploymentAvailability`: every Deployment;
//! - `Work`: the work's own `Available` condition;
//! - `None`: no health check (always available).
//!
//! An agent with no workload is judged by its work.

use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::work::{
    FeedbackRule, FeedbackType, ManifestConfigOption, ManifestResourceStatus, ManifestWorkSpec,
    ResourceIdentifier, plural,
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
}

impl Mode {
    /// The mode an annotation value names (`None` for a value that is none of them).
    pub fn parse(value: Option<&str>) -> Option<Mode> {
        Some(match value {
            None | Some("WorkloadAvailability") => Mode::WorkloadAvailability,
            Some("DeploymentAvailability") => Mode::DeploymentAvailability,
            Some("Work") => Mode::Work,
            Some("None") => Mode::None,
            Some(_) => return None,
        })
    }

    /// OCM's `status.healthCheck.mode` for it (the probes are `Customized`).
    pub fn ocm_mode(self) -> &'static str {
        "Customized"
    }

    fn probes(self, kind: &str) -> bool {
        match self {
            Mode::WorkloadAvailability => kind == "Deployment" || kind == "DaemonSet",
            Mode::DeploymentAvailability => kind == "Deployment",
            Mode::Work | Mode::None => false,
        }
    }
}

/// The values [`HEALTH_CHECK_ANNOTATION`] takes.
pub const MODES: &str = "WorkloadAvailability, DeploymentAvailability, Work or None";

/// Asks the work for the WellKnownStatus of each workload `mode` probes (unless the template
/// already asks for it).
pub fn ask_feedback(spec: &mut ManifestWorkSpec, mode: Mode) {
    ask_well_known(spec, |kind| mode.probes(kind));
}

/// Asks the work for the WellKnownStatus of each manifest whose kind `wanted` takes.
pub fn ask_well_known(spec: &mut ManifestWorkSpec, wanted: impl Fn(&str) -> bool) {
    let probed: Vec<ResourceIdentifier> = spec
        .workload
        .manifests
        .iter()
        .filter(|m| m.kind().is_some_and(&wanted))
        .map(|m| ResourceIdentifier {
            group: m
                .api_version()
                .and_then(|v| v.split_once('/').map(|(g, _)| g.to_owned()))
                .unwrap_or_default(),
            resource: plural(m.kind().unwrap_or_default()),
            name: m.name().unwrap_or_default().to_owned(),
            namespace: m.namespace().unwrap_or_default().to_owned(),
        })
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
) -> Option<(ConditionStatus, &'static str, String)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::work::{
        FeedbackValue, FieldValue, Manifest, ManifestCondition, ResourceMeta,
    };
    use serde_json::json;

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
        ask_feedback(&mut s, Mode::WorkloadAvailability);
        let asked: Vec<&str> = s
            .manifest_configs
            .iter()
            .map(|c| c.resource_identifier.resource.as_str())
            .collect();
        assert_eq!(asked, ["deployments", "daemonsets"]);
        ask_feedback(&mut s, Mode::WorkloadAvailability);
        assert_eq!(s.manifest_configs.len(), 2, "asked once");
        let mut d = spec();
        ask_feedback(&mut d, Mode::DeploymentAvailability);
        assert_eq!(d.manifest_configs.len(), 1);
    }

    #[test]
    fn every_workload_must_be_available() {
        let s = spec();
        let status = |v: &[(&str, &str, i64)]| {
            probe(Mode::WorkloadAvailability, &s, Some(&reported(v))).unwrap()
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
        )
        .unwrap();
        assert_eq!(deployments.0, ConditionStatus::True);
        assert!(probe(Mode::Work, &s, None).is_none());
        assert_eq!(
            probe(Mode::None, &s, None).unwrap().0,
            ConditionStatus::True
        );
        assert_eq!(Mode::parse(Some("Lease?")), None);
    }
}
