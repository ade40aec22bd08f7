//! Builders for core tests: clusters, works, agent events and simulated time.

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus};
use ocm_edge_schemas::api::work::{Manifest, ManifestWorkStatus};
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::works::{Header, SpecEvent, StatusEvent};
use serde_json::json;

use super::{AgentInput, Change, CoreConfig, HubCore, Outbound, Presence};
use crate::work::WorkInput;

pub fn cfg() -> CoreConfig {
    CoreConfig {
        source_id: "ocm-edge".into(),
        availability: crate::availability::AvailabilityConfig::default(),
        status_resync_batch: 1000,
    }
}

pub fn core() -> HubCore {
    HubCore::new(cfg())
}

/// Seconds after a fixed epoch.
pub fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap() + TimeDelta::seconds(secs)
}

/// Handles an agent event at `t(secs)` and applies the change.
pub fn step(core: &mut HubCore, input: AgentInput, secs: i64) -> Change {
    let change = core.handle_agent(input, t(secs));
    core.apply(&change.records);
    change
}

pub fn join(cluster: &str) -> AgentInput {
    join_labelled(cluster, &[("env", "test")])
}

/// A join request with `labels` and a 60 s lease.
pub fn join_labelled(cluster: &str, labels: &[(&str, &str)]) -> AgentInput {
    let mut request = ManagedCluster::new(cluster);
    request.metadata.labels = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    request.spec.lease_duration_seconds = 60;
    AgentInput::JoinRequest {
        cluster: cluster.into(),
        request: Box::new(request),
    }
}

/// A join request carrying agent key `key` (as the agent's annotation; the signature is checked
/// before the core, in the shell).
pub fn join_with_key(cluster: &str, key: &str) -> AgentInput {
    let AgentInput::JoinRequest {
        cluster,
        mut request,
    } = join(cluster)
    else {
        unreachable!("join builds a join request")
    };
    request.metadata.annotations.insert(
        ocm_edge_schemas::wire::signature::AGENT_KEY_ANNOTATION.into(),
        key.into(),
    );
    AgentInput::JoinRequest { cluster, request }
}

pub fn lease(cluster: &str) -> AgentInput {
    let mut lease = Lease::default();
    lease.spec.lease_duration_seconds = Some(60);
    AgentInput::LeaseRenewal {
        cluster: cluster.into(),
        lease: Box::new(lease),
    }
}

pub fn presence(cluster: &str, online: bool, seq: u64) -> AgentInput {
    AgentInput::Presence {
        cluster: cluster.into(),
        presence: Presence {
            online,
            connection_seq: seq,
        },
        transfer: None,
    }
}

/// A core where every cluster in `names` joined and was accepted at t(0).
pub fn accepted_core(names: &[&str]) -> HubCore {
    let mut core = core();
    for name in names {
        step(&mut core, join(name), 0);
        let c = core.accept(name, t(0)).unwrap();
        core.apply(&c.records);
    }
    core
}

/// An accepted cluster holding one work (a Deployment with 1 replica).
pub fn core_with_work(cluster: &str, work: &str) -> HubCore {
    let mut core = accepted_core(&[cluster]);
    let (c, _) = core
        .write_works(&work_input(work, 1), &clusters(&[cluster]), false, t(0))
        .unwrap();
    core.apply(&c.records);
    core
}

pub fn clusters(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

pub fn work_input(name: &str, replicas: i64) -> WorkInput {
    let mut input = WorkInput {
        name: name.into(),
        ..WorkInput::default()
    };
    std::sync::Arc::make_mut(&mut input.spec)
        .workload
        .manifests
        .push(Manifest(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas}
        })));
    input
}

pub fn applied() -> ManifestWorkStatus {
    let mut s = ManifestWorkStatus::default();
    s.conditions.push(Condition::new(
        "Applied",
        ConditionStatus::True,
        "AppliedManifestWorkComplete",
        "Apply manifest work complete",
    ));
    s
}

pub fn status_input(
    cluster: &str,
    id: &str,
    version: i64,
    seq: &str,
    status: ManifestWorkStatus,
) -> AgentInput {
    let hash = ocm_edge_schemas::wire::status_hash::status_hash(&status);
    let event = Box::new(StatusEvent {
        header: Header::new(format!("{cluster}-work-agent"), t(0)),
        action: Action::UpdateRequest,
        cluster: cluster.into(),
        resource_id: id.into(),
        resource_version: version,
        original_source: cfg().source_id,
        sequence_id: seq.into(),
        status_hash: None,
        metadata: None,
        log_tracing: None,
        status: status.into(),
    });
    AgentInput::WorkStatus { event, hash }
}

pub fn hub_views(change: &Change) -> Vec<ManagedCluster> {
    change
        .outbound
        .iter()
        .filter_map(|o| match o {
            Outbound::HubView(v) => Some((**v).clone()),
            _ => None,
        })
        .collect()
}

pub fn specs(change: &Change) -> Vec<SpecEvent> {
    change
        .outbound
        .iter()
        .filter_map(|o| match o {
            Outbound::Spec(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

/// Applies an OCM object written as JSON, as `ocm-edge apply -f` does, at `t(1)`.
///
/// # Panics
/// For a kind the hub does not store as an object.
pub fn apply_json(
    core: &mut HubCore,
    v: serde_json::Value,
) -> Result<ocm_edge_schemas::admin::WriteOutcome, super::objects::ObjectError> {
    let object = ocm_edge_schemas::api::object::OcmObject::from_value(v).unwrap();
    let stored = super::objects::StoredObject::from_applied(object)
        .unwrap_or_else(|other| panic!("unexpected {}", other.kind()));
    let (change, _, outcome) = core.apply_object(stored, t(1))?;
    core.apply(&change.records);
    Ok(outcome)
}

/// Issues fake certificates: serial = a counter, PEM names the cluster and key.
#[derive(Default)]
pub struct Counting(pub std::sync::atomic::AtomicU64);

impl crate::registration::certificates::ClusterCertIssuer for Counting {
    fn issue(
        &self,
        cluster: &str,
        agent_key: &str,
        validity: chrono::Duration,
        now: DateTime<Utc>,
    ) -> Result<crate::registration::certificates::ClusterCertificate, String> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Ok(crate::registration::certificates::ClusterCertificate {
            pem: format!("cert {n} of {cluster} for {agent_key}"),
            serial: format!("{n:02x}"),
            not_before: now,
            not_after: now + validity,
            agent_key: agent_key.to_owned(),
        })
    }
}

/// Makes `core` issue certificates with a [`Counting`] issuer (30 days, grace 90 days).
pub fn issuing(core: &mut HubCore) -> std::sync::Arc<Counting> {
    let issuer = std::sync::Arc::new(Counting::default());
    core.set_certificate_policy(crate::registration::certificates::CertificatePolicy {
        issuer: issuer.clone(),
        validity: chrono::Duration::days(30),
        grace: chrono::Duration::days(90),
    });
    issuer
}
