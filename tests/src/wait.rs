//! Waiting on an observable condition with a bounded timeout (never a bare sleep).
//!
//! Tests poll what a user would look at (the hub's view, the simulated cluster, a received message)
//! every [`POLL_INTERVAL`] until it holds or the timeout expires.

use std::future::Future;
use std::time::Duration;

/// How often a condition is re-checked.
pub const POLL_INTERVAL: Duration = Duration::from_millis(25);

/// A condition did not hold in time.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {timeout:?} waiting for {what}")]
pub struct WaitTimeout {
    /// What was awaited, in words.
    pub what: String,
    /// How long we waited.
    pub timeout: Duration,
}

/// Polls `check` until it returns `Some(value)`, or fails with [`WaitTimeout`] after `timeout`.
///
/// # Errors
/// [`WaitTimeout`] naming `what` when the condition never held.
pub async fn wait_for<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<T, WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let poll = async {
        let mut interval = tokio::time::interval(POLL_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if let Some(v) = check().await {
                return v;
            }
        }
    };
    tokio::time::timeout(timeout, poll)
        .await
        .map_err(|_| WaitTimeout {
            what: what.to_owned(),
            timeout,
        })
}

/// Polls `check` until it returns `true`, or fails with [`WaitTimeout`] after `timeout`.
///
/// # Errors
/// [`WaitTimeout`] naming `what` when the condition never held.
pub async fn wait_until<F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<(), WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_for(what, timeout, || {
        let fut = check();
        async move { fut.await.then_some(()) }
    })
    .await
}

/// Waits until the value in `rx` (an agent's counters, a hub's subscription count) satisfies
/// `pred`, or fails with [`WaitTimeout`] after `timeout`. Woken by each change, not polled.
///
/// # Errors
/// [`WaitTimeout`] naming `what` (and the last value seen) when it never held, or the sender
/// went away.
pub async fn wait_watch<T: Clone + std::fmt::Debug>(
    rx: &mut tokio::sync::watch::Receiver<T>,
    what: &str,
    timeout: Duration,
    pred: impl FnMut(&T) -> bool,
) -> Result<T, WaitTimeout> {
    let held = match tokio::time::timeout(timeout, rx.wait_for(pred)).await {
        Ok(Ok(value)) => Some(value.clone()),
        _ => None,
    };
    held.ok_or_else(|| WaitTimeout {
        what: format!("{what} (last seen: {:?})", *rx.borrow()),
        timeout,
    })
}
