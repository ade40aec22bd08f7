//! The placeholders of a ManifestWorkReplicaSet's per-cluster template: a small subset of Go's
//! `text/template`, the syntax OCM's and Helm's users already write, so an expression either
//! means here what it means in Go or is refused with what is supported.
//!
//! A placeholder is `{{ TERM }}` or `{{ TERM | default LITERAL }}` (also `{{ default LITERAL
//! TERM }}`, Sprig's order), where TERM is one of
//! - `.ClusterName`: the cluster's name;
//! - `.ClusterSet`: its ManagedClusterSet (the `cluster.open-cluster-management.io/clusterset`
//!   label);
//! - `.ClusterLabels.KEY` / `.ClusterClaims.KEY`: a label or a cluster claim; keys that are not
//!   identifiers (`topology.kubernetes.io/zone`) are written `index .ClusterLabels "KEY"`;
//! - `.Values.A.B`: a value of `spec.perCluster` (`index .Values "a-b" "c"` for other keys).
//!
//! LITERAL is a JSON-style string (`"x"`, or Go's raw `` `x` ``), a number, `true` or `false`.
//! Pure: parsing and evaluation take everything as arguments.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

/// Where a term's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// `.ClusterName`.
    ClusterName,
    /// `.ClusterSet`.
    ClusterSet,
    /// `.ClusterLabels`.
    ClusterLabels,
    /// `.ClusterClaims`.
    ClusterClaims,
    /// `.Values`.
    Values,
}

impl Root {
    fn parse(name: &str) -> Option<Root> {
        Some(match name {
            "ClusterName" => Root::ClusterName,
            "ClusterSet" => Root::ClusterSet,
            "ClusterLabels" => Root::ClusterLabels,
            "ClusterClaims" => Root::ClusterClaims,
            "Values" => Root::Values,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Root::ClusterName => "ClusterName",
            Root::ClusterSet => "ClusterSet",
            Root::ClusterLabels => "ClusterLabels",
            Root::ClusterClaims => "ClusterClaims",
            Root::Values => "Values",
        }
    }
}

/// One placeholder.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholder {
    /// The variable.
    pub root: Root,
    /// Keys below it.
    pub keys: Vec<String>,
    /// `| default ...`.
    pub default: Option<Value>,
    /// As written, `{{ ... }}` included (for messages).
    pub text: String,
}

impl Placeholder {
    /// The term as a path, e.g. `.Values.store.id`.
    pub fn path(&self) -> String {
        let mut p = format!(".{}", self.root.name());
        for k in &self.keys {
            if is_identifier(k) {
                p.push('.');
                p.push_str(k);
            } else {
                p.push_str(&format!("[{k:?}]"));
            }
        }
        p
    }
}

/// A string cut into text and placeholders.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// Kept as written.
    Text(String),
    /// Replaced by its value.
    Placeholder(Placeholder),
}

/// Why a string is not a template: where (a byte offset in the string) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset of the placeholder in the string.
    pub offset: usize,
    /// What is wrong, with what is supported.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.message)
    }
}

const SUPPORTED: &str = "supported: .ClusterName, .ClusterSet, .ClusterLabels.KEY, \
    .ClusterClaims.KEY, .Values.PATH, index .ClusterLabels \"KEY\", and | default VALUE";

/// Whether `s` holds a placeholder at all (cheap: most strings do not).
pub fn has_placeholder(s: &str) -> bool {
    s.contains("{{")
}

/// Cuts `s` into text and placeholders.
///
/// # Errors
/// [`ParseError`] for an unclosed `{{`, an unknown variable or function, or a malformed literal.
pub fn parse(s: &str) -> Result<Vec<Segment>, ParseError> {
    let mut segments = Vec::new();
    let mut rest = 0usize;
    while let Some(found) = s[rest..].find("{{") {
        let start = rest + found;
        if start > rest {
            segments.push(Segment::Text(s[rest..start].to_owned()));
        }
        let (placeholder, end) = parse_placeholder(s, start)?;
        segments.push(Segment::Placeholder(placeholder));
        rest = end;
    }
    if rest < s.len() {
        segments.push(Segment::Text(s[rest..].to_owned()));
    }
    Ok(segments)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Field(Vec<String>),
    Word(String),
    Literal(Value),
    Pipe,
}

/// Parses the placeholder opening at `start`; returns it and the offset after its `}}`.
fn parse_placeholder(s: &str, start: usize) -> Result<(Placeholder, usize), ParseError> {
    let fail = |message: String| ParseError {
        offset: start,
        message,
    };
    let bytes = s.as_bytes();
    let mut i = start + 2;
    if bytes.get(i) == Some(&b'-') {
        return Err(fail(
            "whitespace trimming ({{- and -}}) is not supported in a manifest's strings".into(),
        ));
    }
    let mut tokens = Vec::new();
    let end = loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match bytes.get(i) {
            None => return Err(fail("{{ is not closed by }}".into())),
            Some(b'}') if bytes.get(i + 1) == Some(&b'}') => break i + 2,
            Some(b'-') if s[i..].starts_with("-}}") => {
                return Err(fail(
                    "whitespace trimming ({{- and -}}) is not supported in a manifest's strings"
                        .into(),
                ));
            }
            Some(b'|') => {
                tokens.push(Token::Pipe);
                i += 1;
            }
            Some(b'.') => {
                let mut keys = Vec::new();
                while bytes.get(i) == Some(&b'.') {
                    let from = i + 1;
                    let mut j = from;
                    while bytes
                        .get(j)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    {
                        j += 1;
                    }
                    if j == from {
                        return Err(fail(format!(
                            "{:?} is not a variable ({SUPPORTED})",
                            &s[start..end_of(s, i)]
                        )));
                    }
                    keys.push(s[from..j].to_owned());
                    i = j;
                }
                tokens.push(Token::Field(keys));
            }
            Some(b'"') => {
                let len = string_literal_len(&s[i..])
                    .ok_or_else(|| fail("a string literal is not closed by \"".into()))?;
                let value: String = serde_json::from_str(&s[i..i + len])
                    .map_err(|e| fail(format!("bad string literal: {e}")))?;
                tokens.push(Token::Literal(Value::String(value)));
                i += len;
            }
            Some(b'`') => {
                let close = s[i + 1..]
                    .find('`')
                    .ok_or_else(|| fail("a raw string literal is not closed by `".into()))?;
                tokens.push(Token::Literal(Value::String(
                    s[i + 1..i + 1 + close].to_owned(),
                )));
                i += close + 2;
            }
            Some(b) if b.is_ascii_digit() || *b == b'-' => {
                let mut j = i + 1;
                while bytes
                    .get(j)
                    .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E'))
                {
                    j += 1;
                }
                let n: serde_json::Number = s[i..j]
                    .parse()
                    .map_err(|_| fail(format!("{:?} is not a number", &s[i..j])))?;
                tokens.push(Token::Literal(Value::Number(n)));
                i = j;
            }
            Some(b) if b.is_ascii_alphabetic() => {
                let mut j = i;
                while bytes
                    .get(j)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    j += 1;
                }
                let word = &s[i..j];
                tokens.push(match word {
                    "true" => Token::Literal(Value::Bool(true)),
                    "false" => Token::Literal(Value::Bool(false)),
                    _ => Token::Word(word.to_owned()),
                });
                i = j;
            }
            Some(_) => {
                let c = s[i..].chars().next().unwrap_or('?');
                return Err(fail(format!("unexpected {c:?} ({SUPPORTED})")));
            }
        }
    };
    let text = s[start..end].to_owned();
    let placeholder =
        placeholder_of(tokens, text.clone()).map_err(|m| fail(format!("{text}: {m}")))?;
    Ok((placeholder, end))
}

/// The end of the placeholder for a message (the `}}` or the string's end).
fn end_of(s: &str, from: usize) -> usize {
    s[from..].find("}}").map_or(s.len(), |e| from + e + 2)
}

/// Length of the JSON string literal at the start of `s` (quotes included).
fn string_literal_len(s: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i + 1),
            _ => {}
        }
    }
    None
}

fn placeholder_of(tokens: Vec<Token>, text: String) -> Result<Placeholder, String> {
    let (term, default) = match tokens.as_slice() {
        [Token::Word(d), Token::Literal(v), term @ ..] if d == "default" => (term, Some(v.clone())),
        [term @ .., Token::Pipe, Token::Word(d), Token::Literal(v)] if d == "default" => {
            (term, Some(v.clone()))
        }
        term => (term, None),
    };
    let (root, keys) = match term {
        [Token::Field(keys)] => (keys[0].as_str(), keys[1..].to_vec()),
        [Token::Word(index), Token::Field(keys), args @ ..]
            if index == "index" && !args.is_empty() =>
        {
            let mut all = keys[1..].to_vec();
            for a in args {
                match a {
                    Token::Literal(Value::String(k)) => all.push(k.clone()),
                    _ => return Err(format!("index takes string keys ({SUPPORTED})")),
                }
            }
            (keys[0].as_str(), all)
        }
        [] => return Err(format!("an empty placeholder ({SUPPORTED})")),
        [Token::Word(w), ..] if w != "index" => {
            return Err(format!("unknown function {w:?} ({SUPPORTED})"));
        }
        _ => return Err(format!("unsupported expression ({SUPPORTED})")),
    };
    let root =
        Root::parse(root).ok_or_else(|| format!("unknown variable .{root} ({SUPPORTED})"))?;
    match root {
        Root::ClusterName | Root::ClusterSet if !keys.is_empty() => {
            return Err(format!(".{} has no fields", root.name()));
        }
        Root::ClusterLabels | Root::ClusterClaims if keys.len() != 1 => {
            return Err(format!(
                ".{} takes one key, e.g. .{}.region",
                root.name(),
                root.name()
            ));
        }
        Root::Values if keys.is_empty() => {
            return Err("name a value, e.g. .Values.storeId".into());
        }
        _ => {}
    }
    Ok(Placeholder {
        root,
        keys,
        default,
        text,
    })
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What a cluster's placeholders are replaced by.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// `.ClusterName`.
    pub cluster: &'a str,
    /// `.ClusterSet`.
    pub cluster_set: Option<&'a str>,
    /// `.ClusterLabels`.
    pub labels: &'a BTreeMap<String, String>,
    /// `.ClusterClaims`.
    pub claims: &'a BTreeMap<String, String>,
    /// `.Values`.
    pub values: &'a Value,
}

impl Context<'_> {
    /// The placeholder's value (its default when the cluster has none); `None` when it has none.
    pub fn lookup(&self, p: &Placeholder) -> Option<Value> {
        let found = match p.root {
            Root::ClusterName => Some(Value::String(self.cluster.to_owned())),
            Root::ClusterSet => self.cluster_set.map(|s| Value::String(s.to_owned())),
            Root::ClusterLabels => self.labels.get(&p.keys[0]).cloned().map(Value::String),
            Root::ClusterClaims => self.claims.get(&p.keys[0]).cloned().map(Value::String),
            Root::Values => {
                let mut v = self.values;
                for k in &p.keys {
                    v = match v.get(k) {
                        Some(next) => next,
                        None => {
                            v = &Value::Null;
                            break;
                        }
                    };
                }
                (!v.is_null()).then(|| v.clone())
            }
        };
        found.or_else(|| p.default.clone())
    }
}

/// Why a placeholder could not be replaced for a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The cluster has no such value and the placeholder no default.
    Missing(String),
    /// An object or a list inside a longer string.
    NotText(String),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Missing(m) | EvalError::NotText(m) => f.write_str(m),
        }
    }
}

/// Renders a parsed string. A string that is exactly one placeholder takes the value's JSON type
/// (`replicas: "{{ .Values.replicas }}"` becomes a number); inside longer text a value is
/// written as text (strings as they are, numbers and booleans as JSON), objects and lists are
/// refused.
///
/// # Errors
/// [`EvalError`] for a value the cluster lacks (never rendered as an empty string).
pub fn render(segments: &[Segment], context: &Context<'_>) -> Result<Value, EvalError> {
    let value_of = |p: &Placeholder| {
        context.lookup(p).ok_or_else(|| {
            EvalError::Missing(format!(
                "{}: cluster {} has no {}{}",
                p.text,
                context.cluster,
                p.path(),
                missing_hint(p, context.cluster)
            ))
        })
    };
    if let [Segment::Placeholder(p)] = segments {
        return value_of(p);
    }
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Text(t) => out.push_str(t),
            Segment::Placeholder(p) => match value_of(p)? {
                Value::String(v) => out.push_str(&v),
                v @ (Value::Number(_) | Value::Bool(_)) => out.push_str(&v.to_string()),
                _ => {
                    return Err(EvalError::NotText(format!(
                        "{}: {} of cluster {} is an object or a list, which cannot go inside \
                         text: make the placeholder the whole string",
                        p.text,
                        p.path(),
                        context.cluster
                    )));
                }
            },
        }
    }
    Ok(Value::String(out))
}

fn missing_hint(p: &Placeholder, cluster: &str) -> String {
    match p.root {
        Root::Values => format!(
            " (set it in spec.perCluster.values, .clusterSets.<set> or .clusters.{cluster}, \
             or give a default: {{{{ {} | default ... }}}})",
            p.path()
        ),
        Root::ClusterLabels => format!(
            " (label the cluster: ocm-edge cluster label {cluster} {}=..., or give a default)",
            p.keys[0]
        ),
        Root::ClusterSet => " (it is in no ManagedClusterSet; give a default)".into(),
        Root::ClusterClaims => " (its agent reports no such claim; give a default)".into(),
        Root::ClusterName => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context<'a>(
        labels: &'a BTreeMap<String, String>,
        claims: &'a BTreeMap<String, String>,
        values: &'a Value,
    ) -> Context<'a> {
        Context {
            cluster: "store-17",
            cluster_set: Some("eu"),
            labels,
            claims,
            values,
        }
    }

    fn run(s: &str) -> Result<Value, String> {
        let labels = BTreeMap::from([
            ("region".to_owned(), "west".to_owned()),
            ("topology.kubernetes.io/zone".to_owned(), "z1".to_owned()),
        ]);
        let claims = BTreeMap::from([("platform.k3s".to_owned(), "v1.31".to_owned())]);
        let values = json!({"replicas": 3, "store": {"id": "17"}, "ports": [80], "on": true});
        let segments = parse(s).map_err(|e| e.to_string())?;
        render(&segments, &context(&labels, &claims, &values)).map_err(|e| e.to_string())
    }

    #[test]
    fn placeholders_are_replaced_and_a_whole_string_takes_the_values_type() {
        assert_eq!(run("{{ .Values.replicas }}").unwrap(), json!(3));
        assert_eq!(run("{{.Values.on}}").unwrap(), json!(true));
        assert_eq!(run("{{ .Values.ports }}").unwrap(), json!([80]));
        assert_eq!(run("n={{ .Values.replicas }}").unwrap(), json!("n=3"));
        assert_eq!(
            run("{{ .ClusterName }}-{{ .ClusterSet }}-{{ .ClusterLabels.region }}").unwrap(),
            json!("store-17-eu-west")
        );
        assert_eq!(
            run(r#"{{ index .ClusterLabels "topology.kubernetes.io/zone" }}"#).unwrap(),
            json!("z1")
        );
        assert_eq!(
            run(r#"{{ index .ClusterClaims "platform.k3s" }}"#).unwrap(),
            json!("v1.31")
        );
        assert_eq!(
            run(r#"id-{{ index .Values "store" "id" }}"#).unwrap(),
            json!("id-17")
        );
        assert_eq!(run("{{ .Values.store.id }}").unwrap(), json!("17"));
        assert_eq!(run("no placeholder").unwrap(), json!("no placeholder"));
    }

    #[test]
    fn a_default_is_used_only_when_the_cluster_has_no_value() {
        assert_eq!(
            run(r#"{{ .Values.registry | default "docker.io" }}"#).unwrap(),
            json!("docker.io")
        );
        assert_eq!(
            run(r#"{{ default "docker.io" .Values.registry }}"#).unwrap(),
            json!("docker.io")
        );
        assert_eq!(run("{{ .Values.replicas | default 1 }}").unwrap(), json!(3));
        assert_eq!(
            run("{{ .ClusterLabels.size | default `small` }}").unwrap(),
            json!("small")
        );
    }

    #[test]
    fn a_missing_value_is_an_error_naming_the_cluster_and_where_to_set_it() {
        let e = run("image: {{ .Values.registry }}/web").unwrap_err();
        assert!(
            e.contains("cluster store-17 has no .Values.registry"),
            "{e}"
        );
        assert!(e.contains("spec.perCluster.values"), "{e}");
        assert!(e.contains(".clusters.store-17"), "{e}");
        let e = run("{{ .ClusterLabels.size }}").unwrap_err();
        assert!(
            e.contains("ocm-edge cluster label store-17 size=..."),
            "{e}"
        );
        let e = run("x{{ .Values.store }}").unwrap_err();
        assert!(e.contains("cannot go inside text"), "{e}");
    }

    #[test]
    fn what_go_would_read_differently_or_we_do_not_support_is_refused_with_its_offset() {
        for (text, expected) in [
            ("ab{{ .Foo }}", "unknown variable .Foo"),
            ("{{ .Values.x ", "not closed"),
            ("{{ upper .ClusterName }}", "unknown function \"upper\""),
            ("{{- .ClusterName }}", "trimming"),
            ("{{ .ClusterName.x }}", "has no fields"),
            ("{{ .ClusterLabels }}", "takes one key"),
            ("{{ . }}", "is not a variable"),
            ("{{ }}", "empty placeholder"),
            ("{{ .Values.x | default }}", "unsupported expression"),
            ("{{ index .Values 3 }}", "string keys"),
            ("{{ .Values.x | default \"a }}", "not closed by \""),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.message.contains(expected), "{text}: {e}");
        }
        assert_eq!(parse("ab{{ .Foo }}").unwrap_err().offset, 2);
    }
}
