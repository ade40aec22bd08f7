//! The time the hub signs into its spec events (`ce-time`), which agents use to refuse replays
//! (an event older than the last one they acted on for a work is dropped). It never goes back:
//! each stamp is later than the one before, across restarts (the last one is stored), so a hub
//! whose clock steps back (NTP correcting a fast clock, a VM restored from a snapshot) does not
//! send specs that every agent drops as replays until the clock has caught up.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Utc};

/// The spec events' clock (see the module).
#[derive(Debug, Default)]
pub struct SpecClock {
    /// The last stamp, in microseconds since the Unix epoch (0: none yet).
    last_micros: AtomicI64,
}

impl SpecClock {
    /// A clock whose next stamp is later than `last` (the stored last stamp).
    pub fn starting_after(last: Option<DateTime<Utc>>) -> Self {
        SpecClock {
            last_micros: AtomicI64::new(last.map_or(0, |t| t.timestamp_micros())),
        }
    }

    /// The time for an event made at `now`: `now`, or one microsecond after the last stamp when
    /// `now` is not later than it.
    pub fn stamp(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let now = now.timestamp_micros();
        let mut previous = self.last_micros.load(Ordering::Relaxed);
        loop {
            let next = now.max(previous.saturating_add(1));
            match self.last_micros.compare_exchange_weak(
                previous,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return from_micros(next),
                Err(current) => previous = current,
            }
        }
    }

    /// The last stamp given (to store), if any.
    pub fn last(&self) -> Option<DateTime<Utc>> {
        match self.last_micros.load(Ordering::Relaxed) {
            0 => None,
            micros => Some(from_micros(micros)),
        }
    }
}

fn from_micros(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[test]
    fn stamps_follow_the_clock_and_never_go_back_when_it_does() {
        let clock = SpecClock::default();
        assert_eq!(clock.last(), None);
        assert_eq!(clock.stamp(t(10)), t(10));
        assert_eq!(clock.stamp(t(20)), t(20));
        // The clock steps back an hour: stamps go on from the last one, each later than it.
        let a = clock.stamp(t(20 - 3600));
        let b = clock.stamp(t(21 - 3600));
        assert!(a > t(20) && b > a, "{a} {b}");
        assert_eq!(clock.last(), Some(b));
        // Once the clock is past them again, stamps are the clock's.
        assert_eq!(clock.stamp(t(30)), t(30));
    }

    #[test]
    fn a_restarted_hub_stamps_after_what_it_stored_even_with_its_clock_behind() {
        let clock = SpecClock::starting_after(Some(t(100)));
        let stamp = clock.stamp(t(50));
        assert!(stamp > t(100), "{stamp}");
        assert_eq!(SpecClock::starting_after(None).stamp(t(5)), t(5));
    }
}
