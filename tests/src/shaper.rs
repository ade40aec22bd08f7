//! A user-space link shaper for tests: a slow, lossy, high-latency link (a 2G modem) between two
//! TUN devices, because this kernel has no netem. Each direction is a FIFO bottleneck with a
//! rate, a queue limit (drop-tail), random loss and a one-way delay with jitter; packets never
//! overtake each other. The schedule ([`Direction::admit`]) is pure and takes `now`; the
//! `link-shaper` binary moves packets with it ([`run`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What a link does to the packets crossing it, each way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkParams {
    /// Bottleneck rate in bits per second.
    pub rate_bps: u64,
    /// One-way delay.
    pub delay: Duration,
    /// The delay varies uniformly within `delay ± jitter`.
    pub jitter: Duration,
    /// Probability that a packet is lost, in [0, 1].
    pub loss: f64,
    /// Packets the bottleneck queue holds before it drops new ones.
    pub queue_packets: usize,
}

impl LinkParams {
    /// A 2G (EDGE-class) link: 64 kbit/s, 300 ± 100 ms one way, 3 % loss, 50 packets of queue.
    pub fn two_g() -> Self {
        LinkParams {
            rate_bps: 64_000,
            delay: Duration::from_millis(300),
            jitter: Duration::from_millis(100),
            loss: 0.03,
            queue_packets: 50,
        }
    }
}

/// A small seeded PRNG (SplitMix64): repeatable runs, no dependency.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next number in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What happens to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Lost on the air.
    Lost,
    /// The bottleneck queue was full.
    QueueFull,
    /// Delivered at this time (since the link started).
    Deliver(Duration),
}

/// One direction of a link: its bottleneck queue and last delivery.
#[derive(Debug, Clone)]
pub struct Direction {
    params: LinkParams,
    rng: SplitMix64,
    /// When each queued packet finishes serializing, oldest first.
    departures: VecDeque<Duration>,
    last_delivery: Duration,
}

impl Direction {
    /// An idle direction.
    pub fn new(params: LinkParams, seed: u64) -> Self {
        Direction {
            params,
            rng: SplitMix64::new(seed),
            departures: VecDeque::new(),
            last_delivery: Duration::ZERO,
        }
    }

    /// The fate of a packet of `len` bytes arriving at `now` (time since the link started).
    pub fn admit(&mut self, now: Duration, len: usize) -> Fate {
        while self.departures.front().is_some_and(|d| *d <= now) {
            self.departures.pop_front();
        }
        if self.rng.unit() < self.params.loss {
            return Fate::Lost;
        }
        if self.departures.len() >= self.params.queue_packets {
            return Fate::QueueFull;
        }
        let start = self.departures.back().copied().unwrap_or(now).max(now);
        let serialize =
            Duration::from_secs_f64(len as f64 * 8.0 / self.params.rate_bps.max(1) as f64);
        let departure = start + serialize;
        self.departures.push_back(departure);
        let spread = self.params.jitter.as_secs_f64() * (2.0 * self.rng.unit() - 1.0);
        let delay = (self.params.delay.as_secs_f64() + spread).max(0.0);
        let delivery = (departure + Duration::from_secs_f64(delay)).max(self.last_delivery);
        self.last_delivery = delivery;
        Fate::Deliver(delivery)
    }
}

/// Counts of one direction.
#[derive(Debug, Default)]
pub struct DirectionStats {
    /// Packets delivered.
    pub packets: AtomicU64,
    /// Bytes delivered.
    pub bytes: AtomicU64,
    /// Packets lost on the air.
    pub lost: AtomicU64,
    /// Packets dropped by a full queue.
    pub queue_drops: AtomicU64,
    /// Packets the far device refused when their time came (it was down, e.g. while being moved
    /// into its namespace); the link goes on.
    pub write_errors: AtomicU64,
}

impl std::fmt::Display for DirectionStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "packets={} bytes={} lost={} queue_drops={} write_errors={}",
            self.packets.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.lost.load(Ordering::Relaxed),
            self.queue_drops.load(Ordering::Relaxed),
            self.write_errors.load(Ordering::Relaxed)
        )
    }
}

/// Moves packets from `from` to `to` through one [`Direction`] until reading `from` fails.
/// A packet `to` refuses (a device that is down answers EIO) is counted in
/// [`DirectionStats::write_errors`] and dropped, as a real link would lose it.
///
/// # Errors
/// The first read error of `from`.
pub async fn run(
    from: Arc<tun_rs::AsyncDevice>,
    to: Arc<tun_rs::AsyncDevice>,
    mut direction: Direction,
    stats: Arc<DirectionStats>,
) -> std::io::Result<()> {
    let start = tokio::time::Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Duration, Vec<u8>)>();
    let writer_stats = stats.clone();
    let writer = tokio::spawn(async move {
        while let Some((at, packet)) = rx.recv().await {
            tokio::time::sleep_until(start + at).await;
            if to.send(&packet).await.is_err() {
                writer_stats.write_errors.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            writer_stats.packets.fetch_add(1, Ordering::Relaxed);
            writer_stats
                .bytes
                .fetch_add(packet.len() as u64, Ordering::Relaxed);
        }
    });
    let mut buf = vec![0u8; 65_536];
    let result = loop {
        let len = match from.recv(&mut buf).await {
            Ok(n) => n,
            Err(e) => break Err(e),
        };
        match direction.admit(start.elapsed(), len) {
            Fate::Lost => {
                stats.lost.fetch_add(1, Ordering::Relaxed);
            }
            Fate::QueueFull => {
                stats.queue_drops.fetch_add(1, Ordering::Relaxed);
            }
            Fate::Deliver(at) => {
                if tx.send((at, buf[..len].to_vec())).is_err() {
                    break Ok(());
                }
            }
        }
    };
    writer.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ideal(rate_bps: u64) -> LinkParams {
        LinkParams {
            rate_bps,
            delay: Duration::from_millis(300),
            jitter: Duration::ZERO,
            loss: 0.0,
            queue_packets: 10,
        }
    }

    #[test]
    fn packets_leave_at_the_links_rate_after_its_delay() {
        let mut d = Direction::new(ideal(8_000), 1);
        // 1,000 bytes at 8 kbit/s take one second each.
        assert_eq!(
            d.admit(Duration::ZERO, 1000),
            Fate::Deliver(Duration::from_millis(1300))
        );
        assert_eq!(
            d.admit(Duration::ZERO, 1000),
            Fate::Deliver(Duration::from_millis(2300))
        );
        // Once the queue has drained, a packet goes out at once.
        assert_eq!(
            d.admit(Duration::from_secs(10), 1000),
            Fate::Deliver(Duration::from_millis(11_300))
        );
    }

    #[test]
    fn a_full_queue_drops_what_arrives() {
        let mut d = Direction::new(ideal(8_000), 1);
        for _ in 0..10 {
            assert!(matches!(d.admit(Duration::ZERO, 1000), Fate::Deliver(_)));
        }
        assert_eq!(d.admit(Duration::ZERO, 1000), Fate::QueueFull);
        // One second later one packet has left: room for one.
        assert!(matches!(
            d.admit(Duration::from_secs(1), 1000),
            Fate::Deliver(_)
        ));
    }

    #[test]
    fn jitter_never_reorders_and_loss_is_near_its_rate() {
        let mut d = Direction::new(
            LinkParams {
                queue_packets: 100_000,
                ..LinkParams::two_g()
            },
            7,
        );
        let mut last = Duration::ZERO;
        let mut lost = 0;
        for i in 0..10_000u64 {
            match d.admit(Duration::from_millis(i * 10), 100) {
                Fate::Deliver(at) => {
                    assert!(at >= last, "packet {i} overtook the one before");
                    last = at;
                }
                Fate::Lost => lost += 1,
                Fate::QueueFull => panic!("the queue is large enough"),
            }
        }
        assert!((200..400).contains(&lost), "3 % of 10,000: {lost}");
    }

    #[test]
    fn the_same_seed_gives_the_same_link() {
        let run = |seed| {
            let mut d = Direction::new(LinkParams::two_g(), seed);
            (0..100)
                .map(|i| d.admit(Duration::from_millis(i * 50), 500))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
