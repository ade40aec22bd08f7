//! An admin request as the hub reads it from its request topic: parsed, then planned against a
//! hub core with a cluster and a work, and the change applied. Nothing may panic; a bad request
//! gets an error answer and changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_fuzz::{hub_core, now};
use ocm_edge_hub::admin::server::{handle_request, parse_request};
use ocm_edge_schemas::admin::AdminResponse;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = parse_request(data) else {
        return;
    };
    let mut core = hub_core();
    let (change, response) = handle_request(&core, request, now());
    assert!(
        matches!(response, AdminResponse::Ok(_)) || change.is_empty(),
        "a refused request changed something"
    );
    core.apply(&change.records);
});
