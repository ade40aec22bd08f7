//! The agent's side of the wire protocol: parse what the hub sends, build what the agent sends,
//! on top of `ocm_edge_schemas::wire` (`works::WorkEvent`, `cluster_events::ClusterEvent`), which the
//! hub uses too.

use chrono::{DateTime, Utc};
use cloudevents::Event;
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{MicroTime, ObjectMeta};
use ocm_edge_schemas::api::work::ManifestBundleStatus;
use ocm_edge_schemas::wire::chunks::TransferOffer;
use ocm_edge_schemas::wire::cluster_events::{
    ClusterEnvelope, ClusterEvent, Presence, PresenceState,
};
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::resync::{ResourceVersion, ResourceVersionList, StatusHashList};
use ocm_edge_schemas::wire::works::{
    EMPTY_LOG_TRACING, Header, SpecEvent, SpecResyncRequest, StatusEvent, WorkEvent, WorkEventError,
};
use ocm_edge_schemas::wire::{MqttMessage, decode};

use crate::work::outbox::StatusRecord;

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

/// What the hub sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A spec event, as the wire module reads it.
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
            Inbound::Spec(Box::new(spec))
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

    /// `status.update_request` for one bundle from its outbox record: originalsource = the spec's
    /// source (maestro rejects others), resourceversion of the spec it reflects, the spec's
    /// metadata echoed, snowflake sequenceid, statushash.
    ///
    /// # Errors
    /// [`WorkEventError::Build`] when the event cannot be built (a resourceversion outside int32).
    pub fn status_event(
        &self,
        resource_id: &str,
        record: &StatusRecord,
        sequence_id: String,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        StatusEvent {
            header: self.header(now),
            action: Action::UpdateRequest,
            cluster: self.cluster.clone(),
            resource_id: resource_id.to_owned(),
            resource_version: record.envelope.resource_version,
            original_source: record.envelope.source.clone(),
            sequence_id,
            status_hash: Some(record.hash.clone()),
            metadata: record.envelope.metadata.clone(),
            log_tracing: Some(EMPTY_LOG_TRACING.to_owned()),
            status: ManifestBundleStatus::from(&record.status),
        }
        .to_event()
    }

    /// `spec.resync_request` with every bundle version held and the agent's chunked-transfer
    /// offer.
    pub fn spec_resync_request(
        &self,
        versions: Vec<ResourceVersion>,
        transfer: Option<TransferOffer>,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        SpecResyncRequest {
            header: self.header(now),
            cluster: self.cluster.clone(),
            versions: ResourceVersionList {
                resource_versions: versions,
            },
            transfer,
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

    /// The unjoin (ManagedCluster delete_request): the agent leaves the hub, having removed
    /// what it applied unless `kept_resources`.
    pub fn unjoin(
        &self,
        kept_resources: bool,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        let mut cluster = ManagedCluster::new(self.cluster.clone());
        if kept_resources {
            cluster.metadata.annotations.insert(
                ocm_edge_schemas::wire::cluster_events::KEPT_RESOURCES_ANNOTATION.to_owned(),
                "true".to_owned(),
            );
        }
        ClusterEvent::Unjoin(self.envelope(cluster, now)).to_event()
    }

    /// Asks the hub to bind `password_sha256` to `addon`'s MQTT identity on this cluster and to
    /// certify `public_key` for it (ManagedClusterAddOn status.update_request).
    pub fn addon_registration(
        &self,
        addon: &str,
        password_sha256: &str,
        public_key: &str,
        nonce: &str,
        now: DateTime<Utc>,
    ) -> Result<Event, WorkEventError> {
        let mut mca = ocm_edge_schemas::api::addon::ManagedClusterAddOn {
            metadata: ObjectMeta::namespaced(self.cluster.clone(), addon),
            ..Default::default()
        };
        mca.metadata.annotations.insert(
            ocm_edge_schemas::wire::addon_identity::PASSWORD_SHA256_ANNOTATION.to_owned(),
            password_sha256.to_owned(),
        );
        mca.metadata.annotations.insert(
            ocm_edge_schemas::wire::addon_identity::PUBLIC_KEY_ANNOTATION.to_owned(),
            public_key.to_owned(),
        );
        mca.metadata.annotations.insert(
            ocm_edge_schemas::wire::addon_identity::NONCE_ANNOTATION.to_owned(),
            nonce.to_owned(),
        );
        ocm_edge_schemas::wire::cluster_events::AddOnRegistrationEvent(self.envelope(mca, now))
            .to_event()
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

/// What the agent refuses from any source before storing a spec: the limits the hub enforces
/// hold here too, whoever published on this cluster's topic.
///
/// # Errors
/// Why the spec is refused.
pub fn admissible(spec: &SpecEvent) -> Result<(), String> {
    if spec.resource_id.trim().is_empty() {
        return Err("the event has no resourceid".to_owned());
    }
    if let Some(bundle) = &spec.bundle {
        ocm_edge_schemas::validate::validate_manifests_size(&bundle.manifests)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::outbox::Envelope;
    use ocm_edge_schemas::api::work::ManifestWorkStatus;
    use ocm_edge_schemas::wire::extensions as ext;
    use ocm_edge_schemas::wire::topic;

    /// A maestro spec's `metadata` extension, as Go writes it.
    const MAESTRO_METADATA: &str = r#"{"name":"e44ec579-9646-549a-b679-db8d19d6da37","namespace":"edge-1","uid":"55c61e54-a3f6-563d-9fec-b1fe297bdfdb","generation":4,"creationTimestamp":"2025-12-16T06:00:17Z","labels":{"maestro.resource.type":"2d18a7dc"},"annotations":{"cloudevents.open-cluster-management.io/datatype":"io.open-cluster-management.works.v1alpha1.manifestbundles"},"finalizers":["cluster.open-cluster-management.io/manifest-work-cleanup"]}"#;

    fn spec_message(metadata: Option<&str>) -> MqttMessage {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut event = SpecEvent {
            header: Header::new("maestro", now),
            action: Action::CreateRequest,
            cluster: "edge-1".into(),
            resource_id: "r1".into(),
            resource_version: 2,
            metadata: None,
            deletion_timestamp: None,
            bundle: Some(Default::default()),
            log_tracing: None,
        }
        .to_event()
        .unwrap();
        if let Some(raw) = metadata {
            event.set_extension(ext::METADATA, raw.to_owned());
        }
        ocm_edge_schemas::wire::encode(&event, topic::source_events("maestro", "edge-1").unwrap())
            .unwrap()
    }

    #[test]
    fn a_status_echoes_the_specs_metadata_extension_byte_for_byte() {
        let Inbound::Spec(spec) =
            parse_inbound(&spec_message(Some(MAESTRO_METADATA)), "edge-1").unwrap()
        else {
            panic!("not a spec")
        };
        assert_eq!(spec.generation(), 4, "metadata.generation wins");
        let id = AgentIdentity {
            cluster: "edge-1".into(),
            agent_id: "edge-1-work-agent".into(),
        };
        let record = StatusRecord {
            envelope: Envelope {
                resource_version: spec.resource_version,
                source: spec.header.source.clone(),
                metadata: spec.metadata.clone(),
            },
            status: ManifestWorkStatus::default(),
            hash: "h".into(),
            pending: true,
            confirmed: false,
            deleted: false,
        };
        let now = DateTime::from_timestamp(1_800_000_001, 0).unwrap();
        let status = id.status_event("r1", &record, "1".into(), now).unwrap();
        assert_eq!(ext::metadata_json(&status).unwrap(), MAESTRO_METADATA);
        assert_eq!(ext::original_source(&status).unwrap(), "maestro");
    }

    #[test]
    fn a_spec_without_metadata_gets_a_status_without_it_and_its_version_as_generation() {
        let Inbound::Spec(spec) = parse_inbound(&spec_message(None), "edge-1").unwrap() else {
            panic!("not a spec")
        };
        assert_eq!(spec.metadata, None);
        assert_eq!(spec.generation(), 2);
    }
}
