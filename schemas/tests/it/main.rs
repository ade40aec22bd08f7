//! The schemas crate's integration tests, one binary with a module per subject: the OCM API
//! types (`api_*`), the published contracts (`contracts_*`, with [`contracts_kit`]), the wire
//! protocol (`wire_events`, golden tests on real maestro and OCM work agent events, property
//! tests of the decoders), validation (`validate_*`) and the `ocm-edge-proto` tool.

mod api_meta;
mod api_object;
mod api_replicaset;
mod api_round_trip;
mod api_schema;
mod api_work;
mod api_yaml;
mod contracts_admin;
mod contracts_asyncapi;
mod contracts_in_sync;
mod contracts_kit;
mod contracts_payloads;
mod contracts_wire;
mod fuzz_decoders;
mod golden_maestro;
mod golden_ocm_work_agent;
mod proto_cli;
mod validate_names;
mod validate_work;
mod wire_events;
