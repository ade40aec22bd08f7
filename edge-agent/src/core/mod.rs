//! Pure agent logic: no IO, no clock (`now` is an argument), no MQTT, kube or redb types.
//!
//! - [`resource`]: identity of a manifest on the cluster, drift comparison.
//! - [`plan`]: desired bundle + applied inventory → ordered apply/remove actions.
//! - [`status`]: per-manifest and per-work conditions, status feedback.
//! - [`outbox`]: latest status per bundle until the hub has it.
//! - [`acceptance`]: which spec events to act on.
//! - [`lease`]: lease renewal schedule.

pub mod acceptance;
pub mod lease;
pub mod outbox;
pub mod plan;
pub mod resource;
pub mod status;
