//! The cluster certificate in the hub's view of a cluster (annotation
//! `ocm-edge.io/cluster-certificate`), as the agent reads it before it writes it to its data dir
//! and logs in with it: PEM, X.509, its name, its key, its dates. Nothing may panic; what is taken
//! names the agent's cluster, certifies the agent's own key and is kept as sent.
#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use ocm_edge_agent::registration::certificate::from_view;
use ocm_edge_fuzz::{BOUND_KEY_BASE64, CLUSTER, now};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::wire::signature::CLUSTER_CERTIFICATE_ANNOTATION;

fuzz_target!(|data: &[u8]| {
    let key = base64::engine::general_purpose::STANDARD
        .decode(BOUND_KEY_BASE64)
        .expect("the fixture key");
    // The first byte picks how the rest reaches the parser: as the annotation's text, or as DER
    // wrapped in PEM (so the X.509 parser sees arbitrary bytes, not only what survives PEM).
    let Some((how, rest)) = data.split_first() else {
        return;
    };
    let text = if how % 2 == 0 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(rest);
        format!("-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n")
    };
    let mut view = ManagedCluster::new(CLUSTER);
    view.metadata
        .annotations
        .insert(CLUSTER_CERTIFICATE_ANNOTATION.to_owned(), text.clone());
    if let Ok(Some(cert)) = from_view(&view, CLUSTER, &key) {
        assert_eq!(cert.pem, text, "a certificate is kept as the hub sent it");
        let _ = cert.valid_at(now());
        let _ = cert.renewal_due(now());
        // Another cluster's agent or another key never takes it.
        assert!(from_view(&view, "edge-2", &key).is_err());
        assert!(from_view(&view, CLUSTER, &[0u8; 32]).is_err());
    }
});
