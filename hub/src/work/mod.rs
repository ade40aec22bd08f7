//! Works (ManifestWorks) on the hub (OCM's `work/hub`, mirrored by the agent's `work/`).
//!
//! - [`manifestworks`]: create, update and delete works, and take the statuses agents report.
//!   A work is (cluster, name) with a stable `resourceid`; deletion is a handshake with the
//!   agent. Pure.
//! - [`resync`]: both resync directions after a (re)connect: the specs an agent lacks, the
//!   statuses the hub holds. Pure.
//! - [`spec_clock`]: the `ce-time` the hub signs into spec events, which never goes back.
//! - [`ttl`]: deletes a completed work after its `ttlSecondsAfterFinished`. Pure.

pub mod manifestworks;
pub mod resync;
pub mod spec_clock;
pub mod ttl;

pub use manifestworks::{WorkError, WorkInput, resource_id};
