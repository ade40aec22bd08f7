//! JSON bytes exactly as Go's `encoding/json` writes a `map[string]interface{}`: compact, object keys
//! sorted (by bytes) at every level, HTML-safe escaping. Used for the status hash, where one differing
//! byte means a different hash.

use serde_json::Value;
use std::fmt::Write as _;

/// Encodes `v` the way Go's `json.Marshal` encodes the equivalent unstructured value.
pub(crate) fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // Status values are integers (ordinal, observedGeneration, feedback integers); serde_json
        // prints integers in plain decimal as Go does.
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted explicitly: serde_json's map order depends on its preserve_order feature, which
            // another crate in the build may turn on.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, &map[k]);
            }
            out.push('}');
        }
    }
}

/// Go's `appendString` with HTML escaping on (the `json.Marshal` default).
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Go 1.22+ writes \b and \f in short form.
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_level_and_output_is_compact() {
        let v = json!({"b": [{"z": 1, "a": null}], "a": {"y": true, "x": "s"}});
        assert_eq!(
            marshal(&v),
            r#"{"a":{"x":"s","y":true},"b":[{"a":null,"z":1}]}"#
        );
    }

    #[test]
    fn html_and_line_separators_are_escaped_like_go() {
        let v = json!("<a href=\"x\">&</a>\u{2028}\u{2029}\u{1}\n\u{7f}é");
        assert_eq!(
            marshal(&v),
            "\"\\u003ca href=\\\"x\\\"\\u003e\\u0026\\u003c/a\\u003e\\u2028\\u2029\\u0001\\n\u{7f}é\""
        );
    }
}
