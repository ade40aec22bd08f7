//! The link shaper itself, with real TCP through it: a 64 kbit/s link cannot carry 64 KiB in less
//! than 8 s, and a link that loses everything carries nothing. Needs root; skipped otherwise.

use std::path::Path;
use std::time::{Duration, Instant};

use ocm_edge_tests::netns::{ShapedLink, require_shaped_link};
use ocm_edge_tests::shaper::LinkParams;
use tokio::io::AsyncReadExt;

const SHAPER: &str = env!("CARGO_BIN_EXE_link-shaper");

/// Sends `bytes` zero bytes from the edge namespace to `port` on the host side with bash's
/// /dev/tcp; returns whether bash succeeded.
async fn send_from_edge(link: &ShapedLink, port: u16, bytes: usize) -> bool {
    let script = format!(
        "head -c {bytes} /dev/zero > /dev/tcp/{}/{port}",
        link.host_ip()
    );
    let (ip, args) = link.exec_args(Path::new("timeout"), &["20", "bash", "-c", &script]);
    tokio::process::Command::new(ip)
        .args(args)
        .status()
        .await
        .is_ok_and(|s| s.success())
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
    let (ip, args) = link.exec_args(
        Path::new("timeout"),
        &[
            "3",
            "bash",
            "-c",
            &format!("echo hi > /dev/tcp/{}/{port}", link.host_ip()),
        ],
    );
    let status = tokio::process::Command::new(ip)
        .args(args)
        .status()
        .await
        .unwrap();
    assert!(!status.success(), "no connection can be made");
    let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
    assert!(accepted.is_err(), "nobody connected");
}
