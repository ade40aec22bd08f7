//! The agent's side of the wire protocol: parse what the hub sends, build what the agent sends,
//! on top of `ocm_edge_schemas::wire` (`works::WorkEvent`, `cluster_events::ClusterEvent`), which the
//! hub uses too.

use chrono::{DateTime, Utc};
use cloudevents::Event;
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{MicroTime, ObjectMeta};
use ocm_edge_schemas::api::work::{ManifestBundle, ManifestBundleStatus, ManifestWorkStatus};
use ocm_edge_schemas::wire::cluster_events::{
    ClusterEnvelope, ClusterEvent, Presence, PresenceState,
};
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::resync::{ResourceVersion, ResourceVersionList, StatusHashList};
use ocm_edge_schemas::wire::works::{
    EMPTY_LOG_TRACING, Header, SpecResyncRequest, StatusEvent, WorkEvent, WorkEventError,
};
use ocm_edge_schemas::wire::{MqttMessage, decode};

/// Why an inbound message was dropped.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("not a CloudEvent: {0}")]
    Wire(#[from] ocm_edge_schemas::wire::WireError),
    #[error("{0}")]
    Event(#[from] WorkEventError),
    #[error("event is for cluster {0:?}, not this one")]
    OtherCluster(String),
}

/// A spec event for one bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecEvent {
    /// ce-source (the hub's source id); echoed as `originalsource`.
    pub source: String,
    pub resource_id: String,
    pub resource_version: i64,
    /// The `metadata` extension (ObjectMeta JSON), "" when absent.
    pub metadata_json: String,
    pub generation: i64,
    /// Set on deletes.
    pub deletion: Option<DateTime<Utc>>,
    /// Absent on bare deletes.
    pub bundle: Option<ManifestBundle>,
}

/// What the hub sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    Spec(Box<SpecEvent>),
    StatusResync(StatusHashList),
    HubView(Box<ManagedCluster>),
    /// A well-formed event the agent has no use for.
    Ignored(String),
}

/// Parses a message received on `sourceevents` or `sourcebroadcast`.
///
/// # Errors
/// [`EventError`] for anything malformed or addressed to another cluster; the caller logs,
/// counts and drops it.
pub fn parse_inbound(msg: &MqttMessage, cluster: &str) -> Result<Inbound, EventError> {
    let event = decode(msg)?;
    let ty = cloudevents::AttributesReader::ty(&event).to_owned();
    let check = |c: &str| {
        if c.is_empty() || c == cluster {
            Ok(())
        } else {
            Err(EventError::OtherCluster(c.to_owned()))
        }
    };
    if ClusterEvent::is_cluster_event_type(&ty) {
        return Ok(match ClusterEvent::from_event(&event)? {
            ClusterEvent::HubView(env) => {
                check(&env.cluster)?;
                Inbound::HubView(Box::new(env.data))
            }
            _ => Inbound::Ignored(ty),
        });
    }
    Ok(match WorkEvent::from_event(&event)? {
        WorkEvent::Spec(spec) => {
            check(&spec.cluster)?;
            let generation = spec
                .metadata
                .as_ref()
                .map(|m| m.generation)
                .filter(|g| *g > 0)
                .unwrap_or(spec.resource_version);
            Inbound::Spec(Box::new(SpecEvent {
                source: spec.header.source,
                resource_id: spec.resource_id,
                resource_version: spec.resource_version,
                metadata_json: spec
                    .metadata
                    .as_ref()
                    .and_then(|m| serde_json::to_string(m).ok())
                    .unwrap_or_default(),
                generation,
                deletion: spec.deletion_timestamp,
                bundle: spec.bundle,
            }))
        }
        // A status resync may come on the source broadcast topic, addressed to every cluster.
        WorkEvent::StatusResyncRequest(req) => Inbound::StatusResync(req.hashes),
        _ => Inbound::Ignored(ty),
    })
}

/// Who the agent is on the wire.
#[derive(Debug, Clone)]
pub struct AgentIdentity {
    pub cluster: String,
    /// `<cluster>-work-agent`: ce-source of every agent event.
    pub agent_id: String,
}

impl AgentIdentity {
    fn header(&self, now: DateTime<Utc>) -> Header {
        Header::new(self.agent_id.clone(), now)
    }

    fn envelope<T>(&self, data: T, now: DateTime<Utc>) -> ClusterEnvelope<T> {
        ClusterEnvelope {
            header: self.header(now),
            cluster: self.cluster.clone(),
            original_source: String::new(),
            data,
        }
    }

    /// `status.update_request` for one bundle: originalsource = the spec's source (maestro
    /// rejects others), resourceversion of the spec it reflects, snowflake sequenceid, statushash.
    #[allow(clippy::too_many_arguments)]
    pub fn status_event(
        &self,
        resource_id: &str,
        resource_version: i64,
        source: &str,
        metadata_json: &str,
        status: &ManifestWorkStatus,
        hash: &str,
        sequence_id: String,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        StatusEvent {
            header: self.header(now),
            action: Action::UpdateRequest,
            cluster: self.cluster.clone(),
            resource_id: resource_id.to_owned(),
            resource_version,
            original_source: source.to_owned(),
            sequence_id,
            status_hash: Some(hash.to_owned()),
            metadata: serde_json::from_str::<ObjectMeta>(metadata_json).ok(),
            log_tracing: Some(EMPTY_LOG_TRACING.to_owned()),
            status: ManifestBundleStatus::from(status),
        }
        .to_event()
    }

    /// `spec.resync_request` with every bundle version held.
    pub fn spec_resync_request(
        &self,
        versions: Vec<ResourceVersion>,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        SpecResyncRequest {
            header: self.header(now),
            cluster: self.cluster.clone(),
            versions: ResourceVersionList {
                resource_versions: versions,
            },
        }
        .to_event()
    }

    /// The join request (ManagedCluster create_request).
    pub fn join_request(
        &self,
        cluster: &ManagedCluster,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        ClusterEvent::JoinRequest(self.envelope(cluster.clone(), now)).to_event()
    }

    /// The cluster status (ManagedCluster status.update_request).
    pub fn cluster_status(
        &self,
        cluster: &ManagedCluster,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        ClusterEvent::Status(self.envelope(cluster.clone(), now)).to_event()
    }

    /// A lease renewal.
    pub fn lease_renewal(
        &self,
        lease_duration_seconds: i32,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        let mut lease = Lease::default();
        lease.metadata = ObjectMeta::namespaced(
            self.cluster.clone(),
            ocm_edge_schemas::api::lease::CLUSTER_LEASE_NAME,
        );
        lease.spec.holder_identity = Some(self.agent_id.clone());
        lease.spec.lease_duration_seconds = Some(lease_duration_seconds);
        lease.spec.renew_time = Some(MicroTime::new(now));
        ClusterEvent::Lease(self.envelope(lease, now)).to_event()
    }

    /// Presence (birth `online` on connect; the will carries `offline`), with the connection sequence number.
    pub fn presence(
        &self,
        online: bool,
        connection_seq: u64,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        let presence = Presence {
            state: if online {
                PresenceState::Online
            } else {
                PresenceState::Offline
            },
            connection_seq,
        };
        ClusterEvent::Presence(self.envelope(presence, now)).to_event()
    }
}
