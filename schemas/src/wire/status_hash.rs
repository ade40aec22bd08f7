//! The status hash Go peers compute (sdk-go `statushash.StatusHash`): `hex(sha256(B))` where `B` is the
//! ManifestWork status converted with Kubernetes' `DefaultUnstructuredConverter` and encoded by
//! `encoding/json`.
//!
//! The converter follows the Go structs' tags, so this module re-shapes the status by the same rules
//! before encoding (see [`work_status_to_go_unstructured`]):
//! - `conditions` and `resourceStatus.manifests` are omitted when empty (`omitempty` slices);
//! - `resourceStatus` and each `statusFeedback` are always present (structs are never "empty");
//! - `resourceMeta` always has all seven fields, `ordinal` included when 0;
//! - a condition always has type, status, reason, message and lastTransitionTime (`null` when unset,
//!   RFC 3339 UTC at second precision otherwise); observedGeneration is omitted when 0;
//! - a manifest's `conditions` has no `omitempty`: `null` when absent, `[]` when empty;
//! - fieldValue keeps `type` and only the value fields that are set;
//! - unknown fields are dropped (Go's structs have nowhere to keep them).

use crate::api::work::{ManifestBundleStatus, ManifestWorkStatus};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The hash of a ManifestWork status, as Go peers compute it.
pub fn status_hash(status: &ManifestWorkStatus) -> String {
    // Serializing these plain structs cannot fail (string keys only); Null would hash like Go's
    // empty status shape anyway after re-shaping.
    let value = serde_json::to_value(status).unwrap_or(Value::Null);
    status_hash_json(&value)
}

/// The hash of the status carried by a status event (`ManifestBundleStatus`, flat `resourceStatus`).
pub fn bundle_status_hash(status: &ManifestBundleStatus) -> String {
    status_hash(&ManifestWorkStatus::from(status))
}

/// The hash of a ManifestWork status given as JSON (`{"conditions":[...],"resourceStatus":{"manifests":[...]}}`).
pub fn status_hash_json(work_status: &Value) -> String {
    let bytes = super::go_json::marshal(&work_status_to_go_unstructured(work_status));
    hex::encode(Sha256::digest(bytes.as_bytes()))
}

/// Re-shapes a ManifestWork status JSON as Go's unstructured converter would produce it.
pub fn work_status_to_go_unstructured(status: &Value) -> Value {
    let mut out = Map::new();
    if let Some(conds) = non_empty_array(status.get("conditions")) {
        out.insert(
            "conditions".into(),
            Value::Array(conds.iter().map(condition).collect()),
        );
    }
    let mut rs = Map::new();
    if let Some(manifests) = non_empty_array(
        status
            .get("resourceStatus")
            .and_then(|r| r.get("manifests")),
    ) {
        rs.insert(
            "manifests".into(),
            Value::Array(manifests.iter().map(manifest_condition).collect()),
        );
    }
    out.insert("resourceStatus".into(), Value::Object(rs));
    Value::Object(out)
}

fn non_empty_array(v: Option<&Value>) -> Option<&Vec<Value>> {
    match v {
        Some(Value::Array(a)) if !a.is_empty() => Some(a),
        _ => None,
    }
}

fn string_field(v: &Value, key: &str) -> Value {
    match v.get(key) {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => Value::String(String::new()),
    }
}

fn int_field(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// metav1.Condition.
fn condition(c: &Value) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), string_field(c, "type"));
    m.insert("status".into(), string_field(c, "status"));
    let generation = int_field(c, "observedGeneration");
    if generation != 0 {
        m.insert("observedGeneration".into(), Value::from(generation));
    }
    m.insert(
        "lastTransitionTime".into(),
        go_time(c.get("lastTransitionTime")),
    );
    m.insert("reason".into(), string_field(c, "reason"));
    m.insert("message".into(), string_field(c, "message"));
    Value::Object(m)
}

/// metav1.Time: RFC 3339 UTC at second precision, or null when zero/absent.
fn go_time(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if !s.is_empty() => match DateTime::parse_from_rfc3339(s) {
            Ok(t) => Value::String(
                t.with_timezone(&Utc)
                    .format("%Y-%m-%dT%H:%M:%SZ")
                    .to_string(),
            ),
            // Go would have refused to decode it; keep the text so the hash still reflects it.
            Err(_) => Value::String(s.clone()),
        },
        _ => Value::Null,
    }
}

/// work/v1 ManifestCondition.
fn manifest_condition(mc: &Value) -> Value {
    let mut m = Map::new();
    let meta = mc.get("resourceMeta").cloned().unwrap_or(Value::Null);
    let mut rm = Map::new();
    rm.insert("ordinal".into(), Value::from(int_field(&meta, "ordinal")));
    for k in ["group", "version", "kind", "resource", "name", "namespace"] {
        rm.insert(k.into(), string_field(&meta, k));
    }
    m.insert("resourceMeta".into(), Value::Object(rm));

    let mut feedback = Map::new();
    if let Some(values) = non_empty_array(mc.get("statusFeedback").and_then(|f| f.get("values"))) {
        feedback.insert(
            "values".into(),
            Value::Array(values.iter().map(feedback_value).collect()),
        );
    }
    m.insert("statusFeedback".into(), Value::Object(feedback));

    let conditions = match mc.get("conditions") {
        Some(Value::Array(a)) => Value::Array(a.iter().map(condition).collect()),
        _ => Value::Null,
    };
    m.insert("conditions".into(), conditions);
    Value::Object(m)
}

fn feedback_value(fv: &Value) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), string_field(fv, "name"));
    let field = fv.get("fieldValue").cloned().unwrap_or(Value::Null);
    let mut f = Map::new();
    f.insert("type".into(), string_field(&field, "type"));
    for k in ["integer", "string", "boolean", "jsonRaw"] {
        if let Some(v) = field.get(k).filter(|v| !v.is_null()) {
            f.insert(k.into(), v.clone());
        }
    }
    m.insert("fieldValue".into(), Value::Object(f));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_status_hashes_like_go() {
        let h = status_hash(&ManifestWorkStatus::default());
        assert_eq!(
            h,
            "3a4ba43801251ccdf889a3154674d23a35ab996aacfc00de92e61dbb2f5cf189"
        );
        assert_eq!(status_hash_json(&json!({})), h);
    }

    #[test]
    fn subsecond_times_and_unknown_fields_do_not_change_the_hash() {
        let a = json!({"conditions":[{"type":"Applied","status":"True","lastTransitionTime":"2025-12-16T06:00:17Z","reason":"r","message":"m"}]});
        let b = json!({"conditions":[{"type":"Applied","status":"True","lastTransitionTime":"2025-12-16T07:00:17.9+01:00","reason":"r","message":"m","extra":1}]});
        assert_eq!(status_hash_json(&a), status_hash_json(&b));
    }

    #[test]
    fn the_go_shape_keeps_required_fields_and_drops_empty_optional_ones() {
        let s = json!({"resourceStatus":{"manifests":[{"resourceMeta":{"kind":"Pod"},"conditions":[]}]}});
        assert_eq!(
            super::super::go_json::marshal(&work_status_to_go_unstructured(&s)),
            r#"{"resourceStatus":{"manifests":[{"conditions":[],"resourceMeta":{"group":"","kind":"Pod","name":"","namespace":"","ordinal":0,"resource":"","version":""},"statusFeedback":{}}]}}"#
        );
    }
}
