//! The AsyncAPI 3.0 document (`schemas/asyncapi.yaml`), rendered from the [`Catalog`].
//!
//! Payloads point at the JSON Schema files (`./json/*.schema.json`, draft-07) through AsyncAPI's
//! multi-format schema object. CloudEvent attributes and extensions are described as message headers
//! (MQTT 5 user properties `ce-*`); the admin API's Response Topic and Correlation Data are MQTT 5
//! properties, described as headers too so the reply address and correlation id can point at them.

use serde_json::{Map, Value, json};

use super::catalog::{Catalog, ChannelSpec, Direction, Envelope, MessageSpec, Need, OperationSpec};
use super::{ContractError, JSON_DIR, REGENERATE_SCHEMAS, SCHEMA_FORMAT, sorted};
use crate::admin::{ADMIN_API_VERSION, ADMIN_API_VERSION_PROPERTY, auth};
use crate::wire::extensions as ext;
use crate::wire::mqtt::{APPLICATION_JSON, CE_PREFIX, LEGACY_CONTENT_TYPE_PROPERTY};
use crate::wire::signature;

/// AsyncAPI version of the document.
pub const ASYNCAPI_VERSION: &str = "3.0.0";
/// Version of the MQTT bindings used.
pub const MQTT_BINDING_VERSION: &str = "0.2.0";
/// Header standing for the MQTT 5 Response Topic property of an admin request.
pub const RESPONSE_TOPIC_HEADER: &str = "responseTopic";
/// Header standing for the MQTT 5 Correlation Data property of admin requests and responses.
pub const CORRELATION_DATA_HEADER: &str = "correlationData";

fn extension_schema(name: &str) -> Value {
    match name {
        ext::RESOURCE_ID => json!({"type": "string", "minLength": 1,
            "description": "Bundle id (a UUID; ocm-edge uses UUID v5 of <source>/<cluster>/<work>)."}),
        ext::RESOURCE_VERSION => json!({"type": "string", "pattern": "^[0-9]+$",
            "description": "Spec version as a decimal integer: 1 at creation, +1 per spec change (int32)."}),
        ext::CLUSTER_NAME => json!({"type": "string",
            "description": "The managed cluster the event is about."}),
        ext::ORIGINAL_SOURCE => json!({"type": "string",
            "description": "Work events: empty on specs and resync requests, the source id on statuses. \
                ocm-edge cluster events: empty from agents, the source id from the hub."}),
        ext::METADATA => json!({"type": "string", "contentMediaType": "application/json",
            "description": "The work's ObjectMeta as a JSON string."}),
        ext::DELETION_TIMESTAMP => json!({"type": "string", "format": "date-time",
            "description": "RFC 3339 UTC; its presence is what makes a spec event a delete."}),
        ext::LOG_TRACING => json!({"type": "string", "contentMediaType": "application/json",
            "description": "JSON map as a string, `{}` when there is nothing to trace."}),
        ext::SEQUENCE_ID => json!({"type": "string", "pattern": "^[0-9]+$",
            "description": "Snowflake id (node 1, epoch 1288834974657 ms) as a decimal string; orders statuses."}),
        ext::STATUS_HASH => json!({"type": "string", "pattern": "^[0-9a-f]{64}$",
            "description": "hex(sha256) of the status encoded as Go's encoding/json does (docs/reference/protocol.md section 7)."}),
        signature::SIGNER_EXTENSION => json!({"type": "string", "pattern": "^[0-9a-f]{32}$",
            "description": "Which hub key signed: the first 16 bytes of the SHA-256 of its certificate, hex. \
                Sent by an ocm-edge hub on everything it sends to agents."}),
        signature::SIGNATURE_EXTENSION => json!({"type": "string",
            "description": "Ed25519 signature (base64) over the topic, content type, every other user property \
                (sorted) and the payload's SHA-256 (ocm_edge_schemas::wire::signature::signed_bytes). \
                ocm-edge agents refuse hub events without a valid one unless started with \
                --accept-unsigned-specs-from SOURCE."}),
        signature::SIGNER_CHAIN_EXTENSION => json!({"type": "string",
            "description": "The hub's signing certificate (EKU codeSigning) and the CA that issued it, \
                each DER base64, joined by `.`; agents trust it when the CA matches their pin."}),
        _ => json!({"type": "string"}),
    }
}

fn cloudevent_headers(ty: &str, extensions: &[(&str, Need)]) -> Value {
    let ce = |name: &str| format!("{CE_PREFIX}{name}");
    let mut properties = Map::new();
    properties.insert(ce("specversion"), json!({"const": "1.0"}));
    properties.insert(ce("id"), json!({"type": "string", "minLength": 1}));
    properties.insert(
        ce("source"),
        json!({"type": "string", "minLength": 1,
        "description": "The source id (hub to agent), or the agent id (`<cluster>-work-agent`)."}),
    );
    properties.insert(ce("type"), json!({"const": ty}));
    properties.insert(
        ce("time"),
        json!({"type": "string", "format": "date-time", "description": "RFC 3339 UTC."}),
    );
    let mut required = vec![ce("specversion"), ce("id"), ce("source"), ce("type")];
    for (name, need) in extensions {
        properties.insert(ce(name), extension_schema(name));
        if *need == Need::Required {
            required.push(ce(name));
        }
    }
    json!({
        "type": "object",
        "description": format!(
            "MQTT 5 user properties of a CloudEvent in binary content mode. The data content type \
             ({APPLICATION_JSON}) is the MQTT 5 Content Type property; older Go peers send it as a \
             `{LEGACY_CONTENT_TYPE_PROPERTY}` user property instead."),
        "properties": properties,
        "required": required,
    })
}

fn admin_headers(request: bool) -> Value {
    let mut properties = Map::new();
    let mut required = vec![CORRELATION_DATA_HEADER];
    properties.insert(
        CORRELATION_DATA_HEADER.into(),
        json!({"type": "string", "description": if request {
            "MQTT 5 Correlation Data property: opaque bytes the CLI picks per request."
        } else {
            "MQTT 5 Correlation Data property, copied from the request."
        }}),
    );
    if request {
        properties.insert(
            RESPONSE_TOPIC_HEADER.into(),
            json!({"type": "string", "pattern": "^ocm-edge/[a-z0-9-]+/admin/responses/[A-Za-z0-9_-]+$",
                "description": "MQTT 5 Response Topic property: where the hub answers."}),
        );
        required.push(RESPONSE_TOPIC_HEADER);
        for (name, description) in [
            (
                auth::CREDENTIAL_PROPERTY,
                "User property: the sender's credential, a client certificate of the hub's CA (CN = user, OU = role), DER, base64. Required by a hub with credentials on (the default).",
            ),
            (
                auth::SIGNED_AT_PROPERTY,
                "User property: when the request was signed, Unix seconds (at most 300 s from the hub's clock).",
            ),
            (
                auth::SIGNATURE_PROPERTY,
                "User property: ECDSA P-256 SHA-256 signature (ASN.1 DER, base64) with the credential's key over the request topic, response topic, correlation data, signing time and the payload's SHA-256 (ocm_edge_schemas::admin::auth::signed_bytes).",
            ),
        ] {
            properties.insert(
                name.into(),
                json!({"type": "string", "description": description}),
            );
        }
    }
    properties.insert(
        ADMIN_API_VERSION_PROPERTY.into(),
        json!({"const": ADMIN_API_VERSION, "description": "User property: the admin API version."}),
    );
    json!({
        "type": "object",
        "description": "MQTT 5 properties of an admin message.",
        "properties": properties,
        "required": required,
    })
}

fn message(m: &MessageSpec) -> Value {
    let mut msg = json!({
        "name": m.id,
        "title": m.title,
        "summary": m.summary,
        "contentType": APPLICATION_JSON,
        "payload": {
            "schemaFormat": SCHEMA_FORMAT,
            "schema": {"$ref": format!("./{JSON_DIR}/{}", m.payload)},
        },
        "bindings": {"mqtt": {"bindingVersion": MQTT_BINDING_VERSION, "contentType": APPLICATION_JSON}},
    });
    let correlation = json!({
        "location": format!("$message.header#/{CORRELATION_DATA_HEADER}"),
        "description": "Matches a response to its request; requests may be resent with the same value.",
    });
    match &m.envelope {
        Envelope::CloudEvent { ty, extensions } => {
            msg["headers"] = cloudevent_headers(ty, extensions);
            msg["description"] = json!(format!("CloudEvent type `{ty}`."));
        }
        Envelope::AdminRequest => {
            msg["headers"] = admin_headers(true);
            msg["correlationId"] = correlation;
        }
        Envelope::AdminResponse => {
            msg["headers"] = admin_headers(false);
            msg["correlationId"] = correlation;
        }
        Envelope::Dashboard => {
            msg["description"] = json!("Compact JSON, published retained; no CloudEvent envelope.");
        }
        Envelope::AddOnJson => {
            msg["description"] = json!(
                "Bare JSON, no CloudEvent envelope and no signature: the broker's topic rules say who published it."
            );
        }
    }
    // Birth and will share one event type and differ only by state: show both.
    match m.id {
        "presenceBirth" => {
            msg["examples"] =
                json!([{"name": "birth", "payload": {"state": "online", "connectionSeq": 7}}]);
        }
        "presenceWill" => {
            msg["examples"] =
                json!([{"name": "will", "payload": {"state": "offline", "connectionSeq": 7}}]);
        }
        _ => {}
    }
    msg
}

fn channel(c: &ChannelSpec) -> Value {
    let parameters: Map<String, Value> = c
        .params
        .iter()
        .map(|p| (p.name.to_owned(), json!({"description": p.description})))
        .collect();
    let messages: Map<String, Value> = c
        .messages
        .iter()
        .map(|id| {
            (
                (*id).to_owned(),
                json!({"$ref": format!("#/components/messages/{id}")}),
            )
        })
        .collect();
    json!({
        "address": c.address,
        "title": c.title,
        "description": c.description,
        "parameters": parameters,
        "messages": messages,
    })
}

fn operation(o: &OperationSpec, retained: bool) -> Value {
    let refs = |channel: &str, ids: &[&str]| -> Vec<Value> {
        ids.iter()
            .map(|id| json!({"$ref": format!("#/channels/{channel}/messages/{id}")}))
            .collect()
    };
    let mut op = json!({
        "action": o.direction.as_str(),
        "channel": {"$ref": format!("#/channels/{}", o.channel)},
        "summary": o.summary,
        "messages": refs(o.channel, &o.messages),
        "tags": [{"name": o.actor.as_str()}],
    });
    if o.direction == Direction::Send {
        op["bindings"] = json!({"mqtt": {"qos": 1, "retain": retained,
            "bindingVersion": MQTT_BINDING_VERSION}});
    }
    if let Some(reply) = &o.reply {
        op["reply"] = json!({
            "address": {
                "location": format!("$message.header#/{RESPONSE_TOPIC_HEADER}"),
                "description": "The MQTT 5 Response Topic of the request.",
            },
            "channel": {"$ref": format!("#/channels/{}", reply.channel)},
            "messages": refs(reply.channel, &reply.messages),
        });
    }
    op
}

/// The AsyncAPI document as JSON (keys sorted).
pub fn asyncapi(catalog: &Catalog) -> Value {
    let channels: Map<String, Value> = catalog
        .channels
        .iter()
        .map(|c| (c.id.to_owned(), channel(c)))
        .collect();
    let operations: Map<String, Value> = catalog
        .operations
        .iter()
        .map(|o| {
            let retained = catalog.channel(o.channel).is_some_and(|c| c.retained);
            (o.id.to_owned(), operation(o, retained))
        })
        .collect();
    let messages: Map<String, Value> = catalog
        .messages
        .iter()
        .map(|m| (m.id.to_owned(), message(m)))
        .collect();
    sorted(json!({
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "ocm-edge",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Open Cluster Management's CloudEvents binding over MQTT 5 for ManifestWorks \
                (compatible with OCM work agents and maestro), and ocm-edge's extensions on the same \
                topics: registration, hub view, cluster status, lease, presence; plus the admin API and \
                the retained dashboard topics. Work events: QoS 1, never retained.",
            "license": {"name": "Apache-2.0"},
            "tags": [{"name": "hub"}, {"name": "agent"}, {"name": "cli"}, {"name": "watcher"}],
        },
        "defaultContentType": APPLICATION_JSON,
        "servers": {
            "broker": {
                "host": "localhost:8883",
                "protocol": "secure-mqtt",
                "protocolVersion": "5",
                "description": "The hub's embedded rmqtt (TLS with the hub's CA, logins by default), or any MQTT 5 broker: Mosquitto, EMQX, HiveMQ.",
                "security": [{"$ref": "#/components/securitySchemes/login"}],
            },
        },
        "channels": channels,
        "operations": operations,
        "components": {
            "messages": messages,
            "securitySchemes": {
                "login": {
                    "type": "userPassword",
                    "description": "On the hub's embedded broker the username is the identity (an edge cluster's name, `ocm-edge-operator`, `ocm-edge-dashboard`, `ocm-edge-hub`) and the password proves it: `ocm-edge-agent-key-v1:<Ed25519 public key>:<signature>` for an agent, `ocm-edge-credential-v1:<certificate>:<signature>` for the CLI's admin credential (base64; `ocm_edge_schemas::wire::login`), the password in the hub's DATA_DIR/dashboard-password for a dashboard. Each identity may use only its own topics. External brokers use their own usernames, passwords or client certificates (`broker-config/`).",
                },
            },
        },
    }))
}

/// The document as YAML, with a header saying how to regenerate it.
///
/// # Errors
/// [`ContractError::Yaml`] if serde_yaml_ng refuses the value (it cannot for plain JSON).
pub fn asyncapi_yaml(catalog: &Catalog) -> Result<String, ContractError> {
    let body = serde_yaml_ng::to_string(&asyncapi(catalog))
        .map_err(|e| ContractError::Yaml(e.to_string()))?;
    Ok(format!(
        "# Generated from ocm_edge_schemas::contracts; do not edit.\n# Regenerate: {REGENERATE_SCHEMAS}\n{body}"
    ))
}
