//! Admin requests on the hub task: who sent one (its signed credential) and whether its role
//! and scope allow it, a repeat of a change answered with its first answer instead of being carried out
//! twice, and the answer published on the client's response topic (refused as TooLarge when the
//! broker cannot carry it).

use std::collections::HashMap;

use bytes::Bytes;
use chrono::Utc;
use ocm_edge_mqtt::Publication;
use ocm_edge_schemas::admin::{
    ADMIN_API_VERSION, ADMIN_API_VERSION_PROPERTY, AdminErrorKind, AdminRequest, AdminResponse,
    MAX_ADMIN_PAYLOAD_BYTES,
};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
use ocm_edge_schemas::wire::topic;

use super::commit::{Batch, HubLoop};
use crate::admin::scope::{Access, authorize};
use crate::admin::server;
use crate::core::{Change, counter};

/// How long the answer to a change is kept for a repeat of its request: twice the clock skew a
/// signed request is accepted with, so a request is never carried out twice while its signature
/// is still good.
const REPEAT_WINDOW_SECS: i64 = 2 * ocm_edge_schemas::admin::auth::MAX_CLOCK_SKEW_SECS;
/// At most this many answers are kept (the oldest go first): a flood of changes costs bounded
/// memory.
const MAX_ANSWERS_KEPT: usize = 4096;

/// One admin request, as a repeat of it looks: its response topic, correlation data and payload
/// (SHA-256). A signed request cannot be altered in any of these without a new signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RepeatKey([u8; 32]);

impl RepeatKey {
    fn of(response_topic: &str, received: &Publication) -> RepeatKey {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        let payload = ring::digest::digest(&ring::digest::SHA256, &received.message.payload);
        let correlation = received.correlation_data.as_deref().unwrap_or_default();
        for field in [response_topic.as_bytes(), correlation, payload.as_ref()] {
            ctx.update(&(field.len() as u64).to_be_bytes());
            ctx.update(field);
        }
        let mut key = [0; 32];
        key.copy_from_slice(ctx.finish().as_ref());
        RepeatKey(key)
    }
}

/// The answers to recent changes ([`REPEAT_WINDOW_SECS`], at most [`MAX_ANSWERS_KEPT`]). The CLI
/// sends a request again, with the same correlation data, until it has an answer: a change the
/// hub carried out whose answer was lost is answered again instead of being carried out a second
/// time (a second `createWork` would fail with AlreadyExists), and a captured request replayed
/// within its signature's lifetime changes nothing. In memory only: a restarted hub has none.
#[derive(Debug, Default)]
pub(super) struct Answered {
    answers: HashMap<RepeatKey, (chrono::DateTime<Utc>, AdminResponse)>,
    order: std::collections::VecDeque<(chrono::DateTime<Utc>, RepeatKey)>,
}

impl Answered {
    fn get(&mut self, key: &RepeatKey, now: chrono::DateTime<Utc>) -> Option<AdminResponse> {
        self.expire(now);
        self.answers.get(key).map(|(_, answer)| answer.clone())
    }

    fn insert(&mut self, key: RepeatKey, answer: AdminResponse, now: chrono::DateTime<Utc>) {
        self.expire(now);
        while self.order.len() >= MAX_ANSWERS_KEPT {
            if let Some((_, oldest)) = self.order.pop_front() {
                self.answers.remove(&oldest);
            }
        }
        self.order.push_back((now, key.clone()));
        self.answers.insert(key, (now, answer));
    }

    fn expire(&mut self, now: chrono::DateTime<Utc>) {
        let horizon = now - chrono::Duration::seconds(REPEAT_WINDOW_SECS);
        while self.order.front().is_some_and(|(at, _)| *at < horizon) {
            if let Some((at, key)) = self.order.pop_front() {
                // A key answered again later keeps its newer entry.
                if self.answers.get(&key).is_some_and(|(t, _)| *t == at) {
                    self.answers.remove(&key);
                }
            }
        }
    }
}

/// An admin answer waiting for its batch to be stored.
pub(super) struct PendingResponse {
    pub(super) topic: String,
    pub(super) correlation_data: Option<Bytes>,
    pub(super) response: AdminResponse,
}

impl HubLoop {
    pub(super) fn plan_admin(
        &mut self,
        received: Publication,
        now: chrono::DateTime<Utc>,
        batch: &mut Batch,
    ) -> Change {
        if received.retain {
            // A retained request would be replayed at every resubscribe: never act on one.
            tracing::warn!("retained admin request dropped (requests must not be retained)");
            return self.core.count(counter::ADMIN_DROPPED);
        }
        let Some(topic) = received.response_topic.clone() else {
            tracing::warn!("admin request without a response topic dropped");
            return self.core.count(counter::ADMIN_DROPPED);
        };
        // Answers go only to this hub's admin response topics: a request must not make the hub
        // publish on a cluster's topic (or anywhere else its identity may write).
        let source = &self.core.config().source_id;
        if !matches!(topic::Topic::parse(&topic),
            Ok(topic::Topic::AdminResponses { source: s, .. }) if &s == source)
        {
            tracing::warn!(
                response_topic = %topic,
                "admin request dropped: its response topic is not ocm-edge/{source}/admin/responses/<client>"
            );
            return self.core.count(counter::ADMIN_DROPPED);
        }
        let (change, response) = match server::parse_request(&received.message.payload) {
            Ok(request) => match self.admit(&received, &topic, &request, now) {
                Ok((user, access)) => {
                    let key = RepeatKey::of(&topic, &received);
                    if let Some(first) = self.answered.get(&key, now) {
                        tracing::info!(
                            command = request.command(),
                            user,
                            "repeated admin request answered with its first answer (not carried out again)"
                        );
                        (self.core.count(counter::ADMIN_REPEATED), first)
                    } else {
                        match &request {
                            AdminRequest::Unknown { command } => tracing::warn!(
                                command,
                                user,
                                "admin request for a command this hub does not know (newer CLI?)"
                            ),
                            known => {
                                tracing::info!(command = known.command(), user, "admin request");
                            }
                        }
                        let changes = request.changes_something();
                        let (change, response) =
                            server::handle_request(&self.core, &access, request, now);
                        if changes {
                            self.answered.insert(key, response.clone(), now);
                        }
                        (change, response)
                    }
                }
                Err(refusal) => (self.core.count(counter::ADMIN_REFUSED), refusal),
            },
            Err(response) => (self.core.count(counter::ADMIN_DROPPED), response),
        };
        batch.responses.push(PendingResponse {
            topic,
            correlation_data: received.correlation_data,
            response,
        });
        change
    }

    /// Who sent an admin request (`"-"` without authentication) and what it may reach, or the
    /// answer refusing it: Unauthenticated without a valid signed credential, Forbidden when the
    /// role or the scope does not allow the command. Refusals are logged.
    fn admit(
        &self,
        received: &Publication,
        response_topic: &str,
        request: &AdminRequest,
        now: chrono::DateTime<Utc>,
    ) -> Result<(String, Access), AdminResponse> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(("-".to_owned(), Access::Everything));
        };
        let correlation = received.correlation_data.as_deref().unwrap_or_default();
        let who = authenticator
            .authenticate(&received.message, response_topic, correlation, now)
            .map_err(|e| {
                tracing::warn!(command = request.command(), reason = %e, "admin request refused: unauthenticated");
                AdminResponse::error(AdminErrorKind::Unauthenticated, e.to_string())
            })?;
        let access = authorize(&who, request, &self.core).map_err(|message| {
            tracing::warn!(command = request.command(), user = who.user, role = %who.role, scoped = who.scope.is_some(), "admin request refused: forbidden");
            AdminResponse::error(AdminErrorKind::Forbidden, message)
        })?;
        Ok((who.user, access))
    }

    pub(super) async fn respond(
        &self,
        topic: String,
        correlation: Option<Bytes>,
        response: &AdminResponse,
    ) {
        let answer = match admin_answer(topic.clone(), correlation.clone(), response) {
            Some(a) => a,
            None => return,
        };
        // Admin clients accept MAX_ADMIN_PAYLOAD_BYTES (and the broker disconnects a client sent
        // more than it accepts); the link may allow less.
        let bytes = answer.packet_bytes();
        let published = if bytes > MAX_ADMIN_PAYLOAD_BYTES {
            Err((bytes, MAX_ADMIN_PAYLOAD_BYTES as u32))
        } else {
            match self.publisher.publish(answer).await {
                Ok(()) => Ok(()),
                Err(e) => match e.too_large {
                    Some(too_large) => Err(too_large),
                    None => {
                        tracing::warn!(error = %e, "admin response not sent");
                        Ok(())
                    }
                },
            }
        };
        match published {
            Ok(()) => {}
            Err((bytes, limit)) => {
                tracing::warn!(
                    bytes,
                    limit,
                    "admin answer larger than the broker carries; answered TooLarge instead"
                );
                let refused = AdminResponse::error(
                    AdminErrorKind::TooLarge,
                    format!(
                        "the answer is {bytes} bytes, more than the {limit} bytes an admin answer \
                         may carry. Lists: ask for fewer items (listClusters and listWorks take \
                         `limit` and `after`; the ocm-edge CLI pages by itself). A write was stored \
                         before this answer: `ocm-edge work list` shows it."
                    ),
                );
                if let Some(a) = admin_answer(topic, correlation, &refused)
                    && let Err(e) = self.publisher.publish(a).await
                {
                    tracing::warn!(error = %e, "admin response not sent");
                }
            }
        }
    }
}

/// An admin answer as a publication on the client's response topic.
fn admin_answer(
    topic: String,
    correlation: Option<Bytes>,
    response: &AdminResponse,
) -> Option<Publication> {
    let payload = match serde_json::to_vec(response) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "cannot encode admin response");
            return None;
        }
    };
    Some(Publication {
        message: MqttMessage {
            topic,
            payload,
            content_type: Some(APPLICATION_JSON.to_owned()),
            user_properties: vec![(
                ADMIN_API_VERSION_PROPERTY.to_owned(),
                ADMIN_API_VERSION.to_owned(),
            )],
        },
        correlation_data: correlation,
        ..Publication::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(correlation: &[u8], payload: &[u8]) -> Publication {
        Publication {
            message: MqttMessage {
                topic: "ocm-edge/ocm-edge/admin/requests".into(),
                payload: payload.to_vec(),
                content_type: None,
                user_properties: vec![],
            },
            retain: false,
            response_topic: Some("r".into()),
            correlation_data: Some(Bytes::copy_from_slice(correlation)),
        }
    }

    #[test]
    fn a_repeat_gets_the_first_answer_within_the_window_and_only_the_same_request_is_a_repeat() {
        let t0: chrono::DateTime<Utc> = "2026-11-25T10:00:00Z".parse().unwrap();
        let answer = AdminResponse::error(AdminErrorKind::NotFound, "first");
        let mut answered = Answered::default();
        let key = RepeatKey::of("r", &request(b"c1", b"p"));
        answered.insert(key.clone(), answer.clone(), t0);
        let later = t0 + chrono::Duration::seconds(REPEAT_WINDOW_SECS - 1);
        assert_eq!(answered.get(&key, later), Some(answer));
        for other in [
            RepeatKey::of("r", &request(b"c2", b"p")),
            RepeatKey::of("r", &request(b"c1", b"q")),
            RepeatKey::of("r2", &request(b"c1", b"p")),
        ] {
            assert_ne!(other, key);
            assert_eq!(answered.get(&other, later), None);
        }
        let expired = t0 + chrono::Duration::seconds(REPEAT_WINDOW_SECS + 1);
        assert_eq!(answered.get(&key, expired), None);
        assert!(answered.answers.is_empty() && answered.order.is_empty());
    }

    #[test]
    fn at_most_the_newest_answers_are_kept() {
        let t0: chrono::DateTime<Utc> = "2026-11-25T10:00:00Z".parse().unwrap();
        let mut answered = Answered::default();
        let answer = AdminResponse::error(AdminErrorKind::NotFound, "x");
        for i in 0..MAX_ANSWERS_KEPT + 10 {
            let key = RepeatKey::of("r", &request(&i.to_be_bytes(), b"p"));
            answered.insert(key, answer.clone(), t0);
        }
        assert_eq!(answered.answers.len(), MAX_ANSWERS_KEPT);
        let oldest = RepeatKey::of("r", &request(&0usize.to_be_bytes(), b"p"));
        assert_eq!(answered.get(&oldest, t0), None);
        let newest = RepeatKey::of("r", &request(&(MAX_ANSWERS_KEPT + 9).to_be_bytes(), b"p"));
        assert!(answered.get(&newest, t0).is_some());
    }
}
