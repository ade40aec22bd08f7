//! What an agent (or anyone with its topic) publishes to the hub: decoded as the hub's intake
//! does, then handed to the hub core as the hub task does. Nothing may panic; a bad message is an
//! error the hub counts and drops.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_fuzz::{CLUSTER, SOURCE, hub_core, message, now};
use ocm_edge_hub::events::decode_agent_message;
use ocm_edge_schemas::wire::topic;

fuzz_target!(|data: &[u8]| {
    let topics = [
        topic::agent_events(SOURCE, CLUSTER).unwrap(),
        topic::agent_events(SOURCE, "edge-2").unwrap(),
        topic::agent_broadcast(CLUSTER).unwrap(),
        "sources/ocm-edge/consumers//agentevents".to_owned(),
    ];
    let Some(msg) = message(data, &topics) else {
        return;
    };
    if let Ok(Some(input)) = decode_agent_message(SOURCE, &msg) {
        let mut core = hub_core();
        let change = core.handle_agent(input, now());
        core.apply(&change.records);
    }
});
