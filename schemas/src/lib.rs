//! ocm-edge-schemas: everything ocm-edge says on the wire, with no IO.
//!
//! - [`admin`]: the admin API between the CLI and the hub (MQTT 5 request/response).
//! - [`api`]: Open Cluster Management API types (ManagedCluster, ManifestWork, Placement, ...), serde-compatible
//!   with OCM's own JSON and YAML.
//! - [`jsonpath`]: Kubernetes JSONPath and JSON Pointers, as feedback rules and `ignoreFields`
//!   use them.
//! - [`maintenance`]: maintenance windows (cron schedule, duration, time zone), read by the agent
//!   and checked by the hub.
//! - [`validate`]: checks on works, manifests and names, with errors that say what is wrong and where.
//! - [`wire`]: the CloudEvents binding over MQTT 5 (topics, event types, extensions, resync payloads,
//!   sequence ids, the status hash), independent of any MQTT client library.

pub mod admin;
pub mod api;
pub mod cel;
pub mod contracts;
pub mod jsonpath;
pub mod maintenance;
pub mod validate;
pub mod wire;
