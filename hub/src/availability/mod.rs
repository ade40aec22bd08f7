//! Cluster availability: the `ManagedClusterConditionAvailable` condition and OCM's availability
//! taints, computed from what the agent and the broker tell the hub. Pure: `now` is an argument,
//! nothing here touches a socket or a clock.
//!
//! # Signals
//! - **Birth** (presence online, `connectionSeq` N): the agent connected; session N is current.
//! - **Death** (presence offline, the MQTT will of connection N): the broker saw connection N break
//!   (within 1.5 x keepalive of a dead TCP link). A death for the current session (or a newer one)
//!   makes the cluster Unknown at once; a death for an *older* session is stale (the broker
//!   publishes the will of a taken-over connection after the new connection's birth) and is
//!   ignored.
//! - **Lease renewal** and **API-server health report**: proofs of life. They restart the grace
//!   period and bring an Unknown cluster back.
//! - **Tick**: nothing new; re-evaluates the lease deadline. The shell calls it at
//!   [`ClusterAvailability::next_deadline`].
//!
//! # What it computes (OCM's semantics)
//! | situation | Available | reason | taint (effect NoSelect) |
//! |---|---|---|---|
//! | alive, API server healthy (or not reported yet) | True | `ManagedClusterAvailable` | none |
//! | alive, agent reports its API server unhealthy | False | `ManagedClusterKubeAPIServerUnavailable` | `.../unavailable` |
//! | no proof of life for the grace period (half-open link) | Unknown | `ManagedClusterLeaseUpdateStopped` | `.../unreachable` |
//! | the will of the current session arrived | Unknown | `ManagedClusterConnectionLost` | `.../unreachable` |
//! | nothing heard yet (just accepted) | absent | | `.../unreachable` (as OCM's taint controller) |
//!
//! `ManagedClusterConnectionLost` is ocm-edge's own reason (OCM has no will); the status, which is
//! what placements and `kubectl get managedcluster` read, is OCM's. The taint's `timeAdded` is the
//! hub's `now` when the taint appeared and is kept for as long as the same taint stays, so
//! placement tolerations (`tolerationSeconds`) count from the moment the cluster went away.
//!
//! # Grace period
//! `grace = leaseDurationSeconds x grace_multiplier`, default multiplier
//! [`DEFAULT_GRACE_MULTIPLIER`] = 1.5 (OCM: 5, i.e. 300 s for the default 60 s lease). The agent
//! renews three times per lease duration (the agent's `lease/schedule.rs`), so 1.5 x covers four
//! renewal intervals: a live cluster survives three lost or late renewals, while a half-open link
//! is seen after 90 s (60 s lease) or 7.5 s (5 s lease) instead of 300 s. A broken TCP connection
//! does not wait for the grace period at all: its will arrives first.
//!
//! This file is the state machine of one cluster; [`lease`] is the hub core's side, which feeds
//! every accepted cluster's machine and writes what it decides into the cluster's record.

pub mod lease;

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::cluster::{
    MANAGED_CLUSTER_CONDITION_AVAILABLE, ManagedClusterStatus, TAINT_UNAVAILABLE,
    TAINT_UNREACHABLE, Taint, TaintEffect,
};
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, Time, find_condition};
use ocm_edge_schemas::wire::cluster_events::{Presence, PresenceState};
use serde::{Deserialize, Serialize};

/// Lease duration when the agent does not say (OCM's default).
pub const DEFAULT_LEASE_DURATION_SECONDS: i32 = 60;
/// Shortest lease duration the hub honours; shorter ones are raised to it.
pub const MIN_LEASE_DURATION_SECONDS: i32 = 5;
/// Grace period in lease durations (see the module docs for why 1.5 and not OCM's 5).
pub const DEFAULT_GRACE_MULTIPLIER: f64 = 1.5;

/// Reason when the cluster is available (the agent's, as OCM's registration agent writes it).
pub const REASON_AVAILABLE: &str = "ManagedClusterAvailable";
/// Reason when the agent reports its API server unhealthy (OCM's).
pub const REASON_KUBE_API_SERVER_UNAVAILABLE: &str = "ManagedClusterKubeAPIServerUnavailable";
/// Reason when no proof of life arrived for the grace period (OCM's hub lease controller).
pub const REASON_LEASE_UPDATE_STOPPED: &str = "ManagedClusterLeaseUpdateStopped";
/// Reason when the broker published the will of the agent's current connection (ocm-edge's).
pub const REASON_CONNECTION_LOST: &str = "ManagedClusterConnectionLost";

const MESSAGE_AVAILABLE: &str = "Managed cluster is available";
const MESSAGE_API_SERVER_NOT_OK: &str = "The kube-apiserver is not ok";
const MESSAGE_LEASE_UPDATE_STOPPED: &str = "Registration agent stopped updating its lease.";

/// Errors of this module.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AvailabilityError {
    /// The grace multiplier must be a finite number of at least 1 (a grace period shorter than
    /// the lease would flap live clusters). Not retryable: fix the configuration.
    #[error("lease grace multiplier must be a finite number >= 1, got {0}")]
    InvalidGraceMultiplier(f64),
}

/// Settings of the availability machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AvailabilityConfig {
    /// Grace period in lease durations.
    pub grace_multiplier: f64,
}

impl Default for AvailabilityConfig {
    fn default() -> Self {
        AvailabilityConfig {
            grace_multiplier: DEFAULT_GRACE_MULTIPLIER,
        }
    }
}

impl AvailabilityConfig {
    /// A config with `grace_multiplier`.
    ///
    /// # Errors
    /// [`AvailabilityError::InvalidGraceMultiplier`] when it is not finite or below 1.
    pub fn new(grace_multiplier: f64) -> Result<Self, AvailabilityError> {
        if grace_multiplier.is_finite() && grace_multiplier >= 1.0 {
            Ok(AvailabilityConfig { grace_multiplier })
        } else {
            Err(AvailabilityError::InvalidGraceMultiplier(grace_multiplier))
        }
    }

    /// The grace period for a lease of `lease_duration_seconds` (to the millisecond).
    pub fn grace_period(&self, lease_duration_seconds: i32) -> TimeDelta {
        let ms = f64::from(lease_duration_seconds) * 1000.0 * self.grace_multiplier;
        TimeDelta::milliseconds(ms.round() as i64)
    }
}

/// Something the hub learnt about a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// Presence online: the agent connected with this connection sequence number.
    Birth { connection_seq: u64 },
    /// Presence offline: the broker published the will of this connection.
    Death { connection_seq: u64 },
    /// A lease renewal; `lease_duration_seconds` as the lease says (None or <= 0: unchanged).
    LeaseRenewed { lease_duration_seconds: Option<i32> },
    /// The agent's view of its own API server (`message` explains an unhealthy one).
    ApiServerHealth { healthy: bool, message: String },
    /// Time passed; re-evaluate the lease deadline.
    Tick,
}

impl Signal {
    /// The signal of a presence event (birth or will).
    pub fn from_presence(presence: &Presence) -> Signal {
        match presence.state {
            PresenceState::Online => Signal::Birth {
                connection_seq: presence.connection_seq,
            },
            PresenceState::Offline => Signal::Death {
                connection_seq: presence.connection_seq,
            },
        }
    }

    /// The signal of a lease renewal. The hub's clock (`now` given to
    /// [`ClusterAvailability::observe`]) times it, not the lease's `renewTime`, so an agent with a
    /// skewed clock can neither keep a dead cluster available nor expire a live one.
    pub fn from_lease(lease: &Lease) -> Signal {
        Signal::LeaseRenewed {
            lease_duration_seconds: lease.spec.lease_duration_seconds,
        }
    }

    /// The health signal in an agent's cluster status report: its Available condition, True
    /// (healthy) or False (unhealthy, with the agent's message). `None` when the report has no
    /// such condition or it is Unknown.
    pub fn from_cluster_status(status: &ManagedClusterStatus) -> Option<Signal> {
        let c = find_condition(&status.conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE)?;
        match c.status {
            ConditionStatus::True => Some(Signal::ApiServerHealth {
                healthy: true,
                message: String::new(),
            }),
            ConditionStatus::False => Some(Signal::ApiServerHealth {
                healthy: false,
                message: c.message.clone(),
            }),
            ConditionStatus::Unknown => None,
        }
    }
}

/// What [`ClusterAvailability::observe`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The condition or the taints changed: publish the hub's view and store the state.
    pub changed: bool,
    /// The signal was a death of an older session and was ignored (count and log it).
    pub stale: bool,
    /// When the shell must call [`Signal::Tick`] next (None: nothing can expire).
    pub next_deadline: Option<DateTime<Utc>>,
}

/// The agent's last word on its API server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ApiHealth {
    healthy: bool,
    message: String,
}

/// The availability of one cluster. Serialisable so the shell can store it with the cluster
/// record and restore it after a restart (then call [`ClusterAvailability::resume`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterAvailability {
    lease_duration_seconds: i32,
    /// Connection sequence number of the latest birth (or current death).
    session: Option<u64>,
    /// False once the current session's will arrived, until the next proof of life.
    connected: bool,
    /// Whether any proof of life arrived since tracking started.
    #[serde(default)]
    heard: bool,
    /// Start of the current grace period: the last proof of life, or when tracking started.
    last_seen: DateTime<Utc>,
    api_health: Option<ApiHealth>,
    /// None until the cluster first proves alive or its grace period ends (OCM: absent).
    condition: Option<Condition>,
    /// The availability taint currently set, with the hub's timeAdded.
    taint: Option<Taint>,
}

/// Whether `key` is one of the taints the hub puts on a cluster from its availability
/// (`unreachable`, `unavailable`): the hub's own, which no operator sets or removes.
pub fn is_availability_taint(key: &str) -> bool {
    key == TAINT_UNREACHABLE || key == TAINT_UNAVAILABLE
}

impl ClusterAvailability {
    /// Starts tracking a cluster at `now` (when it is accepted, or when the hub first hears of
    /// it). Until it proves alive the condition is absent and the cluster is tainted unreachable,
    /// as OCM's taint controller does; the grace period starts now.
    pub fn new(lease_duration_seconds: i32, now: DateTime<Utc>) -> Self {
        ClusterAvailability {
            lease_duration_seconds: clamp_lease(lease_duration_seconds)
                .unwrap_or(DEFAULT_LEASE_DURATION_SECONDS),
            session: None,
            connected: true,
            heard: false,
            last_seen: now,
            api_health: None,
            condition: None,
            taint: Some(taint(TAINT_UNREACHABLE, now)),
        }
    }

    /// Starts tracking a cluster that already has an Available condition and availability taints
    /// (stored by a hub without this machine): they are kept as they are, taint timeAdded
    /// included, and the grace period starts at `now`. A cluster with an Available condition is
    /// taken as heard from; one that was Unknown stays Unknown until it proves alive.
    pub fn adopt(
        lease_duration_seconds: i32,
        conditions: &[Condition],
        taints: &[Taint],
        now: DateTime<Utc>,
    ) -> Self {
        let mut a = ClusterAvailability::new(lease_duration_seconds, now);
        a.condition = find_condition(conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE).cloned();
        a.heard = a.condition.is_some();
        a.taint = taints
            .iter()
            .find(|t| is_availability_taint(&t.key))
            .cloned();
        if let Some(c) = &a.condition {
            let wanted = match c.status {
                ConditionStatus::True => None,
                ConditionStatus::False => Some(TAINT_UNAVAILABLE),
                ConditionStatus::Unknown => Some(TAINT_UNREACHABLE),
            };
            if a.taint.as_ref().map(|t| t.key.as_str()) != wanted {
                a.taint = wanted.map(|key| taint(key, now));
            }
        } else if a.taint.as_ref().is_none_or(|t| t.key != TAINT_UNREACHABLE) {
            a.taint = Some(taint(TAINT_UNREACHABLE, now));
        }
        a
    }

    /// After a hub restart: the hub heard nothing while it was down (births, renewals), so the
    /// grace period restarts at `now` instead of expiring every cluster at once. Condition and
    /// taints (with their timeAdded) are kept; a cluster that was Unknown stays so until it
    /// proves alive.
    pub fn resume(&mut self, now: DateTime<Utc>) {
        self.last_seen = self.last_seen.max(now);
    }

    /// Feeds one signal observed at `now`.
    pub fn observe(
        &mut self,
        config: &AvailabilityConfig,
        signal: Signal,
        now: DateTime<Utc>,
    ) -> Transition {
        let mut stale = false;
        match signal {
            Signal::Birth { connection_seq } => {
                // A birth is only ever published by a live agent on connect, so it is taken even
                // when its number went down (an agent whose data directory was wiped restarts
                // at 1): refusing it would make every later will of that agent look stale.
                self.session = Some(connection_seq);
                self.alive(now);
            }
            Signal::Death { connection_seq } => {
                if self.session.is_some_and(|current| connection_seq < current) {
                    stale = true;
                } else {
                    self.session = Some(connection_seq);
                    self.connected = false;
                }
            }
            Signal::LeaseRenewed {
                lease_duration_seconds,
            } => {
                if let Some(secs) = lease_duration_seconds.and_then(clamp_lease) {
                    self.lease_duration_seconds = secs;
                }
                self.alive(now);
            }
            Signal::ApiServerHealth { healthy, message } => {
                self.api_health = Some(ApiHealth { healthy, message });
                self.alive(now);
            }
            Signal::Tick => {}
        }
        let changed = if stale {
            false
        } else {
            self.evaluate(config, now)
        };
        Transition {
            changed,
            stale,
            next_deadline: self.next_deadline(config),
        }
    }

    /// The `ManagedClusterConditionAvailable` condition (None until the cluster first proves
    /// alive or its first grace period ends).
    pub fn condition(&self) -> Option<&Condition> {
        self.condition.as_ref()
    }

    /// The condition's status, `Unknown` while it is absent.
    pub fn status(&self) -> ConditionStatus {
        self.condition
            .as_ref()
            .map_or(ConditionStatus::Unknown, |c| c.status)
    }

    /// The availability taint (unreachable or unavailable), if any.
    pub fn taint(&self) -> Option<&Taint> {
        self.taint.as_ref()
    }

    /// The lease duration in force (seconds).
    pub fn lease_duration_seconds(&self) -> i32 {
        self.lease_duration_seconds
    }

    /// The connection sequence number of the current session, if known.
    pub fn connection_seq(&self) -> Option<u64> {
        self.session
    }

    /// When the cluster becomes Unknown unless it proves alive before (None when it is already
    /// Unknown, or disconnected: then only a signal can change anything).
    pub fn next_deadline(&self, config: &AvailabilityConfig) -> Option<DateTime<Utc>> {
        let unknown = self
            .condition
            .as_ref()
            .is_some_and(|c| c.status == ConditionStatus::Unknown);
        (self.connected && !unknown)
            .then(|| self.last_seen + config.grace_period(self.lease_duration_seconds))
    }

    /// Writes the condition and the availability taint into a cluster's conditions and taints,
    /// keeping every other condition and taint. Returns whether anything changed.
    pub fn apply_to(&self, conditions: &mut Vec<Condition>, taints: &mut Vec<Taint>) -> bool {
        let mut changed = false;
        match &self.condition {
            Some(c) => {
                if let Some(existing) = conditions.iter_mut().find(|e| e.type_ == c.type_) {
                    if existing != c {
                        *existing = c.clone();
                        changed = true;
                    }
                } else {
                    conditions.push(c.clone());
                    changed = true;
                }
            }
            None => {
                let before = conditions.len();
                conditions.retain(|e| e.type_ != MANAGED_CLUSTER_CONDITION_AVAILABLE);
                changed |= conditions.len() != before;
            }
        }
        let ours = |t: &Taint| is_availability_taint(&t.key);
        let current: Vec<&Taint> = taints.iter().filter(|t| ours(t)).collect();
        let wanted: Vec<&Taint> = self.taint.iter().collect();
        if current != wanted {
            taints.retain(|t| !ours(t));
            taints.extend(self.taint.iter().cloned());
            changed = true;
        }
        changed
    }

    fn alive(&mut self, now: DateTime<Utc>) {
        self.connected = true;
        self.heard = true;
        self.last_seen = self.last_seen.max(now);
    }

    /// Recomputes condition and taint; returns whether either changed.
    fn evaluate(&mut self, config: &AvailabilityConfig, now: DateTime<Utc>) -> bool {
        let expired = now >= self.last_seen + config.grace_period(self.lease_duration_seconds);
        let (status, reason, message) = if !self.connected {
            let seq = self.session.map(|s| format!(" {s}")).unwrap_or_default();
            (
                ConditionStatus::Unknown,
                REASON_CONNECTION_LOST,
                format!(
                    "The agent's connection{seq} to the broker was lost (its MQTT will arrived)."
                ),
            )
        } else if expired {
            (
                ConditionStatus::Unknown,
                REASON_LEASE_UPDATE_STOPPED,
                MESSAGE_LEASE_UPDATE_STOPPED.to_owned(),
            )
        } else if !self.heard {
            // Still waiting for the first word from the agent: stay absent (OCM).
            return false;
        } else {
            match &self.api_health {
                Some(ApiHealth {
                    healthy: false,
                    message,
                }) => (
                    ConditionStatus::False,
                    REASON_KUBE_API_SERVER_UNAVAILABLE,
                    if message.is_empty() {
                        MESSAGE_API_SERVER_NOT_OK.to_owned()
                    } else {
                        message.clone()
                    },
                ),
                _ => (
                    ConditionStatus::True,
                    REASON_AVAILABLE,
                    MESSAGE_AVAILABLE.to_owned(),
                ),
            }
        };
        let mut changed = false;
        let at = Time::new(now);
        match &mut self.condition {
            Some(c) if c.status == status => {
                if c.reason != reason || c.message != message {
                    c.reason = reason.to_owned();
                    c.message = message;
                    changed = true;
                }
            }
            slot => {
                let mut c =
                    Condition::new(MANAGED_CLUSTER_CONDITION_AVAILABLE, status, reason, message);
                c.last_transition_time = Some(at);
                *slot = Some(c);
                changed = true;
            }
        }
        let wanted_key = match status {
            ConditionStatus::True => None,
            ConditionStatus::False => Some(TAINT_UNAVAILABLE),
            ConditionStatus::Unknown => Some(TAINT_UNREACHABLE),
        };
        if self.taint.as_ref().map(|t| t.key.as_str()) != wanted_key {
            self.taint = wanted_key.map(|key| taint(key, now));
            changed = true;
        }
        changed
    }
}

fn clamp_lease(secs: i32) -> Option<i32> {
    (secs > 0).then(|| secs.max(MIN_LEASE_DURATION_SECONDS))
}

fn taint(key: &str, now: DateTime<Utc>) -> Taint {
    Taint {
        key: key.to_owned(),
        value: String::new(),
        effect: TaintEffect::NoSelect,
        time_added: Some(Time::new(now)),
    }
}
