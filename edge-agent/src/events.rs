//! The agent's side of the wire protocol: parse what the hub sends, build what the agent sends.
//!
//! A private adapter over `ocm_edge_schemas::wire` (event types, extensions, MQTT binding): the
//! schemas crate's high-level `works`/`cluster_events` builders were not there yet when the agent was
//! written, and the agent needs only this handful of events.

use chrono::{DateTime, Utc};
use cloudevents::{AttributesReader, Event, EventBuilder, EventBuilderV10};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{MicroTime, ObjectMeta};
use ocm_edge_schemas::api::work::{ManifestBundle, ManifestBundleStatus, ManifestWorkStatus};
use ocm_edge_schemas::wire::event_type::{
    Action, EventType, LEASES, MANAGED_CLUSTERS, MANIFEST_BUNDLES, PRESENCES, SubResource,
};
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
use ocm_edge_schemas::wire::resync::{ResourceVersion, ResourceVersionList, StatusHashList};
use ocm_edge_schemas::wire::{MqttMessage, data_as, decode};
use serde::Serialize;

/// Why an inbound message was dropped.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("not a CloudEvent: {0}")]
    Wire(#[from] ocm_edge_schemas::wire::WireError),
    #[error("bad event type: {0}")]
    Type(#[from] ocm_edge_schemas::wire::event_type::EventTypeError),
    #[error("bad extension: {0}")]
    Extension(#[from] ext::ExtensionError),
    #[error("bad data: {0}")]
    Data(#[from] ocm_edge_schemas::wire::DataError),
    #[error("event is for cluster {0:?}, not this one")]
    OtherCluster(String),
    #[error("cannot build event: {0}")]
    Build(String),
}

/// A spec event for one bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecEvent {
    /// ce-source (the hub's source id); echoed as `originalsource`.
    pub source: String,
    pub resource_id: String,
    pub resource_version: i64,
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
    Spec(SpecEvent),
    StatusResync(StatusHashList),
    HubView(Box<ManagedCluster>),
    /// A well-formed event the agent has no use for.
    Ignored(String),
}

/// Parses a message received on `sourceevents` or `sourcebroadcast`.
///
/// # Errors
/// [`EventError`] for anything malformed; the caller logs, counts and drops it.
pub fn parse_inbound(msg: &MqttMessage, cluster: &str) -> Result<Inbound, EventError> {
    let event = decode(msg)?;
    let ty = EventType::parse(event.ty())?;
    if let Ok(c) = ext::cluster_name(&event)
        && !c.is_empty()
        && c != cluster
    {
        return Err(EventError::OtherCluster(c.to_owned()));
    }
    if ty.data_type == MANIFEST_BUNDLES {
        return match (ty.sub_resource, ty.action) {
            (
                SubResource::Spec,
                Action::CreateRequest
                | Action::UpdateRequest
                | Action::DeleteRequest
                | Action::ResyncResponse,
            ) => parse_spec(&event).map(Inbound::Spec),
            (SubResource::Status, Action::ResyncRequest) => {
                let list: StatusHashList = match ocm_edge_schemas::wire::data_json(&event)? {
                    None => StatusHashList::default(),
                    Some(v) => serde_json::from_value(v).map_err(|e| {
                        ocm_edge_schemas::wire::DataError::Shape {
                            ty: event.ty().to_owned(),
                            what: "StatusHashList",
                            reason: e.to_string(),
                        }
                    })?,
                };
                Ok(Inbound::StatusResync(list))
            }
            _ => Ok(Inbound::Ignored(event.ty().to_owned())),
        };
    }
    if ty.data_type == MANAGED_CLUSTERS
        && ty.sub_resource == SubResource::Spec
        && ty.action == Action::UpdateRequest
    {
        let view: ManagedCluster = data_as(&event, "ManagedCluster")?;
        return Ok(Inbound::HubView(Box::new(view)));
    }
    Ok(Inbound::Ignored(event.ty().to_owned()))
}

fn parse_spec(event: &Event) -> Result<SpecEvent, EventError> {
    let resource_id = ext::resource_id(event)?.to_owned();
    let resource_version = ext::resource_version(event)?;
    let deletion = ext::deletion_timestamp(event)?;
    let metadata_json = ext::metadata_json(event).unwrap_or("{}").to_owned();
    let meta: ObjectMeta = serde_json::from_str(&metadata_json).unwrap_or_default();
    let bundle = if deletion.is_some() {
        data_as::<ManifestBundle>(event, "ManifestBundle").ok()
    } else {
        Some(data_as::<ManifestBundle>(event, "ManifestBundle")?)
    };
    Ok(SpecEvent {
        source: event.source().to_string(),
        resource_id,
        resource_version,
        metadata_json,
        generation: if meta.generation > 0 {
            meta.generation
        } else {
            resource_version
        },
        deletion,
        bundle,
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
    fn build(
        &self,
        ty: EventType,
        data: &impl Serialize,
        now: DateTime<Utc>,
    ) -> Result<Event, EventError> {
        let value = serde_json::to_value(data).map_err(|e| EventError::Build(e.to_string()))?;
        let mut event = EventBuilderV10::new()
            .id(uuid::Uuid::new_v4().to_string())
            .source(self.agent_id.clone())
            .ty(ty.to_string())
            .time(now)
            .data(APPLICATION_JSON, value)
            .build()
            .map_err(|e| EventError::Build(e.to_string()))?;
        ext::set_cluster_name(&mut event, self.cluster.clone());
        ext::set_original_source(&mut event, "");
        Ok(event)
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
    ) -> Result<Event, EventError> {
        let data = ManifestBundleStatus::from(status);
        let mut event = self.build(
            MANIFEST_BUNDLES.event_type(SubResource::Status, Action::UpdateRequest),
            &data,
            now,
        )?;
        ext::set_resource_id(&mut event, resource_id);
        ext::set_resource_version(&mut event, resource_version)?;
        ext::set_original_source(&mut event, source);
        event.set_extension(ext::METADATA, metadata_json.to_owned());
        ext::set_sequence_id(&mut event, sequence_id);
        ext::set_status_hash(&mut event, hash);
        ext::set_log_tracing(&mut event, "{}");
        Ok(event)
    }

    /// `spec.resync_request` with every bundle version held.
    pub fn spec_resync_request(
        &self,
        versions: Vec<ResourceVersion>,
        now: DateTime<Utc>,
    ) -> Result<Event, EventError> {
        self.build(
            MANIFEST_BUNDLES.event_type(SubResource::Spec, Action::ResyncRequest),
            &ResourceVersionList {
                resource_versions: versions,
            },
            now,
        )
    }

    /// The join request (ManagedCluster create_request).
    pub fn join_request(
        &self,
        cluster: &ManagedCluster,
        now: DateTime<Utc>,
    ) -> Result<Event, EventError> {
        self.build(
            MANAGED_CLUSTERS.event_type(SubResource::Spec, Action::CreateRequest),
            cluster,
            now,
        )
    }

    /// The cluster status (ManagedCluster status.update_request).
    pub fn cluster_status(
        &self,
        cluster: &ManagedCluster,
        now: DateTime<Utc>,
    ) -> Result<Event, EventError> {
        self.build(
            MANAGED_CLUSTERS.event_type(SubResource::Status, Action::UpdateRequest),
            cluster,
            now,
        )
    }

    /// A lease renewal.
    pub fn lease_renewal(
        &self,
        lease_duration_seconds: i32,
        now: DateTime<Utc>,
    ) -> Result<Event, EventError> {
        let mut lease = Lease::default();
        lease.metadata = ObjectMeta::namespaced(
            self.cluster.clone(),
            ocm_edge_schemas::api::lease::CLUSTER_LEASE_NAME,
        );
        lease.spec.holder_identity = Some(self.agent_id.clone());
        lease.spec.lease_duration_seconds = Some(lease_duration_seconds);
        lease.spec.renew_time = Some(MicroTime::new(now));
        self.build(
            LEASES.event_type(SubResource::Spec, Action::UpdateRequest),
            &lease,
            now,
        )
    }

    /// Presence (birth `online` on connect; the will carries `offline`), with the connection sequence number.
    pub fn presence(
        &self,
        online: bool,
        connection_seq: u64,
        now: DateTime<Utc>,
    ) -> Result<Event, EventError> {
        let data = serde_json::json!({
            "state": if online { "online" } else { "offline" },
            "connectionSeq": connection_seq,
        });
        self.build(
            PRESENCES.event_type(SubResource::Status, Action::UpdateRequest),
            &data,
            now,
        )
    }
}
