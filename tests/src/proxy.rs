//! A TCP proxy in front of a broker whose link a test controls, for faults that need no root:
//! [`LinkProxy::cut`] drops every open connection (both sides see it close, as with a broken
//! network), [`LinkProxy::block`] refuses new connections, and [`LinkProxy::freeze`] stops every
//! byte both ways while keeping the sockets open (a cable pulled, a peer stopped with SIGSTOP:
//! only keepalives and lease deadlines notice). Faults on real links are in [`crate::netns`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ocm_edge_mqtt::BrokerUrl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A proxy on `127.0.0.1:PORT` in front of a broker; it stops when dropped.
#[derive(Debug)]
pub struct LinkProxy {
    /// `mqtt://127.0.0.1:PORT` of the proxy, for clients to connect to instead of the broker.
    pub url: String,
    cuts: watch::Sender<u64>,
    frozen: watch::Sender<bool>,
    blocked: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LinkProxy {
    /// A proxy to the broker at `broker_url`.
    ///
    /// # Panics
    /// When the URL is not a broker's or no local port is free: a harness failure.
    pub async fn start(broker_url: &str) -> LinkProxy {
        let broker = BrokerUrl::parse(broker_url).expect("a broker URL");
        let upstream = format!("{}:{}", broker.host(), broker.port());
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let url = BrokerUrl::plain(listener.local_addr().expect("its address")).to_string();
        let (cuts, cut_rx) = watch::channel(0u64);
        let (frozen, frozen_rx) = watch::channel(false);
        let blocked = Arc::new(AtomicBool::new(false));
        let is_blocked = blocked.clone();
        let task = tokio::spawn(async move {
            let mut pipes = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                if is_blocked.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                for (from, to) in [(cr, sw), (sr, cw)] {
                    let mut cut = cut_rx.clone();
                    cut.mark_unchanged();
                    let frozen = frozen_rx.clone();
                    pipes.spawn(async move {
                        tokio::select! {
                            () = pipe(from, to, frozen) => {}
                            _ = cut.changed() => {}
                        }
                    });
                }
            }
        });
        LinkProxy {
            url,
            cuts,
            frozen,
            blocked,
            task,
        }
    }

    /// Drops every open connection.
    pub fn cut(&self) {
        self.cuts.send_modify(|n| *n += 1);
    }

    /// Refuses (`true`) or accepts new connections.
    pub fn block(&self, blocked: bool) {
        self.blocked.store(blocked, Ordering::SeqCst);
    }

    /// Stops (`true`) or lets flow again every byte of the open connections; no socket closes.
    pub fn freeze(&self, frozen: bool) {
        let _ = self.frozen.send(frozen);
    }
}

/// Copies `from` to `to` while not frozen; ends when either side closes.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut frozen: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // While frozen nothing is read, so nothing moves; the sockets stay open.
        if frozen.wait_for(|f| !*f).await.is_err() {
            return;
        }
        let n = tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = frozen.wait_for(|f| *f) => continue,
        };
        // Bytes read just as the link froze are held back until it thaws.
        if frozen.wait_for(|f| !*f).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
