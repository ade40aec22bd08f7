//! The admin API's server side: the CLI talks to the hub through the broker with MQTT 5
//! request/response (the messages are a contract: `ocm_edge_schemas::admin`).
//!
//! - [`server`]: one request into a core change and its answer, without IO.
//! - [`fleet`]: the requests for cluster sets, bindings, placements, add-on scores and replica sets.
//! - [`addons`]: the requests for add-ons (list, get, enable, disable).
//! - [`auth`]: who sent a request (its signed credential) and whether its role allows it.
//! - [`scope`]: what a scoped credential reaches, and whether a request stays within it.
//! - [`testkit`]: a hub of two teams, for the tests of scoped credentials.
//! - [`users`]: the credentials the hub's CA issues to users, and which are revoked.
//!
//! The client half (the admin client, signing requests) is the CLI's (`ocm_edge_cli::client`).

pub mod addons;
pub mod auth;
pub mod fleet;
pub mod scope;
pub mod server;
pub mod testkit;
pub mod users;
