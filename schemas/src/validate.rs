//! Validation of works, manifests and names.
