//! Wire messages a test sends as a peer (an OCM work agent, maestro, a rogue client), built with
//! the schemas crate so they are exactly what real peers put on the wire.

use chrono::Utc;
use ocm_edge_schemas::api::work::ManifestBundleStatus;
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::works::{Header, StatusEvent};
use ocm_edge_schemas::wire::{MqttMessage, encode};
use serde_json::json;

/// `sources/<source>/consumers/<cluster>/agentevents`.
pub fn agent_events_topic(source: &str, cluster: &str) -> String {
    format!("sources/{source}/consumers/{cluster}/agentevents")
}

/// `sources/<source>/consumers/<cluster>/sourceevents`.
pub fn source_events_topic(source: &str, cluster: &str) -> String {
    format!("sources/{source}/consumers/{cluster}/sourceevents")
}

/// A status update for `resource_id` at `resource_version` from `cluster`, as an OCM work agent
/// sends it (statushash computed from `status`, a fresh snowflake-like sequence id).
///
/// # Panics
/// Never for valid inputs (the event is built from typed values).
pub fn status_update(
    source: &str,
    cluster: &str,
    resource_id: &str,
    resource_version: i64,
    status: ManifestBundleStatus,
) -> MqttMessage {
    let mut seq = ocm_edge_schemas::wire::sequence::SequenceIdGenerator::new();
    let sequence_id = seq.next_string(Utc::now().timestamp_millis());
    status_update_with_sequence(
        source,
        cluster,
        resource_id,
        resource_version,
        &sequence_id,
        status,
    )
}

/// [`status_update`] with a given `sequenceid`.
///
/// # Panics
/// Never for valid inputs (the event is built from typed values).
pub fn status_update_with_sequence(
    source: &str,
    cluster: &str,
    resource_id: &str,
    resource_version: i64,
    sequence_id: &str,
    status: ManifestBundleStatus,
) -> MqttMessage {
    let event = StatusEvent {
        header: Header::new(format!("{cluster}-work-agent"), Utc::now()),
        action: Action::UpdateRequest,
        cluster: cluster.into(),
        resource_id: resource_id.into(),
        resource_version,
        original_source: source.into(),
        sequence_id: sequence_id.into(),
        status_hash: None,
        metadata: None,
        log_tracing: Some("{}".into()),
        status,
    }
    .to_event()
    .expect("status event builds");
    encode(&event, agent_events_topic(source, cluster)).expect("status event encodes")
}

/// A bundle status with work condition Applied=True and nothing per manifest.
///
/// # Panics
/// Never: the JSON is OCM's documented shape.
pub fn applied_status() -> ManifestBundleStatus {
    serde_json::from_value(json!({
        "conditions": [{
            "type": "Applied", "status": "True", "reason": "AppliedManifestWorkComplete",
            "message": "Apply manifest work complete", "lastTransitionTime": "2026-01-01T00:00:00Z"
        }],
        "resourceStatus": []
    }))
    .expect("OCM's ManifestBundleStatus shape")
}

/// The maestro spec vector (`tests/fixtures/cloudevents.spec.maestro.json`, a real maestro
/// event) as a CloudEvent.
///
/// # Panics
/// When the fixture is missing or does not parse.
pub fn maestro_spec() -> cloudevents::Event {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/cloudevents.spec.maestro.json"
    ))
    .expect("maestro vector");
    ocm_edge_schemas::wire::structured::parse(&bytes).expect("vector parses")
}
