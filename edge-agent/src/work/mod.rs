//! Works (ManifestWorks) on the agent (OCM's `work/spoke`, mirrored by the hub's `work/`).
//!
//! The shell, [`bundles`]: spec events into the store, reconcile the cluster against the
//! desired bundles (online or offline), statuses into the outbox and out to the hub.
//!
//! Pure (no IO, no clock: `now` is an argument; no MQTT, kube or redb types):
//! - [`acceptance`]: which spec events the agent acts on (versions, replays, deletes).
//! - [`resource`]: identity of a manifest on the cluster, drift comparison.
//! - [`plan`]: desired bundle + applied inventory → ordered apply / remove actions.
//! - [`status`]: per-manifest and per-work conditions, status feedback.
//! - [`conditions`]: the conditions of a manifest's `conditionRules` (CEL, well-known).
//! - [`addon_identity`]: add-on agents' MQTT identities: ask the hub, then write their Secret.
//! - [`outbox`]: the latest status per bundle, until the hub has it.
//! - [`watched`]: the objects whose status is read on change (`feedbackScrapeType: Watch`).
//! - [`drift`]: which applies put back an object changed on the cluster (counted).

pub mod acceptance;
pub mod addon_identity;
pub(crate) mod bundles;
pub mod conditions;
pub mod drift;
pub mod outbox;
pub mod plan;
pub mod resource;
pub mod status;
pub mod watched;
