//! Build and parse every ManifestWork event of OCM's protocol (docs/reference/protocol.md sections 3, 4 and 6).
//!
//! [`WorkEvent::from_event`] turns a received `cloudevents::Event` into one of:
//! - [`SpecEvent`]: `spec.create_request` / `update_request` / `delete_request` / `resync_response`
//!   (hub to agent; a delete is recognised by `deletiontimestamp`, not by the action);
//! - [`SpecResyncRequest`]: `spec.resync_request` (agent to hub);
//! - [`StatusEvent`]: `status.update_request` / `resync_response` (agent to hub);
//! - [`StatusResyncRequest`]: `status.resync_request` (hub to agent);
//! - `Unknown` for any other type, so callers can count and drop it.
//!
//! Each struct has `to_event()` producing the exact types, extensions and data Go peers expect.

use super::chunks::{ChunkError, TransferOffer};
use super::event_type::{Action, EventType, EventTypeError, MANIFEST_BUNDLES, SubResource};
use super::extensions::{self as ext, ExtensionError};
use super::mqtt::APPLICATION_JSON;
use super::resync::{ResourceVersionList, StatusHashList};
use super::status_hash::bundle_status_hash;
use super::{DataError, data_as, data_json};
use crate::api::meta::ObjectMeta;
use crate::api::work::{ManifestBundle, ManifestBundleStatus};
use chrono::{DateTime, Utc};
use cloudevents::{AttributesReader, AttributesWriter, Event};

/// The `logtracing` value when there is nothing to trace.
pub const EMPTY_LOG_TRACING: &str = "{}";

/// Errors reading a work event. Not retryable: the event is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkEventError {
    #[error("event {id}: bad type: {source}")]
    Type {
        id: String,
        #[source]
        source: EventTypeError,
    },
    #[error("event {id} ({ty}): {source}")]
    Extension {
        id: String,
        ty: String,
        #[source]
        source: ExtensionError,
    },
    #[error("event {id}: {source}")]
    Data {
        id: String,
        #[source]
        source: DataError,
    },
    #[error("event {id} ({ty}) is not a delete but carries no ManifestBundle data")]
    MissingBundle { id: String, ty: String },
    #[error("event {id}: bad chunked-transfer offer: {source}")]
    Transfer {
        id: String,
        #[source]
        source: ChunkError,
    },
    #[error("cannot build event: {0}")]
    Build(String),
}

/// The attributes every event has besides its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `ce-id`.
    pub id: String,
    /// `ce-source`: the source id (hub to agent) or the agent id (agent to hub).
    pub source: String,
    /// `ce-time`.
    pub time: Option<DateTime<Utc>>,
}

impl Header {
    /// A header with a fresh random id.
    pub fn new(source: impl Into<String>, now: DateTime<Utc>) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            source: source.into(),
            time: Some(now),
        }
    }

    fn read(event: &Event) -> Self {
        Self {
            id: event.id().to_owned(),
            source: event.source().to_string(),
            time: event.time().copied(),
        }
    }

    fn event(&self, ty: EventType) -> Event {
        let mut e = Event::default();
        e.set_id(self.id.clone());
        e.set_source(self.source.clone());
        e.set_type(ty.to_string());
        e.set_time(self.time);
        e
    }
}

fn set_data<T: serde::Serialize>(event: &mut Event, data: &T) -> Result<(), WorkEventError> {
    let v = serde_json::to_value(data).map_err(|e| WorkEventError::Build(e.to_string()))?;
    event.set_data(APPLICATION_JSON, v);
    Ok(())
}

/// A spec event for one bundle (hub to agent).
#[derive(Debug, Clone, PartialEq)]
pub struct SpecEvent {
    pub header: Header,
    /// CreateRequest, UpdateRequest, DeleteRequest or ResyncResponse.
    pub action: Action,
    pub cluster: String,
    pub resource_id: String,
    /// Starts at 1, bumped on every spec change; within int32.
    pub resource_version: i64,
    /// The work's ObjectMeta (`metadata` extension).
    pub metadata: Option<ObjectMeta>,
    /// Set on deletes (the only thing that makes a spec event a delete).
    pub deletion_timestamp: Option<DateTime<Utc>>,
    /// The desired bundle; `None` only on a bare delete.
    pub bundle: Option<ManifestBundle>,
    /// `logtracing` (JSON map as a string).
    pub log_tracing: Option<String>,
}

impl SpecEvent {
    /// Whether the agent must delete the bundle.
    pub fn is_delete(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// The work's generation: `metadata.generation` when the source sets it, else the
    /// resourceversion (a bare delete carries no metadata).
    pub fn generation(&self) -> i64 {
        self.metadata
            .as_ref()
            .map(|m| m.generation)
            .filter(|g| *g > 0)
            .unwrap_or(self.resource_version)
    }

    /// The event, with `originalsource` empty as Go sources send it.
    ///
    /// # Errors
    /// [`WorkEventError::Build`] for a resourceversion outside int32 or unserializable data.
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        let mut e = self
            .header
            .event(MANIFEST_BUNDLES.event_type(SubResource::Spec, self.action));
        ext::set_cluster_name(&mut e, &self.cluster);
        ext::set_original_source(&mut e, "");
        ext::set_resource_id(&mut e, &self.resource_id);
        ext::set_resource_version(&mut e, self.resource_version)
            .map_err(|err| WorkEventError::Build(err.to_string()))?;
        if let Some(meta) = &self.metadata {
            ext::set_metadata(&mut e, meta)
                .map_err(|err| WorkEventError::Build(err.to_string()))?;
        }
        if let Some(at) = self.deletion_timestamp {
            ext::set_deletion_timestamp(&mut e, at);
        }
        if let Some(t) = &self.log_tracing {
            ext::set_log_tracing(&mut e, t.clone());
        }
        if let Some(bundle) = &self.bundle {
            set_data(&mut e, bundle)?;
        }
        Ok(e)
    }
}

/// `spec.resync_request`: "these are the versions I hold" (agent to hub).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecResyncRequest {
    pub header: Header,
    pub cluster: String,
    pub versions: ResourceVersionList,
    /// An ocm-edge agent's offer of chunked transfers (`None` from maestro and OCM agents).
    pub transfer: Option<TransferOffer>,
}

impl SpecResyncRequest {
    /// # Errors
    /// [`WorkEventError::Build`] only if serialization fails.
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        let mut e = self
            .header
            .event(MANIFEST_BUNDLES.event_type(SubResource::Spec, Action::ResyncRequest));
        ext::set_cluster_name(&mut e, &self.cluster);
        ext::set_original_source(&mut e, "");
        if let Some(offer) = &self.transfer {
            offer.set_on(&mut e);
        }
        set_data(&mut e, &self.versions)?;
        Ok(e)
    }
}

/// A status event for one bundle (agent to hub).
#[derive(Debug, Clone, PartialEq)]
pub struct StatusEvent {
    pub header: Header,
    /// UpdateRequest or ResyncResponse.
    pub action: Action,
    pub cluster: String,
    pub resource_id: String,
    /// The spec version this status is for.
    pub resource_version: i64,
    /// The source id the spec came from (maestro rejects anything else).
    pub original_source: String,
    /// Snowflake id, decimal (see [`super::sequence`]).
    pub sequence_id: String,
    /// `statushash`: when `None`, [`Self::to_event`] computes it from `status`; on a received event,
    /// what the sender claimed.
    pub status_hash: Option<String>,
    pub metadata: Option<ObjectMeta>,
    pub log_tracing: Option<String>,
    pub status: ManifestBundleStatus,
}

impl StatusEvent {
    /// # Errors
    /// [`WorkEventError::Build`] for a resourceversion outside int32 or unserializable data.
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        let mut e = self
            .header
            .event(MANIFEST_BUNDLES.event_type(SubResource::Status, self.action));
        ext::set_cluster_name(&mut e, &self.cluster);
        ext::set_original_source(&mut e, &self.original_source);
        ext::set_resource_id(&mut e, &self.resource_id);
        ext::set_resource_version(&mut e, self.resource_version)
            .map_err(|err| WorkEventError::Build(err.to_string()))?;
        ext::set_sequence_id(&mut e, &self.sequence_id);
        let hash = self
            .status_hash
            .clone()
            .unwrap_or_else(|| bundle_status_hash(&self.status));
        ext::set_status_hash(&mut e, hash);
        if let Some(meta) = &self.metadata {
            ext::set_metadata(&mut e, meta)
                .map_err(|err| WorkEventError::Build(err.to_string()))?;
        }
        if let Some(t) = &self.log_tracing {
            ext::set_log_tracing(&mut e, t.clone());
        }
        set_data(&mut e, &self.status)?;
        Ok(e)
    }
}

/// `status.resync_request`: "these are the status hashes I hold" (hub to agent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusResyncRequest {
    pub header: Header,
    pub cluster: String,
    pub hashes: StatusHashList,
}

impl StatusResyncRequest {
    /// # Errors
    /// [`WorkEventError::Build`] only if serialization fails.
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        let mut e = self
            .header
            .event(MANIFEST_BUNDLES.event_type(SubResource::Status, Action::ResyncRequest));
        ext::set_cluster_name(&mut e, &self.cluster);
        ext::set_original_source(&mut e, "");
        set_data(&mut e, &self.hashes)?;
        Ok(e)
    }
}

/// Any work event, as received.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkEvent {
    Spec(SpecEvent),
    SpecResyncRequest(SpecResyncRequest),
    Status(StatusEvent),
    StatusResyncRequest(StatusResyncRequest),
    /// A well-formed type this module does not handle (another data type, or an action that makes no
    /// sense for works such as `status.create_request`).
    Unknown {
        ty: String,
    },
}

impl WorkEvent {
    /// Reads a work event.
    ///
    /// # Errors
    /// [`WorkEventError`] naming the event id and what is wrong: a malformed type, a missing or
    /// mistyped extension, or data that is not the expected payload.
    pub fn from_event(event: &Event) -> Result<Self, WorkEventError> {
        let id = event.id().to_owned();
        let ty_str = event.ty().to_owned();
        let ty = EventType::parse(&ty_str).map_err(|source| WorkEventError::Type {
            id: id.clone(),
            source,
        })?;
        if ty.data_type != MANIFEST_BUNDLES {
            return Ok(Self::Unknown { ty: ty_str });
        }
        let ext_err = |source| WorkEventError::Extension {
            id: id.clone(),
            ty: ty_str.clone(),
            source,
        };
        let data_err = |source| WorkEventError::Data {
            id: id.clone(),
            source,
        };
        let header = Header::read(event);
        let cluster = ext::cluster_name(event).map_err(ext_err)?.to_owned();
        let metadata = match ext::metadata::<ObjectMeta>(event) {
            Ok(m) => Some(m),
            Err(ExtensionError::Missing(_)) => None,
            Err(e) => return Err(ext_err(e)),
        };
        let log_tracing = ext::log_tracing(event).ok().map(str::to_owned);

        use Action::*;
        Ok(match (ty.sub_resource, ty.action) {
            (SubResource::Spec, CreateRequest | UpdateRequest | DeleteRequest | ResyncResponse) => {
                let deletion_timestamp = ext::deletion_timestamp(event).map_err(ext_err)?;
                let bundle = match data_json(event).map_err(data_err)? {
                    None if deletion_timestamp.is_some() => None,
                    None => {
                        return Err(WorkEventError::MissingBundle { id, ty: ty_str });
                    }
                    Some(_) => Some(data_as(event, "ManifestBundle").map_err(data_err)?),
                };
                Self::Spec(SpecEvent {
                    header,
                    action: ty.action,
                    cluster,
                    resource_id: ext::resource_id(event).map_err(ext_err)?.to_owned(),
                    resource_version: ext::resource_version(event).map_err(ext_err)?,
                    metadata,
                    deletion_timestamp,
                    bundle,
                    log_tracing,
                })
            }
            (SubResource::Spec, ResyncRequest) => {
                // Some Go agents send no data when they hold nothing.
                let versions = match data_json(event).map_err(data_err)? {
                    None => ResourceVersionList::default(),
                    Some(_) => data_as(event, "ResourceVersionList").map_err(data_err)?,
                };
                let transfer = TransferOffer::from_event(event).map_err(|source| {
                    WorkEventError::Transfer {
                        id: id.clone(),
                        source,
                    }
                })?;
                Self::SpecResyncRequest(SpecResyncRequest {
                    header,
                    cluster,
                    versions,
                    transfer,
                })
            }
            (SubResource::Status, UpdateRequest | ResyncResponse) => Self::Status(StatusEvent {
                header,
                action: ty.action,
                cluster,
                resource_id: ext::resource_id(event).map_err(ext_err)?.to_owned(),
                resource_version: ext::resource_version(event).map_err(ext_err)?,
                original_source: ext::original_source(event).map_err(ext_err)?.to_owned(),
                sequence_id: ext::sequence_id(event).map_err(ext_err)?.to_owned(),
                status_hash: ext::status_hash(event).ok().map(str::to_owned),
                metadata,
                log_tracing,
                status: data_as(event, "ManifestBundleStatus").map_err(data_err)?,
            }),
            (SubResource::Status, ResyncRequest) => {
                let hashes = match data_json(event).map_err(data_err)? {
                    None => StatusHashList::default(),
                    Some(_) => data_as(event, "StatusHashList").map_err(data_err)?,
                };
                Self::StatusResyncRequest(StatusResyncRequest {
                    header,
                    cluster,
                    hashes,
                })
            }
            _ => Self::Unknown { ty: ty_str },
        })
    }

    /// The event to send.
    ///
    /// # Errors
    /// [`WorkEventError::Build`]; `Unknown` cannot be sent.
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        match self {
            Self::Spec(e) => e.to_event(),
            Self::SpecResyncRequest(e) => e.to_event(),
            Self::Status(e) => e.to_event(),
            Self::StatusResyncRequest(e) => e.to_event(),
            Self::Unknown { ty } => Err(WorkEventError::Build(format!(
                "an unknown event of type {ty} cannot be sent"
            ))),
        }
    }
}
