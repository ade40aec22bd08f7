//! MQTT 5 request/response over a [`Session`]: each request carries a private Response Topic and
//! fresh Correlation Data; the answer with the same correlation data is handed to the caller that
//! waits for it. Answers to requests that already gave up are recognised and dropped.
//!
//! A request is sent again, with the same correlation data, until the first answer or the
//! timeout: a responder that is (re)starting has not subscribed yet and the broker keeps nothing
//! for it. Responders must therefore tolerate a repeat (ocm-edge's admin commands do).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use ocm_edge_schemas::wire::MqttMessage;
use tokio::sync::oneshot;

use crate::publication::Publication;
use crate::session::{ConnectError, Publisher, Session, SessionConfig, SessionEvent};

/// First resend after this long without an answer; doubles up to [`MAX_RESEND`].
pub const FIRST_RESEND: Duration = Duration::from_millis(500);
/// Longest pause between resends.
pub const MAX_RESEND: Duration = Duration::from_secs(4);

type Pending = Arc<Mutex<HashMap<Bytes, oneshot::Sender<Publication>>>>;

/// Adds proof of who sends a request: user properties computed from the request's topic, its
/// response topic, its correlation data and its payload (ocm-edge's admin credentials sign these).
pub trait SignRequest: Send + Sync + std::fmt::Debug {
    /// The user properties to add to the request.
    fn sign(
        &self,
        topic: &str,
        response_topic: &str,
        correlation: &[u8],
        payload: &[u8],
    ) -> Vec<(String, String)>;
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Nobody answered in time. Retryable; the request may still have been carried out.
    #[error("no answer on {topic} within {secs} s")]
    NoAnswer {
        /// The request topic.
        topic: String,
        /// The timeout.
        secs: u64,
    },
    /// The session stopped.
    #[error("the MQTT session stopped: {0}")]
    Closed(String),
}

/// A client that sends requests and waits for their answers. Dropping it stops its session.
#[derive(Debug)]
pub struct Requester {
    session: Session,
    publisher: Publisher,
    pending: Pending,
    response_topic: String,
    signer: Option<Arc<dyn SignRequest>>,
}

impl Requester {
    /// Connects with `cfg` (its subscriptions replaced by `response_topic`) and waits, at most
    /// `timeout`, until the broker granted the response topic.
    ///
    /// # Errors
    /// [`ConnectError`] from [`Session::connect`].
    pub async fn connect(
        mut cfg: SessionConfig,
        response_topic: impl Into<String>,
        timeout: Duration,
    ) -> Result<Requester, ConnectError> {
        let response_topic = response_topic.into();
        cfg.subscriptions = vec![response_topic.clone()];
        let (session, mut events) = Session::connect(cfg, timeout).await?;
        let pending: Pending = Arc::default();
        let routes = pending.clone();
        // Ends by itself when the session stops (its event channel closes).
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let SessionEvent::Message(answer) = event else {
                    continue;
                };
                let waiter = answer
                    .correlation_data
                    .as_ref()
                    .and_then(|c| lock(&routes).remove(c));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(*answer);
                    }
                    None => tracing::debug!(
                        topic = %answer.topic(),
                        "dropping an answer nobody waits for (timed out, or a repeat)"
                    ),
                }
            }
        });
        Ok(Requester {
            publisher: session.publisher(),
            session,
            pending,
            response_topic,
            signer: None,
        })
    }

    /// Signs every request from now on with `signer` (once per request: its resends carry the
    /// same properties).
    pub fn set_signer(&mut self, signer: Arc<dyn SignRequest>) {
        self.signer = Some(signer);
    }

    /// The private topic answers come back on.
    pub fn response_topic(&self) -> &str {
        &self.response_topic
    }

    /// Sends `request` (its response topic and correlation data are set here) and waits for the
    /// first answer, resending as the module docs say.
    ///
    /// # Errors
    /// [`RequestError::NoAnswer`] after `timeout`; [`RequestError::Closed`] when the session
    /// stopped.
    pub async fn request(
        &self,
        mut request: MqttMessage,
        timeout: Duration,
    ) -> Result<Publication, RequestError> {
        let topic = request.topic.clone();
        let correlation = Bytes::from(uuid::Uuid::new_v4().as_bytes().to_vec());
        if let Some(signer) = &self.signer {
            let proof = signer.sign(
                &request.topic,
                &self.response_topic,
                &correlation,
                &request.payload,
            );
            request.user_properties.extend(proof);
        }
        let (tx, mut rx) = oneshot::channel();
        lock(&self.pending).insert(correlation.clone(), tx);
        // Removes the waiter however this call ends, also when the caller drops it midway.
        let _waiting = Waiting {
            pending: &self.pending,
            correlation: correlation.clone(),
        };
        let publication = Publication {
            message: request,
            retain: false,
            response_topic: Some(self.response_topic.clone()),
            correlation_data: Some(correlation.clone()),
        };
        let answer = async {
            let mut resend = FIRST_RESEND;
            loop {
                // Each resend clones the payload (up to a few MiB): rare, and only while nobody
                // answers.
                self.publisher
                    .publish(publication.clone())
                    .await
                    .map_err(|e| RequestError::Closed(e.to_string()))?;
                match tokio::time::timeout(resend, &mut rx).await {
                    Ok(Ok(answer)) => return Ok(answer),
                    Ok(Err(_)) => {
                        return Err(RequestError::Closed("the answer router stopped".to_owned()));
                    }
                    Err(_) => resend = (resend * 2).min(MAX_RESEND),
                }
            }
        };
        let outcome = tokio::time::timeout(timeout, answer).await;
        outcome.unwrap_or_else(|_| {
            Err(RequestError::NoAnswer {
                topic,
                secs: timeout.as_secs_f64().ceil() as u64,
            })
        })
    }

    /// Disconnects politely (the broker drops the private subscription at once).
    pub async fn disconnect(self) {
        self.session.shutdown().await;
    }
}

/// A request's entry in the pending map, removed on drop.
struct Waiting<'a> {
    pending: &'a Pending,
    correlation: Bytes,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(self.pending).remove(&self.correlation);
    }
}

fn lock(pending: &Pending) -> MutexGuard<'_, HashMap<Bytes, oneshot::Sender<Publication>>> {
    // A poisoned map only means another caller panicked mid-insert; the map is still usable.
    pending.lock().unwrap_or_else(|e| e.into_inner())
}
