//! Snowflake sequence ids for status events (docs/reference/protocol.md section 4): node 1, epoch 1288834974657 ms,
//! 41 bits of time, 10 of node, 12 of step. The hub drops a status whose id is not newer than the last.

/// Twitter's snowflake epoch, which sdk-go's generator uses.
pub const EPOCH_MS: i64 = 1_288_834_974_657;
/// The node id Go peers use.
pub const NODE: i64 = 1;
const NODE_BITS: u32 = 10;
const STEP_BITS: u32 = 12;
const STEP_MAX: i64 = (1 << STEP_BITS) - 1;
const TIME_MAX: i64 = (1 << 41) - 1;

/// Generates increasing snowflake ids. Pure: the caller passes the current time.
#[derive(Debug, Clone, Default)]
pub struct SequenceIdGenerator {
    last_ms: i64,
    step: i64,
}

impl SequenceIdGenerator {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next id for wall-clock time `now_ms` (Unix milliseconds).
    ///
    /// # Guarantees
    /// Every id is strictly greater than the previous one from this generator, even when the clock goes
    /// backwards (the generator keeps using its last time) or more than 4096 ids are asked for within
    /// one millisecond (it borrows the next millisecond).
    pub fn next(&mut self, now_ms: i64) -> i64 {
        let now = (now_ms - EPOCH_MS).clamp(0, TIME_MAX);
        if now > self.last_ms {
            self.last_ms = now;
            self.step = 0;
        } else if self.step < STEP_MAX {
            self.step += 1;
        } else {
            self.last_ms += 1;
            self.step = 0;
        }
        (self.last_ms << (NODE_BITS + STEP_BITS)) | (NODE << STEP_BITS) | self.step
    }

    /// [`Self::next`] as the decimal string carried in the `sequenceid` extension.
    pub fn next_string(&mut self, now_ms: i64) -> String {
        self.next(now_ms).to_string()
    }
}

/// Whether sequence id `a` is newer than `b`. Ids that are not decimal integers are never newer, so a
/// malformed id cannot overwrite a good status; anything is newer than a malformed `b`.
pub fn is_newer(a: &str, b: &str) -> bool {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        (Ok(_), Err(_)) => true,
        (Err(_), _) => false,
    }
}

/// The Unix time in milliseconds an id was generated at (for diagnostics).
pub fn timestamp_ms(id: i64) -> i64 {
    (id >> (NODE_BITS + STEP_BITS)) + EPOCH_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maestro_vector_id_decodes_to_its_event_time_on_node_1() {
        // cloudevents.agent.json: sequenceid 2000808179721572352, time 2025-12-16T06:00:17.921Z.
        let id: i64 = 2_000_808_179_721_572_352;
        assert_eq!((id >> STEP_BITS) & ((1 << NODE_BITS) - 1), NODE);
        let at = chrono::DateTime::from_timestamp_millis(timestamp_ms(id)).unwrap();
        assert_eq!(
            at.format("%Y-%m-%dT%H:%M:%S").to_string(),
            "2025-12-16T06:00:17"
        );
    }

    #[test]
    fn ids_increase_within_a_millisecond_and_across_step_overflow() {
        let mut g = SequenceIdGenerator::new();
        let now = 1_765_864_817_921;
        let mut last = g.next(now);
        for _ in 0..10_000 {
            let id = g.next(now);
            assert!(id > last);
            last = id;
        }
    }

    #[test]
    fn ids_never_go_backwards_when_the_clock_does() {
        let mut g = SequenceIdGenerator::new();
        let a = g.next(1_765_864_817_921);
        let b = g.next(1_765_864_000_000);
        assert!(b > a);
        assert!(is_newer(&b.to_string(), &a.to_string()));
        assert!(!is_newer(&a.to_string(), &a.to_string()));
        assert!(!is_newer("garbage", &a.to_string()));
        assert!(is_newer(&a.to_string(), "garbage"));
    }
}
