//! Golden tests on MQTT messages captured from OCM's own work agent (open-cluster-management.io/ocm
//! v1.2.0) served by our hub (`tests/tests/it/ocm_work_agent.rs`).

use ocm_edge_schemas::api::work::ManifestWorkStatus;
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::works::WorkEvent;
use ocm_edge_schemas::wire::{MqttMessage, decode, status_hash};

const NULL_CONDITIONS: &str = include_str!(
    "../fixtures/vectors/ocm-work-agent/status.resync_response.null-conditions.mqtt.json"
);

fn message(fixture: &str) -> MqttMessage {
    let v: serde_json::Value = serde_json::from_str(fixture).unwrap();
    MqttMessage {
        topic: v["topic"].as_str().unwrap().to_owned(),
        payload: v["payload"].as_str().unwrap().as_bytes().to_vec(),
        content_type: v["content_type"].as_str().map(str::to_owned),
        user_properties: v["user_properties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_owned(),
                    p[1].as_str().unwrap().to_owned(),
                )
            })
            .collect(),
    }
}

/// Its first answer to a status resync carries `{"conditions":null}` (a Go nil slice): an empty
/// status, whose hash is the one OCM computed for it. Before, the hub dropped it as malformed.
#[test]
fn a_status_whose_conditions_are_null_is_an_empty_status_with_ocms_own_hash() {
    let event = decode(&message(NULL_CONDITIONS)).unwrap();
    let WorkEvent::Status(status) = WorkEvent::from_event(&event).unwrap() else {
        panic!("expected a status event")
    };
    assert_eq!(status.action, Action::ResyncResponse);
    assert_eq!(status.cluster, "ocm-1");
    assert_eq!(status.resource_version, 1);
    assert!(status.status.conditions.is_empty());
    assert!(status.status.resource_status.is_empty());
    let ocm_hash = status.status_hash.clone().unwrap();
    assert_eq!(status_hash::bundle_status_hash(&status.status), ocm_hash);
    assert_eq!(
        status_hash::status_hash(&ManifestWorkStatus::default()),
        ocm_hash
    );
}

/// Every list of a work status may come as null from a Go peer.
#[test]
fn null_lists_anywhere_in_a_work_status_read_as_empty() {
    let status: ocm_edge_schemas::api::work::ManifestBundleStatus =
        serde_json::from_value(serde_json::json!({
            "conditions": null,
            "resourceStatus": [{
                "resourceMeta": {"ordinal": 0, "kind": "ConfigMap", "name": "c"},
                "conditions": null,
                "statusFeedback": {"values": null}
            }]
        }))
        .unwrap();
    assert!(status.conditions.is_empty());
    assert!(status.resource_status[0].conditions.is_empty());
    assert!(status.resource_status[0].status_feedback.values.is_empty());
    // A list of the wrong type is still an error.
    assert!(
        serde_json::from_value::<ocm_edge_schemas::api::work::ManifestBundleStatus>(
            serde_json::json!({"conditions": 7})
        )
        .is_err()
    );
}
