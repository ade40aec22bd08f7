//! Which spec events the agent acts on (docs/reference/protocol.md section 6). Pure.

use chrono::{DateTime, Utc};

/// What to do with an incoming spec event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecDecision {
    /// A bundle the agent does not hold, or a newer version of one it holds.
    Apply,
    /// The version the agent holds: applied again (the hub may be repairing).
    Reapply,
    /// Older than the held version: dropped.
    DropStale { held: i64, received: i64 },
    /// A delete of the held bundle's version or a newer one.
    Delete,
    /// A delete of a bundle the agent does not hold: answer with the Deleted status.
    DeleteUnknown,
}

/// Decides on a spec event of `received` version, `is_delete` when it carries a deletiontimestamp,
/// given the version held (if any).
pub fn decide_spec(held: Option<i64>, received: i64, is_delete: bool) -> SpecDecision {
    match (is_delete, held) {
        // The hub deletes the version it holds: a delete of an older one is a replay.
        (true, Some(h)) if received < h => SpecDecision::DropStale { held: h, received },
        (true, Some(_)) => SpecDecision::Delete,
        (true, None) => SpecDecision::DeleteUnknown,
        (false, None) => SpecDecision::Apply,
        (false, Some(h)) if received > h => SpecDecision::Apply,
        (false, Some(h)) if received == h => SpecDecision::Reapply,
        (false, Some(h)) => SpecDecision::DropStale { held: h, received },
    }
}

/// Whether an event sent at `sent` (its signed `ce-time`) is older than the last event the agent
/// acted on for the same work (`last`, kept after a delete too): a replay of something the hub
/// sent before, such as an old delete after the work was created again (its resourceversion
/// starts again at 1) or an old spec after a delete. Events without a time are not judged.
pub fn is_replay(last: Option<DateTime<Utc>>, sent: Option<DateTime<Utc>>) -> bool {
    matches!((last, sent), (Some(last), Some(sent)) if sent < last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_event_older_than_the_last_one_acted_on_is_a_replay() {
        let t = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0);
        assert!(is_replay(t(10), t(9)));
        assert!(!is_replay(t(10), t(10)), "the same time: a resend");
        assert!(!is_replay(t(10), t(11)));
        assert!(!is_replay(None, t(1)));
        assert!(!is_replay(t(10), None));
    }
}
