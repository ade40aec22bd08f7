//! A slow, lossy link between two TUN devices (this kernel has no netem), for link-fault tests:
//! `link-shaper --edge-tun E --host-tun H [--rate-bps 64000 --delay-ms 300 --jitter-ms 100
//! --loss 0.03 --queue-packets 50 --seed 1]`. Prints `READY` once both devices exist (the caller
//! then moves E into the edge namespace and gives both addresses), shapes both directions with
//! `ocm_edge_tests::shaper`, and on SIGTERM, SIGINT or a closed stdin prints one line of counts
//! per direction to stderr and exits (with an error instead if a device can no longer be read).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use ocm_edge_tests::shaper::{Direction, DirectionStats, LinkParams, run};

#[derive(Debug, Parser)]
struct Args {
    /// Name of the edge-side TUN device.
    #[arg(long)]
    edge_tun: String,
    /// Name of the host-side TUN device.
    #[arg(long)]
    host_tun: String,
    #[arg(long, default_value_t = 64_000)]
    rate_bps: u64,
    #[arg(long, default_value_t = 300)]
    delay_ms: u64,
    #[arg(long, default_value_t = 100)]
    jitter_ms: u64,
    #[arg(long, default_value_t = 0.03)]
    loss: f64,
    #[arg(long, default_value_t = 50)]
    queue_packets: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn device(name: &str) -> std::io::Result<Arc<tun_rs::AsyncDevice>> {
    tun_rs::DeviceBuilder::new()
        .name(name)
        .mtu(1500)
        .packet_information(false)
        .build_async()
        .map(Arc::new)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.loss),
        "--loss {} is not a probability in [0, 1]",
        args.loss
    );
    anyhow::ensure!(args.rate_bps > 0, "--rate-bps must be more than 0");
    let params = LinkParams {
        rate_bps: args.rate_bps,
        delay: Duration::from_millis(args.delay_ms),
        jitter: Duration::from_millis(args.jitter_ms.min(args.delay_ms)),
        loss: args.loss,
        queue_packets: args.queue_packets.max(1),
    };
    let edge = device(&args.edge_tun)?;
    let host = device(&args.host_tun)?;
    // Handlers before READY: a caller may signal as soon as it reads it, and an unhandled
    // SIGTERM would kill the shaper without its counts.
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    println!("READY");
    std::io::stdout().flush()?;
    let down = Arc::new(DirectionStats::default());
    let up = Arc::new(DirectionStats::default());
    let to_edge = tokio::spawn(run(
        host.clone(),
        edge.clone(),
        Direction::new(params, args.seed),
        down.clone(),
    ));
    let to_host = tokio::spawn(run(
        edge,
        host,
        Direction::new(params, args.seed.wrapping_add(1)),
        up.clone(),
    ));
    // A plain thread, not `tokio::io::stdin`: its blocking read cannot be cancelled and would
    // keep the runtime from shutting down after SIGTERM while the caller still holds stdin.
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 64];
        while std::io::stdin().read(&mut buf).is_ok_and(|n| n > 0) {}
        let _ = closed.send(());
    });
    let stopped = tokio::select! {
        _ = term.recv() => None,
        _ = int.recv() => None,
        _ = stdin_closed => None,
        r = to_edge => Some(format!("host-to-edge direction stopped: {r:?}")),
        r = to_host => Some(format!("edge-to-host direction stopped: {r:?}")),
    };
    eprintln!("link-shaper host->edge {down}");
    eprintln!("link-shaper edge->host {up}");
    match stopped {
        Some(why) => anyhow::bail!(why),
        None => Ok(()),
    }
}
