//! ocm-edge hub: registration, leases, works, the admin API, and the `ocm-edge` CLI.
//!
//! Map (kept current by the module owners):
//! - [`admin`]: the admin API over MQTT 5 request/response: message types, the CLI's client, the hub's server.
//! - [`cli`]: the `ocm-edge` command line (one file per command) and [`demo`].

pub mod admin;
pub mod cli;
pub mod demo;
