//! What the agent receives on its topics (from the hub, or from anyone who can publish there):
//! the hub's signature checked as the agent checks it, then decoded as the agent does, then the
//! checks it runs before storing a spec (limits, the accept decision, each manifest's identity).
//! Nothing may panic; an agent that knows no key trusts nothing; a key is learned only from a
//! hub view and only under the pinned hub CA.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_agent::events::{Inbound, admissible, parse_inbound};
use ocm_edge_agent::registration::trust::{Checked, HubTrust};
use ocm_edge_agent::work::acceptance::decide_spec;
use ocm_edge_agent::work::resource::ResourceRef;
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
    let hub_view = msg.user_property("ce-type")
        == Some("cluster.open-cluster-management.io.v1.managedclusters.spec.update_request");
    // A fresh agent pinned to the hub's CA knows no key: nothing passes as signed by a known
    // one, and a key is learned only from a hub view, under the pinned CA.
    match HubTrust::new(Some(pin), None).check(&msg, now()) {
        Ok(Checked::Trusted) => panic!("trusted without knowing any key"),
        Ok(Checked::Learned(signer)) => {
            assert!(
                hub_view,
                "learned a key from something other than a hub view"
            );
            assert!(
                pin.matches(&signer.ca),
                "learned a key outside the pinned CA"
            );
        }
        _ => {}
    }
    // One that knows the hub's key: never learns another CA's.
    if let Ok(Checked::Learned(signer)) =
        HubTrust::new(Some(pin), Some(hub_signer())).check(&msg, now())
    {
        assert!(hub_view && pin.matches(&signer.ca));
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
