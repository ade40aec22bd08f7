//! `schemas/asyncapi.yaml` is a well-formed AsyncAPI 3.0 document whose every reference resolves, whose
//! payload schemas compile, and whose topics and headers are what the wire module really sends.

use crate::contracts_kit;

use contracts_kit::{assert_valid, schemas_dir};
use std::collections::BTreeSet;

use chrono::{TimeZone, Utc};
use ocm_edge_schemas::contracts::catalog::{self, Envelope};
use ocm_edge_schemas::contracts::{ASYNCAPI_FILE, asyncapi};
use ocm_edge_schemas::wire::cluster_events::{
    ClusterEnvelope, ClusterEvent, Presence, PresenceState,
};
use ocm_edge_schemas::wire::topic::{Topic, matches_sdk_go_pattern};
use ocm_edge_schemas::wire::works::Header;
use ocm_edge_schemas::wire::{self, structured};
use serde_json::{Map, Value, json};

fn checked_in() -> Value {
    let text = std::fs::read_to_string(schemas_dir().join(ASYNCAPI_FILE))
        .expect("schemas/asyncapi.yaml exists");
    serde_yaml_ng::from_str(&text).expect("schemas/asyncapi.yaml parses as YAML")
}

fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

fn pointer<'a>(doc: &'a Value, fragment: &str) -> Option<&'a Value> {
    if fragment.is_empty() {
        Some(doc)
    } else {
        doc.pointer(fragment)
    }
}

fn load_json(relative: &str) -> Value {
    let path = schemas_dir().join(relative.trim_start_matches("./"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn ops_on<'a>(doc: &'a Value, channel: &str) -> Vec<&'a Value> {
    let target = format!("#/channels/{channel}");
    doc["operations"]
        .as_object()
        .unwrap()
        .values()
        .filter(|op| op["channel"]["$ref"] == target.as_str())
        .collect()
}

#[test]
fn the_document_is_asyncapi_3_and_matches_the_generator() {
    let doc = checked_in();
    assert_eq!(doc["asyncapi"], "3.0.0");
    assert_eq!(
        doc,
        asyncapi::asyncapi(&catalog::catalog()),
        "schemas/asyncapi.yaml differs from the generator: run the contracts_in_sync test with OCM_EDGE_BLESS=1"
    );
    for key in ["info", "channels", "operations", "components"] {
        assert!(doc.get(key).is_some(), "no {key}");
    }
    assert_eq!(doc["info"]["title"], "ocm-edge");
}

#[test]
fn every_reference_resolves_to_a_document_part_or_an_existing_file() {
    let doc = checked_in();
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.len() > 50, "suspiciously few refs: {}", all.len());
    for r in all {
        let (file, fragment) = r.split_once('#').unwrap_or((r.as_str(), ""));
        if file.is_empty() {
            assert!(pointer(&doc, fragment).is_some(), "{r} does not resolve");
        } else {
            let target = load_json(file);
            assert!(pointer(&target, fragment).is_some(), "{r} does not resolve");
        }
    }
}

#[test]
fn every_channel_has_an_operation_and_every_operation_only_uses_its_channel_messages() {
    let doc = checked_in();
    for (id, channel) in doc["channels"].as_object().unwrap() {
        assert!(
            !ops_on(&doc, id).is_empty(),
            "channel {id} has no operation"
        );
        assert!(
            channel["address"].as_str().is_some(),
            "channel {id} has no address"
        );
    }
    for (id, op) in doc["operations"].as_object().unwrap() {
        let action = op["action"].as_str().unwrap();
        assert!(action == "send" || action == "receive", "{id}: {action}");
        let channel = op["channel"]["$ref"].as_str().unwrap();
        for m in op["messages"].as_array().unwrap() {
            let m = m["$ref"].as_str().unwrap();
            assert!(
                m.starts_with(&format!("{channel}/messages/")),
                "{id} sends {m}, not a message of {channel}"
            );
        }
        let tags: Vec<&str> = op["tags"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(tags.len(), 1, "{id} names one actor");
    }
    // Both sides of every per-cluster topic are described.
    for channel in ["sourceEvents", "agentEvents"] {
        let ops = ops_on(&doc, channel);
        for (actor, action) in [
            ("hub", "send"),
            ("hub", "receive"),
            ("agent", "send"),
            ("agent", "receive"),
        ] {
            let found = ops.iter().any(|op| op["tags"][0]["name"] == actor);
            let acts = ops.iter().any(|op| op["action"] == action);
            assert!(
                found && acts,
                "{channel}: no {actor} operation or no {action}"
            );
        }
    }
}

#[test]
fn every_message_payload_and_header_schema_compiles() {
    let doc = checked_in();
    let messages = doc["components"]["messages"].as_object().unwrap();
    assert!(messages.len() >= 19);
    for (id, m) in messages {
        assert_eq!(m["contentType"], "application/json", "{id}");
        assert_eq!(
            m["payload"]["schemaFormat"],
            "application/schema+json;version=draft-07"
        );
        let file = m["payload"]["schema"]["$ref"].as_str().unwrap();
        let schema = load_json(file);
        assert!(
            jsonschema::meta::is_valid(&schema),
            "{file} is not a valid JSON Schema"
        );
        jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("payload schema {file} of {id} does not compile: {e}"));
        if let Some(headers) = m.get("headers") {
            jsonschema::validator_for(headers)
                .unwrap_or_else(|e| panic!("headers schema of {id} does not compile: {e}"));
        }
    }
}

#[test]
fn every_operation_message_is_a_component_used_by_a_channel() {
    let doc = checked_in();
    let mut used = BTreeSet::new();
    for channel in doc["channels"].as_object().unwrap().values() {
        for m in channel["messages"].as_object().unwrap().values() {
            used.insert(m["$ref"].as_str().unwrap().to_owned());
        }
    }
    let defined: BTreeSet<String> = doc["components"]["messages"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| format!("#/components/messages/{k}"))
        .collect();
    assert_eq!(
        used, defined,
        "every message is on some channel and vice versa"
    );
}

fn sample(address: &str) -> String {
    address
        .replace("{source}", "ocm-edge")
        .replace("{cluster}", "edge-1")
        .replace("{clientId}", "cli-1")
        .replace("{work}", "web")
        .replace("{addon}", "hello")
}

#[test]
fn channel_addresses_are_the_topics_the_wire_module_parses() {
    let doc = checked_in();
    for (id, channel) in doc["channels"].as_object().unwrap() {
        let address = channel["address"].as_str().unwrap();
        let params: BTreeSet<String> = address
            .split('/')
            .filter_map(|l| l.strip_prefix('{')?.strip_suffix('}').map(str::to_owned))
            .collect();
        let declared: BTreeSet<String> = channel["parameters"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(params, declared, "{id}: parameters");
        let topic = sample(address);
        Topic::parse(&topic).unwrap_or_else(|e| panic!("{id}: {topic}: {e}"));
        if id == "sourceEvents" || id == "agentEvents" {
            assert!(matches_sdk_go_pattern(&topic), "{topic}");
        }
    }
}

/// The `ce-*` user properties our encoder writes for `event`, as a JSON object.
fn headers_of(event: &cloudevents::Event, topic: &str) -> (String, Value) {
    let msg = wire::encode(event, topic).expect("event encodes");
    assert_eq!(msg.content_type.as_deref(), Some("application/json"));
    let headers: Map<String, Value> = msg
        .user_properties
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let ty = headers["ce-type"].as_str().unwrap().to_owned();
    (ty, Value::Object(headers))
}

fn message_for(doc: &Value, ty: &str) -> Value {
    doc["components"]["messages"]
        .as_object()
        .unwrap()
        .values()
        .find(|m| m["headers"]["properties"]["ce-type"]["const"] == ty)
        .unwrap_or_else(|| panic!("no message documents CloudEvent type {ty}"))
        .clone()
}

#[test]
fn maestro_events_on_the_wire_match_their_documented_headers_and_payload() {
    let doc = checked_in();
    for (file, topic) in [
        (
            "cloudevents.spec.maestro.json",
            "sources/maestro/consumers/c1/sourceevents",
        ),
        (
            "cloudevents.agent.json",
            "sources/maestro/consumers/c1/agentevents",
        ),
    ] {
        let bytes = std::fs::read(
            schemas_dir()
                .join("tests/fixtures/vectors/maestro")
                .join(file),
        )
        .unwrap();
        let event = structured::parse(&bytes).unwrap();
        let (ty, headers) = headers_of(&event, topic);
        let message = message_for(&doc, &ty);
        assert_valid(&message["headers"], &headers, file);
        let payload = load_json(message["payload"]["schema"]["$ref"].as_str().unwrap());
        let data = wire::data_json(&event).unwrap().unwrap();
        assert_valid(&payload, &data, file);
    }
}

#[test]
fn an_agent_presence_birth_matches_its_documented_headers_and_payload() {
    let doc = checked_in();
    let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
    let birth = ClusterEvent::Presence(ClusterEnvelope {
        header: Header::new("edge-1-agent", now),
        cluster: "edge-1".into(),
        original_source: String::new(),
        data: Presence {
            state: PresenceState::Online,
            connection_seq: 3,
        },
    })
    .to_event()
    .unwrap();
    let (ty, headers) = headers_of(&birth, "sources/ocm-edge/consumers/edge-1/agentevents");
    let message = message_for(&doc, &ty);
    assert_valid(&message["headers"], &headers, "presence birth");
    let payload = load_json(message["payload"]["schema"]["$ref"].as_str().unwrap());
    assert_valid(
        &payload,
        &wire::data_json(&birth).unwrap().unwrap(),
        "presence",
    );
    let mut missing_cluster = headers.clone();
    missing_cluster
        .as_object_mut()
        .unwrap()
        .remove("ce-clustername");
    assert!(!jsonschema::is_valid(&message["headers"], &missing_cluster));
}

#[test]
fn every_event_type_of_the_catalog_is_documented_once_per_message() {
    let doc = checked_in();
    for m in catalog::catalog().messages {
        let documented = &doc["components"]["messages"][m.id];
        match m.envelope {
            Envelope::CloudEvent { ty, .. } => {
                assert_eq!(documented["headers"]["properties"]["ce-type"]["const"], ty);
            }
            _ => assert!(documented.is_object(), "{}", m.id),
        }
    }
    let admin = &doc["components"]["messages"]["adminRequest"];
    assert_eq!(
        admin["correlationId"]["location"],
        "$message.header#/correlationData"
    );
    let reply = &doc["operations"]["cliSendAdminRequest"]["reply"];
    assert_eq!(
        reply["address"]["location"],
        "$message.header#/responseTopic"
    );
    assert_eq!(
        reply["channel"],
        json!({"$ref": "#/channels/adminResponses"})
    );
    for retained in [
        "hubSendDashboardSummary",
        "hubSendDashboardCluster",
        "hubSendDashboardWork",
    ] {
        assert_eq!(
            doc["operations"][retained]["bindings"]["mqtt"]["retain"],
            true
        );
    }
    assert_eq!(
        doc["operations"]["hubSendSourceEvents"]["bindings"]["mqtt"]["retain"],
        false
    );
}
