//! The process shutdown signal shared by `ocm-edge hub` and `ocm-edge-agent`.

use std::future::Future;

/// Listens for Ctrl-C, or SIGTERM (what Kubernetes, systemd and `kill` send) on Unix, from the
/// moment it is called: the returned future resolves on the first of them. Call it before the
/// process announces that it is up, so a signal sent right after the announcement stops it
/// gracefully instead of killing it. Must be called inside a tokio runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let listeners = signal(SignalKind::terminate())
            .and_then(|term| signal(SignalKind::interrupt()).map(|interrupt| (term, interrupt)));
        async move {
            match listeners {
                Ok((mut term, mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM; stop with Ctrl-C");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    #[tokio::test]
    async fn a_sigterm_sent_right_after_the_call_is_caught_not_fatal() {
        let shutdown = super::shutdown_signal();
        // Raised before the future is ever polled: the default action would end the test
        // process; the listener registered by the call catches it instead.
        std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), shutdown)
            .await
            .expect("the signal resolves the future");
    }
}
