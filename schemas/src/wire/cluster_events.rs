//! ocm-edge's extension events (CONTRACTS: registration, hub view, cluster status, lease, presence),
//! in the same grammar and on the same per-cluster topics as the work events.
//!
//! | event | type | direction |
//! |---|---|---|
//! | [`ClusterEvent::JoinRequest`] | `cluster.open-cluster-management.io.v1.managedclusters.spec.create_request` | agent to hub |
//! | [`ClusterEvent::HubView`] | `...managedclusters.spec.update_request` | hub to agent |
//! | [`ClusterEvent::Unjoin`] | `...managedclusters.spec.delete_request` | agent to hub |
//! | [`ClusterEvent::Status`] | `...managedclusters.status.update_request` | agent to hub |
//! | [`ClusterEvent::Lease`] | `coordination.k8s.io.v1.leases.spec.update_request` | agent to hub |
//! | [`ClusterEvent::Presence`] | `edge.open-cluster-management.io.v1alpha1.presences.status.update_request` | agent to hub (birth and MQTT will) |
//! | [`AddOnRegistrationEvent`] | `addon.open-cluster-management.io.v1beta1.managedclusteraddons.status.update_request` | agent to hub |
//! | [`AddOnPlacementScoreEvent`] | `cluster.open-cluster-management.io.v1alpha1.addonplacementscores.status.update_request` | agent (or add-on) to hub |
//!
//! All carry `clustername` and `originalsource` (empty from agents, the source id from the hub).

use super::event_type::{
    ADDON_PLACEMENT_SCORES, Action, EventType, LEASES, MANAGED_CLUSTER_ADDONS, MANAGED_CLUSTERS,
    PRESENCES, SubResource,
};
use super::extensions as ext;
use super::mqtt::APPLICATION_JSON;
use super::works::{Header, WorkEventError};
use super::{data_as, data_json};
use crate::api::cluster::ManagedCluster;
use crate::api::lease::Lease;
use cloudevents::{AttributesReader, AttributesWriter, Event};
use serde::{Deserialize, Serialize};

/// Annotation of an unjoin's ManagedCluster: `"true"` when the agent left what it applied on the
/// cluster (`ocm-edge-agent unjoin --keep-resources`).
pub const KEPT_RESOURCES_ANNOTATION: &str = "edge.open-cluster-management.io/kept-resources";

/// Whether an agent's MQTT session is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PresenceState {
    Online,
    Offline,
}

/// Presence payload `{"state":"online"|"offline","connectionSeq":N}`. Birth and will of one connection
/// carry the same `connectionSeq`, so the hub can ignore a death that belongs to an older session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Presence {
    pub state: PresenceState,
    pub connection_seq: u64,
}

/// The envelope shared by every cluster event.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterEnvelope<T> {
    pub header: Header,
    pub cluster: String,
    /// Empty on agent-to-hub events, the source id on hub-to-agent events.
    pub original_source: String,
    pub data: T,
}

/// Any ocm-edge cluster event, as received.
#[derive(Debug, Clone, PartialEq)]
pub enum ClusterEvent {
    /// Agent asks to join (name, labels, spec.leaseDurationSeconds, status.clusterClaims).
    JoinRequest(ClusterEnvelope<ManagedCluster>),
    /// The agent leaves the hub (`ocm-edge-agent unjoin`): it removed what it applied (or kept
    /// it, as `KEPT_RESOURCES_ANNOTATION` says) and wipes its store and key; the hub forgets the
    /// cluster. Data: the ManagedCluster by name.
    Unjoin(ClusterEnvelope<ManagedCluster>),
    /// The hub's view of the cluster (hubAcceptsClient, taints, conditions).
    HubView(ClusterEnvelope<ManagedCluster>),
    /// The agent's cluster status (claims, capacity, allocatable, version, conditions).
    Status(ClusterEnvelope<ManagedCluster>),
    /// Lease renewal.
    Lease(ClusterEnvelope<Lease>),
    /// Birth (online) or will (offline).
    Presence(ClusterEnvelope<Presence>),
    /// A well-formed type that is not one of the above.
    Unknown { ty: String },
}

fn ty(event: &ClusterEvent) -> Option<EventType> {
    Some(match event {
        ClusterEvent::JoinRequest(_) => {
            MANAGED_CLUSTERS.event_type(SubResource::Spec, Action::CreateRequest)
        }
        ClusterEvent::HubView(_) => {
            MANAGED_CLUSTERS.event_type(SubResource::Spec, Action::UpdateRequest)
        }
        ClusterEvent::Unjoin(_) => {
            MANAGED_CLUSTERS.event_type(SubResource::Spec, Action::DeleteRequest)
        }
        ClusterEvent::Status(_) => {
            MANAGED_CLUSTERS.event_type(SubResource::Status, Action::UpdateRequest)
        }
        ClusterEvent::Lease(_) => LEASES.event_type(SubResource::Spec, Action::UpdateRequest),
        ClusterEvent::Presence(_) => {
            PRESENCES.event_type(SubResource::Status, Action::UpdateRequest)
        }
        ClusterEvent::Unknown { .. } => return None,
    })
}

fn build<T: Serialize>(ty: EventType, env: &ClusterEnvelope<T>) -> Result<Event, WorkEventError> {
    let mut e = Event::default();
    e.set_id(env.header.id.clone());
    e.set_source(env.header.source.clone());
    e.set_type(ty.to_string());
    e.set_time(env.header.time);
    ext::set_cluster_name(&mut e, &env.cluster);
    ext::set_original_source(&mut e, &env.original_source);
    let v = serde_json::to_value(&env.data).map_err(|e| WorkEventError::Build(e.to_string()))?;
    e.set_data(APPLICATION_JSON, v);
    Ok(e)
}

impl ClusterEvent {
    /// Whether this is one of the ocm-edge cluster event types (cheap check before decoding).
    pub fn is_cluster_event_type(ty: &str) -> bool {
        EventType::parse(ty).is_ok_and(|t| {
            t.data_type == MANAGED_CLUSTERS || t.data_type == LEASES || t.data_type == PRESENCES
        })
    }

    /// The event to send.
    ///
    /// # Errors
    /// [`WorkEventError::Build`]; `Unknown` cannot be sent.
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        let unknown = || WorkEventError::Build("an unknown cluster event cannot be sent".into());
        let t = ty(self).ok_or_else(unknown)?;
        match self {
            Self::JoinRequest(env) | Self::Unjoin(env) | Self::HubView(env) | Self::Status(env) => {
                build(t, env)
            }
            Self::Lease(env) => build(t, env),
            Self::Presence(env) => build(t, env),
            Self::Unknown { .. } => Err(unknown()),
        }
    }

    /// Reads a cluster event.
    ///
    /// # Errors
    /// [`WorkEventError`] naming the event id and what is wrong.
    pub fn from_event(event: &Event) -> Result<Self, WorkEventError> {
        let id = event.id().to_owned();
        let ty_str = event.ty().to_owned();
        let t = EventType::parse(&ty_str).map_err(|source| WorkEventError::Type {
            id: id.clone(),
            source,
        })?;
        let ext_err = |source| WorkEventError::Extension {
            id: id.clone(),
            ty: ty_str.clone(),
            source,
        };
        let data_err = |source| WorkEventError::Data {
            id: id.clone(),
            source,
        };
        let envelope =
            |what: &'static str| -> Result<ClusterEnvelope<serde_json::Value>, WorkEventError> {
                let data =
                    data_json(event)
                        .map_err(data_err)?
                        .ok_or_else(|| WorkEventError::Data {
                            id: id.clone(),
                            source: super::DataError::Missing {
                                ty: format!("{ty_str} ({what})"),
                            },
                        })?;
                Ok(ClusterEnvelope {
                    header: Header {
                        id: event.id().to_owned(),
                        source: event.source().to_string(),
                        time: event.time().copied(),
                    },
                    cluster: ext::cluster_name(event).map_err(ext_err)?.to_owned(),
                    // Agents send "", but a missing originalsource is harmless here.
                    original_source: ext::original_source(event).unwrap_or_default().to_owned(),
                    data,
                })
            };
        fn typed<T: serde::de::DeserializeOwned>(
            event: &Event,
            env: ClusterEnvelope<serde_json::Value>,
            what: &'static str,
        ) -> Result<ClusterEnvelope<T>, WorkEventError> {
            let data = data_as(event, what).map_err(|source| WorkEventError::Data {
                id: env.header.id.clone(),
                source,
            })?;
            Ok(ClusterEnvelope {
                header: env.header,
                cluster: env.cluster,
                original_source: env.original_source,
                data,
            })
        }
        use Action::*;
        use SubResource::*;
        Ok(if t.data_type == MANAGED_CLUSTERS {
            match (t.sub_resource, t.action) {
                (Spec, CreateRequest) => {
                    Self::JoinRequest(typed(event, envelope("ManagedCluster")?, "ManagedCluster")?)
                }
                (Spec, UpdateRequest) => {
                    Self::HubView(typed(event, envelope("ManagedCluster")?, "ManagedCluster")?)
                }
                (Spec, DeleteRequest) => {
                    Self::Unjoin(typed(event, envelope("ManagedCluster")?, "ManagedCluster")?)
                }
                (Status, UpdateRequest) => {
                    Self::Status(typed(event, envelope("ManagedCluster")?, "ManagedCluster")?)
                }
                _ => Self::Unknown { ty: ty_str },
            }
        } else if t.data_type == LEASES && (t.sub_resource, t.action) == (Spec, UpdateRequest) {
            Self::Lease(typed(event, envelope("Lease")?, "Lease")?)
        } else if t.data_type == PRESENCES && (t.sub_resource, t.action) == (Status, UpdateRequest)
        {
            Self::Presence(typed(event, envelope("Presence")?, "Presence")?)
        } else {
            Self::Unknown { ty: ty_str }
        })
    }
}

/// An AddOnPlacementScore from a cluster (agent to hub, on agentevents):
/// `cluster.open-cluster-management.io.v1alpha1.addonplacementscores.status.update_request`,
/// data = the AddOnPlacementScore (its namespace is the cluster). Agents or add-ons beside them
/// publish it.
#[derive(Debug, Clone, PartialEq)]
pub struct AddOnPlacementScoreEvent(
    pub ClusterEnvelope<crate::api::placement::AddOnPlacementScore>,
);

impl AddOnPlacementScoreEvent {
    /// `...addonplacementscores.status.update_request`.
    pub fn event_type() -> EventType {
        ADDON_PLACEMENT_SCORES.event_type(SubResource::Status, Action::UpdateRequest)
    }

    /// Whether `ty` is this event's type.
    pub fn is_score_event_type(ty: &str) -> bool {
        EventType::parse(ty).is_ok_and(|t| t == Self::event_type())
    }

    /// The event to send.
    ///
    /// # Errors
    /// [`WorkEventError::Build`].
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        build(Self::event_type(), &self.0)
    }

    /// Reads the event.
    ///
    /// # Errors
    /// [`WorkEventError`] naming the event id and what is wrong (not this type, no clustername,
    /// data that is not an AddOnPlacementScore).
    pub fn from_event(event: &Event) -> Result<Self, WorkEventError> {
        read_one(event, Self::event_type(), "AddOnPlacementScore").map(Self)
    }
}

/// An edge agent asks the hub to bind the MQTT identity of an add-on on its cluster (agent to
/// hub, on agentevents): `addon.open-cluster-management.io.v1beta1.managedclusteraddons.status.update_request`,
/// data = a ManagedClusterAddOn named after the add-on, in the cluster's namespace, annotated
/// with [`crate::wire::addon_identity::PASSWORD_SHA256_ANNOTATION`].
#[derive(Debug, Clone, PartialEq)]
pub struct AddOnRegistrationEvent(pub ClusterEnvelope<crate::api::addon::ManagedClusterAddOn>);

impl AddOnRegistrationEvent {
    /// `...managedclusteraddons.status.update_request`.
    pub fn event_type() -> EventType {
        MANAGED_CLUSTER_ADDONS.event_type(SubResource::Status, Action::UpdateRequest)
    }

    /// Whether `ty` is this event's type.
    pub fn is_registration_event_type(ty: &str) -> bool {
        EventType::parse(ty).is_ok_and(|t| t == Self::event_type())
    }

    /// The event to send.
    ///
    /// # Errors
    /// [`WorkEventError::Build`].
    pub fn to_event(&self) -> Result<Event, WorkEventError> {
        build(Self::event_type(), &self.0)
    }

    /// Reads the event.
    ///
    /// # Errors
    /// [`WorkEventError`] naming the event id and what is wrong (not this type, no clustername,
    /// data that is not a ManagedClusterAddOn).
    pub fn from_event(event: &Event) -> Result<Self, WorkEventError> {
        read_one(event, Self::event_type(), "ManagedClusterAddOn").map(Self)
    }
}

/// Reads an event of type `expected` whose data is `what`, into its envelope.
fn read_one<T: serde::de::DeserializeOwned>(
    event: &Event,
    expected: EventType,
    what: &'static str,
) -> Result<ClusterEnvelope<T>, WorkEventError> {
    let id = event.id().to_owned();
    let ty_str = event.ty().to_owned();
    let t = EventType::parse(&ty_str).map_err(|source| WorkEventError::Type {
        id: id.clone(),
        source,
    })?;
    if t != expected {
        return Err(WorkEventError::Build(format!(
            "event {id}: {ty_str} is not {expected} (data: {what})"
        )));
    }
    let cluster = ext::cluster_name(event)
        .map_err(|source| WorkEventError::Extension {
            id: id.clone(),
            ty: ty_str.clone(),
            source,
        })?
        .to_owned();
    let data = data_as(event, what).map_err(|source| WorkEventError::Data { id, source })?;
    Ok(ClusterEnvelope {
        header: Header {
            id: event.id().to_owned(),
            source: event.source().to_string(),
            time: event.time().copied(),
        },
        cluster,
        original_source: ext::original_source(event).unwrap_or_default().to_owned(),
        data,
    })
}
