//! YAML as `ocm-edge apply -f` and `work create -f` read it: every document, then each as a
//! ManifestWork or one of the OCM objects `apply` takes. Nothing may panic; bad input is an error
//! naming the document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_cli::manifests::{Loaded, Origin, manifest_work};
use ocm_edge_schemas::api::object::OcmObject;
use ocm_edge_schemas::api::yaml::from_yaml_documents;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(documents) = from_yaml_documents(text, "fuzz.yaml") else {
        return;
    };
    for (index, value) in documents.into_iter().enumerate() {
        let _ = OcmObject::from_value(value.clone());
        let origin = Origin {
            file: "fuzz.yaml".to_owned(),
            document: index + 1,
        };
        let _ = manifest_work(Loaded { value, origin });
    }
});
