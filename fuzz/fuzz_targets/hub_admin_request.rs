//! An admin request as the hub reads it from its request topic: parsed, then planned for an
//! unscoped sender against a hub core with a cluster and a work, and for scoped senders (after
//! the role and scope check) against a hub of two teams; each change applied. Nothing may panic;
//! a refused request changes nothing, and a scoped sender's request changes nothing outside its
//! scope ([`ocm_edge_fuzz::admin_request_from_everyone`]).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ocm_edge_fuzz::admin_request_from_everyone(data);
});
