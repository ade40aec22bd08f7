//! The admin API messages. They are a wire contract, so they live in the schemas crate
//! ([`ocm_edge_schemas::admin`], with their JSON Schemas); this path keeps hub code and the CLI
//! client importing them from where they always did.

pub use ocm_edge_schemas::admin::*;
