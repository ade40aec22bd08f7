//! The commands, one file each (the clap definition of each command's arguments is beside its
//! code).
//!
//! - [`hub`]: `ocm-edge hub` runs the hub (embedded broker by default).
//! - [`cluster`]: `ocm-edge cluster list|get|accept|deny|add|broker-config`, and
//!   [`bootstrap`]: `ocm-edge cluster bootstrap` (an edge cluster's whole agent install).
//! - [`work`]: `ocm-edge work create|list|get|delete`.
//! - [`apply`]: `ocm-edge apply -f` for OCM YAML (ManifestWork, ManagedClusterSet,
//!   ManagedClusterSetBinding, Placement, AddOnPlacementScore, ManifestWorkReplicaSet).
//! - [`placement`]: `ocm-edge clusterset list|get` and `ocm-edge placement list|get`.
//! - [`addon`]: `ocm-edge addon list|get|enable|disable` (OCM's add-ons).
//! - [`rollout`]: `ocm-edge rollout status|list` (ManifestWorkReplicaSets).
//! - [`delete`]: `ocm-edge delete KIND NAME`.
//! - [`stats`]: `ocm-edge stats` (the hub's counters).
//! - [`user`]: `ocm-edge user create|list|revoke` (admin API credentials, on the hub's machine).
//! - [`token`]: `ocm-edge token create|revoke` (join tokens, on the hub's machine).

pub mod addon;
pub mod apply;
pub mod bootstrap;
pub mod cluster;
pub mod delete;
pub mod hub;
pub mod placement;
pub mod rollout;
pub mod stats;
pub mod token;
pub mod user;
pub mod work;
