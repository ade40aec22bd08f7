//! Lease renewal schedule. Pure: the caller passes `now`.
//!
//! The agent renews three times per lease duration (OCM renews once), so the hub, whose grace
//! period is a multiple of the duration, never sees a live cluster expire because of one lost
//! message.

use chrono::{DateTime, Duration, Utc};

/// When the next renewal is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSchedule {
    interval: Duration,
    last_renewed: Option<DateTime<Utc>>,
}

impl LeaseSchedule {
    /// A schedule for a lease of `lease_duration_seconds` (renewed every third of it, at least 1 s).
    pub fn new(lease_duration_seconds: i32) -> Self {
        let ms = (i64::from(lease_duration_seconds) * 1000 / 3).max(1000);
        LeaseSchedule {
            interval: Duration::milliseconds(ms),
            last_renewed: None,
        }
    }

    /// A schedule of one event every `interval` (at least 1 ms).
    pub fn every(interval: std::time::Duration) -> Self {
        LeaseSchedule {
            interval: Duration::from_std(interval)
                .unwrap_or(Duration::MAX)
                .max(Duration::milliseconds(1)),
            last_renewed: None,
        }
    }

    /// Time between renewals.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Whether a renewal is due at `now` (always true before the first one).
    pub fn due(&self, now: DateTime<Utc>) -> bool {
        self.last_renewed.is_none_or(|t| now >= t + self.interval)
    }

    /// A renewal was sent at `now`.
    pub fn renewed(&mut self, now: DateTime<Utc>) {
        self.last_renewed = Some(now);
    }

    /// A new connection: renew at once.
    pub fn reset(&mut self) {
        self.last_renewed = None;
    }
}
