//! The proof of who sent an admin request, as the hub checks it before anything else: the
//! credential (base64 of a certificate), the signing time and the signature, in the request's
//! MQTT user properties, against the hub's CA. Nothing may panic, and no input may pass as anyone
//! but the one user the fixture CA signed a credential for (the seeds are that user's requests).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_fuzz::{ADMIN_CORRELATION, ADMIN_REPLY, ADMIN_USER, SOURCE, message, now};
use ocm_edge_schemas::wire::topic;

fuzz_target!(|data: &[u8]| {
    let topics = [topic::admin_requests(SOURCE).expect("a valid source id")];
    let Some(request) = message(data, &topics) else {
        return;
    };
    let authenticator = ocm_edge_fuzz::admin_authenticator();
    if let Ok(who) = authenticator.authenticate(&request, ADMIN_REPLY, ADMIN_CORRELATION, now()) {
        assert_eq!(
            who.user, ADMIN_USER,
            "a request passed as a user nobody signed"
        );
    }
});
