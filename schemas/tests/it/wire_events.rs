//! Every work and cluster event kind survives Event -> MQTT 5 -> Event -> typed form; bad messages are
//! errors that say what is wrong, never panics.

use chrono::{DateTime, TimeZone, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, ObjectMeta};
use ocm_edge_schemas::api::work::{ManifestBundle, ManifestBundleStatus};
use ocm_edge_schemas::wire::chunks::TransferOffer;
use ocm_edge_schemas::wire::cluster_events::{
    ClusterEnvelope, ClusterEvent, Presence, PresenceState,
};
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::resync::{
    ResourceVersion, ResourceVersionList, StatusHash, StatusHashList,
};
use ocm_edge_schemas::wire::works::{
    Header, SpecEvent, SpecResyncRequest, StatusEvent, StatusResyncRequest, WorkEvent,
    WorkEventError,
};
use ocm_edge_schemas::wire::{MqttMessage, WireError, decode, encode, status_hash};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

fn header(source: &str) -> Header {
    Header {
        id: format!("id-{source}"),
        source: source.to_owned(),
        time: Some(now()),
    }
}

fn bundle() -> ManifestBundle {
    serde_json::from_value(serde_json::json!({
        "manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cm", "namespace": "default"}, "data": {"k": "<v&>"}}],
        "deleteOption": {"propagationPolicy": "Foreground"}
    }))
    .unwrap()
}

fn meta() -> ObjectMeta {
    serde_json::from_value(
        serde_json::json!({"name": "web", "namespace": "c1", "uid": "rid-1", "generation": 2}),
    )
    .unwrap()
}

fn spec(action: Action, deletion: bool, with_bundle: bool) -> SpecEvent {
    SpecEvent {
        header: header("ocm-edge"),
        action,
        cluster: "c1".into(),
        resource_id: "rid-1".into(),
        resource_version: 2,
        metadata: Some(meta()),
        deletion_timestamp: deletion.then(now),
        bundle: with_bundle.then(bundle),
        log_tracing: Some("{}".into()),
    }
}

fn status(action: Action) -> StatusEvent {
    let mut c = Condition::new(
        "Applied",
        ConditionStatus::True,
        "AppliedManifestWorkComplete",
        "ok",
    );
    c.observed_generation = 2;
    StatusEvent {
        header: header("c1-work-agent"),
        action,
        cluster: "c1".into(),
        resource_id: "rid-1".into(),
        resource_version: 2,
        original_source: "ocm-edge".into(),
        sequence_id: "2000808179721572352".into(),
        status_hash: None,
        metadata: Some(meta()),
        log_tracing: None,
        status: ManifestBundleStatus {
            conditions: vec![c],
            ..Default::default()
        },
    }
}

fn over_mqtt(ev: &WorkEvent) -> WorkEvent {
    let event = ev.to_event().unwrap();
    let msg = encode(&event, "sources/ocm-edge/consumers/c1/sourceevents").unwrap();
    let back = decode(&msg).unwrap();
    assert_eq!(back, event);
    WorkEvent::from_event(&back).unwrap()
}

#[test]
fn spec_create_update_delete_and_resync_response_round_trip_over_mqtt() {
    for ev in [
        spec(Action::CreateRequest, false, true),
        spec(Action::UpdateRequest, false, true),
        spec(Action::DeleteRequest, true, true),
        spec(Action::ResyncResponse, false, true),
        // A bare delete for a bundle the hub no longer has: no data at all.
        spec(Action::ResyncResponse, true, false),
    ] {
        let we = WorkEvent::Spec(ev.clone());
        assert_eq!(over_mqtt(&we), we);
    }
}

#[test]
fn a_delete_is_recognised_by_its_deletion_timestamp() {
    let e = spec(Action::UpdateRequest, true, true).to_event().unwrap();
    let WorkEvent::Spec(s) = WorkEvent::from_event(&e).unwrap() else {
        panic!("spec expected")
    };
    assert!(s.is_delete());
    assert_eq!(
        e.extension("deletiontimestamp").map(ToString::to_string),
        Some("2026-03-01T12:00:00Z".into())
    );
}

#[test]
fn a_status_event_carries_the_go_status_hash_and_round_trips() {
    let s = status(Action::UpdateRequest);
    let e = s.to_event().unwrap();
    let expected = status_hash::bundle_status_hash(&s.status);
    assert_eq!(
        e.extension("statushash").map(ToString::to_string),
        Some(expected.clone())
    );
    let WorkEvent::Status(back) = over_mqtt(&WorkEvent::Status(s.clone())) else {
        panic!("status expected")
    };
    assert_eq!(back.status_hash.as_deref(), Some(expected.as_str()));
    assert_eq!(back.status, s.status);
    let again = over_mqtt(&WorkEvent::Status(status(Action::ResyncResponse)));
    assert!(matches!(
        again,
        WorkEvent::Status(StatusEvent {
            action: Action::ResyncResponse,
            ..
        })
    ));
}

#[test]
fn resync_requests_round_trip_with_their_lists() {
    let spec_req = WorkEvent::SpecResyncRequest(SpecResyncRequest {
        header: header("c1-work-agent"),
        cluster: "c1".into(),
        versions: ResourceVersionList {
            resource_versions: vec![ResourceVersion {
                resource_id: "rid-1".into(),
                resource_version: 2,
            }],
        },
        transfer: None,
    });
    assert_eq!(over_mqtt(&spec_req), spec_req);
    // An ocm-edge agent's chunked-transfer offer rides along as extensions.
    let with_offer = WorkEvent::SpecResyncRequest(SpecResyncRequest {
        header: header("c1-work-agent"),
        cluster: "c1".into(),
        versions: ResourceVersionList::default(),
        transfer: Some(TransferOffer {
            chunk_bytes: 16384,
            held: [("ab".repeat(32), [0, 1, 2, 7].into())].into(),
        }),
    });
    assert_eq!(over_mqtt(&with_offer), with_offer);
    let status_req = WorkEvent::StatusResyncRequest(StatusResyncRequest {
        header: header("ocm-edge"),
        cluster: "c1".into(),
        hashes: StatusHashList {
            status_hashes: vec![StatusHash {
                resource_id: "rid-1".into(),
                status_hash: "ab".into(),
            }],
        },
    });
    assert_eq!(over_mqtt(&status_req), status_req);
    // An empty list still means "send everything" and survives the trip.
    let empty = WorkEvent::StatusResyncRequest(StatusResyncRequest {
        header: header("ocm-edge"),
        cluster: "c1".into(),
        hashes: StatusHashList::default(),
    });
    assert_eq!(over_mqtt(&empty), empty);
}

#[test]
fn resync_requests_use_empty_originalsource_and_spec_events_the_source_id() {
    let e = SpecResyncRequest {
        header: header("agent"),
        cluster: "c1".into(),
        versions: ResourceVersionList::default(),
        transfer: None,
    }
    .to_event()
    .unwrap();
    assert_eq!(
        e.extension("originalsource").map(ToString::to_string),
        Some(String::new())
    );
    let msg = encode(&e, "sources/ocm-edge/consumers/c1/agentevents").unwrap();
    assert_eq!(msg.payload, br#"{"resourceVersions":[]}"#);
}

#[test]
fn other_data_types_and_odd_actions_are_unknown_not_errors() {
    let mut e = spec(Action::CreateRequest, false, true).to_event().unwrap();
    use cloudevents::AttributesWriter;
    e.set_type("io.open-cluster-management.works.v1alpha1.manifestbundles.status.create_request");
    assert!(matches!(
        WorkEvent::from_event(&e),
        Ok(WorkEvent::Unknown { .. })
    ));
    e.set_type("io.example.v1.things.spec.create_request");
    assert!(matches!(
        WorkEvent::from_event(&e),
        Ok(WorkEvent::Unknown { .. })
    ));
    e.set_type("nonsense");
    assert!(matches!(
        WorkEvent::from_event(&e),
        Err(WorkEventError::Type { .. })
    ));
}

#[test]
fn malformed_work_events_say_what_is_missing() {
    let mut e = spec(Action::CreateRequest, false, true).to_event().unwrap();
    e.remove_extension("resourceid");
    let err = WorkEvent::from_event(&e).unwrap_err();
    assert!(err.to_string().contains("resourceid"), "{err}");

    let mut e = spec(Action::CreateRequest, false, false)
        .to_event()
        .unwrap();
    let err = WorkEvent::from_event(&e).unwrap_err();
    assert!(matches!(err, WorkEventError::MissingBundle { .. }), "{err}");

    e.set_data(
        "application/json",
        serde_json::json!({"manifests": "not a list"}),
    );
    let err = WorkEvent::from_event(&e).unwrap_err();
    assert!(err.to_string().contains("ManifestBundle"), "{err}");

    let mut e = spec(Action::CreateRequest, false, true).to_event().unwrap();
    e.set_extension("resourceversion", 3_000_000_000i64);
    let err = WorkEvent::from_event(&e).unwrap_err();
    assert!(err.to_string().contains("int32"), "{err}");
}

#[test]
fn the_legacy_content_type_user_property_is_read() {
    let e = spec(Action::CreateRequest, false, true).to_event().unwrap();
    let mut msg = encode(&e, "t").unwrap();
    msg.content_type = None;
    msg.user_properties
        .push(("Content-Type".into(), "application/json".into()));
    assert_eq!(decode(&msg).unwrap(), e);
}

#[test]
fn bad_messages_are_errors_not_panics() {
    let good = encode(
        &spec(Action::CreateRequest, false, true).to_event().unwrap(),
        "t",
    )
    .unwrap();

    let mut m = good.clone();
    m.user_properties.retain(|(k, _)| k != "ce-specversion");
    assert_eq!(decode(&m), Err(WireError::NotBinaryMode));

    let mut m = good.clone();
    m.user_properties.push(("ce-bad_name".into(), "x".into()));
    assert_eq!(
        decode(&m),
        Err(WireError::BadExtensionName("bad_name".into()))
    );

    let mut m = good.clone();
    m.payload = vec![0xff, 0xfe, b'{'];
    assert!(matches!(decode(&m), Err(WireError::BadJsonPayload { .. })));

    let mut m = good.clone();
    m.payload = b"{\"manifests\": [".to_vec();
    let err = decode(&m).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");

    let mut m = good.clone();
    m.user_properties.retain(|(k, _)| k != "ce-id");
    assert_eq!(decode(&m), Err(WireError::MissingAttribute("id")));

    let mut m = good.clone();
    m.user_properties
        .push(("ce-specversion".into(), "2.0".into()));
    assert!(matches!(
        decode(&m),
        Err(WireError::UnsupportedSpecVersion(_))
    ));

    let mut m = good.clone();
    m.user_properties
        .push(("ce-time".into(), "yesterday".into()));
    let err = decode(&m).unwrap_err();
    assert!(err.to_string().contains("ce-time"), "{err}");

    assert!(matches!(
        MqttMessage::from_raw_parts(&[0xff, b'/'], vec![], None, vec![]),
        Err(WireError::TopicNotUtf8(_))
    ));
}

#[test]
fn events_with_extension_names_go_would_drop_are_refused_on_encode() {
    let mut e = spec(Action::CreateRequest, false, true).to_event().unwrap();
    e.set_extension("bad-name", "x");
    assert_eq!(
        encode(&e, "t"),
        Err(WireError::BadExtensionName("bad-name".into()))
    );
}

#[test]
fn cluster_events_round_trip_over_mqtt() {
    let cluster: ManagedCluster = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "c1", "labels": {"env": "prod"}},
        "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60}
    }))
    .unwrap();
    let lease: Lease = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "managed-cluster-lease", "namespace": "c1"},
        "spec": {"holderIdentity": "c1", "leaseDurationSeconds": 60,
                 "renewTime": "2026-03-01T12:00:00.000000Z"}
    }))
    .unwrap();
    let env = |data| ClusterEnvelope {
        header: header("c1-agent"),
        cluster: "c1".to_owned(),
        original_source: String::new(),
        data,
    };
    let events = [
        ClusterEvent::JoinRequest(env(cluster.clone())),
        ClusterEvent::HubView(ClusterEnvelope {
            original_source: "ocm-edge".into(),
            ..env(cluster.clone())
        }),
        ClusterEvent::Status(env(cluster)),
        ClusterEvent::Lease(ClusterEnvelope {
            header: header("c1-agent"),
            cluster: "c1".into(),
            original_source: String::new(),
            data: lease,
        }),
        ClusterEvent::Presence(ClusterEnvelope {
            header: header("c1-agent"),
            cluster: "c1".into(),
            original_source: String::new(),
            data: Presence {
                state: PresenceState::Offline,
                connection_seq: 7,
            },
        }),
    ];
    for ev in events {
        let e = ev.to_event().unwrap();
        assert!(ClusterEvent::is_cluster_event_type(
            cloudevents::AttributesReader::ty(&e)
        ));
        let back =
            decode(&encode(&e, "sources/ocm-edge/consumers/c1/agentevents").unwrap()).unwrap();
        assert_eq!(ClusterEvent::from_event(&back).unwrap(), ev);
    }
}

#[test]
fn presence_payload_is_the_documented_json() {
    let p = Presence {
        state: PresenceState::Online,
        connection_seq: 3,
    };
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"state":"online","connectionSeq":3}"#
    );
}

#[test]
fn the_mqtt_content_type_wins_over_user_properties() {
    let e = spec(Action::CreateRequest, false, true).to_event().unwrap();
    let mut msg = encode(&e, "t").unwrap();
    msg.user_properties
        .push(("Content-Type".into(), "text/plain".into()));
    assert_eq!(decode(&msg).unwrap(), e);
    // Without either, a ce-datacontenttype property is still honoured.
    msg.content_type = None;
    msg.user_properties.retain(|(k, _)| k != "Content-Type");
    msg.user_properties
        .push(("ce-datacontenttype".into(), "application/json".into()));
    assert_eq!(decode(&msg).unwrap(), e);
}
