//! Kubernetes JSONPath (kubectl's syntax, which OCM's feedback rules and `ignoreFields` use) and
//! JSON Pointers (RFC 6901), read the same way by the hub (checked at `apply`) and the agent.
//!
//! A path is translated into an RFC 9535 query and run by `serde_json_path`: `.status.x`,
//! `{.status.x}`, `.spec.containers[0].image`, `.spec.containers[*].image`, `..image`,
//! `.status.conditions[?(@.type=="Ready")].status`, `['kubernetes.io/name']` and field names with
//! `\.` all work. kubectl's templates (`range`, `end`, text around the braces) are not paths
//! and are refused.

use serde_json::Value;

/// A JSONPath or JSON Pointer that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Not a JSONPath ocm-edge can read.
    #[error("invalid JSONPath {path:?}: {problem}")]
    JsonPath {
        /// The path as written.
        path: String,
        /// What is wrong, and how to write it.
        problem: String,
    },
    /// Not an RFC 6901 JSON Pointer.
    #[error("invalid JSON Pointer {pointer:?}: {problem}")]
    Pointer {
        /// The pointer as written.
        pointer: String,
        /// What is wrong, and how to write it.
        problem: String,
    },
}

/// Longest path read, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Deepest nesting of brackets and parentheses in a path (the parser recurses on them).
pub const MAX_PATH_NESTING: usize = 16;

/// What a path is for, which decides what it may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    /// A feedback rule reads values: one descendant segment (`..name`) is allowed.
    Feedback,
    /// `ignoreFields` removes fields: no descendant segment (each match would be located with
    /// its whole path, on every reconcile).
    IgnoreFields,
}

/// A parsed Kubernetes JSONPath.
///
/// # Guarantees
/// What a path selects is at most one match per node of the object: a path has at most one
/// descendant segment (`..`) and no unions (`['a','b']`, `[0,1]`), the two ways RFC 9535 lets
/// the matches of a short path multiply; and it is short and shallow enough for the parser
/// ([`MAX_PATH_BYTES`], [`MAX_PATH_NESTING`]). So a path from the network can neither exhaust
/// the stack nor take time or memory beyond the object's own size.
#[derive(Debug, Clone)]
pub struct KubeJsonPath {
    query: serde_json_path::JsonPath,
}

impl KubeJsonPath {
    /// Reads `path` as kubectl does inside `{...}` (the braces may be left out), for `used`.
    ///
    /// # Errors
    /// [`PathError::JsonPath`], saying what is wrong.
    pub fn parse(path: &str, used: PathUse) -> Result<Self, PathError> {
        let invalid = |problem: String| PathError::JsonPath {
            path: path.chars().take(120).collect(),
            problem,
        };
        check_shape(path, used).map_err(invalid)?;
        let rfc = to_rfc9535(path).map_err(invalid)?;
        let query = serde_json_path::JsonPath::parse(&rfc)
            .map_err(|e| invalid(format!("{e} (read as the RFC 9535 query {rfc})")))?;
        Ok(KubeJsonPath { query })
    }

    /// The values the path selects, in document order (none when it selects nothing).
    pub fn query<'a>(&self, value: &'a Value) -> Vec<&'a Value> {
        self.query.query(value).all()
    }

    /// JSON Pointers to the values the path selects, in document order.
    pub fn locate(&self, value: &Value) -> Vec<String> {
        self.query
            .query_located(value)
            .iter()
            .map(|node| node.location().to_json_pointer())
            .collect()
    }

    /// Removes the object members the path selects, as OCM's `ignoreFields` does (a list element
    /// it selects stays: OCM removes fields, never list entries). Returns how many were removed.
    pub fn remove_fields(&self, value: &mut Value) -> usize {
        let mut removed = 0;
        for pointer in self.locate(value) {
            let (parent, last) = split_pointer(&pointer);
            if let Some(Value::Object(map)) = value.pointer_mut(parent)
                && map.remove(&unescape(last)).is_some()
            {
                removed += 1;
            }
        }
        removed
    }
}

/// Checks that `pointer` is an RFC 6901 JSON Pointer to a part of an object (not `""`, the
/// whole object).
///
/// # Errors
/// [`PathError::Pointer`], saying what is wrong.
pub fn validate_pointer(pointer: &str) -> Result<(), PathError> {
    let invalid = |problem: &str| PathError::Pointer {
        pointer: pointer.to_owned(),
        problem: problem.to_owned(),
    };
    if pointer.is_empty() {
        return Err(invalid(
            "the empty pointer is the whole object; name a field such as /spec/replicas",
        ));
    }
    if !pointer.starts_with('/') {
        return Err(invalid("a JSON Pointer starts with /, e.g. /spec/replicas"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(invalid(
                "~ must be followed by 0 (for ~) or 1 (for /), as RFC 6901 escapes them",
            ));
        }
    }
    Ok(())
}

/// Removes what `pointer` points at (an object member or a list element), as a JSON Patch
/// `remove` does. Returns whether something was there; a pointer to nothing changes nothing.
///
/// # Errors
/// [`PathError::Pointer`] when `pointer` is not a valid one ([`validate_pointer`]).
pub fn remove_pointer(value: &mut Value, pointer: &str) -> Result<bool, PathError> {
    validate_pointer(pointer)?;
    let (parent, last) = split_pointer(pointer);
    let last = unescape(last);
    Ok(match value.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&last).is_some(),
        // RFC 6901: an index is 0 or digits without a leading 0 (no sign, no spaces).
        Some(Value::Array(list))
            if !last.is_empty()
                && last.bytes().all(|b| b.is_ascii_digit())
                && (last == "0" || !last.starts_with('0')) =>
        {
            match last.parse::<usize>() {
                Ok(i) if i < list.len() => {
                    list.remove(i);
                    true
                }
                _ => false,
            }
        }
        _ => false,
    })
}

/// `"/a/b~1c"` -> `("/a", "b~1c")`; the pointer starts with `/`.
fn split_pointer(pointer: &str) -> (&str, &str) {
    pointer
        .rsplit_once('/')
        .map_or(("", pointer), |(parent, last)| (parent, last))
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The checks of [`KubeJsonPath`]'s guarantees, before anything parses the path.
fn check_shape(path: &str, used: PathUse) -> Result<(), String> {
    if path.len() > MAX_PATH_BYTES {
        return Err(format!(
            "the path is {} bytes, over the limit of {MAX_PATH_BYTES}",
            path.len()
        ));
    }
    let chars: Vec<char> = path.chars().collect();
    let (mut depth, mut brackets, mut parens) = (0usize, 0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut descendants = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            if c == '\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '\\' => i += 1,
            '[' | '(' => {
                depth += 1;
                if c == '[' {
                    brackets += 1;
                } else {
                    parens += 1;
                }
                if depth > MAX_PATH_NESTING {
                    return Err(format!(
                        "brackets and parentheses nest deeper than {MAX_PATH_NESTING}: flatten the path"
                    ));
                }
            }
            ']' | ')' => {
                depth = depth.saturating_sub(1);
                if c == ']' {
                    brackets = brackets.saturating_sub(1);
                } else {
                    parens = parens.saturating_sub(1);
                }
            }
            ',' if brackets > 0 && parens == 0 => {
                return Err("unions ([a,b]) are not read: write one path for each field".to_owned());
            }
            '.' if chars.get(i + 1) == Some(&'.') => {
                if depth > 0 {
                    return Err(format!(
                        "a descendant segment (..) inside a filter, at character {}: name the \
                         fields the filter reads",
                        i + 1
                    ));
                }
                descendants += 1;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    match (used, descendants) {
        (_, 0) => Ok(()),
        (PathUse::Feedback, 1) => Ok(()),
        (PathUse::Feedback, _) => Err("a path has at most one descendant segment (..)".to_owned()),
        (PathUse::IgnoreFields, _) => Err(
            "ignoreFields take no descendant segment (..): name the field's place, with [*] or \
             a filter for list entries"
                .to_owned(),
        ),
    }
}

/// kubectl's JSONPath (inside the braces) as an RFC 9535 query, or what is wrong with it.
fn to_rfc9535(path: &str) -> Result<String, String> {
    let trimmed = path.trim();
    let inner = match (trimmed.strip_prefix('{'), trimmed.ends_with('}')) {
        (Some(rest), true) => rest[..rest.len() - 1].trim(),
        (None, false) => trimmed,
        _ => return Err("unbalanced braces: write .status.x or {.status.x}".into()),
    };
    if inner.contains('{') || inner.contains('}') {
        return Err(
            "only one path is read (kubectl templates with several {...} or range/end are not paths)"
                .into(),
        );
    }
    if inner.is_empty() {
        return Err("the path is empty: name a field such as .status.readyReplicas".into());
    }
    if matches!(inner, "." | "$" | "@") {
        return Ok("$".into());
    }
    let chars: Vec<char> = inner.chars().collect();
    let mut i = match chars[0] {
        '$' | '@' => 1,
        _ => 0,
    };
    let mut out = String::from("$");
    // A path without a leading dot (`status.x`) starts with a field name.
    let mut expect_name = i < chars.len() && !matches!(chars[i], '.' | '[');
    while i < chars.len() || expect_name {
        if expect_name {
            expect_name = false;
            if chars.get(i) == Some(&'*') {
                out.push_str("[*]");
                i += 1;
                continue;
            }
            let mut name = String::new();
            while let Some(&c) = chars.get(i) {
                match c {
                    '\\' => {
                        name.push(*chars.get(i + 1).ok_or("a path cannot end with \\")?);
                        i += 2;
                    }
                    '.' | '[' => break,
                    c if c.is_whitespace() => {
                        return Err(format!(
                            "a space in a field name at character {}: quote such a name, ['my field']",
                            i + 1
                        ));
                    }
                    c => {
                        name.push(c);
                        i += 1;
                    }
                }
            }
            if name.is_empty() {
                return Err(format!("a field name is missing at character {}", i + 1));
            }
            out.push_str("['");
            out.push_str(&name.replace('\\', "\\\\").replace('\'', "\\'"));
            out.push_str("']");
            continue;
        }
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                out.push_str("..");
                i += 2;
                match chars.get(i) {
                    None => return Err("a path cannot end with ..".into()),
                    Some('[') => {}
                    Some('*') => {
                        out.push('*');
                        i += 1;
                    }
                    // `..name` becomes `..['name']`.
                    _ => expect_name = true,
                }
            }
            '.' => {
                i += 1;
                if chars.get(i) != Some(&'[') {
                    expect_name = true;
                }
            }
            '[' => {
                let end = closing_bracket(&chars, i)
                    .ok_or_else(|| format!("the [ at character {} is never closed", i + 1))?;
                out.extend(&chars[i..=end]);
                i = end + 1;
            }
            c => {
                return Err(format!(
                    "unexpected {c:?} at character {}: fields are written .name or ['name']",
                    i + 1
                ));
            }
        }
    }
    Ok(out)
}

/// The index of the `]` that closes the `[` at `open`, skipping quoted strings and nested
/// brackets and parentheses.
fn closing_bracket(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut i = open;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) => {
                if c == '\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '[' | '(' => depth += 1,
                ']' | ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return (c == ']').then_some(i);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p", "annotations": {"kubernetes.io/name": "x", "a.b": "dotted"}},
            "spec": {"replicas": 3, "containers": [
                {"name": "app", "image": "app:1", "resources": {"limits": {"cpu": "1"}}},
                {"name": "sidecar", "image": "proxy:2"}
            ]},
            "status": {"readyReplicas": 2, "conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Progressing", "status": "False"}
            ]}
        })
    }

    fn values(path: &str) -> Vec<Value> {
        KubeJsonPath::parse(path, PathUse::Feedback)
            .unwrap()
            .query(&pod())
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn kubectl_paths_select_what_kubectl_selects() {
        assert_eq!(values(".status.readyReplicas"), [json!(2)]);
        assert_eq!(values("{.status.readyReplicas}"), [json!(2)]);
        assert_eq!(values("status.readyReplicas"), [json!(2)]);
        assert_eq!(values(".spec.containers[0].image"), [json!("app:1")]);
        assert_eq!(values(".spec.containers[-1].name"), [json!("sidecar")]);
        assert_eq!(
            values(".spec.containers[*].image"),
            [json!("app:1"), json!("proxy:2")]
        );
        assert_eq!(values("..image"), [json!("app:1"), json!("proxy:2")]);
        assert_eq!(
            values(r#".status.conditions[?(@.type=="Available")].status"#),
            [json!("True")]
        );
        assert_eq!(
            values(".status.conditions[?(@.type=='Progressing')].status"),
            [json!("False")]
        );
        assert_eq!(
            values(".metadata.annotations['kubernetes.io/name']"),
            [json!("x")]
        );
        assert_eq!(values(r".metadata.annotations.a\.b"), [json!("dotted")]);
        assert_eq!(values(".status.missing"), Vec::<Value>::new());
    }

    #[test]
    fn what_is_not_a_path_is_refused_with_the_reason() {
        for (path, says) in [
            ("", "empty"),
            ("{.a", "unbalanced braces"),
            ("{.a}{.b}", "only one path"),
            ("{range .items[*]}{.x}{end}", "only one path"),
            (".spec.containers[0", "never closed"),
            (".spec..", "cannot end"),
            (".a b", "space"),
            (".spec.containers[?(@.name==)]", "RFC 9535"),
        ] {
            let err = KubeJsonPath::parse(path, PathUse::Feedback)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{path:?}: {err}");
        }
    }

    /// What could exhaust the parser's stack, or make the matches of a short path multiply,
    /// is refused before anything parses it.
    #[test]
    fn paths_that_could_blow_up_are_refused_before_parsing() {
        let deep = format!(".status.x[?{}@.y{}]", "(".repeat(20), ")".repeat(20));
        let huge = format!(
            ".status.x[?{}@.y{}]",
            "(".repeat(20_000),
            ")".repeat(20_000)
        );
        let long = format!(".{}", "a".repeat(MAX_PATH_BYTES));
        for (path, used, says) in [
            (deep.as_str(), PathUse::Feedback, "nest deeper than 16"),
            (huge.as_str(), PathUse::Feedback, "over the limit of 1024"),
            (long.as_str(), PathUse::Feedback, "over the limit of 1024"),
            (".spec['a','b']", PathUse::Feedback, "unions"),
            (
                ".spec.containers[0,1].image",
                PathUse::IgnoreFields,
                "unions",
            ),
            ("..a..b", PathUse::Feedback, "at most one descendant"),
            ("..image", PathUse::IgnoreFields, "no descendant segment"),
            (".x[?(@..y == 1)]", PathUse::Feedback, "inside a filter"),
        ] {
            let err = KubeJsonPath::parse(path, used).unwrap_err().to_string();
            assert!(err.contains(says), "{}: {err}", &path[..path.len().min(40)]);
        }
        // Commas inside a filter's function call are not unions.
        assert!(KubeJsonPath::parse(".x[?(match(@.name, 'a.*'))]", PathUse::Feedback).is_ok(),);
        // An index is digits: "+1" or " 1" is no index.
        let mut obj = pod();
        assert_eq!(remove_pointer(&mut obj, "/spec/containers/+1"), Ok(false));
        assert_eq!(obj["spec"]["containers"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn removing_fields_leaves_list_entries_and_other_fields_alone() {
        let mut obj = pod();
        let path = KubeJsonPath::parse(".spec.containers[*].image", PathUse::IgnoreFields).unwrap();
        assert_eq!(path.remove_fields(&mut obj), 2);
        assert_eq!(
            obj["spec"]["containers"],
            json!([
                {"name": "app", "resources": {"limits": {"cpu": "1"}}},
                {"name": "sidecar"}
            ])
        );
        // A list entry is not a field: it stays.
        let entry = KubeJsonPath::parse(".spec.containers[0]", PathUse::IgnoreFields).unwrap();
        assert_eq!(entry.remove_fields(&mut obj), 0);
        assert_eq!(obj["spec"]["containers"].as_array().unwrap().len(), 2);
        let annotation = KubeJsonPath::parse(
            ".metadata.annotations['kubernetes.io/name']",
            PathUse::IgnoreFields,
        )
        .unwrap();
        assert_eq!(annotation.remove_fields(&mut obj), 1);
        assert_eq!(obj["metadata"]["annotations"], json!({"a.b": "dotted"}));
    }

    #[test]
    fn json_pointers_remove_fields_and_list_entries_as_a_json_patch_remove_does() {
        let mut obj = pod();
        assert_eq!(remove_pointer(&mut obj, "/spec/replicas"), Ok(true));
        assert_eq!(remove_pointer(&mut obj, "/spec/replicas"), Ok(false));
        assert_eq!(
            remove_pointer(&mut obj, "/metadata/annotations/kubernetes.io~1name"),
            Ok(true)
        );
        assert_eq!(remove_pointer(&mut obj, "/spec/containers/1"), Ok(true));
        assert_eq!(remove_pointer(&mut obj, "/spec/containers/01"), Ok(false));
        assert_eq!(remove_pointer(&mut obj, "/spec/containers/7"), Ok(false));
        assert_eq!(obj["spec"]["containers"].as_array().unwrap().len(), 1);
        assert!(obj["spec"].get("replicas").is_none());
        for (bad, says) in [
            ("", "whole object"),
            ("spec/replicas", "starts with /"),
            ("/a~2b", "~ must be followed"),
        ] {
            let err = remove_pointer(&mut obj, bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
