//! Every event the wire module builds matches the AsyncAPI message that documents it (headers and
//! payload), and the extensions documented as required are exactly those receivers refuse to miss.

use crate::contracts_kit;

use contracts_kit::{assert_valid, schemas_dir, vector_data};

use chrono::{TimeZone, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::placement::{AddOnPlacementScore, AddOnPlacementScoreItem};
use ocm_edge_schemas::api::work::{ManifestBundle, ManifestBundleStatus};
use ocm_edge_schemas::contracts::catalog::{self, Envelope, MessageSpec, Need};
use ocm_edge_schemas::contracts::{JSON_DIR, asyncapi};
use ocm_edge_schemas::wire::cluster_events::{
    AddOnPlacementScoreEvent, AddOnRegistrationEvent, ClusterEnvelope, ClusterEvent, Presence,
    PresenceState,
};
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::resync::{
    ResourceVersion, ResourceVersionList, StatusHash, StatusHashList,
};
use ocm_edge_schemas::wire::works::{
    Header, SpecEvent, SpecResyncRequest, StatusEvent, StatusResyncRequest, WorkEvent,
};
use ocm_edge_schemas::wire::{self, MqttMessage};
use serde_json::{Map, Value};

const HUB_TOPIC: &str = "sources/ocm-edge/consumers/edge-1/sourceevents";
const AGENT_TOPIC: &str = "sources/ocm-edge/consumers/edge-1/agentevents";

fn header(source: &str) -> Header {
    Header::new(
        source,
        Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap(),
    )
}

fn bundle() -> ManifestBundle {
    serde_json::from_value(vector_data("cloudevents.spec.maestro.json")).unwrap()
}

fn bundle_status() -> ManifestBundleStatus {
    serde_json::from_value(vector_data("cloudevents.agent.json")).unwrap()
}

fn spec(action: Action, bundle: Option<ManifestBundle>, deleting: bool) -> WorkEvent {
    WorkEvent::Spec(SpecEvent {
        header: header("ocm-edge"),
        action,
        cluster: "edge-1".into(),
        resource_id: "55c61e54-a3f6-563d-9fec-b1fe297bdfdb".into(),
        resource_version: 3,
        metadata: None,
        deletion_timestamp: deleting.then(|| Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 1).unwrap()),
        bundle,
        log_tracing: Some("{}".into()),
    })
}

fn status(action: Action) -> WorkEvent {
    WorkEvent::Status(StatusEvent {
        header: header("edge-1-work-agent"),
        action,
        cluster: "edge-1".into(),
        resource_id: "55c61e54-a3f6-563d-9fec-b1fe297bdfdb".into(),
        resource_version: 3,
        original_source: "ocm-edge".into(),
        sequence_id: "2000808179721572352".into(),
        status_hash: None,
        metadata: None,
        log_tracing: None,
        status: bundle_status(),
    })
}

fn cluster_env<T>(data: T, original_source: &str) -> ClusterEnvelope<T> {
    ClusterEnvelope {
        header: header("edge-1-agent"),
        cluster: "edge-1".into(),
        original_source: original_source.into(),
        data,
    }
}

fn score() -> AddOnPlacementScore {
    let mut score = AddOnPlacementScore::default();
    score.metadata.name = "resource-usage".into();
    score.metadata.namespace = "edge-1".into();
    score.status.scores = vec![AddOnPlacementScoreItem {
        name: "cpuAvailable".into(),
        value: 66,
    }];
    score
}

fn lease() -> Lease {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "edge-1", "namespace": "edge-1"},
        "spec": {"holderIdentity": "edge-1-agent", "leaseDurationSeconds": 60,
                 "renewTime": "2026-11-21T12:00:00.000000Z"}
    }))
    .unwrap()
}

/// (message id, topic, encoded event) for every event type the wire module builds.
fn every_event() -> Vec<(&'static str, &'static str, MqttMessage)> {
    let work = |e: WorkEvent| e.to_event().unwrap();
    let cluster = |e: ClusterEvent| e.to_event().unwrap();
    let presence = |state| Presence {
        state,
        connection_seq: 4,
    };
    vec![
        (
            "workSpecCreate",
            HUB_TOPIC,
            work(spec(Action::CreateRequest, Some(bundle()), false)),
        ),
        (
            "workSpecUpdate",
            HUB_TOPIC,
            work(spec(Action::UpdateRequest, Some(bundle()), false)),
        ),
        (
            "workSpecDelete",
            HUB_TOPIC,
            work(spec(Action::DeleteRequest, None, true)),
        ),
        (
            "workSpecResyncResponse",
            HUB_TOPIC,
            work(spec(Action::ResyncResponse, Some(bundle()), false)),
        ),
        (
            "workSpecResyncRequest",
            AGENT_TOPIC,
            work(WorkEvent::SpecResyncRequest(SpecResyncRequest {
                header: header("edge-1-work-agent"),
                cluster: "edge-1".into(),
                versions: ResourceVersionList {
                    resource_versions: vec![ResourceVersion {
                        resource_id: "r1".into(),
                        resource_version: 2,
                    }],
                },
                transfer: None,
            })),
        ),
        (
            "workStatusUpdate",
            AGENT_TOPIC,
            work(status(Action::UpdateRequest)),
        ),
        (
            "workStatusResyncResponse",
            AGENT_TOPIC,
            work(status(Action::ResyncResponse)),
        ),
        (
            "workStatusResyncRequest",
            HUB_TOPIC,
            work(WorkEvent::StatusResyncRequest(StatusResyncRequest {
                header: header("ocm-edge"),
                cluster: "edge-1".into(),
                hashes: StatusHashList {
                    status_hashes: vec![StatusHash {
                        resource_id: "r1".into(),
                        status_hash: "ab".into(),
                    }],
                },
            })),
        ),
        (
            "clusterJoinRequest",
            AGENT_TOPIC,
            cluster(ClusterEvent::JoinRequest(cluster_env(
                ManagedCluster::new("edge-1"),
                "",
            ))),
        ),
        (
            "clusterUnjoin",
            AGENT_TOPIC,
            cluster(ClusterEvent::Unjoin(cluster_env(
                ManagedCluster::new("edge-1"),
                "",
            ))),
        ),
        (
            "clusterHubView",
            HUB_TOPIC,
            cluster(ClusterEvent::HubView(cluster_env(
                ManagedCluster::new("edge-1"),
                "ocm-edge",
            ))),
        ),
        (
            "clusterStatus",
            AGENT_TOPIC,
            cluster(ClusterEvent::Status(cluster_env(
                ManagedCluster::new("edge-1"),
                "",
            ))),
        ),
        (
            "leaseRenew",
            AGENT_TOPIC,
            cluster(ClusterEvent::Lease(cluster_env(lease(), ""))),
        ),
        (
            "addOnPlacementScore",
            AGENT_TOPIC,
            AddOnPlacementScoreEvent(cluster_env(score(), ""))
                .to_event()
                .unwrap(),
        ),
        (
            "addOnRegistration",
            AGENT_TOPIC,
            AddOnRegistrationEvent(cluster_env(
                {
                    let mut mca = ocm_edge_schemas::api::addon::ManagedClusterAddOn {
                        metadata: ocm_edge_schemas::api::meta::ObjectMeta::namespaced(
                            "edge-1", "hello",
                        ),
                        ..Default::default()
                    };
                    mca.metadata.annotations.insert(
                        ocm_edge_schemas::wire::addon_identity::PASSWORD_SHA256_ANNOTATION
                            .to_owned(),
                        ocm_edge_schemas::wire::addon_identity::password_sha256("pw"),
                    );
                    mca
                },
                "",
            ))
            .to_event()
            .unwrap(),
        ),
        (
            "presenceBirth",
            AGENT_TOPIC,
            cluster(ClusterEvent::Presence(cluster_env(
                presence(PresenceState::Online),
                "",
            ))),
        ),
        (
            "presenceWill",
            AGENT_TOPIC,
            cluster(ClusterEvent::Presence(cluster_env(
                presence(PresenceState::Offline),
                "",
            ))),
        ),
    ]
    .into_iter()
    .map(|(id, topic, event)| (id, topic, wire::encode(&event, topic).unwrap()))
    .collect()
}

fn headers(msg: &MqttMessage) -> Value {
    let map: Map<String, Value> = msg
        .user_properties
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Value::Object(map)
}

fn payload_schema(spec: &MessageSpec) -> Value {
    let path = schemas_dir().join(JSON_DIR).join(spec.payload);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_cloudevent_message_of_the_catalog_is_built_by_the_wire_module() {
    let built: Vec<&str> = every_event().iter().map(|(id, _, _)| *id).collect();
    for m in catalog::catalog().messages {
        if matches!(m.envelope, Envelope::CloudEvent { .. }) {
            assert!(built.contains(&m.id), "no test event for {}", m.id);
        }
    }
}

#[test]
fn every_built_event_matches_its_documented_headers_topic_and_payload() {
    let cat = catalog::catalog();
    let doc = asyncapi::asyncapi(&cat);
    for (id, topic, msg) in every_event() {
        let documented = &doc["components"]["messages"][id];
        assert_valid(&documented["headers"], &headers(&msg), id);
        let channel = cat
            .channels
            .iter()
            .find(|c| {
                c.messages.contains(&id) && topic.ends_with(c.address.rsplit('/').next().unwrap())
            })
            .unwrap_or_else(|| panic!("{id} is not documented on {topic}"));
        assert!(channel.messages.contains(&id));
        let spec = cat.message(id).unwrap();
        if !msg.payload.is_empty() {
            let data: Value = serde_json::from_slice(&msg.payload).unwrap();
            assert_valid(&payload_schema(spec), &data, id);
        }
    }
}

fn decodes(msg: &MqttMessage) -> bool {
    let Ok(event) = wire::decode(msg) else {
        return false;
    };
    if ClusterEvent::is_cluster_event_type(event.ty()) {
        ClusterEvent::from_event(&event).is_ok()
    } else if AddOnPlacementScoreEvent::is_score_event_type(event.ty()) {
        AddOnPlacementScoreEvent::from_event(&event).is_ok()
    } else if AddOnRegistrationEvent::is_registration_event_type(event.ty()) {
        AddOnRegistrationEvent::from_event(&event).is_ok()
    } else {
        matches!(WorkEvent::from_event(&event), Ok(e) if !matches!(e, WorkEvent::Unknown { .. }))
    }
}

use cloudevents::AttributesReader as _;

#[test]
fn extensions_documented_as_required_are_the_ones_receivers_require() {
    let cat = catalog::catalog();
    for (id, _, msg) in every_event() {
        assert!(decodes(&msg), "{id} as built does not decode");
        let Envelope::CloudEvent { extensions, .. } = &cat.message(id).unwrap().envelope else {
            unreachable!("every_event only builds CloudEvents");
        };
        for (name, need) in extensions {
            let prop = format!("ce-{name}");
            if !msg.user_properties.iter().any(|(k, _)| *k == prop) {
                assert_eq!(
                    *need,
                    Need::Optional,
                    "{id} is built without required {name}"
                );
                continue;
            }
            let mut without = msg.clone();
            without.user_properties.retain(|(k, _)| *k != prop);
            assert_eq!(
                decodes(&without),
                *need == Need::Optional,
                "{id} without {name}: documented as {need:?}"
            );
        }
    }
}
