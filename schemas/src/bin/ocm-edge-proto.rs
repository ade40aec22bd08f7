//! `ocm-edge-proto`: inspect OCM CloudEvents when debugging interop.
//!
//! ```text
//! ocm-edge-proto statushash FILE   hex status hash of the status event in FILE (as Go peers compute it)
//! ocm-edge-proto decode FILE       type, attributes, extensions and a summary of the data
//! ```
//! FILE holds one CloudEvent in structured JSON (like the maestro events in `schemas/tests/fixtures/vectors/maestro/`); `-` reads stdin.
//! Exit codes: 0 ok, 1 the event is bad, 2 usage or I/O error.

use std::io::Read;
use std::process::ExitCode;

use cloudevents::{AttributesReader, Event};
use ocm_edge_schemas::api::work::ManifestBundleStatus;
use ocm_edge_schemas::wire::cluster_events::ClusterEvent;
use ocm_edge_schemas::wire::event_type::{EventType, MANIFEST_BUNDLES, SubResource};
use ocm_edge_schemas::wire::works::WorkEvent;
use ocm_edge_schemas::wire::{DataError, data_as, status_hash, structured};

const USAGE: &str = "usage: ocm-edge-proto <statushash|decode> FILE
  statushash FILE   print the hex status hash of the status event in FILE
  decode FILE       print the event's type, extensions and a summary of its data
FILE is one CloudEvent in structured JSON; '-' reads standard input.";

/// A failure to report: what went wrong, and how to fix it.
struct Failure {
    code: u8,
    what: String,
    fix: &'static str,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [cmd, file] if cmd == "statushash" => load(file).and_then(|e| statushash(file, &e)),
        [cmd, file] if cmd == "decode" => load(file).and_then(|e| decode(file, &e)),
        [flag] if flag == "-h" || flag == "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(Failure {
            code: 2,
            what: format!("unexpected arguments {args:?}"),
            fix: "see the usage above",
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if f.code == 2 && f.fix == "see the usage above" {
                eprintln!("{USAGE}");
            }
            eprintln!("error: {}\n  fix: {}", f.what, f.fix);
            ExitCode::from(f.code)
        }
    }
}

fn load(file: &str) -> Result<Event, Failure> {
    let mut bytes = Vec::new();
    let read = if file == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(file).map(|b| bytes = b)
    };
    read.map_err(|e| Failure {
        code: 2,
        what: format!("cannot read {file}: {e}"),
        fix: "check the path and permissions",
    })?;
    structured::parse(&bytes).map_err(|e| Failure {
        code: 1,
        what: format!("{file}: {e}"),
        fix: "FILE must hold one CloudEvent in structured JSON with specversion, id, source, type \
              (and data); see schemas/tests/fixtures/vectors/maestro/ in ocm-edge for examples",
    })
}

fn statushash(file: &str, event: &Event) -> Result<(), Failure> {
    let ty = EventType::parse(event.ty()).ok();
    let is_status = ty
        .as_ref()
        .is_some_and(|t| t.data_type == MANIFEST_BUNDLES && t.sub_resource == SubResource::Status);
    if !is_status {
        return Err(Failure {
            code: 1,
            what: format!(
                "{file}: event type {:?} is not a ManifestWork status event",
                event.ty()
            ),
            fix: "give a ...manifestbundles.status.update_request or .resync_response event",
        });
    }
    let status: ManifestBundleStatus =
        data_as(event, "ManifestBundleStatus").map_err(|e| data_failure(file, &e))?;
    let hash = status_hash::bundle_status_hash(&status);
    println!("{hash}");
    if let Ok(claimed) = ocm_edge_schemas::wire::extensions::status_hash(event)
        && claimed != hash
    {
        eprintln!("note: the event's statushash extension says {claimed}");
    }
    Ok(())
}

fn data_failure(file: &str, e: &DataError) -> Failure {
    Failure {
        code: 1,
        what: format!("{file}: {e}"),
        fix: "the data must be the JSON payload for the event type (docs/reference/protocol.md section 5)",
    }
}

fn decode(file: &str, event: &Event) -> Result<(), Failure> {
    println!("type:        {}", event.ty());
    println!("id:          {}", event.id());
    println!("source:      {}", event.source());
    if let Some(t) = event.time() {
        println!(
            "time:        {}",
            t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        );
    }
    if let Some(ct) = event.datacontenttype() {
        println!("content:     {ct}");
    }
    let mut exts: Vec<_> = event.iter_extensions().collect();
    exts.sort_by(|a, b| a.0.cmp(b.0));
    println!("extensions:");
    for (name, value) in exts {
        println!("  {name} = {value}");
    }
    let bad = |e: ocm_edge_schemas::wire::works::WorkEventError| Failure {
        code: 1,
        what: format!("{file}: {e}"),
        fix: "compare with docs/reference/protocol.md sections 3 to 5 (types, extensions, payloads)",
    };
    if ClusterEvent::is_cluster_event_type(event.ty()) {
        return match ClusterEvent::from_event(event).map_err(bad)? {
            ClusterEvent::Presence(p) => {
                println!(
                    "data:        presence {:?} (connectionSeq {})",
                    p.data.state, p.data.connection_seq
                );
                Ok(())
            }
            ClusterEvent::Lease(l) => {
                println!(
                    "data:        lease {}/{}",
                    l.data.metadata.namespace, l.data.metadata.name
                );
                Ok(())
            }
            ClusterEvent::JoinRequest(c)
            | ClusterEvent::Unjoin(c)
            | ClusterEvent::HubView(c)
            | ClusterEvent::Status(c) => {
                println!("data:        ManagedCluster {}", c.data.metadata.name);
                Ok(())
            }
            ClusterEvent::Unknown { ty } => {
                println!("data:        (not understood: {ty})");
                Ok(())
            }
        };
    }
    match WorkEvent::from_event(event).map_err(bad)? {
        WorkEvent::Spec(s) => {
            let what = if s.is_delete() {
                "delete"
            } else {
                "desired bundle"
            };
            println!(
                "data:        {what}, resource {} version {}",
                s.resource_id, s.resource_version
            );
            if let Some(b) = &s.bundle {
                println!("  manifests ({}):", b.manifests.len());
                for m in &b.manifests {
                    println!(
                        "    {} {}/{}",
                        m.kind().unwrap_or("?"),
                        m.namespace().unwrap_or(""),
                        m.name().unwrap_or("?")
                    );
                }
                if let Some(d) = &b.delete_option {
                    println!("  deleteOption: {:?}", d.propagation_policy);
                }
                if !b.manifest_configs.is_empty() {
                    println!("  manifestConfigs: {}", b.manifest_configs.len());
                }
            }
        }
        WorkEvent::Status(s) => {
            println!(
                "data:        status of resource {} version {}",
                s.resource_id, s.resource_version
            );
            println!("  conditions:");
            for c in &s.status.conditions {
                println!("    {} = {:?} ({})", c.type_, c.status, c.reason);
            }
            println!("  resources ({}):", s.status.resource_status.len());
            for r in &s.status.resource_status {
                let m = &r.resource_meta;
                let conds: Vec<String> = r
                    .conditions
                    .iter()
                    .map(|c| format!("{}={:?}", c.type_, c.status))
                    .collect();
                println!(
                    "    {} {}/{}: {}",
                    m.kind,
                    m.namespace,
                    m.name,
                    conds.join(", ")
                );
            }
            let hash = status_hash::bundle_status_hash(&s.status);
            match &s.status_hash {
                Some(claimed) if *claimed == hash => println!("  statushash:  {hash} (matches)"),
                Some(claimed) => println!("  statushash:  {hash} (event says {claimed}: MISMATCH)"),
                None => println!("  statushash:  {hash}"),
            }
        }
        WorkEvent::SpecResyncRequest(r) => {
            println!(
                "data:        agent holds {} bundles",
                r.versions.resource_versions.len()
            );
            for v in &r.versions.resource_versions {
                println!("    {} @ {}", v.resource_id, v.resource_version);
            }
        }
        WorkEvent::StatusResyncRequest(r) => {
            println!(
                "data:        source holds {} status hashes",
                r.hashes.status_hashes.len()
            );
            for h in &r.hashes.status_hashes {
                println!("    {} {}", h.resource_id, h.status_hash);
            }
        }
        WorkEvent::Unknown { ty } => println!("data:        (not understood: {ty})"),
    }
    Ok(())
}
