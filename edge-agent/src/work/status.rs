//! Work and manifest status from what the applier observed. Pure: `now` is an argument, and the
//! previous status is passed in so lastTransitionTime only moves when a status changes.
//!
//! Per manifest: Applied, Available, StatusFeedbackSynced (when feedback is asked for), and
//! the conditions of its condition rules ([`conditions`]).
//! Per work: Applied, Available, Progressing, Degraded, all with observedGeneration.

use ocm_edge_schemas::api::meta::{
    Condition, ConditionStatus, Time, remove_condition, set_condition,
};
use ocm_edge_schemas::api::work::{
    FeedbackType, FeedbackValue, FieldValue, MANIFEST_STATUS_FEEDBACK_SYNCED, ManifestBundle,
    ManifestCondition, ManifestResourceStatus, ManifestWorkStatus, REASON_MANIFESTS_DELETED,
    REASON_WORK_DELETING, ResourceMeta, StatusFeedbackResult, WORK_APPLIED, WORK_AVAILABLE,
    WORK_COMPLETE, WORK_DEGRADED, WORK_DELETED, WORK_DELETING, WORK_PROGRESSING,
};
use ocm_edge_schemas::jsonpath::{KubeJsonPath, PathUse};
use serde_json::Value;

use super::conditions;
use super::resource::ResourceRef;

/// Largest jsonRaw value OCM accepts.
pub const MAX_JSON_RAW_BYTES: usize = 1024;

/// What happened to one manifest in this reconcile.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestOutcome {
    pub ordinal: usize,
    /// `None` when the manifest could not even be read.
    pub resource: Option<ResourceRef>,
    /// The object as observed on the cluster after applying, or why applying failed.
    pub result: Result<Value, ManifestFailure>,
}

/// Why a manifest was not applied: OCM's reason for its `Applied` condition, and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFailure {
    pub reason: &'static str,
    pub message: String,
}

impl ManifestFailure {
    /// `AppliedManifestFailed` with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        ManifestFailure {
            reason: "AppliedManifestFailed",
            message: message.into(),
        }
    }
}

/// Inputs of [`work_status`] that are not per manifest.
#[derive(Debug, Clone, Copy)]
pub struct StatusContext<'a> {
    pub generation: i64,
    pub previous: Option<&'a ManifestWorkStatus>,
    pub simulated: bool,
    pub now: Time,
}

/// The status of a work after a reconcile.
pub fn work_status(
    bundle: &ManifestBundle,
    outcomes: &[ManifestOutcome],
    ctx: StatusContext<'_>,
) -> ManifestWorkStatus {
    let mut manifests = Vec::with_capacity(outcomes.len());
    let mut sorted: Vec<&ManifestOutcome> = outcomes.iter().collect();
    sorted.sort_by_key(|o| o.ordinal);
    // Every applied manifest is reported Available, so the applied count is the available one.
    let mut applied_count = 0usize;
    let mut progressing = false;
    // Manifests with a Complete rule, and how many of them are complete.
    let (mut completable, mut completed) = (0usize, 0usize);
    let sim_note = if ctx.simulated {
        " (simulated cluster)"
    } else {
        ""
    };
    for outcome in &sorted {
        let meta = match &outcome.resource {
            Some(r) => r.resource_meta(outcome.ordinal),
            None => ResourceMeta {
                ordinal: i32::try_from(outcome.ordinal).unwrap_or(i32::MAX),
                ..ResourceMeta::default()
            },
        };
        let mut conditions = ctx
            .previous
            .and_then(|p| {
                p.resource_status
                    .manifests
                    .iter()
                    .find(|m| m.resource_meta == meta)
            })
            .map(|m| m.conditions.clone())
            .unwrap_or_default();
        let mut feedback = StatusFeedbackResult::default();
        match &outcome.result {
            Ok(observed) => {
                applied_count += 1;
                set_condition(
                    &mut conditions,
                    cond(
                        WORK_APPLIED,
                        true,
                        "AppliedManifestComplete",
                        "Apply manifest complete",
                    ),
                    ctx.now,
                );
                set_condition(
                    &mut conditions,
                    cond(
                        WORK_AVAILABLE,
                        true,
                        "ResourceAvailable",
                        &format!("Resource is available{sim_note}"),
                    ),
                    ctx.now,
                );
                if let Some(r) = &outcome.resource {
                    if workload_ready(&r.kind, observed) == Some(false) {
                        progressing = true;
                    }
                    // As OCM: a rule's condition carries the work's generation, and one a
                    // rule of an earlier generation set (a rule since removed) goes.
                    conditions.retain(|c| {
                        !c.reason.starts_with(conditions::REASON_PREFIX)
                            || c.observed_generation == ctx.generation
                    });
                    for c in conditions::condition_rules(bundle, r, observed) {
                        if c.type_ == WORK_COMPLETE {
                            completable += 1;
                            completed += usize::from(c.status == ConditionStatus::True);
                        }
                        set_condition(
                            &mut conditions,
                            c.with_observed_generation(ctx.generation),
                            ctx.now,
                        );
                    }
                    let wanted = feedback_wanted(bundle, r);
                    if wanted {
                        let (values, missing) = feedback_values(bundle, r, observed);
                        feedback.values = values;
                        let synced = if missing.is_empty() {
                            cond(
                                MANIFEST_STATUS_FEEDBACK_SYNCED,
                                true,
                                "StatusFeedbackSynced",
                                "",
                            )
                        } else {
                            cond(
                                MANIFEST_STATUS_FEEDBACK_SYNCED,
                                false,
                                "StatusFeedbackSyncFailed",
                                &missing.join("; "),
                            )
                        };
                        set_condition(&mut conditions, synced, ctx.now);
                    }
                }
            }
            Err(failure) => {
                set_condition(
                    &mut conditions,
                    cond(WORK_APPLIED, false, failure.reason, &failure.message),
                    ctx.now,
                );
                set_condition(
                    &mut conditions,
                    Condition::new(
                        WORK_AVAILABLE,
                        ConditionStatus::Unknown,
                        "ResourceNotAvailable",
                        "Resource was not applied",
                    ),
                    ctx.now,
                );
            }
        }
        manifests.push(ManifestCondition {
            resource_meta: meta,
            status_feedback: feedback,
            conditions,
        });
    }

    let total = sorted.len();
    let mut conditions = ctx
        .previous
        .map(|p| p.conditions.clone())
        .unwrap_or_default();
    remove_condition(&mut conditions, WORK_DELETED);
    let generation = ctx.generation;
    let all_applied = applied_count == total;
    let applied = if all_applied {
        cond(
            WORK_APPLIED,
            true,
            "AppliedManifestWorkComplete",
            "Apply manifest work complete",
        )
    } else {
        cond(
            WORK_APPLIED,
            false,
            "AppliedManifestWorkFailed",
            &format!(
                "Failed to apply manifest work: {} of {total} manifests not applied",
                total - applied_count
            ),
        )
    };
    let available = if all_applied {
        cond(
            WORK_AVAILABLE,
            true,
            "ResourcesAvailable",
            &format!("All resources are available{sim_note}"),
        )
    } else {
        cond(
            WORK_AVAILABLE,
            false,
            "ResourcesNotAvailable",
            &format!(
                "{} of {total} resources are not available",
                total - applied_count
            ),
        )
    };
    let progressing_cond = if progressing {
        cond(
            WORK_PROGRESSING,
            true,
            "WorkloadsProgressing",
            "Some workloads are not ready yet",
        )
    } else {
        cond(
            WORK_PROGRESSING,
            false,
            "AllWorkloadsReady",
            "All workloads are ready",
        )
    };
    let degraded = if all_applied {
        cond(WORK_DEGRADED, false, "AsExpected", "")
    } else {
        cond(
            WORK_DEGRADED,
            true,
            "ApplyFailed",
            "Some manifests could not be applied",
        )
    };
    for c in [applied, available, progressing_cond, degraded] {
        set_condition(
            &mut conditions,
            c.with_observed_generation(generation),
            ctx.now,
        );
    }
    // As OCM: the work is Complete once every manifest with a completion rule is complete.
    if completable > 0 && completed == completable {
        set_condition(
            &mut conditions,
            cond(
                WORK_COMPLETE,
                true,
                "ConditionRulesAggregated",
                "All completable manifests are complete",
            )
            .with_observed_generation(generation),
            ctx.now,
        );
    } else {
        remove_condition(&mut conditions, WORK_COMPLETE);
    }
    ManifestWorkStatus {
        conditions,
        resource_status: ManifestResourceStatus { manifests },
    }
}

/// The status of a deleted bundle whose objects are not all gone yet: the previous one plus
/// OCM's `Deleting` ("ManifestWork is being deleted"), with the objects still there.
pub fn deleting_status(
    previous: Option<&ManifestWorkStatus>,
    remaining: &[String],
    generation: i64,
    now: Time,
) -> ManifestWorkStatus {
    let mut status = previous.cloned().unwrap_or_default();
    let mut message = String::from("ManifestWork is being deleted");
    if !remaining.is_empty() {
        const SHOWN: usize = 5;
        message.push_str(": waiting for ");
        message.push_str(&remaining[..remaining.len().min(SHOWN)].join(", "));
        if remaining.len() > SHOWN {
            message.push_str(&format!(" and {} more", remaining.len() - SHOWN));
        }
    }
    set_condition(
        &mut status.conditions,
        Condition::new(
            WORK_DELETING,
            ConditionStatus::True,
            REASON_WORK_DELETING,
            message,
        )
        .with_observed_generation(generation),
        now,
    );
    status
}

/// The last status of a deleted bundle: the previous one plus `Deleted`.
pub fn deleted_status(
    previous: Option<&ManifestWorkStatus>,
    generation: i64,
    now: Time,
) -> ManifestWorkStatus {
    let mut status = previous.cloned().unwrap_or_default();
    remove_condition(&mut status.conditions, WORK_DELETING);
    set_condition(
        &mut status.conditions,
        Condition::new(
            WORK_DELETED,
            ConditionStatus::True,
            REASON_MANIFESTS_DELETED,
            "",
        )
        .with_observed_generation(generation),
        now,
    );
    status
}

fn cond(type_: &str, ok: bool, reason: &str, message: &str) -> Condition {
    Condition::new(type_, ConditionStatus::from_bool(ok), reason, message)
}

/// Whether a workload is ready: `Some` for Deployments, DaemonSets, Jobs and Pods, `None` otherwise.
pub fn workload_ready(kind: &str, obj: &Value) -> Option<bool> {
    let int = |p: &str| obj.pointer(p).and_then(Value::as_i64);
    match kind {
        "Deployment" => {
            let want = int("/spec/replicas").unwrap_or(1);
            Some(int("/status/readyReplicas").unwrap_or(0) >= want)
        }
        "DaemonSet" => {
            let desired = int("/status/desiredNumberScheduled");
            Some(desired.is_some_and(|d| int("/status/numberReady").unwrap_or(0) >= d))
        }
        "Job" => Some(condition_status(obj, "Complete") == Some("True")),
        "Pod" => Some(condition_status(obj, "Ready") == Some("True")),
        _ => None,
    }
}

fn condition_status<'a>(obj: &'a Value, type_: &str) -> Option<&'a str> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))?
        .get("status")?
        .as_str()
}

fn feedback_wanted(bundle: &ManifestBundle, r: &ResourceRef) -> bool {
    bundle
        .manifest_configs
        .iter()
        .any(|c| r.matches(&c.resource_identifier) && !c.feedback_rules.is_empty())
}

/// Feedback values for `r` from its manifestConfigs, and what kept a path from giving one: no
/// value there, a path that does not read, or a `version` other than the manifest's (OCM's
/// "version set in the path ... is not matched").
pub fn feedback_values(
    bundle: &ManifestBundle,
    r: &ResourceRef,
    obj: &Value,
) -> (Vec<FeedbackValue>, Vec<String>) {
    let mut values = Vec::new();
    let mut problems = Vec::new();
    for config in bundle
        .manifest_configs
        .iter()
        .filter(|c| r.matches(&c.resource_identifier))
    {
        for rule in &config.feedback_rules {
            match rule.type_ {
                FeedbackType::WellKnownStatus => values.extend(well_known_status(&r.kind, obj)),
                FeedbackType::JsonPaths => {
                    for path in &rule.json_paths {
                        if !path.version.is_empty() && path.version != r.version {
                            problems.push(format!(
                                "version {} set in the path {} is not the resource's version {}",
                                path.version, path.name, r.version
                            ));
                            continue;
                        }
                        match json_path_value(obj, &path.path) {
                            Ok(Some(v)) => values.push(FeedbackValue {
                                name: path.name.clone(),
                                field_value: v,
                            }),
                            Ok(None) => problems.push(format!("no value at {}", path.path)),
                            Err(e) => problems.push(e),
                        }
                    }
                }
            }
        }
    }
    (values, problems)
}

/// OCM's WellKnownStatus values of `kind`; values absent from the object are skipped, as OCM does.
pub fn well_known_status(kind: &str, obj: &Value) -> Vec<FeedbackValue> {
    let int = |name: &str, path: &str| {
        obj.pointer(path)
            .and_then(Value::as_i64)
            .map(|i| FeedbackValue {
                name: name.to_owned(),
                field_value: FieldValue::integer(i),
            })
    };
    let string = |name: &str, value: Option<&str>| {
        value.map(|s| FeedbackValue {
            name: name.to_owned(),
            field_value: FieldValue::string(s),
        })
    };
    let found = match kind {
        "Deployment" => vec![
            int("ReadyReplicas", "/status/readyReplicas"),
            int("Replicas", "/status/replicas"),
            int("AvailableReplicas", "/status/availableReplicas"),
        ],
        "DaemonSet" => vec![
            int("NumberReady", "/status/numberReady"),
            int("DesiredNumberScheduled", "/status/desiredNumberScheduled"),
            int("NumberAvailable", "/status/numberAvailable"),
        ],
        "Job" => vec![
            string("JobComplete", condition_status(obj, "Complete")),
            int("JobSucceeded", "/status/succeeded"),
        ],
        "Pod" => vec![
            string("PodReady", condition_status(obj, "Ready")),
            string(
                "PodPhase",
                obj.pointer("/status/phase").and_then(Value::as_str),
            ),
        ],
        _ => vec![],
    };
    found.into_iter().flatten().collect()
}

/// The feedback value at a Kubernetes JSONPath (`.status.readyReplicas`,
/// `.status.conditions[?(@.type=="Available")].status`): one value as itself, several as a
/// list in jsonRaw (as OCM's `RawFeedbackJsonString`), none as `None`.
///
/// # Errors
/// The path does not read, or its value is JSON longer than OCM's 1 KiB for jsonRaw (the
/// message says which).
pub fn json_path_value(obj: &Value, path: &str) -> Result<Option<FieldValue>, String> {
    let found = KubeJsonPath::parse(path, PathUse::Feedback)
        .map_err(|e| e.to_string())?
        .query(obj);
    let too_large = || {
        format!(
            "the value at {path} is over the {MAX_JSON_RAW_BYTES} bytes of JSON a jsonRaw \
             feedback value may have"
        )
    };
    match found.as_slice() {
        [] => Ok(None),
        [one] => field_value(one).ok_or_else(too_large),
        many => {
            // Written one match at a time, so a path matching much stops at the limit.
            let mut raw = String::from("[");
            for (i, v) in many.iter().enumerate() {
                if i > 0 {
                    raw.push(',');
                }
                raw.push_str(&v.to_string());
                if raw.len() >= MAX_JSON_RAW_BYTES {
                    return Err(too_large());
                }
            }
            raw.push(']');
            Ok(Some(FieldValue::json_raw(raw)))
        }
    }
}

/// A JSON value as a feedback value: integers, strings and booleans as themselves, objects and
/// lists as jsonRaw, null as nothing (`Some(None)`); `None` when jsonRaw would be over 1 KiB.
pub fn field_value(v: &Value) -> Option<Option<FieldValue>> {
    Some(match v {
        Value::Null => None,
        Value::Bool(b) => Some(FieldValue::boolean(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(FieldValue::integer)
            .or_else(|| Some(FieldValue::string(n.to_string()))),
        Value::String(s) => Some(FieldValue::string(s.clone())),
        Value::Array(_) | Value::Object(_) => {
            let raw = v.to_string();
            if raw.len() > MAX_JSON_RAW_BYTES {
                return None;
            }
            Some(FieldValue::json_raw(raw))
        }
    })
}
