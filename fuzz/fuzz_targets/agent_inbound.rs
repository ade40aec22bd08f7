//! What the agent receives on its topics (from the hub, or from anyone who can publish there):
//! the hub's signature checked as the agent checks it, then decoded as the agent does, then the
//! checks it runs before storing a spec (limits, the accept decision, each manifest's identity).
//! Nothing may panic, and no signing key outside the pinned hub CA may ever be learned.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_agent::core::acceptance::decide_spec;
use ocm_edge_agent::core::resource::ResourceRef;
use ocm_edge_agent::events::{Inbound, admissible, parse_inbound};
use ocm_edge_agent::trust::{Checked, HubTrust};
use ocm_edge_fuzz::{CLUSTER, HUB_CA, SOURCE, hub_signer, message, now};
use ocm_edge_mqtt::CaPin;
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
    let pin = CaPin::of_der(HUB_CA);
    // A fresh agent pinned to the hub's CA, and one that already knows the hub's key.
    for trust in [
        HubTrust::new(Some(pin), None),
        HubTrust::new(Some(pin), Some(hub_signer())),
    ] {
        if let Ok(Checked::Learned(signer)) = trust.check(&msg, now()) {
            assert!(
                pin.matches(&signer.ca),
                "learned a signing key outside the pinned CA"
            );
        }
    }
    // Decoded whatever the check said, as an agent serving an unsigned source would.
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
