//! Registration and identity on the agent's side (OCM's `registration/spoke`, mirrored by the
//! hub's `registration/`).
//!
//! - [`key`]: the agent's own Ed25519 key, which signs everything it publishes and logs it in.
//! - [`join`]: the join request, the hub's view of the cluster (accepted, denied), and the
//!   periodic asks (the join request again, the next certificate).
//! - [`trust`]: which hub the agent takes orders from: the hub's signature on every event it
//!   sends, the hub's CA pinned or trusted on first use.
//! - [`certificate`]: the cluster's TLS client certificate from the hub's view, for brokers that
//!   take certificates as identities (`--broker-mtls`).

pub mod certificate;
pub mod join;
pub mod key;
pub mod trust;

pub use join::Registration;
