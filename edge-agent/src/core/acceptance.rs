//! Which spec events the agent acts on (PROTOCOL.md section 7). Pure.

/// What to do with an incoming spec event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecDecision {
    /// A bundle the agent does not hold, or a newer version of one it holds.
    Apply,
    /// The version the agent holds: applied again (the hub may be repairing).
    Reapply,
    /// Older than the held version: dropped.
    DropStale { held: i64, received: i64 },
    /// A delete of a held bundle (deletes always apply).
    Delete,
    /// A delete of a bundle the agent does not hold: answer with the Deleted status.
    DeleteUnknown,
}

/// Decides on a spec event of `received` version, `is_delete` when it carries a deletiontimestamp,
/// given the version held (if any).
pub fn decide_spec(held: Option<i64>, received: i64, is_delete: bool) -> SpecDecision {
    match (is_delete, held) {
        (true, Some(_)) => SpecDecision::Delete,
        (true, None) => SpecDecision::DeleteUnknown,
        (false, None) => SpecDecision::Apply,
        (false, Some(h)) if received > h => SpecDecision::Apply,
        (false, Some(h)) if received == h => SpecDecision::Reapply,
        (false, Some(h)) => SpecDecision::DropStale { held: h, received },
    }
}
