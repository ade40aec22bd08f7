//! One reconnecting MQTT 5 session: hub, agent, CLI, benchmarks and tests all use it instead of
//! polling rumqttc's event loop themselves.
//!
//! [`Session::start`] spawns a task that owns the rumqttc event loop and yields [`SessionEvent`]s:
//! `Connected` (with the broker's `session_present`), `Subscribed` after every reconnect (the
//! subscriptions of [`SessionConfig`] are sent again each time, first in line), `Message`, and
//! `Disconnected { why }`, after which it waits a jittered, exponentially growing delay
//! ([`Backoff`]) and tries again, forever, until [`Session::shutdown`] or drop.
//!
//! # Guarantees
//! - The task never waits on its consumer: events go to an unbounded channel, so a consumer that
//!   publishes (and waits for queue space) cannot deadlock against the loop that drains the queue.
//! - `publish` returns when the message is queued, not when the broker acknowledged it; QoS 1
//!   messages in flight when a link dies are dropped when the broker forgot the session. Delivery
//!   is the application's business (outbox and resync; ARCHITECTURE.md, "the broker is a pipe").
//! - One INFO line when a link is lost and one when it is back (with how long it was down); failed
//!   attempts in between log at DEBUG, except a refused login or an untrusted certificate, which
//!   log a WARN once per change of cause.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ocm_edge_schemas::wire::{MqttMessage, WireError};
use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{
    Filter, Packet, PubAckReason, PublishProperties, SubscribeReasonCode,
};
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions, Request};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::link::LinkError;
use crate::publication::{Publication, last_will};
use crate::tls::{TlsError, TlsFiles};
use crate::url::{BrokerUrl, Credentials};

/// Shortest keepalive rumqttc accepts (it panics below).
pub const MIN_KEEPALIVE: Duration = Duration::from_secs(5);
/// Default largest packet sent or accepted: works carry up to 500 KiB of manifests.
pub const DEFAULT_MAX_PACKET_BYTES: u32 = 1024 * 1024;
/// Default outgoing QoS 1 messages in flight: rumqttc's v5 default preallocates a 65,536-entry
/// in-flight table (~14 MB per client); 100 costs ~84 KB.
pub const DEFAULT_INFLIGHT: u16 = 100;

/// Jittered exponential reconnect delays: `min x 2^attempt`, capped at `max`, then scaled by a
/// random factor in [0.5, 1) so a fleet that lost its broker does not reconnect in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// First delay (before jitter).
    pub min: Duration,
    /// Longest delay (before jitter).
    pub max: Duration,
}

impl Default for Backoff {
    /// 0.5 s doubling up to 10 s: a link that comes back is used within 10 s.
    fn default() -> Self {
        Backoff {
            min: Duration::from_millis(500),
            max: Duration::from_secs(10),
        }
    }
}

impl Backoff {
    /// The delay before reconnect attempt `attempt` (0 = the first after a loss); `jitter` in
    /// [0, 1) picks the point in [0.5, 1) x the capped delay.
    pub fn delay(&self, attempt: u32, jitter: f64) -> Duration {
        let base = self
            .min
            .saturating_mul(2u32.saturating_pow(attempt.min(16)))
            .min(self.max);
        base.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

fn random_unit() -> f64 {
    // 53 random bits of a v4 UUID: no rand dependency for one number.
    (uuid::Uuid::new_v4().as_u128() >> 75) as f64 / (1u64 << 53) as f64
}

/// How to reach the broker and what to ask of it. Build with [`SessionConfig::new`], then set
/// fields.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The broker.
    pub url: BrokerUrl,
    /// MQTT client id; a second connection with the same id takes the first one's place.
    pub client_id: String,
    /// Username and password, if the broker wants them.
    pub credentials: Option<Credentials>,
    /// CA and client certificate for `mqtts://` (system roots when empty).
    pub tls: TlsFiles,
    /// MQTT keepalive (raised to [`MIN_KEEPALIVE`]).
    pub keepalive: Duration,
    /// Largest packet sent or accepted (announced to the broker).
    pub max_packet_bytes: u32,
    /// Outgoing QoS 1 messages in flight.
    pub inflight: u16,
    /// MQTT 5 Receive Maximum: incoming QoS 1 messages the broker may have unacknowledged
    /// (`None`: the protocol's 65,535). A small window keeps a ping reply from waiting behind
    /// many large messages on a slow link.
    pub receive_maximum: Option<u16>,
    /// MQTT 5 clean start: forget any session the broker kept for this client id.
    pub clean_start: bool,
    /// MQTT 5 session expiry interval in seconds (`None`: the session ends with the connection).
    pub session_expiry_secs: Option<u32>,
    /// Filters subscribed (QoS 1) after every CONNACK.
    pub subscriptions: Vec<String>,
    /// Reconnect delays.
    pub backoff: Backoff,
    /// How long to wait for TCP, TLS and the CONNACK.
    pub connect_timeout: Duration,
    /// Publications queued before `publish` waits (and `try_publish` fails).
    pub queue_capacity: usize,
    /// Report every PUBACK, and the SUBACK of every subscription made through the publisher, as
    /// [`SessionEvent::Acked`] (wire-level test clients that check what a broker's ACL granted).
    /// The SUBACK of [`SessionConfig::subscriptions`] is [`SessionEvent::Subscribed`] alone, so
    /// that one renewed after a reconnect is never taken for the answer to a request.
    pub report_acks: bool,
}

impl SessionConfig {
    /// Defaults: no credentials, system roots for TLS, keepalive 30 s, 1 MiB packets, 100 in
    /// flight, clean start, no subscriptions, [`Backoff::default`], connect timeout 10 s, queue
    /// of 1024.
    pub fn new(url: BrokerUrl, client_id: impl Into<String>) -> Self {
        SessionConfig {
            url,
            client_id: client_id.into(),
            credentials: None,
            tls: TlsFiles::default(),
            keepalive: Duration::from_secs(30),
            max_packet_bytes: DEFAULT_MAX_PACKET_BYTES,
            inflight: DEFAULT_INFLIGHT,
            receive_maximum: None,
            clean_start: true,
            session_expiry_secs: None,
            subscriptions: Vec::new(),
            backoff: Backoff::default(),
            connect_timeout: Duration::from_secs(10),
            queue_capacity: 1024,
            report_acks: false,
        }
    }

    fn mqtt_options(&self) -> Result<MqttOptions, SessionError> {
        let mut options =
            MqttOptions::new(self.client_id.clone(), self.url.host(), self.url.port());
        options
            .set_keep_alive(self.keepalive.max(MIN_KEEPALIVE))
            .set_clean_start(self.clean_start)
            .set_session_expiry_interval(self.session_expiry_secs)
            .set_max_packet_size(Some(self.max_packet_bytes))
            .set_outgoing_inflight_upper_limit(self.inflight)
            .set_receive_maximum(self.receive_maximum)
            .set_connection_timeout(self.connect_timeout.as_secs().max(1));
        if self.url.is_tls() {
            let config = self.tls.client_config()?;
            options.set_transport(rumqttc::Transport::tls_with_config(
                rumqttc::TlsConfiguration::Rustls(config),
            ));
        } else if !self.tls.is_empty() {
            return Err(TlsError::FilesWithoutTls(self.url.to_string()).into());
        }
        if let Some(c) = &self.credentials {
            options.set_credentials(c.username.clone(), c.password.clone());
        }
        Ok(options)
    }
}

/// A session that cannot start. Not retryable: the configuration must change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// TLS material that cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// What happened on the session.
#[derive(Debug)]
pub enum SessionEvent {
    /// The broker accepted a connection. `connection` is the number the [`WillFn`] gave this
    /// attempt (or a count of attempts without one).
    Connected {
        /// Whether the broker resumed a session it kept for this client id.
        session_present: bool,
        /// The attempt's number.
        connection: u64,
    },
    /// The broker answered the subscriptions sent after a CONNACK.
    Subscribed {
        /// Filters the broker refused (empty when all were granted).
        refused: Vec<String>,
    },
    /// A message arrived.
    Message(Box<Publication>),
    /// A PUBLISH arrived that cannot be read (topic not UTF-8); the consumer logs and counts it.
    Malformed(WireError),
    /// The link is down (or the first attempt failed); the session tries again after a backoff.
    Disconnected {
        /// Why.
        why: LinkError,
    },
    /// A SUBACK (of a subscription made through the publisher) or PUBACK, when
    /// [`SessionConfig::report_acks`] is set.
    Acked(Ack),
}

/// What a broker acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ack {
    /// One entry per filter of a SUBSCRIBE: `Ok(granted QoS)` or the refusal's reason code.
    Subscribe(Vec<Result<u8, String>>),
    /// A QoS 1 PUBLISH: `Ok(())` or the refusal's reason code (e.g. NotAuthorized).
    Publish(Result<(), String>),
}

/// Called before every connection attempt: the attempt's number (e.g. a persisted connection
/// sequence number) and the will the broker publishes if that connection dies.
pub type WillFn = Box<dyn FnMut() -> (u64, Option<MqttMessage>) + Send>;

/// A publication that could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot publish on {topic}: {reason}")]
pub struct PublishError {
    /// The topic.
    pub topic: String,
    /// Why (queue full, session stopped, too large).
    pub reason: String,
    /// Set when the packet is larger than the link allows: (packet bytes, limit).
    pub too_large: Option<(usize, u32)>,
}

impl PublishError {
    fn new(topic: String, reason: impl std::fmt::Display) -> Self {
        PublishError {
            topic,
            reason: reason.to_string(),
            too_large: None,
        }
    }

    fn too_large(topic: String, bytes: usize, limit: u32) -> Self {
        PublishError {
            reason: format!(
                "the packet is {bytes} bytes, larger than the {limit} bytes this link allows \
                 (the smaller of this client's limit and the broker's); nothing was sent"
            ),
            topic,
            too_large: Some((bytes, limit)),
        }
    }
}

/// Publishes on the session (QoS 1). Cloning shares the session.
///
/// A publication larger than the link's packet limit (the smaller of
/// [`SessionConfig::max_packet_bytes`] and the maximum the broker announced in its CONNACK) is
/// refused here with [`PublishError::too_large`] set: queued, it would make rumqttc drop the
/// connection on every attempt to send it, for ever.
#[derive(Debug, Clone)]
pub struct Publisher {
    client: AsyncClient,
    max_packet: Arc<AtomicU32>,
}

impl Publisher {
    /// Queues a publication, waiting for room in the queue.
    ///
    /// # Errors
    /// [`PublishError`] when the session has stopped.
    pub async fn publish(&self, publication: impl Into<Publication>) -> Result<(), PublishError> {
        let (topic, retain, payload, props) = self.checked(publication.into())?;
        let queued = self.client.publish_with_properties(
            topic.clone(),
            QoS::AtLeastOnce,
            retain,
            payload,
            props,
        );
        queued.await.map_err(|e| PublishError::new(topic, e))
    }

    /// Subscribes (QoS 1) to one more filter on the current connection only; the session's own
    /// subscriptions ([`SessionConfig::subscriptions`]) are the ones renewed after a reconnect.
    ///
    /// # Errors
    /// [`PublishError`] when the session has stopped.
    pub async fn subscribe(&self, filter: &str) -> Result<(), PublishError> {
        self.client
            .subscribe(filter, QoS::AtLeastOnce)
            .await
            .map_err(|e| PublishError::new(filter.to_owned(), e))
    }

    /// Queues a publication without waiting.
    ///
    /// # Errors
    /// [`PublishError`] when the queue is full or the session has stopped.
    pub fn try_publish(&self, publication: impl Into<Publication>) -> Result<(), PublishError> {
        let (topic, retain, payload, props) = self.checked(publication.into())?;
        self.client
            .try_publish_with_properties(topic.clone(), QoS::AtLeastOnce, retain, payload, props)
            .map_err(|e| PublishError::new(topic, e))
    }

    /// The largest packet this link may carry now.
    pub fn max_packet_bytes(&self) -> u32 {
        self.max_packet.load(Ordering::Relaxed)
    }

    fn checked(
        &self,
        publication: Publication,
    ) -> Result<(String, bool, Vec<u8>, PublishProperties), PublishError> {
        // The properties are built once, measured, and handed on.
        let (topic, retain, payload, props) = publication.into_parts();
        let (bytes, props) = crate::publication::packet_bytes(&topic, props, payload.len());
        let limit = self.max_packet_bytes();
        if bytes > limit as usize {
            return Err(PublishError::too_large(topic, bytes, limit));
        }
        Ok((topic, retain, payload, props))
    }
}

/// A running session. Dropping it stops the task at once (a killed process closes its TCP
/// connection and the broker publishes the will); [`Session::shutdown`] disconnects politely.
#[derive(Debug)]
pub struct Session {
    publisher: Publisher,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Session {
    /// Starts the session task (inside a tokio runtime) and returns its handle and events.
    ///
    /// # Errors
    /// [`SessionError`] for TLS material that cannot be used.
    pub fn start(
        cfg: SessionConfig,
        will: Option<WillFn>,
    ) -> Result<(Session, mpsc::UnboundedReceiver<SessionEvent>), SessionError> {
        let options = cfg.mqtt_options()?;
        let (client, eventloop) = AsyncClient::new(options, cfg.queue_capacity.max(1));
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (stop, stopped) = watch::channel(false);
        let max_packet = Arc::new(AtomicU32::new(cfg.max_packet_bytes));
        let task = tokio::spawn(
            Driver {
                eventloop,
                max_packet: max_packet.clone(),
                cfg: Arc::new(cfg),
                will,
                events: events_tx,
            }
            .run(stopped),
        );
        Ok((
            Session {
                publisher: Publisher { client, max_packet },
                stop,
                task,
            },
            events_rx,
        ))
    }

    /// Starts a session and waits until its subscriptions are granted, for one-shot clients (the
    /// CLI, tests). The first failure ends it: nobody waits for a broker that is not there.
    ///
    /// # Errors
    /// The [`LinkError`] of the first failed attempt, [`LinkError::Timeout`] after `timeout`, or
    /// [`LinkError::NotAccepted`] when the broker refused a subscription.
    pub async fn connect(
        cfg: SessionConfig,
        timeout: Duration,
    ) -> Result<(Session, mpsc::UnboundedReceiver<SessionEvent>), ConnectError> {
        Self::connect_with_will(cfg, None, timeout).await
    }

    /// [`Session::connect`] with a will the broker publishes if the connection dies.
    ///
    /// # Errors
    /// As [`Session::connect`].
    pub async fn connect_with_will(
        cfg: SessionConfig,
        will: Option<WillFn>,
        timeout: Duration,
    ) -> Result<(Session, mpsc::UnboundedReceiver<SessionEvent>), ConnectError> {
        let url = cfg.url.clone();
        let (session, mut events) = Session::start(cfg, will)?;
        let first = tokio::time::timeout(timeout, async {
            loop {
                match events.recv().await {
                    Some(SessionEvent::Subscribed { refused }) if refused.is_empty() => {
                        return Ok(());
                    }
                    Some(SessionEvent::Subscribed { refused }) => {
                        return Err(LinkError::NotAccepted {
                            url: url.to_string(),
                            code: format!("subscription to {} refused", refused.join(", ")),
                        });
                    }
                    Some(SessionEvent::Disconnected { why }) => return Err(why),
                    Some(_) => {}
                    None => {
                        return Err(LinkError::Lost {
                            url: url.to_string(),
                            reason: "the session stopped".to_owned(),
                        });
                    }
                }
            }
        })
        .await;
        match first {
            Ok(Ok(())) => Ok((session, events)),
            Ok(Err(why)) => Err(why.into()),
            Err(_) => Err(LinkError::Timeout {
                url: url.to_string(),
                secs: timeout.as_secs_f64().ceil() as u64,
            }
            .into()),
        }
    }

    /// A handle to publish with.
    pub fn publisher(&self) -> Publisher {
        self.publisher.clone()
    }

    /// Sends DISCONNECT after what is queued (so an agent's last presence goes out first and no
    /// will is published), waits for it briefly, and stops the task.
    pub async fn shutdown(mut self) {
        // Queued behind every earlier publication: the loop is never cancelled mid-write.
        let _ = self.publisher.client.try_disconnect();
        // Wakes a loop that is waiting out a reconnect delay.
        let _ = self.stop.send(true);
        if tokio::time::timeout(Duration::from_millis(1500), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

/// Why [`Session::connect`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The configuration cannot work.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The broker could not be used.
    #[error(transparent)]
    Link(#[from] LinkError),
}

struct Driver {
    eventloop: EventLoop,
    /// The link's packet limit, shared with the [`Publisher`]s.
    max_packet: Arc<AtomicU32>,
    cfg: Arc<SessionConfig>,
    will: Option<WillFn>,
    events: mpsc::UnboundedSender<SessionEvent>,
}

/// Why the driver loop ended a connection.
enum Ended {
    Link(LinkError),
    Stop,
}

impl Driver {
    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        let mut attempt = 0u32;
        let mut attempts = 0u64;
        let mut link = LinkState::default();
        loop {
            attempts += 1;
            let connection = self.prepare_attempt(attempts);
            let why = match self.poll_connection(connection, &mut link).await {
                Ended::Stop => return,
                Ended::Link(why) => why,
            };
            match link.connected_at.take() {
                Some(since) => {
                    // A link that dies at once (a client-id takeover, a broker that drops us
                    // after CONNACK) keeps backing off instead of reconnecting in a tight loop.
                    if since.elapsed() >= self.cfg.backoff.max {
                        attempt = 0;
                    }
                    link.down_since = Some(Instant::now());
                    link.warned = None;
                    tracing::info!(client = %self.cfg.client_id, %why, "link to the MQTT broker lost");
                }
                None if link.warned.as_ref() != Some(&why) => {
                    // Never connected yet, or a new cause: say it once, not per attempt.
                    tracing::warn!(%why, "cannot connect to the MQTT broker; retrying");
                    link.warned = Some(why.clone());
                }
                None => tracing::debug!(%why, attempt, "MQTT connection attempt failed"),
            }
            if self
                .events
                .send(SessionEvent::Disconnected { why })
                .is_err()
            {
                tracing::debug!("the session's consumer is gone; stopping");
                return;
            }
            let delay = self.cfg.backoff.delay(attempt, random_unit());
            attempt = attempt.saturating_add(1);
            tokio::select! {
                _ = stopped.changed() => return,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Sets the will of the next attempt and returns its number.
    fn prepare_attempt(&mut self, attempts: u64) -> u64 {
        let Some(will) = self.will.as_mut() else {
            return attempts;
        };
        let (number, message) = will();
        match message {
            Some(m) => {
                self.eventloop.options.set_last_will(last_will(m));
            }
            None => {
                // rumqttc has no way to clear a will; a will-less attempt keeps the last one.
                tracing::debug!(number, "no will for this connection");
            }
        }
        number
    }

    /// Polls one connection until it fails or the session is shut down (the DISCONNECT that
    /// [`Session::shutdown`] queued went out). Never cancelled mid-write.
    async fn poll_connection(&mut self, connection: u64, link: &mut LinkState) -> Ended {
        loop {
            let event = match self.eventloop.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                    link.connected_at = Some(Instant::now());
                    let broker_max = ack.properties.as_ref().and_then(|p| p.max_packet_size);
                    let limit = broker_max.map_or(self.cfg.max_packet_bytes, |b| {
                        b.min(self.cfg.max_packet_bytes)
                    });
                    self.max_packet.store(limit, Ordering::Relaxed);
                    match link.down_since.take() {
                        Some(since) => tracing::info!(
                            client = %self.cfg.client_id,
                            down = ?since.elapsed(),
                            "link to the MQTT broker is back"
                        ),
                        None => tracing::info!(
                            client = %self.cfg.client_id,
                            url = %self.cfg.url,
                            "connected to the MQTT broker"
                        ),
                    }
                    let connected = SessionEvent::Connected {
                        session_present: ack.session_present,
                        connection,
                    };
                    if self.events.send(connected).is_err() {
                        return Ended::Stop;
                    }
                    link.own_subscribe = None;
                    link.awaiting_own_subscribe = self.subscribe();
                    if link.awaiting_own_subscribe {
                        continue;
                    }
                    // Nothing to subscribe: ready as soon as connected.
                    SessionEvent::Subscribed { refused: vec![] }
                }
                Ok(Event::Outgoing(Outgoing::Subscribe(pkid))) if link.awaiting_own_subscribe => {
                    // The first SUBSCRIBE after a CONNACK is the session's own (sent first).
                    link.own_subscribe = Some(pkid);
                    link.awaiting_own_subscribe = false;
                    continue;
                }
                Ok(Event::Incoming(Packet::SubAck(ack))) => {
                    // The answer to the session's own SUBSCRIBE, once: packet ids are reused, so
                    // a later request's SUBACK may carry the same one.
                    let own = link.own_subscribe == Some(ack.pkid);
                    if own {
                        link.own_subscribe = None;
                    }
                    if self.cfg.report_acks && !own {
                        let codes = ack
                            .return_codes
                            .iter()
                            .map(|code| match code {
                                SubscribeReasonCode::Success(qos) => Ok(*qos as u8),
                                refused => Err(format!("{refused:?}")),
                            })
                            .collect();
                        if self
                            .events
                            .send(SessionEvent::Acked(Ack::Subscribe(codes)))
                            .is_err()
                        {
                            return Ended::Stop;
                        }
                    }
                    if !own {
                        continue;
                    }
                    let refused = ack
                        .return_codes
                        .iter()
                        .zip(&self.cfg.subscriptions)
                        .filter(|(code, _)| !matches!(code, SubscribeReasonCode::Success(_)))
                        .map(|(_, filter)| filter.clone())
                        .collect();
                    SessionEvent::Subscribed { refused }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => match Publication::from_publish(p) {
                    Ok(p) => SessionEvent::Message(Box::new(p)),
                    Err(e) => SessionEvent::Malformed(e),
                },
                Ok(Event::Incoming(Packet::PubAck(ack))) if self.cfg.report_acks => {
                    let reason = match ack.reason {
                        PubAckReason::Success | PubAckReason::NoMatchingSubscribers => Ok(()),
                        refused => Err(format!("{refused:?}")),
                    };
                    SessionEvent::Acked(Ack::Publish(reason))
                }
                Ok(Event::Outgoing(Outgoing::Disconnect)) => return Ended::Stop,
                Ok(_) => continue,
                Err(e) => {
                    let user = self.cfg.credentials.as_ref().map(|c| c.username.as_str());
                    let secs = self.cfg.connect_timeout.as_secs().max(1);
                    let ever = link.connected_at.is_some() || link.down_since.is_some();
                    return Ended::Link(LinkError::classify(&self.cfg.url, user, secs, ever, &e));
                }
            };
            if self.events.send(event).is_err() {
                tracing::debug!("the session's consumer is gone; stopping");
                return Ended::Stop;
            }
        }
    }

    /// Puts the subscriptions first in line: publications queued while the link was down must
    /// not delay them (a hub that cannot hear its clusters is worse than one that answers late).
    /// Returns false when there is nothing to subscribe.
    fn subscribe(&mut self) -> bool {
        if self.cfg.subscriptions.is_empty() {
            return false;
        }
        let filters = self
            .cfg
            .subscriptions
            .iter()
            .map(|f| Filter::new(f.clone(), QoS::AtLeastOnce));
        let subscribe = rumqttc::v5::mqttbytes::v5::Subscribe::new_many(filters, None);
        self.eventloop
            .pending
            .push_front(Request::Subscribe(subscribe));
        true
    }
}

/// What the driver remembers about the link across attempts.
#[derive(Default)]
struct LinkState {
    /// When the current connection got its CONNACK.
    connected_at: Option<Instant>,
    /// When the last established link was lost (until it is back).
    down_since: Option<Instant>,
    /// The failure last logged as a warning (logged again only when the cause changes).
    warned: Option<LinkError>,
    /// Whether the session's own SUBSCRIBE is queued but not yet sent.
    awaiting_own_subscribe: bool,
    /// Packet id of the session's own SUBSCRIBE on the current connection.
    own_subscribe: Option<u16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_min_to_max_and_jitter_keeps_it_in_the_upper_half() {
        let b = Backoff {
            min: Duration::from_millis(500),
            max: Duration::from_secs(10),
        };
        let top: Vec<u64> = (0..8).map(|a| b.delay(a, 1.0).as_millis() as u64).collect();
        assert_eq!(top, [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
        assert_eq!(b.delay(0, 0.0), Duration::from_millis(250));
        assert_eq!(b.delay(40, 0.0), Duration::from_secs(5));
        for _ in 0..100 {
            let r = random_unit();
            assert!((0.0..1.0).contains(&r), "{r}");
        }
    }

    #[test]
    fn the_default_backoff_caps_at_ten_seconds() {
        let b = Backoff::default();
        assert_eq!(b.delay(100, 1.0), Duration::from_secs(10));
    }
}
