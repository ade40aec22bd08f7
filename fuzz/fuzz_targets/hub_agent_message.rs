//! What an agent (or anyone with its topic) publishes to the hub: its signature checked and the
//! message decoded as the hub's intake does, then handed to the hub core as the hub task does.
//! Nothing may panic; a bad message is an error the hub counts and drops; nothing passes as
//! signed by a cluster key whose private half no input holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_fuzz::{CLUSTER, SOURCE, hub_core, message, now};
use ocm_edge_hub::core::AgentInput;
use ocm_edge_hub::pki::signing::check_agent_signature;
use ocm_edge_hub::process::events::decode_agent_message;
use ocm_edge_schemas::wire::signature::AGENT_KEY_ANNOTATION;
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
    // The Ed25519 public key of the seed [1; 32]: no seed or input is signed with it.
    const BOUND: [u8; 32] = [
        0x8a, 0x88, 0xe3, 0xdd, 0x74, 0x09, 0xf1, 0x95, 0xfd, 0x52, 0xdb, 0x2d, 0x3c, 0xba, 0x5d,
        0x72, 0xca, 0x67, 0x09, 0xbf, 0x1d, 0x94, 0x12, 0x1b, 0xf3, 0x74, 0x88, 0x01, 0xb4, 0x0f,
        0x6f, 0x5c,
    ];
    assert!(
        check_agent_signature(&msg, Some(&BOUND), None).is_err(),
        "a message passed as signed by a key nobody holds"
    );
    if let Ok(Some(input)) = decode_agent_message(SOURCE, &msg) {
        if let AgentInput::JoinRequest { request, .. } = &input {
            let carried = request.metadata.annotations.get(AGENT_KEY_ANNOTATION);
            let _ = check_agent_signature(&msg, None, carried.map(String::as_str));
        }
        let mut core = hub_core();
        let change = core.handle_agent(input, now());
        core.apply(&change.records);
    }
});
