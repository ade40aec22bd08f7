//! Works: create, update, delete, and the statuses agents report.
//!
//! A work is (cluster, name); its `resourceid` is a UUID v5 of `<source>/<cluster>/<work>` so it is
//! stable across hub restarts and reinstalls. `resourceversion` starts at 1 and moves only when the
//! spec changes. Deletion is a handshake (docs/reference/protocol.md section 8): the hub marks the
//! work deleting, sends the delete, and forgets the work only when the agent reports the `Deleted`
//! condition.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::WriteOutcome;
use ocm_edge_schemas::api::meta::{ObjectMeta, is_condition_true};
use ocm_edge_schemas::api::work::{
    ManifestBundle, ManifestWorkSpec, ManifestWorkStatus, WORK_DELETED,
};
use ocm_edge_schemas::validate;
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::resync::ResourceVersion;
use ocm_edge_schemas::wire::sequence::is_newer;
use ocm_edge_schemas::wire::works::{EMPTY_LOG_TRACING, Header, SpecEvent, StatusEvent};
use uuid::Uuid;

use crate::core::{
    Change, ClusterState, HubCore, Outbound, Record, WorkKey, WorkRecord, counter, time,
};

/// Name (DNS) of the UUID v5 namespace of work resource ids.
pub const RESOURCE_ID_NAMESPACE_NAME: &str = "ocm-edge.open-cluster-management.io";

/// The `resourceid` of work `work` on `cluster` from source `source`.
pub fn resource_id(source: &str, cluster: &str, work: &str) -> String {
    let namespace = Uuid::new_v5(&Uuid::NAMESPACE_DNS, RESOURCE_ID_NAMESPACE_NAME.as_bytes());
    Uuid::new_v5(&namespace, format!("{source}/{cluster}/{work}").as_bytes()).to_string()
}

/// Errors of work commands. None is retryable as is; each says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkError {
    #[error("cluster {0:?} is not known to the hub (see `ocm-edge cluster list`)")]
    UnknownCluster(String),
    #[error(
        "cluster {0:?} is not accepted (pending or denied): accept it first with `ocm-edge cluster accept {0}`"
    )]
    NotAccepted(String),
    #[error("work {0} already exists: use --overwrite to replace its spec")]
    AlreadyExists(WorkKey),
    #[error("work {0} does not exist")]
    NotFound(WorkKey),
    #[error(
        "work {0} is being deleted: wait until its agent confirms the deletion, then create it again"
    )]
    BeingDeleted(WorkKey),
    #[error("invalid work: {0}")]
    Invalid(String),
    #[error(
        "cluster {0:?} is being removed (`ocm-edge cluster remove`): it takes no new work; \
         `ocm-edge cluster get {0}` shows how many works its agent has still to remove"
    )]
    BeingRemoved(String),
}

/// The desired state of a work, as an operator gives it.
// Not a ManifestWork: it has no namespace, as one input is written to several clusters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkInput {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub spec: Arc<ManifestWorkSpec>,
}

/// Work annotations the agent acts on: a change to one is sent like a spec change.
const AGENT_ANNOTATIONS: [&str; 1] =
    [ocm_edge_schemas::wire::addon_identity::REGISTRATION_ANNOTATION];

impl HubCore {
    /// Creates or updates `input` on every cluster in `clusters`, all or nothing.
    ///
    /// # Errors
    /// [`WorkError`] when a cluster is unknown or not accepted, the work is invalid, or it exists
    /// and `overwrite` is false (or it is being deleted). Nothing changes then.
    pub fn write_works(
        &self,
        input: &WorkInput,
        clusters: &[String],
        overwrite: bool,
        now: DateTime<Utc>,
    ) -> Result<(Change, Vec<(WorkKey, WriteOutcome)>), WorkError> {
        validate_work(input, clusters)?;
        for cluster in clusters {
            match self.cluster(cluster) {
                None => return Err(WorkError::UnknownCluster(cluster.clone())),
                Some(c) if c.acceptance != ClusterState::Accepted => {
                    return Err(WorkError::NotAccepted(cluster.clone()));
                }
                Some(c) if c.removing.is_some() => {
                    return Err(WorkError::BeingRemoved(cluster.clone()));
                }
                Some(_) => {}
            }
            let key = WorkKey::new(cluster.clone(), input.name.clone());
            if let Some(existing) = self.work(&key) {
                if existing.deleting.is_some() {
                    return Err(WorkError::BeingDeleted(key));
                }
                if !overwrite {
                    return Err(WorkError::AlreadyExists(key));
                }
            }
        }
        let mut change = Change::default();
        let mut outcomes = Vec::with_capacity(clusters.len());
        for cluster in clusters {
            let key = WorkKey::new(cluster.clone(), input.name.clone());
            let (record, outcome) = match self.work(&key) {
                None => (
                    WorkRecord {
                        resource_id: resource_id(&self.config().source_id, cluster, &input.name),
                        key: key.clone(),
                        resource_version: 1,
                        spec: input.spec.clone(),
                        labels: input.labels.clone(),
                        annotations: input.annotations.clone(),
                        created: time(now),
                        deleting: None,
                        status: None,
                        status_version: None,
                        status_hash: None,
                        last_sequence_id: None,
                        status_updated: None,
                    },
                    WriteOutcome::Created,
                ),
                Some(existing) => {
                    // Compared once: a spec is a tree of JSON values, and a write may go to
                    // 10,000 clusters.
                    let same_spec = existing.spec == input.spec;
                    if same_spec
                        && existing.labels == input.labels
                        && existing.annotations == input.annotations
                    {
                        // Nothing to store or send: a repeated write (the admin client resends
                        // a request it has no answer to yet) costs a comparison per cluster.
                        outcomes.push((key, WriteOutcome::Unchanged));
                        continue;
                    }
                    let mut record = existing.clone();
                    record.labels = input.labels.clone();
                    // An annotation the agent acts on goes to it like a spec change (the rest
                    // is the hub's bookkeeping, as in OCM: no new generation for it).
                    let agent_acts_on = AGENT_ANNOTATIONS
                        .iter()
                        .any(|a| existing.annotations.get(*a) != input.annotations.get(*a));
                    record.annotations = input.annotations.clone();
                    if same_spec && !agent_acts_on {
                        (record, WriteOutcome::Unchanged)
                    } else {
                        record.spec = input.spec.clone();
                        record.resource_version += 1;
                        (record, WriteOutcome::Updated)
                    }
                }
            };
            if outcome != WriteOutcome::Unchanged {
                change.outbound.push(Outbound::Spec(Box::new(
                    self.spec_event(&record, None, now),
                )));
            }
            change.records.push(Record::Work(Box::new(record)));
            outcomes.push((key, outcome));
        }
        Ok((change, outcomes))
    }

    /// Starts deleting a work (idempotent while deleting: the delete is sent again).
    ///
    /// A work of a cluster that is not accepted is forgotten at once: no agent will confirm, and
    /// if that cluster's agent still holds it, its next spec resync gets a bare delete.
    ///
    /// # Errors
    /// [`WorkError::NotFound`] when the hub has no such work.
    pub fn delete_work(&self, key: &WorkKey, now: DateTime<Utc>) -> Result<Change, WorkError> {
        let work = self
            .work(key)
            .ok_or_else(|| WorkError::NotFound(key.clone()))?;
        if !self.is_accepted(&key.cluster) {
            return Ok(Change {
                records: vec![Record::ForgetWork(key.clone())],
                outbound: vec![],
            });
        }
        let mut record = work.clone();
        if record.deleting.is_none() {
            record.deleting = Some(time(now));
        }
        Ok(Change {
            outbound: vec![Outbound::Spec(Box::new(
                self.spec_event(&record, None, now),
            ))],
            records: vec![Record::Work(Box::new(record))],
        })
    }

    /// A status event from an accepted cluster. Accepted only when it is for the current
    /// resourceversion, its hash changed, and its sequenceid is newer; a `Deleted` status for a
    /// work being deleted completes the deletion handshake. `hash` is the status hash of
    /// `report.status` ([`AgentInput::WorkStatus`](super::AgentInput::WorkStatus)).
    pub(crate) fn work_status(
        &self,
        report: StatusEvent,
        hash: String,
        now: DateTime<Utc>,
    ) -> Change {
        // Maestro refuses these too. An empty originalsource (some agents leave it out) passes.
        if !report.original_source.is_empty() && report.original_source != self.config().source_id {
            tracing::warn!(
                cluster = %report.cluster,
                resource_id = %report.resource_id,
                original_source = %report.original_source,
                "status for another source's work; ignored"
            );
            return self.count(counter::FOREIGN_SOURCE);
        }
        let Some(work) = self.work_by_resource_id(&report.resource_id) else {
            return self.count(counter::UNKNOWN_WORK);
        };
        if work.key.cluster != report.cluster {
            tracing::warn!(
                cluster = %report.cluster,
                resource_id = %report.resource_id,
                owner = %work.key.cluster,
                "status for another cluster's work; ignored"
            );
            return self.count(counter::UNKNOWN_WORK);
        }
        // The hub keeps the API shape; the payload's optional `manifestBundle` has no place in it.
        let status = ManifestWorkStatus::from(report.status);
        // An agent that sends no sequenceid (empty) is not checked for order.
        let sequence_id = Some(report.sequence_id).filter(|s| !s.is_empty());
        if is_condition_true(&status.conditions, WORK_DELETED) {
            if work.deleting.is_some() {
                // The last work of a cluster being removed: the cluster goes with it.
                if let Some(forget) = self.removal_done_after_last_work(&work.key.cluster, now) {
                    return forget;
                }
                return Change {
                    records: vec![Record::ForgetWork(work.key.clone())],
                    outbound: vec![],
                };
            }
            // The agent removed a work the hub still wants (e.g. a bare delete raced a
            // re-create): its next spec resync brings the work back.
            return self.count(counter::STALE_STATUS);
        }
        if report.resource_version != work.resource_version {
            return self.count(counter::STALE_STATUS);
        }
        if work.status_hash.as_deref() == Some(hash.as_str())
            && work.status_version == Some(report.resource_version)
        {
            return self.count(counter::UNCHANGED_STATUS);
        }
        if let (Some(new), Some(old)) = (&sequence_id, &work.last_sequence_id)
            && !is_newer(new, old)
        {
            return self.count(counter::STALE_STATUS);
        }
        let mut record = work.clone();
        record.status = Some(status);
        record.status_version = Some(report.resource_version);
        record.status_hash = Some(hash);
        if sequence_id.is_some() {
            record.last_sequence_id = sequence_id;
        }
        record.status_updated = Some(time(now));
        let mut change = self.count(counter::STATUS_ACCEPTED);
        change.records.push(Record::Work(Box::new(record)));
        change
    }

    /// The spec event for `work` as it is now: a delete when it is being deleted, otherwise a
    /// create (version 1) or update. `action` overrides the action (resync responses). `now` is
    /// the event's `time`.
    pub fn spec_event(
        &self,
        work: &WorkRecord,
        action: Option<Action>,
        now: DateTime<Utc>,
    ) -> SpecEvent {
        let deleting = work.deleting.map(|t| t.as_datetime());
        let default_action = match (deleting, work.resource_version) {
            (Some(_), _) => Action::DeleteRequest,
            (None, 1) => Action::CreateRequest,
            (None, _) => Action::UpdateRequest,
        };
        SpecEvent {
            header: Header::new(&self.config().source_id, self.spec_time(now)),
            action: action.unwrap_or(default_action),
            cluster: work.key.cluster.clone(),
            resource_id: work.resource_id.clone(),
            resource_version: work.resource_version,
            metadata: Some(ObjectMeta {
                name: work.key.name.clone(),
                namespace: work.key.cluster.clone(),
                uid: work.resource_id.clone(),
                generation: work.resource_version,
                creation_timestamp: Some(work.created),
                labels: work.labels.clone(),
                annotations: work.annotations.clone(),
                ..ObjectMeta::default()
            }),
            deletion_timestamp: deleting,
            bundle: match deleting {
                Some(_) => None,
                None => Some(ManifestBundle::from(work.spec.as_ref())),
            },
            log_tracing: Some(EMPTY_LOG_TRACING.to_owned()),
        }
    }

    /// A bare delete (no metadata, no bundle) for a bundle `cluster`'s agent holds and the hub
    /// no longer has.
    pub fn bare_delete(
        &self,
        cluster: &str,
        held: &ResourceVersion,
        now: DateTime<Utc>,
    ) -> SpecEvent {
        SpecEvent {
            header: Header::new(&self.config().source_id, self.spec_time(now)),
            action: Action::ResyncResponse,
            cluster: cluster.to_owned(),
            resource_id: held.resource_id.clone(),
            resource_version: held.resource_version,
            metadata: None,
            deletion_timestamp: Some(now),
            bundle: None,
            log_tracing: Some(EMPTY_LOG_TRACING.to_owned()),
        }
    }
}

/// Checks a work before anything is stored: the name and manifests with
/// `ocm_edge_schemas::validate` (500 KiB, metadata.name, no generateName, DNS names, condition
/// rules whose CEL compiles), and the
/// target list here.
fn validate_work(input: &WorkInput, clusters: &[String]) -> Result<(), WorkError> {
    let invalid = |e: validate::ValidationError| WorkError::Invalid(e.to_string());
    validate::validate_work_name(&input.name).map_err(invalid)?;
    if clusters.is_empty() {
        return Err(WorkError::Invalid(
            "no cluster given: name at least one".into(),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in clusters {
        if !seen.insert(c) {
            return Err(WorkError::Invalid(format!("cluster {c:?} is listed twice")));
        }
    }
    validate::validate_manifests(&input.spec.workload.manifests)
        .and_then(|()| validate::validate_manifest_configs(&input.spec.manifest_configs))
        .map_err(|e| WorkError::Invalid(format!("work {:?}: {e}", input.name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use ocm_edge_schemas::api::meta::{Condition, ConditionStatus};
    use ocm_edge_schemas::api::work::ManifestWorkStatus;
    use ocm_edge_schemas::wire::status_hash::status_hash;

    #[test]
    fn resource_ids_are_stable_uuid_v5_per_source_cluster_and_work() {
        let a = resource_id("ocm-edge", "edge-1", "web");
        assert_eq!(a, resource_id("ocm-edge", "edge-1", "web"));
        assert_ne!(a, resource_id("ocm-edge", "edge-2", "web"));
        assert_ne!(a, resource_id("maestro", "edge-1", "web"));
        assert_eq!(Uuid::parse_str(&a).unwrap().get_version_num(), 5);
    }

    #[test]
    fn creating_a_work_stores_version_1_and_sends_a_create_to_each_cluster() {
        let mut core = accepted_core(&["a", "b"]);
        let (change, outcomes) = core
            .write_works(&work_input("web", 1), &clusters(&["a", "b"]), false, t(1))
            .unwrap();
        core.apply(&change.records);
        assert_eq!(outcomes.len(), 2);
        assert!(outcomes.iter().all(|(_, o)| *o == WriteOutcome::Created));
        let specs = specs(&change);
        assert_eq!(specs.len(), 2);
        assert!(
            specs
                .iter()
                .all(|s| s.action == Action::CreateRequest && s.resource_version == 1)
        );
        let w = core.work(&WorkKey::new("a", "web")).unwrap();
        assert_eq!(w.resource_id, resource_id("ocm-edge", "a", "web"));
        let meta = specs[0].metadata.as_ref().unwrap();
        assert_eq!((meta.name.as_str(), meta.namespace.as_str()), ("web", "a"));
        assert_eq!(meta.uid, w.resource_id);
    }

    #[test]
    fn overwriting_bumps_the_version_only_when_the_spec_changed() {
        let cases = [
            (1, WriteOutcome::Unchanged, 1, 0),
            (2, WriteOutcome::Updated, 2, 1),
        ];
        for (replicas, outcome, version, sent) in cases {
            let mut core = accepted_core(&["a"]);
            let (c, _) = core
                .write_works(&work_input("web", 1), &clusters(&["a"]), false, t(1))
                .unwrap();
            core.apply(&c.records);
            let (c, outcomes) = core
                .write_works(&work_input("web", replicas), &clusters(&["a"]), true, t(2))
                .unwrap();
            core.apply(&c.records);
            assert_eq!(outcomes[0].1, outcome);
            assert_eq!(
                core.work(&WorkKey::new("a", "web"))
                    .unwrap()
                    .resource_version,
                version
            );
            assert_eq!(specs(&c).len(), sent);
            if sent == 1 {
                assert_eq!(specs(&c)[0].action, Action::UpdateRequest);
            }
        }
    }

    #[test]
    fn a_repeated_write_stores_and_sends_nothing_but_a_label_change_is_stored() {
        let mut core = accepted_core(&["a", "b"]);
        let both = clusters(&["a", "b"]);
        let (c, _) = core
            .write_works(&work_input("web", 1), &both, false, t(1))
            .unwrap();
        core.apply(&c.records);
        let (c, outcomes) = core
            .write_works(&work_input("web", 1), &both, true, t(2))
            .unwrap();
        assert!(c.is_empty(), "{c:?}");
        assert!(outcomes.iter().all(|(_, o)| *o == WriteOutcome::Unchanged));

        let mut labelled = work_input("web", 1);
        labelled.labels.insert("tier".into(), "edge".into());
        let (c, outcomes) = core.write_works(&labelled, &both, true, t(3)).unwrap();
        core.apply(&c.records);
        assert!(outcomes.iter().all(|(_, o)| *o == WriteOutcome::Unchanged));
        assert_eq!(specs(&c).len(), 0, "a label is not sent to the agents");
        let w = core.work(&WorkKey::new("b", "web")).unwrap();
        assert_eq!(
            (w.labels.get("tier").map(String::as_str), w.resource_version),
            (Some("edge"), 1)
        );
    }

    #[test]
    fn bad_writes_are_refused_and_change_nothing() {
        let mut core = accepted_core(&["a"]);
        step(&mut core, join("pending"), 0);
        let (c, _) = core
            .write_works(&work_input("web", 1), &clusters(&["a"]), false, t(1))
            .unwrap();
        core.apply(&c.records);
        let mut no_name = work_input("nameless", 1);
        Arc::make_mut(&mut no_name.spec).workload.manifests[0].0["metadata"] =
            serde_json::json!({"generateName": "x-"});
        let cases: Vec<(WorkInput, Vec<String>, bool, &str)> = vec![
            (
                work_input("web", 2),
                clusters(&["a"]),
                false,
                "already exists",
            ),
            (
                work_input("new", 1),
                clusters(&["a", "ghost"]),
                false,
                "not known",
            ),
            (
                work_input("new", 1),
                clusters(&["pending"]),
                false,
                "not accepted",
            ),
            (
                work_input("Bad_Name", 1),
                clusters(&["a"]),
                false,
                "work name",
            ),
            (no_name, clusters(&["a"]), false, "generateName"),
            (work_input("new", 1), clusters(&["a", "a"]), false, "twice"),
        ];
        for (input, cl, overwrite, message) in cases {
            let err = core.write_works(&input, &cl, overwrite, t(2)).unwrap_err();
            assert!(
                err.to_string().contains(message),
                "{err} should say {message}"
            );
        }
        assert!(core.work(&WorkKey::new("a", "new")).is_none());
        assert_eq!(core.works().count(), 1);
    }

    #[test]
    fn oversize_manifests_are_refused_with_the_limit_in_the_message() {
        let core = accepted_core(&["a"]);
        let mut input = work_input("big", 1);
        Arc::make_mut(&mut input.spec).workload.manifests[0].0["data"] =
            serde_json::json!({"blob": "x".repeat(validate::MAX_MANIFESTS_BYTES)});
        let err = core
            .write_works(&input, &clusters(&["a"]), false, t(1))
            .unwrap_err();
        assert!(err.to_string().contains("500 KiB"), "{err}");
    }

    #[test]
    fn a_condition_rule_whose_cel_does_not_compile_is_refused_with_its_position() {
        let core = accepted_core(&["a"]);
        let mut input = work_input("web", 1);
        Arc::make_mut(&mut input.spec).manifest_configs = serde_json::from_value(serde_json::json!([{
            "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
            "conditionRules": [{"condition": "Ready", "type": "CEL",
                                "celExpressions": ["object.status.readyReplicas >"]}],
        }]))
        .unwrap();
        let err = core
            .write_works(&input, &clusters(&["a"]), false, t(1))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "spec.manifestConfigs[0].conditionRules[0].celExpressions[0]: ERROR: <input>:1:"
            ),
            "{err}"
        );
        assert!(core.work(&WorkKey::new("a", "web")).is_none());
    }

    #[test]
    fn deleting_marks_the_work_and_forgets_it_only_after_the_deleted_status() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let c = core.delete_work(&key, t(5)).unwrap();
        core.apply(&c.records);
        let sent = specs(&c);
        assert_eq!(sent[0].action, Action::DeleteRequest);
        assert_eq!(sent[0].deletion_timestamp, Some(t(5)));
        assert!(sent[0].bundle.is_none());
        assert!(core.work(&key).unwrap().deleting.is_some());

        // An ordinary status does not complete the handshake.
        let id = core.work(&key).unwrap().resource_id.clone();
        step(&mut core, status_input("a", &id, 1, "100", applied()), 6);
        assert!(core.work(&key).is_some());

        let mut deleted = ManifestWorkStatus::default();
        deleted.conditions.push(Condition::new(
            WORK_DELETED,
            ConditionStatus::True,
            "ManifestsDeleted",
            "",
        ));
        step(&mut core, status_input("a", &id, 1, "200", deleted), 7);
        assert!(core.work(&key).is_none());
        assert!(core.work_by_resource_id(&id).is_none());
    }

    #[test]
    fn deleting_a_missing_work_is_an_error() {
        let core = accepted_core(&["a"]);
        assert_eq!(
            core.delete_work(&WorkKey::new("a", "nope"), t(1)),
            Err(WorkError::NotFound(WorkKey::new("a", "nope")))
        );
    }

    #[test]
    fn stale_duplicate_and_foreign_statuses_are_dropped() {
        // (cluster, version, sequenceid, status, stored?, counter)
        let mut other = applied();
        other.conditions[0].message = "changed".into();
        let cases = [
            ("a", 1, "100", applied(), true, counter::STATUS_ACCEPTED),
            ("a", 0, "300", other.clone(), false, counter::STALE_STATUS),
            ("a", 1, "300", applied(), false, counter::UNCHANGED_STATUS),
            ("a", 1, "50", other.clone(), false, counter::STALE_STATUS),
            ("b", 1, "300", other.clone(), false, counter::UNKNOWN_WORK),
        ];
        for (i, (cluster, version, seq, status, stored, name)) in cases.into_iter().enumerate() {
            let mut core = core_with_work("a", "web");
            step(&mut core, join("b"), 0);
            let c = core.accept("b", t(0)).unwrap();
            core.apply(&c.records);
            let id = core
                .work(&WorkKey::new("a", "web"))
                .unwrap()
                .resource_id
                .clone();
            if i > 0 {
                step(&mut core, status_input("a", &id, 1, "100", applied()), 1);
            }
            let before = core.counters().get(name);
            step(
                &mut core,
                status_input(cluster, &id, version, seq, status.clone()),
                2,
            );
            assert_eq!(core.counters().get(name), before + 1, "case {i}");
            let w = core.work(&WorkKey::new("a", "web")).unwrap();
            let expected = if stored {
                Some(status.clone())
            } else if i > 0 {
                Some(applied())
            } else {
                None
            };
            assert_eq!(w.status, expected, "case {i}");
            if stored {
                assert_eq!(
                    w.status_hash.as_deref(),
                    Some(status_hash(&status).as_str())
                );
                assert_eq!(w.last_sequence_id.as_deref(), Some(seq));
            }
        }
    }

    #[test]
    fn a_status_naming_another_source_is_dropped_and_counted_and_an_empty_one_passes() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let id = core.work(&key).unwrap().resource_id.clone();
        let with_source = |source: &str, seq: &str| {
            let mut input = status_input("a", &id, 1, seq, applied());
            if let crate::core::AgentInput::WorkStatus { event, .. } = &mut input {
                event.original_source = source.to_owned();
            }
            input
        };
        step(&mut core, with_source("other-hub", "10"), 1);
        assert_eq!(core.counters().get(counter::FOREIGN_SOURCE), 1);
        assert!(core.work(&key).unwrap().status.is_none(), "nothing stored");
        step(&mut core, with_source("", "11"), 2);
        assert_eq!(core.counters().get(counter::STATUS_ACCEPTED), 1);
        assert_eq!(core.work(&key).unwrap().status_version, Some(1));
    }

    #[test]
    fn a_status_for_an_unknown_resource_id_is_counted() {
        let mut core = accepted_core(&["a"]);
        step(
            &mut core,
            status_input("a", "no-such-id", 1, "1", applied()),
            1,
        );
        assert_eq!(core.counters().get(counter::UNKNOWN_WORK), 1);
    }

    #[test]
    fn accepting_a_cluster_sends_the_works_waiting_for_it() {
        let mut core = core_with_work("a", "web");
        let c = core.deny("a", t(1)).unwrap();
        core.apply(&c.records);
        let c = core.accept("a", t(2)).unwrap();
        assert_eq!(specs(&c).len(), 1);
    }
}
