//! The link shaper itself, with real TCP through it: a 64 kbit/s link cannot carry 64 KiB in less
//! than 8 s, a link that loses everything carries nothing, a cut link carries nothing until it is
//! restored, and the shaper reports its counts when told to stop. Needs root; skipped otherwise.

use std::path::Path;
use std::time::{Duration, Instant};

use ocm_edge_tests::netns::{ShapedLink, require_shaped_link, skipped};
use ocm_edge_tests::shaper::LinkParams;
use tokio::io::AsyncReadExt;

const SHAPER: &str = env!("CARGO_BIN_EXE_link-shaper");

/// Runs `bash -c script` in the edge namespace for at most `secs`; whether it succeeded.
///
/// # Panics
/// When it cannot be run at all (a harness failure, never a "no").
async fn edge_bash(link: &ShapedLink, secs: u32, script: &str) -> bool {
    let (ip, args) = link.exec_args(
        Path::new("timeout"),
        &[&secs.to_string(), "bash", "-c", script],
    );
    tokio::process::Command::new(ip)
        .args(args)
        .status()
        .await
        .expect("ip netns exec runs")
        .success()
}

/// Sends `bytes` zero bytes from the edge namespace to `port` on the host side with bash's
/// /dev/tcp; returns whether bash succeeded.
async fn send_from_edge(link: &ShapedLink, port: u16, bytes: usize) -> bool {
    let host = link.host_ip();
    edge_bash(
        link,
        20,
        &format!("head -c {bytes} /dev/zero > /dev/tcp/{host}/{port}"),
    )
    .await
}

/// Whether bash in the edge namespace connects to `port` on the host side within `secs`.
async fn connects_from_edge(link: &ShapedLink, port: u16, secs: u32) -> bool {
    let host = link.host_ip();
    edge_bash(link, secs, &format!("echo hi > /dev/tcp/{host}/{port}")).await
}

#[tokio::test]
async fn a_64_kbit_link_carries_64_kib_in_no_less_than_8_seconds() {
    let params = LinkParams {
        loss: 0.0,
        ..LinkParams::two_g()
    };
    let Some(link) = require_shaped_link("shaped 64 kbit/s", Path::new(SHAPER), params) else {
        return;
    };
    let listener = tokio::net::TcpListener::bind((link.host_ip(), 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let started = Instant::now();
    let receive = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got.len()
    });
    assert!(send_from_edge(&link, port, 64 * 1024).await, "bash sent");
    let got = tokio::time::timeout(Duration::from_secs(60), receive)
        .await
        .expect("the transfer ends")
        .unwrap();
    let took = started.elapsed();
    eprintln!(
        "64 KiB over the shaped link in {took:?}: {:.1} kbit/s",
        got as f64 * 8.0 / took.as_secs_f64() / 1000.0
    );
    assert_eq!(got, 64 * 1024);
    // A physical lower bound (the bytes alone need 8.2 s at 64 kbit/s), never an upper one.
    assert!(took >= Duration::from_secs(8), "{took:?}");
}

#[tokio::test]
async fn a_link_that_loses_everything_carries_nothing() {
    let params = LinkParams {
        loss: 1.0,
        ..LinkParams::two_g()
    };
    let Some(link) = require_shaped_link("shaped, all lost", Path::new(SHAPER), params) else {
        return;
    };
    let listener = tokio::net::TcpListener::bind((link.host_ip(), 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    assert!(
        !connects_from_edge(&link, port, 3).await,
        "no connection can be made"
    );
    let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
    assert!(accepted.is_err(), "nobody connected");
}

#[tokio::test]
async fn a_cut_shaped_link_carries_nothing_until_it_is_restored() {
    let params = LinkParams {
        loss: 0.0,
        ..LinkParams::two_g()
    };
    let Some(link) = require_shaped_link("shaped, cut", Path::new(SHAPER), params) else {
        return;
    };
    let listener = tokio::net::TcpListener::bind((link.host_ip(), 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    link.cut().unwrap();
    assert!(
        !connects_from_edge(&link, port, 3).await,
        "cut: no connection"
    );
    link.restore().unwrap();
    // A handshake takes about two one-way delays; 10 s leaves room for a slow machine.
    assert!(
        connects_from_edge(&link, port, 10).await,
        "restored: connects"
    );
    let accepted = tokio::time::timeout(Duration::from_secs(5), listener.accept()).await;
    assert!(accepted.is_ok(), "the connection arrived");
}

#[tokio::test]
async fn the_shaper_prints_its_counts_and_exits_on_sigterm() {
    if skipped(
        "the_shaper_prints_its_counts_and_exits_on_sigterm",
        ShapedLink::unavailable(),
    ) {
        return;
    }
    // Devices of its own (no link needed): names no other test or process uses.
    let id = std::process::id();
    let (edge, host) = (format!("oetqe{id}"), format!("oetqh{id}"));
    let mut shaper = tokio::process::Command::new(SHAPER)
        .args(["--edge-tun", &edge, "--host-tun", &host])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = shaper.stdout.take().unwrap();
    let mut ready = [0u8; 6];
    stdout.read_exact(&mut ready).await.unwrap();
    assert_eq!(&ready, b"READY\n");
    // Its stdin stays open: the signal alone must end it.
    let pid = shaper.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let mut stderr = shaper.stderr.take().unwrap();
    let mut said = String::new();
    let exited = tokio::time::timeout(Duration::from_secs(5), async {
        stderr.read_to_string(&mut said).await.unwrap();
        shaper.wait().await.unwrap()
    })
    .await
    .expect("the shaper exits on SIGTERM");
    assert!(exited.success(), "{exited:?}: {said}");
    for direction in ["host->edge packets=", "edge->host packets="] {
        assert!(said.contains(direction), "{said}");
    }
}
