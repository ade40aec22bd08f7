//! Reading the CLI's input files: Kubernetes manifests for `work create` (a file, or every
//! `*.yaml`/`*.yml`/`*.json` of a directory sorted by name; multi-document; `kind: List` expanded)
//! and OCM ManifestWorks for `apply`. Everything is checked locally before anything is sent, and
//! every error names the file (and the document and line when it can).

use std::fmt;
use std::path::{Path, PathBuf};

use ocm_edge_schemas::api::work::{Manifest, ManifestWork};
use ocm_edge_schemas::api::yaml::{YamlError, from_yaml_documents};
use ocm_edge_schemas::validate::{ValidationError, validate_manifest_work, validate_manifests};
use serde_json::Value;
use thiserror::Error;

/// File name shown for standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// Where one object came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file as given (or `<stdin>`).
    pub file: String,
    /// 1-based document index in the file (non-empty documents count).
    pub document: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (document {})", self.file, self.document)
    }
}

/// One object read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The object.
    pub value: Value,
    /// Where it came from.
    pub origin: Origin,
}

/// Input that cannot be used; nothing was sent to the hub.
#[derive(Debug, Error)]
pub enum InputError {
    /// The file or directory could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The path.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// A directory without manifest files.
    #[error(
        "{path} holds no *.yaml, *.yml or *.json files: point -f at a manifest file or a directory of them"
    )]
    EmptyDirectory {
        /// The directory.
        path: String,
    },
    /// The files hold no object at all.
    #[error("{path} holds no Kubernetes objects: add at least one manifest")]
    NoObjects {
        /// What was read.
        path: String,
    },
    /// Not valid YAML/JSON (names file, document, line and column).
    #[error("invalid YAML in {0}")]
    Yaml(YamlError),
    /// An object that fails validation.
    #[error("{origin}: {error}")]
    Invalid {
        /// Where the object is.
        origin: Origin,
        /// What is wrong.
        error: ValidationError,
    },
    /// The manifests together fail validation (e.g. too large).
    #[error("{path}: {error}")]
    InvalidSet {
        /// What was read.
        path: String,
        /// What is wrong.
        error: ValidationError,
    },
    /// A name given on the command line is not valid.
    #[error("{0}")]
    InvalidName(ValidationError),
    /// An `apply` document that is not an OCM ManifestWork.
    #[error("{origin}: {problem}")]
    NotAManifestWork {
        /// Where the object is.
        origin: Origin,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

// Not `#[from]`: that would also make the YamlError a `source`, and the error chain printed by
// `main` would repeat it.
impl From<YamlError> for InputError {
    fn from(e: YamlError) -> Self {
        InputError::Yaml(e)
    }
}

/// Reads `path` (a file, a directory, or `-` for standard input) as a list of Kubernetes objects.
///
/// # Errors
/// Unreadable files, invalid YAML, a directory without manifest files, no objects at all.
pub fn read_objects(path: &Path) -> Result<Vec<Loaded>, InputError> {
    let files = input_files(path)?;
    let mut out = Vec::new();
    for file in &files {
        let (name, text) = read_text(file)?;
        let documents = from_yaml_documents(&text, &name)?;
        for (index, value) in documents.into_iter().enumerate() {
            let origin = Origin {
                file: name.clone(),
                document: index + 1,
            };
            expand_list(value, &origin, &mut out);
        }
    }
    if out.is_empty() {
        return Err(InputError::NoObjects {
            path: path.display().to_string(),
        });
    }
    Ok(out)
}

/// A `kind: List` (what `kubectl get -o yaml` writes) stands for its items.
fn expand_list(value: Value, origin: &Origin, out: &mut Vec<Loaded>) {
    let is_list = value.get("kind").and_then(Value::as_str) == Some("List")
        && value.get("items").is_some_and(Value::is_array);
    if is_list {
        if let Some(Value::Array(items)) = value.get("items").cloned() {
            for item in items {
                expand_list(item, origin, out);
            }
        }
    } else {
        out.push(Loaded {
            value,
            origin: origin.clone(),
        });
    }
}

fn input_files(path: &Path) -> Result<Vec<PathBuf>, InputError> {
    if path == Path::new("-") {
        return Ok(vec![path.to_path_buf()]);
    }
    let read_error = |e: std::io::Error| InputError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let file = entry.path();
        let is_manifest = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if is_manifest && file.is_file() {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(InputError::EmptyDirectory {
            path: path.display().to_string(),
        });
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

fn read_text(file: &Path) -> Result<(String, String), InputError> {
    if file == Path::new("-") {
        let text = std::io::read_to_string(std::io::stdin()).map_err(|e| InputError::Read {
            path: STDIN_NAME.to_owned(),
            reason: e.to_string(),
        })?;
        return Ok((STDIN_NAME.to_owned(), text));
    }
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|e| InputError::Read {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    Ok((name, text))
}

/// Checks manifests as the hub will (each a named Kubernetes object, 500 KiB in total) and
/// returns them in order.
///
/// # Errors
/// The first invalid manifest with its file and document, or the set's size problem.
pub fn check_manifests(path: &Path, loaded: &[Loaded]) -> Result<Vec<Value>, InputError> {
    let manifests: Vec<Manifest> = loaded.iter().map(|l| Manifest(l.value.clone())).collect();
    match validate_manifests(&manifests) {
        Ok(()) => Ok(loaded.iter().map(|l| l.value.clone()).collect()),
        Err(ValidationError::Manifest { index, .. }) if index < loaded.len() => {
            // Re-run on the single manifest so the message describes it without the list index,
            // which means nothing to someone looking at a file.
            let origin = loaded[index].origin.clone();
            let error = validate_manifests(&manifests[index..=index])
                .err()
                .unwrap_or_else(|| validate_manifests(&manifests).unwrap_err());
            Err(InputError::Invalid { origin, error })
        }
        Err(error) => Err(InputError::InvalidSet {
            path: path.display().to_string(),
            error,
        }),
    }
}

/// Reads and checks OCM ManifestWorks (`apiVersion: work.open-cluster-management.io/v1`,
/// `kind: ManifestWork`, `metadata.namespace` = the cluster).
///
/// # Errors
/// Unreadable or invalid files; documents that are not ManifestWorks or fail validation.
pub fn read_manifest_works(path: &Path) -> Result<Vec<(ManifestWork, Origin)>, InputError> {
    read_objects(path)?.into_iter().map(manifest_work).collect()
}

/// One document read as an OCM ManifestWork (see [`read_manifest_works`]).
///
/// # Errors
/// As [`read_manifest_works`].
pub fn manifest_work(loaded: Loaded) -> Result<(ManifestWork, Origin), InputError> {
    {
        let origin = loaded.origin;
        let not_a_work = |problem: String| InputError::NotAManifestWork {
            origin: origin.clone(),
            problem,
        };
        let api_version = loaded.value.get("apiVersion").and_then(Value::as_str);
        let kind = loaded.value.get("kind").and_then(Value::as_str);
        if kind != Some(ManifestWork::KIND) || api_version != Some(ManifestWork::API_VERSION) {
            return Err(not_a_work(format!(
                "expected apiVersion {} and kind {}, found apiVersion {} and kind {}: `apply` takes \
                 OCM ManifestWorks (use `ocm-edge work create -f` for plain Kubernetes manifests)",
                ManifestWork::API_VERSION,
                ManifestWork::KIND,
                api_version.unwrap_or("(none)"),
                kind.unwrap_or("(none)"),
            )));
        }
        let work: ManifestWork = serde_json::from_value(loaded.value)
            .map_err(|e| not_a_work(format!("not a valid ManifestWork: {e}")))?;
        if work.metadata.namespace.is_empty() {
            return Err(not_a_work(format!(
                "metadata.namespace is empty: set it to the name of the cluster the work {:?} is for",
                work.metadata.name
            )));
        }
        validate_manifest_work(&work).map_err(|error| InputError::Invalid {
            origin: origin.clone(),
            error,
        })?;
        Ok((work, origin))
    }
}

/// The fields of an OCM object as written that ocm-edge does not know: what is in `written` and
/// not in `parsed` (the object as ocm-edge read it, serialised again), as dotted paths. The hub
/// owns `status` and keeps only some of `metadata`, so neither is compared; fields written empty
/// (`null`, `""`, `0`, `false`, `[]`, `{}`) are defaults, not lost.
pub fn ignored_fields(written: &Value, parsed: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let (Value::Object(w), Value::Object(p)) = (written, parsed) {
        for (k, v) in w {
            if k == "status" || k == "metadata" {
                continue;
            }
            ignored_below(v, p.get(k), k, &mut out);
        }
    }
    out
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

fn ignored_below(written: &Value, parsed: Option<&Value>, path: &str, out: &mut Vec<String>) {
    match (written, parsed) {
        (w, None) if !is_empty_value(w) => out.push(path.to_owned()),
        (w, Some(Value::Null)) if !is_empty_value(w) => out.push(path.to_owned()),
        (Value::Object(w), Some(Value::Object(p))) => {
            for (k, v) in w {
                ignored_below(v, p.get(k), &format!("{path}.{k}"), out);
            }
        }
        (Value::Array(w), Some(Value::Array(p))) => {
            for (i, v) in w.iter().enumerate() {
                ignored_below(v, p.get(i), &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::object::OcmObject;
    use std::fs;

    /// What `apply` would warn about for one document of the kinds it compares.
    fn ignored_in(value: &Value) -> Option<Vec<String>> {
        let parsed = match OcmObject::from_value(value.clone()).ok()? {
            OcmObject::Placement(o) => serde_json::to_value(o),
            OcmObject::ManifestWorkReplicaSet(o) => serde_json::to_value(o),
            OcmObject::ManifestWork(o) => serde_json::to_value(o),
            OcmObject::ManagedClusterSet(o) => serde_json::to_value(o),
            OcmObject::ManagedClusterSetBinding(o) => serde_json::to_value(o),
            _ => return None,
        }
        .unwrap();
        Some(ignored_fields(value, &parsed))
    }

    #[test]
    fn fields_ocm_edge_does_not_know_are_named_and_defaults_are_not() {
        let placement = serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p", "namespace": "default", "resourceVersion": "7"},
            "spec": {"numberOfClusters": 2, "tolerations": [], "shuffle": {"seed": 1},
                     "predicates": [{"requiredClusterSelector": {"labelSelector": {},
                                     "fancy": true}}]},
            "status": {"numberOfSelectedClusters": 3}});
        assert_eq!(
            ignored_in(&placement).unwrap(),
            [
                "spec.predicates[0].requiredClusterSelector.fancy",
                "spec.shuffle"
            ]
        );
    }

    /// Every OCM object the docs and the CLI's fixtures show is one ocm-edge reads whole: no
    /// example of ours loses a field at `apply`.
    #[test]
    fn no_example_in_the_docs_or_fixtures_has_a_field_ocm_edge_ignores() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut texts = Vec::new();
        for dir in ["docs/concepts", "docs/guides", "docs/getting-started"] {
            for entry in fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let text = fs::read_to_string(&path).unwrap();
                for block in text.split("```yaml\n").skip(1) {
                    let block = block.split("```").next().unwrap();
                    if block.contains("apiVersion:") && block.contains("kind:") {
                        texts.push((path.display().to_string(), block.to_owned()));
                    }
                }
            }
        }
        for entry in fs::read_dir(root.join("hub/cli/tests/fixtures/cli/fleet")).unwrap() {
            let path = entry.unwrap().path();
            texts.push((
                path.display().to_string(),
                fs::read_to_string(&path).unwrap(),
            ));
        }
        let mut checked = 0;
        for (origin, text) in texts {
            // Some doc blocks are fragments with comments: those that do not parse are skipped.
            let Ok(docs) = ocm_edge_schemas::api::yaml::from_yaml_documents(&text, &origin) else {
                continue;
            };
            for value in docs {
                if let Some(ignored) = ignored_in(&value) {
                    checked += 1;
                    assert!(ignored.is_empty(), "{origin}: {ignored:?}");
                }
            }
        }
        assert!(checked >= 5, "only {checked} examples found");
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_directory_is_read_in_name_order_and_other_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "b.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        );
        write(
            dir.path(),
            "a.yml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a2}\n",
        );
        write(
            dir.path(),
            "c.json",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c"}}"#,
        );
        write(dir.path(), "README.md", "not a manifest");
        let objects = read_objects(dir.path()).unwrap();
        let names: Vec<_> = objects
            .iter()
            .map(|o| o.value["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "a2", "b", "c"]);
        assert_eq!(objects[1].origin.document, 2);
    }

    #[test]
    fn invalid_yaml_names_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "bad.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n",
        );
        let e = read_objects(&p).unwrap_err().to_string();
        assert!(e.contains("bad.yaml") && e.contains("line 5"), "{e}");
    }

    #[test]
    fn a_manifest_without_a_name_is_reported_with_its_file_and_document() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "m.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
        );
        let loaded = read_objects(&p).unwrap();
        let e = check_manifests(&p, &loaded).unwrap_err().to_string();
        assert!(
            e.contains("m.yaml (document 2)") && e.contains("metadata.name"),
            "{e}"
        );
    }

    #[test]
    fn a_list_stands_for_its_items() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "l.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: y}}\n",
        );
        assert_eq!(read_objects(&p).unwrap().len(), 2);
    }

    #[test]
    fn apply_refuses_plain_manifests_and_works_without_a_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        );
        let e = read_manifest_works(&p).unwrap_err().to_string();
        assert!(e.contains("work create"), "{e}");
        let p = write(
            dir.path(),
            "w.yaml",
            "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: w}\nspec:\n  workload:\n    manifests:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}\n",
        );
        let e = read_manifest_works(&p).unwrap_err().to_string();
        assert!(e.contains("metadata.namespace"), "{e}");
    }
}
