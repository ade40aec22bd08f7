//! What the agent receives on its topics (from the hub, or from anyone who can publish there):
//! decoded as the agent does, then the checks it runs before storing a spec (limits, the accept
//! decision, each manifest's identity). Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_agent::core::acceptance::decide_spec;
use ocm_edge_agent::core::resource::ResourceRef;
use ocm_edge_agent::events::{Inbound, admissible, parse_inbound};
use ocm_edge_fuzz::{CLUSTER, SOURCE, message};
use ocm_edge_schemas::wire::topic;

fuzz_target!(|data: &[u8]| {
    let topics = [
        topic::source_events(SOURCE, CLUSTER).unwrap(),
        topic::source_broadcast(SOURCE).unwrap(),
        topic::source_events("maestro", CLUSTER).unwrap(),
    ];
    let Some(msg) = message(data, &topics) else {
        return;
    };
    if let Ok(Inbound::Spec(spec)) = parse_inbound(&msg, CLUSTER) {
        if admissible(&spec).is_err() {
            return;
        }
        let _ = decide_spec(Some(3), spec.resource_version, spec.is_delete());
        if let Some(bundle) = &spec.bundle {
            for (i, manifest) in bundle.manifests.iter().enumerate() {
                let _ = ResourceRef::from_manifest(manifest, i);
            }
        }
    }
});
