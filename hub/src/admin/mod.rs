//! The admin API: the CLI talks to the hub through the broker with MQTT 5 request/response.

pub mod client;
pub mod client_error;
mod client_fleet;
pub mod credential;
pub mod fleet;
pub mod messages;
pub mod registry;
pub mod server;
