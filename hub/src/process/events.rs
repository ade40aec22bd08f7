//! CloudEvents in and out of the core: received MQTT messages become [`AgentInput`]s, the core's
//! [`Outbound`] messages become MQTT messages.
//!
//! Work events go through `ocm_edge_schemas::wire::works`, the ocm-edge cluster events (join
//! request, hub view, cluster status, lease, presence; CONTRACTS.md) through
//! `ocm_edge_schemas::wire::cluster_events`: the agent uses the same code.

use chrono::{DateTime, Utc};
use cloudevents::{AttributesReader, Event};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::cluster_events::{
    AddOnPlacementScoreEvent, AddOnRegistrationEvent, ClusterEnvelope, ClusterEvent, PresenceState,
};
use ocm_edge_schemas::wire::event_type::{EventType, MANIFEST_BUNDLES};
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::status_hash::bundle_status_hash;
use ocm_edge_schemas::wire::topic::{self, Topic};
use ocm_edge_schemas::wire::works::{Header, StatusResyncRequest, WorkEvent};

use crate::core::{AgentInput, Outbound, Presence};
use crate::pki::signing::EventSigner;

/// Why an agent message was dropped. Not retryable: the sender must fix it.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("topic {0:?} is not an agent topic of this hub")]
    Topic(String),
    #[error("not a CloudEvent: {0}")]
    Wire(#[from] ocm_edge_schemas::wire::WireError),
    #[error("event {id}: bad type {ty:?}: {reason}")]
    Type {
        id: String,
        ty: String,
        reason: String,
    },
    #[error("event {id}: clustername {claimed:?} does not match the topic's cluster {topic:?}")]
    ClusterMismatch {
        id: String,
        claimed: String,
        topic: String,
    },
    #[error("{0}")]
    Work(#[from] ocm_edge_schemas::wire::works::WorkEventError),
    #[error("event {id} ({ty}): {reason}")]
    Payload {
        id: String,
        ty: String,
        reason: String,
    },
    #[error("cannot build event: {0}")]
    Build(String),
}

/// The cluster an agent topic belongs to (`sources/S/consumers/C/agentevents` or
/// `sources/C/agentbroadcast`), or `None` for another topic.
pub fn agent_topic_cluster(source_id: &str, topic_name: &str) -> Option<String> {
    match Topic::parse(topic_name).ok()? {
        Topic::AgentEvents { source, cluster } if source == source_id => Some(cluster),
        Topic::AgentBroadcast { cluster } => Some(cluster),
        _ => None,
    }
}

/// Decodes a message received on an agent topic. `Ok(None)`: a well-formed event the hub does not
/// handle (another data type or action).
///
/// # Errors
/// [`EventError`] saying what is wrong; the caller warns, counts and drops.
pub fn decode_agent_message(
    source_id: &str,
    msg: &MqttMessage,
) -> Result<Option<AgentInput>, EventError> {
    let cluster = agent_topic_cluster(source_id, &msg.topic)
        .ok_or_else(|| EventError::Topic(msg.topic.clone()))?;
    let event = ocm_edge_schemas::wire::decode(msg)?;
    decode_agent_event(&cluster, &event)
}

/// Decodes one agent event received on `cluster`'s topic.
///
/// # Errors
/// [`EventError`] saying what is wrong.
pub fn decode_agent_event(cluster: &str, event: &Event) -> Result<Option<AgentInput>, EventError> {
    let id = event.id().to_owned();
    let ty_str = event.ty().to_owned();
    let ty = EventType::parse(&ty_str).map_err(|e| EventError::Type {
        id: id.clone(),
        ty: ty_str.clone(),
        reason: e.to_string(),
    })?;
    // The topic says who sent it (brokers with ACLs enforce topics, not payloads).
    if let Ok(claimed) = ext::cluster_name(event)
        && claimed != cluster
    {
        return Err(EventError::ClusterMismatch {
            id,
            claimed: claimed.to_owned(),
            topic: cluster.to_owned(),
        });
    }
    let cluster = cluster.to_owned();
    if ty.data_type == MANIFEST_BUNDLES {
        return Ok(match WorkEvent::from_event(event)? {
            WorkEvent::Status(mut s) => {
                // Equal to the topic's (checked above); the topic is what a broker enforces.
                s.cluster = cluster;
                // Hashed here, where the event is decoded (an intake task), not on the hub task.
                let hash = bundle_status_hash(&s.status);
                Some(AgentInput::WorkStatus {
                    event: Box::new(s),
                    hash,
                })
            }
            WorkEvent::SpecResyncRequest(r) => Some(AgentInput::SpecResyncRequest {
                cluster,
                versions: r.versions,
                transfer: r.transfer,
            }),
            // Spec events and status resync requests are what the hub sends, not receives.
            _ => None,
        });
    }
    if AddOnPlacementScoreEvent::is_score_event_type(&ty_str) {
        let AddOnPlacementScoreEvent(env) = AddOnPlacementScoreEvent::from_event(event)?;
        return Ok(Some(AgentInput::AddOnScore {
            cluster,
            score: Box::new(env.data),
        }));
    }
    if AddOnRegistrationEvent::is_registration_event_type(&ty_str) {
        let AddOnRegistrationEvent(env) = AddOnRegistrationEvent::from_event(event)?;
        let mut mca = env.data;
        if !mca.metadata.namespace.is_empty() && mca.metadata.namespace != cluster {
            return Err(EventError::ClusterMismatch {
                id,
                claimed: mca.metadata.namespace,
                topic: cluster,
            });
        }
        return Ok(Some(AgentInput::AddOnRegistration {
            cluster,
            addon: std::mem::take(&mut mca.metadata.name),
            password_sha256: mca
                .metadata
                .annotations
                .remove(ocm_edge_schemas::wire::addon_identity::PASSWORD_SHA256_ANNOTATION)
                .unwrap_or_default(),
            public_key: mca
                .metadata
                .annotations
                .remove(ocm_edge_schemas::wire::addon_identity::PUBLIC_KEY_ANNOTATION)
                .unwrap_or_default(),
            nonce: mca
                .metadata
                .annotations
                .remove(ocm_edge_schemas::wire::addon_identity::NONCE_ANNOTATION)
                .unwrap_or_default(),
        }));
    }
    if !ClusterEvent::is_cluster_event_type(&ty_str) {
        return Ok(None);
    }
    Ok(match ClusterEvent::from_event(event)? {
        ClusterEvent::JoinRequest(env) => Some(AgentInput::JoinRequest {
            cluster,
            request: Box::new(env.data),
        }),
        ClusterEvent::Status(env) => Some(AgentInput::ClusterStatus {
            cluster,
            status: Box::new(env.data.status),
        }),
        ClusterEvent::Lease(env) => Some(AgentInput::LeaseRenewal {
            cluster,
            lease: Box::new(env.data),
        }),
        ClusterEvent::Presence(env) => Some(AgentInput::Presence {
            cluster,
            presence: Presence {
                online: env.data.state == PresenceState::Online,
                connection_seq: env.data.connection_seq,
            },
            // A malformed offer costs the offer, not the birth.
            transfer: ocm_edge_schemas::wire::chunks::TransferOffer::from_event(event)
                .inspect_err(|e| tracing::warn!(error = %e, "chunked-transfer offer ignored"))
                .ok()
                .flatten(),
        }),
        ClusterEvent::Unjoin(env) => Some(AgentInput::Unjoin {
            cluster,
            kept_resources: env
                .data
                .metadata
                .annotations
                .get(ocm_edge_schemas::wire::cluster_events::KEPT_RESOURCES_ANNOTATION)
                .is_some_and(|v| v == "true"),
        }),
        // The hub's own view coming back, or a type we do not handle.
        ClusterEvent::HubView(_) | ClusterEvent::Unknown { .. } => None,
    })
}

/// The MQTT message for one outbound item.
///
/// # Errors
/// [`EventError::Build`] when a name is not valid in a topic or the event cannot be built.
pub fn encode_outbound(
    source_id: &str,
    out: &Outbound,
    now: DateTime<Utc>,
    signer: &EventSigner,
) -> Result<MqttMessage, EventError> {
    let build = |e: &dyn std::fmt::Display| EventError::Build(e.to_string());
    let (cluster, event) = match out {
        Outbound::HubView(view) => {
            let cluster = view.metadata.name.clone();
            let event = ClusterEvent::HubView(ClusterEnvelope {
                header: Header::new(source_id, now),
                cluster: cluster.clone(),
                original_source: source_id.to_owned(),
                data: (**view).clone(),
            })
            .to_event()
            .map_err(|e| build(&e))?;
            (cluster, event)
        }
        // The core stamped the spec event's header when it decided to send it.
        Outbound::Spec(spec) => (
            spec.cluster.clone(),
            spec.to_event().map_err(|e| build(&e))?,
        ),
        Outbound::StatusResyncRequest { cluster, hashes } => (
            cluster.clone(),
            StatusResyncRequest {
                header: Header::new(source_id, now),
                cluster: cluster.clone(),
                hashes: hashes.clone(),
            }
            .to_event()
            .map_err(|e| build(&e))?,
        ),
    };
    let topic = topic::source_events(source_id, &cluster).map_err(|e| build(&e))?;
    let mut msg = ocm_edge_schemas::wire::encode(&event, topic).map_err(|e| build(&e))?;
    // Hub views carry the signing certificate: that is where agents learn the key.
    signer.sign(&mut msg, matches!(out, Outbound::HubView(_)));
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::{t, work_input};
    use cloudevents::AttributesWriter;
    use ocm_edge_schemas::api::meta::ObjectMeta;
    use ocm_edge_schemas::api::work::ManifestBundle;
    use ocm_edge_schemas::wire::event_type::Action;
    use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
    use ocm_edge_schemas::wire::resync::StatusHashList;
    use ocm_edge_schemas::wire::works::SpecEvent;

    /// A signer with a CA of its own, in a directory removed when the test ends.
    fn test_signer() -> EventSigner {
        let dir = tempfile::tempdir().unwrap();
        let pki = crate::pki::HubPki::load_or_create(&dir.path().join("pki"), t(0)).unwrap();
        EventSigner::load_or_create(&pki, t(0)).unwrap()
    }

    /// Builds events for ocm-edge's own data types with the work events' header.
    trait HeaderExt {
        fn event_for(&self, ty: EventType) -> Event;
    }

    impl HeaderExt for Header {
        fn event_for(&self, ty: EventType) -> Event {
            let mut e = Event::default();
            e.set_id(self.id.clone());
            e.set_source(self.source.clone());
            e.set_type(ty.to_string());
            e.set_time(self.time);
            e
        }
    }

    fn agent_event(ty: &str, cluster: &str, data: serde_json::Value) -> MqttMessage {
        let mut e = Header::new("agent", t(0)).event_for(EventType::parse(ty).unwrap());
        ext::set_cluster_name(&mut e, cluster);
        ext::set_original_source(&mut e, "");
        e.set_data(APPLICATION_JSON, data);
        ocm_edge_schemas::wire::encode(&e, topic::agent_events("ocm-edge", cluster).unwrap())
            .unwrap()
    }

    #[test]
    fn a_join_request_decodes_with_its_labels() {
        let msg = agent_event(
            "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
            "edge-1",
            serde_json::json!({"metadata": {"name": "edge-1", "labels": {"env": "prod"}},
                               "spec": {"leaseDurationSeconds": 30}}),
        );
        let Some(AgentInput::JoinRequest { cluster, request }) =
            decode_agent_message("ocm-edge", &msg).unwrap()
        else {
            panic!("not a join request")
        };
        assert_eq!(cluster, "edge-1");
        assert_eq!(request.metadata.labels["env"], "prod");
        assert_eq!(request.spec.lease_duration_seconds, 30);
    }

    #[test]
    fn presence_and_lease_events_decode() {
        let msg = agent_event(
            "edge.open-cluster-management.io.v1alpha1.presences.status.update_request",
            "edge-1",
            serde_json::json!({"state": "offline", "connectionSeq": 4}),
        );
        assert_eq!(
            decode_agent_message("ocm-edge", &msg).unwrap(),
            Some(AgentInput::Presence {
                cluster: "edge-1".into(),
                presence: Presence {
                    online: false,
                    connection_seq: 4
                },
                transfer: None,
            })
        );
        let msg = agent_event(
            "coordination.k8s.io.v1.leases.spec.update_request",
            "edge-1",
            serde_json::json!({"spec": {"leaseDurationSeconds": 60}}),
        );
        assert!(matches!(
            decode_agent_message("ocm-edge", &msg).unwrap(),
            Some(AgentInput::LeaseRenewal { .. })
        ));
    }

    #[test]
    fn an_addon_placement_score_decodes_for_the_topics_cluster() {
        let msg = agent_event(
            "cluster.open-cluster-management.io.v1alpha1.addonplacementscores.status.update_request",
            "edge-1",
            serde_json::json!({"metadata": {"name": "cpu-ratio"},
                               "status": {"scores": [{"name": "cpuAvailable", "value": 66}]}}),
        );
        let Some(AgentInput::AddOnScore { cluster, score }) =
            decode_agent_message("ocm-edge", &msg).unwrap()
        else {
            panic!("not a score")
        };
        assert_eq!(cluster, "edge-1");
        assert_eq!(score.status.scores[0].value, 66);
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        let good = agent_event(
            "coordination.k8s.io.v1.leases.spec.update_request",
            "edge-1",
            serde_json::json!({"spec": {}}),
        );
        let mut not_ce = good.clone();
        not_ce.user_properties.clear();
        let mut bad_json = good.clone();
        bad_json.payload = b"{not json".to_vec();
        let mut spoofed = good.clone();
        spoofed.topic = topic::agent_events("ocm-edge", "edge-2").unwrap();
        let mut other_source = good.clone();
        other_source.topic = topic::agent_events("maestro", "edge-1").unwrap();
        let bad_presence = agent_event(
            "edge.open-cluster-management.io.v1alpha1.presences.status.update_request",
            "edge-1",
            serde_json::json!({"state": "sleepy"}),
        );
        let bad_status = agent_event(
            "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request",
            "edge-1",
            serde_json::json!({"conditions": "nope"}),
        );
        for (name, msg) in [
            ("not a cloudevent", not_ce),
            ("bad json", bad_json),
            ("spoofed cluster", spoofed),
            ("other source", other_source),
            ("bad presence", bad_presence),
            ("bad status", bad_status),
        ] {
            assert!(decode_agent_message("ocm-edge", &msg).is_err(), "{name}");
        }
    }

    #[test]
    fn spec_messages_encode_to_the_clusters_sourceevents_and_decode_as_work_events() {
        let bundle = ManifestBundle::from(work_input("web", 1).spec.as_ref());
        let spec = SpecEvent {
            header: Header::new("ocm-edge", t(1)),
            action: Action::UpdateRequest,
            cluster: "edge-1".into(),
            resource_id: "id-1".into(),
            resource_version: 3,
            metadata: Some(ObjectMeta {
                name: "web".into(),
                namespace: "edge-1".into(),
                uid: "id-1".into(),
                generation: 3,
                creation_timestamp: Some(crate::core::time(t(0))),
                ..ObjectMeta::default()
            }),
            deletion_timestamp: None,
            bundle: Some(bundle.clone()),
            log_tracing: Some(ocm_edge_schemas::wire::works::EMPTY_LOG_TRACING.to_owned()),
        };
        let signer = test_signer();
        let msg =
            encode_outbound("ocm-edge", &Outbound::Spec(Box::new(spec)), t(1), &signer).unwrap();
        assert_eq!(msg.topic, "sources/ocm-edge/consumers/edge-1/sourceevents");
        let event = ocm_edge_schemas::wire::decode(&msg).unwrap();
        let WorkEvent::Spec(s) = WorkEvent::from_event(&event).unwrap() else {
            panic!("not a spec event")
        };
        assert_eq!(s.resource_version, 3);
        assert_eq!(s.bundle, Some(bundle));
        assert_eq!(s.metadata.unwrap().name, "web");

        let msg = encode_outbound(
            "ocm-edge",
            &Outbound::StatusResyncRequest {
                cluster: "edge-1".into(),
                hashes: StatusHashList::default(),
            },
            t(1),
            &signer,
        )
        .unwrap();
        let event = ocm_edge_schemas::wire::decode(&msg).unwrap();
        assert!(matches!(
            WorkEvent::from_event(&event).unwrap(),
            WorkEvent::StatusResyncRequest(_)
        ));
    }
}
