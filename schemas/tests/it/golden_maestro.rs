//! Golden tests on events captured from maestro (in `schemas/tests/fixtures/vectors/maestro/`).

use cloudevents::{AttributesReader, Data};
use ocm_edge_schemas::api::work::{ManifestBundle, ManifestBundleStatus, ManifestWorkStatus};
use ocm_edge_schemas::wire::event_type::{Action, EventType, MANIFEST_BUNDLES, SubResource};
use ocm_edge_schemas::wire::works::WorkEvent;
use ocm_edge_schemas::wire::{extensions as ext, mqtt, status_hash, structured, topic};

const SPEC: &[u8] = include_bytes!("../fixtures/vectors/maestro/cloudevents.spec.maestro.json");
const STATUS: &[u8] = include_bytes!("../fixtures/vectors/maestro/cloudevents.agent.json");
const VECTOR_HASH: &str = "6170884280acbd9d5e69ac59a00ef7cf84d50669621643782e7a3f1ab05836cf";

#[test]
fn both_maestro_events_parse_with_their_types_and_extensions() {
    let spec = structured::parse(SPEC).unwrap();
    let t = EventType::parse(spec.ty()).unwrap();
    assert_eq!(t.data_type, MANIFEST_BUNDLES);
    assert_eq!(
        (t.sub_resource, t.action),
        (SubResource::Spec, Action::CreateRequest)
    );
    assert_eq!(ext::resource_version(&spec), Ok(1));
    assert_eq!(ext::original_source(&spec), Ok(""));
    assert_eq!(
        ext::cluster_name(&spec),
        Ok("7ff1a8f4-8811-49b4-8c19-9271bc51975e")
    );

    let status = structured::parse(STATUS).unwrap();
    assert_eq!(ext::original_source(&status), Ok("maestro"));
    assert_eq!(ext::sequence_id(&status), Ok("2000808179721572352"));
    assert_eq!(ext::status_hash(&status), Ok(VECTOR_HASH));
}

#[test]
fn the_status_event_data_reshaped_as_a_work_status_hashes_to_its_statushash() {
    let status = structured::parse(STATUS).unwrap();
    let Some(Data::Json(data)) = status.data() else {
        panic!("status data should be JSON")
    };
    let bundle: ManifestBundleStatus = serde_json::from_value(data.clone()).unwrap();
    let work_status = ManifestWorkStatus::from(&bundle);
    assert_eq!(status_hash::status_hash(&work_status), VECTOR_HASH);
    assert_eq!(status_hash::bundle_status_hash(&bundle), VECTOR_HASH);

    // The same through WorkEvent, which the hub uses.
    let WorkEvent::Status(ev) = WorkEvent::from_event(&status).unwrap() else {
        panic!("expected a status event")
    };
    assert_eq!(status_hash::bundle_status_hash(&ev.status), VECTOR_HASH);
    assert_eq!(ev.status_hash.as_deref(), Some(VECTOR_HASH));
}

#[test]
fn an_empty_work_status_hashes_to_the_documented_value() {
    let h = status_hash::status_hash(&ManifestWorkStatus::default());
    assert!(h.starts_with("3a4ba438") && h.ends_with("f189"), "{h}");
}

#[test]
fn the_spec_event_goes_to_an_mqtt5_publish_and_back_unchanged() {
    let spec = structured::parse(SPEC).unwrap();
    let t = topic::source_events("maestro", "7ff1a8f4-8811-49b4-8c19-9271bc51975e").unwrap();
    let msg = mqtt::encode(&spec, &t).unwrap();
    assert_eq!(msg.topic, t);
    assert_eq!(msg.content_type.as_deref(), Some("application/json"));
    assert_eq!(msg.user_property("ce-specversion"), Some("1.0"));
    assert_eq!(msg.user_property("ce-resourceversion"), Some("1"));
    assert_eq!(
        msg.user_property("ce-time"),
        Some("2025-12-16T06:00:17.771003Z")
    );
    assert!(
        msg.user_properties
            .iter()
            .all(|(k, _)| k.starts_with("ce-")),
        "{:?}",
        msg.user_properties
    );
    assert_eq!(mqtt::decode(&msg).unwrap(), spec);
}

#[test]
fn the_status_event_goes_to_an_mqtt5_publish_and_back_unchanged() {
    let status = structured::parse(STATUS).unwrap();
    let msg = mqtt::encode(&status, "sources/maestro/consumers/c/agentevents").unwrap();
    // Nanoseconds survive.
    assert_eq!(
        msg.user_property("ce-time"),
        Some("2025-12-16T06:00:17.921082037Z")
    );
    assert_eq!(mqtt::decode(&msg).unwrap(), status);
}

#[test]
fn the_bundle_round_trips_through_our_types_without_losing_a_field() {
    let spec = structured::parse(SPEC).unwrap();
    let Some(Data::Json(data)) = spec.data() else {
        panic!("spec data should be JSON")
    };
    let bundle: ManifestBundle = serde_json::from_value(data.clone()).unwrap();
    assert_eq!(serde_json::to_value(&bundle).unwrap(), *data);

    let WorkEvent::Spec(ev) = WorkEvent::from_event(&spec).unwrap() else {
        panic!("expected a spec event")
    };
    assert!(!ev.is_delete());
    assert_eq!(ev.resource_id, "55c61e54-a3f6-563d-9fec-b1fe297bdfdb");
    assert_eq!(
        ev.metadata.as_ref().map(|m| m.name.as_str()),
        Some("e44ec579-9646-549a-b679-db8d19d6da37")
    );
    // Rebuilding the event from the parsed form gives the same event back (metadata re-encoded
    // by our ObjectMeta, so compare it as JSON).
    let rebuilt = ev.to_event().unwrap();
    assert_eq!(rebuilt.data(), spec.data());
    assert_eq!(rebuilt.ty(), spec.ty());
    for name in [
        "resourceid",
        "resourceversion",
        "clustername",
        "originalsource",
        "logtracing",
    ] {
        assert_eq!(rebuilt.extension(name), spec.extension(name), "{name}");
    }
    let meta = |e: &cloudevents::Event| -> serde_json::Value {
        serde_json::from_str(ext::metadata_json(e).unwrap()).unwrap()
    };
    assert_eq!(meta(&rebuilt), meta(&spec));
}
