//! The checked-in contracts (`schemas/json/`, `schemas/asyncapi.yaml`, `schemas/CONTRACTS.md`) are
//! exactly what the code generates; `OCM_EDGE_BLESS=1` rewrites them instead of failing.

use crate::contracts_kit;

use contracts_kit::schemas_dir;
use std::path::{Path, PathBuf};

use ocm_edge_schemas::contracts::{
    self, BLESS_ENV, ContractFile, JSON_DIR, REGENERATE_SCHEMAS, schema_files,
};

fn owned() -> Option<&'static str> {
    Some(JSON_DIR)
}

#[test]
fn checked_in_contracts_match_the_generated_ones() {
    let files = contracts::files().expect("contracts render");
    let root = schemas_dir();
    if std::env::var_os(BLESS_ENV).is_some() {
        let changed = contracts::bless(&root, &files, owned()).expect("contracts written");
        eprintln!("{BLESS_ENV}: rewrote {changed:?}");
    }
    let problems = contracts::check(&root, &files, owned(), REGENERATE_SCHEMAS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(contracts::files().unwrap(), contracts::files().unwrap());
}

#[test]
fn every_generated_file_is_sorted_and_ends_with_one_newline() {
    for ContractFile { path, contents } in contracts::files().unwrap() {
        assert!(
            contents.ends_with('\n') && !contents.ends_with("\n\n"),
            "{path} must end with exactly one newline"
        );
        if path.ends_with(".json") {
            let value: serde_json::Value = serde_json::from_str(&contents).unwrap();
            assert_eq!(
                contents,
                contracts::canonical_json(&value),
                "{path} is not canonical"
            );
        }
    }
}

#[test]
fn every_required_payload_has_a_schema_file() {
    let files = contracts::files().unwrap();
    for name in [
        "manifest-bundle",
        "manifest-bundle-status",
        "resource-version-list",
        "status-hash-list",
        "managed-cluster",
        "lease",
        "presence",
        "manifest-work",
        "managed-cluster-set",
        "managed-cluster-set-binding",
        "placement",
        "placement-decision",
        "manifest-work-replica-set",
        "add-on-placement-score",
        "cluster-claim",
        "admin-request",
        "admin-response",
    ] {
        let path = format!("{JSON_DIR}/{name}.schema.json");
        assert!(files.iter().any(|f| f.path == path), "no {path}");
    }
}

/// A scratch copy of the contracts in a directory named `schemas` (as messages name it),
/// removed when dropped (this crate has no tempfile dependency).
struct Scratch(PathBuf);

impl Scratch {
    fn path(&self) -> PathBuf {
        self.0.join("schemas")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_copy(files: &[ContractFile], name: &str) -> Scratch {
    let dir =
        std::env::temp_dir().join(format!("ocm-edge-contracts-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let scratch = Scratch(dir);
    contracts::bless(&scratch.path(), files, owned()).unwrap();
    scratch
}

#[test]
fn a_stale_file_is_reported_with_the_command_that_fixes_it() {
    let files = contracts::files().unwrap();
    let dir = temp_copy(&files, "stale");
    let stale = Path::new(JSON_DIR).join(schema_files::PRESENCE);
    std::fs::write(dir.path().join(&stale), "{}\n").unwrap();
    let problems = contracts::check(&dir.path(), &files, owned(), REGENERATE_SCHEMAS);
    assert_eq!(
        problems,
        vec![format!(
            "schemas/json/{} is out of date: run `{REGENERATE_SCHEMAS}`",
            schema_files::PRESENCE
        )]
    );
    assert!(problems[0].contains(
        "run `OCM_EDGE_BLESS=1 cargo test -p ocm-edge-schemas --test it contracts_in_sync`"
    ));
}

#[test]
fn missing_and_extra_files_are_reported_and_blessing_fixes_them() {
    let files = contracts::files().unwrap();
    let dir = temp_copy(&files, "extra");
    std::fs::remove_file(dir.path().join("asyncapi.yaml")).unwrap();
    std::fs::write(dir.path().join("json/old-name.schema.json"), "{}\n").unwrap();
    let problems = contracts::check(&dir.path(), &files, owned(), REGENERATE_SCHEMAS);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("schemas/asyncapi.yaml is missing"));
    assert!(problems[1].starts_with("schemas/json/old-name.schema.json is not generated"));

    let changed = contracts::bless(&dir.path(), &files, owned()).unwrap();
    assert_eq!(changed, vec!["asyncapi.yaml", "json/old-name.schema.json"]);
    assert!(contracts::check(&dir.path(), &files, owned(), REGENERATE_SCHEMAS).is_empty());
}
