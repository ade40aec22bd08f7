//! The rmqtt engine of the embedded broker: one TCP listener, tuned for a fleet, with retained
//! messages (dashboards), shared subscriptions (`$share/`, several hub intakes) and an optional
//! username / password check.
//!
//! Tuning (the library's defaults lose messages in a fleet-sized burst: 16 in flight per client,
//! 1,000 queued, and a CPU "busy" check that refuses CONNECTs on a loaded box):
//! - [`MAX_INFLIGHT`] unacknowledged QoS 1 deliveries per client, then [`MAX_QUEUED`] queued;
//!   past that a delivery is dropped, counted in [`BrokerStats::dropped`] and logged.
//! - no busy check and [`MAX_HANDSHAKES`] CONNECTs in progress: a fleet reconnecting at once after
//!   an outage is let in, not turned away.
//! - queued messages expire after [`MESSAGE_EXPIRY`] (a session's queue cannot grow for ever while
//!   its client is away; the hub resyncs what it missed when it is back).

use std::net::SocketAddr;
use std::num::NonZeroU16;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmqtt::codec::v5::SubscribeAckReason;
use rmqtt::context::ServerContext;
use rmqtt::hook::{Handler, HookResult, Parameter, ReturnType, Type};
use rmqtt::net::Builder;
use rmqtt::server::MqttServer;
use rmqtt::types::{AuthResult, ClientId, Id, LastWill, PublishAclResult, SubscribeAclResult};
use tokio::sync::oneshot;

use crate::acl::{self, Access};

use super::{
    BrokerError, BrokerLogin, BrokerStats, EmbeddedOptions, LoginCheck, MAX_CONNECTIONS,
    MAX_PACKET_BYTES,
};

/// Unacknowledged QoS 1 deliveries per client (the hub receives a whole fleet's statuses).
const MAX_INFLIGHT: u16 = 500;
/// Deliveries queued per client behind its in-flight window (or while it is away).
const MAX_QUEUED: usize = 1_000_000;
/// CONNECTs in progress at once.
const MAX_HANDSHAKES: usize = MAX_CONNECTIONS;
/// A queued message older than this is dropped.
const MESSAGE_EXPIRY: Duration = Duration::from_secs(5 * 60);
/// How long one write to a client may take before the broker drops it (rmqtt's default, 10 s,
/// drops a 2G client, 64 kbit/s, in the middle of any message over ~80 KB).
const SEND_TIMEOUT: Duration = Duration::from_secs(180);
/// When an unacknowledged delivery is sent again on the same connection (rmqtt's default, 20 s,
/// sends a slow link's chunks twice while they are still crossing it).
const RETRY_INTERVAL: Duration = Duration::from_secs(180);
/// Worker threads of the broker's runtime.
const WORKERS: usize = 2;

/// Reaches into a running broker from outside its runtime.
#[derive(Clone)]
pub(super) struct Control {
    scx: ServerContext,
    runtime: tokio::runtime::Handle,
    stats: Arc<BrokerStats>,
    check: Option<Arc<dyn LoginCheck>>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").finish_non_exhaustive()
    }
}

impl Control {
    /// Client connections open now, and sessions the broker holds (connected or kept for a
    /// client that is away).
    pub(super) fn connections(&self) -> (u64, u64) {
        let count = |c: &rmqtt::utils::Counter| u64::try_from(c.count()).unwrap_or(0);
        (count(&self.scx.connections), count(&self.scx.sessions))
    }

    /// Drops the session of `client_id` (only when its login is no longer valid, with
    /// `keep_valid`), on the broker's runtime, and waits for it; a few tries, as a CONNECT with
    /// the same id may hold the session's lock for a moment.
    pub(super) async fn drop_session(&self, client_id: &str, keep_valid: bool) {
        let (done_tx, done_rx) = oneshot::channel();
        let scx = self.scx.clone();
        let stats = self.stats.clone();
        let check = self.check.clone();
        let id = client_id.to_owned();
        self.runtime.spawn(async move {
            let outcome = drop_session(&scx, &stats, check.as_deref(), &id, keep_valid).await;
            let _ = done_tx.send(outcome);
        });
        match tokio::time::timeout(DROP_TIMEOUT, done_rx).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => {
                tracing::error!(client = %client_id, error = %e, "embedded broker could not drop a session that must go");
            }
            Ok(Err(_)) | Err(_) => {
                tracing::error!(client = %client_id, "embedded broker did not drop a session in time");
            }
        }
    }
}

/// How long the hub waits for the broker to drop a session.
const DROP_TIMEOUT: Duration = Duration::from_secs(10);
/// Tries to drop one session.
const DROP_TRIES: usize = 20;

async fn drop_session(
    scx: &ServerContext,
    stats: &BrokerStats,
    check: Option<&dyn LoginCheck>,
    client_id: &str,
    keep_valid: bool,
) -> Result<(), String> {
    let mut last_error = String::new();
    for _ in 0..DROP_TRIES {
        if !scx.extends.shared().await.exist(client_id) {
            return Ok(());
        }
        let id = Id::from(scx.node.id(), ClientId::from(client_id.to_owned()));
        let entry = scx.extends.shared().await.entry(id);
        if keep_valid {
            let session = entry.session();
            let valid = match (check, &session) {
                (Some(check), Some(s)) => {
                    let user = s.username().map(|u| u.to_string()).unwrap_or_default();
                    let password = s.password().map(|p| p.to_vec()).unwrap_or_default();
                    check.still_valid(&user, client_id, &password)
                }
                _ => false,
            };
            if valid {
                return Ok(());
            }
        }
        match entry.try_lock().await {
            Ok(mut entry) => match entry.kick(true, true, true).await {
                Ok(_) => {
                    stats.count_disconnected();
                    tracing::info!(client = %client_id, "embedded broker dropped a session and what it had queued");
                    return Ok(());
                }
                Err(e) => last_error = e.to_string(),
            },
            Err(e) => last_error = e.to_string(),
        }
        // A CONNECT with the same client id holds the entry for a moment: try again shortly.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("{DROP_TRIES} tries: {last_error}"))
}

/// Drops every session whose login [may lapse](LoginCheck::may_lapse) and is no longer valid
/// (a join token expired or revoked since it logged in, an operator credential revoked).
async fn sweep_lapsed_logins(scx: &ServerContext, stats: &BrokerStats, check: &dyn LoginCheck) {
    // Collected first: the shared state is not held while sessions are dropped.
    let lapsed: Vec<String> = {
        let shared = scx.extends.shared().await;
        shared
            .iter()
            .filter_map(|entry| {
                let session = entry.session()?;
                let user = session
                    .username()
                    .map(|u| u.to_string())
                    .unwrap_or_default();
                let password = session.password().map(|p| p.to_vec()).unwrap_or_default();
                let client_id = session.id.client_id.to_string();
                (check.may_lapse(&user, &password)
                    && !check.still_valid(&user, &client_id, &password))
                .then_some(client_id)
            })
            .collect()
    };
    for client_id in lapsed {
        tracing::info!(client = %client_id, "embedded broker drops a session whose login is no longer valid (join token expired or revoked, credential revoked)");
        if let Err(e) = drop_session(scx, stats, Some(check), &client_id, true).await {
            tracing::error!(client = %client_id, error = %e, "embedded broker could not drop a session whose login lapsed");
        }
    }
}

/// Starts the broker on its own thread; returns the bound address, the sender that stops it and
/// its [`Control`].
pub(super) fn spawn(
    listen: SocketAddr,
    options: EmbeddedOptions,
    stats: Arc<BrokerStats>,
    timeout: Duration,
) -> Result<(SocketAddr, oneshot::Sender<()>, Control), BrokerError> {
    let (bound_tx, bound_rx) = std::sync::mpsc::sync_channel(1);
    let (stop_tx, stop_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("ocm-edge-broker".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .thread_name("ocm-edge-broker-worker")
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = bound_tx.send(Err(BrokerError::Thread(e)));
                    return;
                }
            };
            runtime.block_on(serve(listen, options, stats, bound_tx, stop_rx));
            // Connections are tasks of this runtime: dropping it closes them all.
            runtime.shutdown_timeout(Duration::from_secs(1));
        })
        .map_err(BrokerError::Thread)?;
    let (addr, control) =
        bound_rx
            .recv_timeout(timeout)
            .map_err(|_| BrokerError::NotListening {
                addr: listen,
                waited: timeout,
            })??;
    Ok((addr, stop_tx, control))
}

async fn serve(
    listen: SocketAddr,
    options: EmbeddedOptions,
    stats: Arc<BrokerStats>,
    bound: std::sync::mpsc::SyncSender<Result<(SocketAddr, Control), BrokerError>>,
    stop: oneshot::Receiver<()>,
) {
    let recheck = match &options.login {
        BrokerLogin::Checked(check) => Some(check.clone()),
        _ => None,
    };
    let sweep_every = options.login_recheck;
    let server = match build(listen, options, stats.clone()).await {
        Ok(s) => s,
        Err(e) => {
            let _ = bound.send(Err(e));
            return;
        }
    };
    let (server, addr, scx) = server;
    let control = Control {
        scx,
        runtime: tokio::runtime::Handle::current(),
        stats,
        check: recheck,
    };
    if let (Some(check), Some(every)) = (control.check.clone(), sweep_every) {
        let scx = control.scx.clone();
        let stats = control.stats.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                sweep_lapsed_logins(&scx, &stats, check.as_ref()).await;
            }
        });
    }
    let _ = bound.send(Ok((addr, control)));
    tokio::select! {
        result = server.run() => {
            if let Err(e) = result {
                tracing::error!(error = %e, %addr, "embedded broker stopped");
            }
        }
        _ = stop => tracing::debug!(%addr, "embedded broker stopping"),
    }
}

async fn build(
    listen: SocketAddr,
    options: EmbeddedOptions,
    stats: Arc<BrokerStats>,
) -> Result<(MqttServer, SocketAddr, ServerContext), BrokerError> {
    let bind_error = |e: &dyn std::fmt::Display| BrokerError::Bind {
        addr: listen,
        reason: e.to_string(),
    };
    let scx = ServerContext::new()
        .busy_check_enable(false)
        .mqtt_max_sessions(MAX_CONNECTIONS as isize)
        // Round robin would split one cluster's statuses over several hub intakes and reorder
        // them; hashing the topic keeps each cluster on one intake.
        .plugins_config_map_add("rmqtt-shared-subscription", "strategy = \"hash_topic\"")
        .build()
        .await;
    rmqtt_retainer::register(&scx, true, false)
        .await
        .map_err(|e| bind_error(&format!("retained-message store: {e}")))?;
    rmqtt_shared_subscription::register(&scx, true, false)
        .await
        .map_err(|e| bind_error(&format!("shared subscriptions: {e}")))?;
    let hooks = scx.extends.hook_mgr().register();
    hooks
        .add(
            Type::MessageDropped,
            Box::new(CountDrops {
                stats: stats.clone(),
            }),
        )
        .await;
    let recheck = match &options.login {
        BrokerLogin::Checked(check) => Some(check.clone()),
        _ => None,
    };
    let check = match options.login {
        BrokerLogin::Anonymous => None,
        BrokerLogin::Users(users) => Some(Logins::Users(users)),
        BrokerLogin::Checked(check) => Some(Logins::Checked(check)),
    };
    let allow_anonymous = match check {
        None => true,
        Some(logins) => {
            hooks
                .add(
                    Type::ClientAuthenticate,
                    Box::new(CheckLogin {
                        logins,
                        stats: stats.clone(),
                    }),
                )
                .await;
            for hook in [Type::ClientSubscribeCheckAcl, Type::MessagePublishCheckAcl] {
                hooks
                    .add(
                        hook,
                        Box::new(TopicRules {
                            stats: stats.clone(),
                            recheck: recheck.clone(),
                        }),
                    )
                    .await;
            }
            false
        }
    };
    hooks.start().await;
    let (cert, key) = options.tls.as_ref().map_or((None, None), |t| {
        (
            Some(t.cert_chain_file.display().to_string()),
            Some(t.key_file.display().to_string()),
        )
    });
    let listener = Builder::new()
        .name("ocm-edge")
        .tls_cert(cert)
        .tls_key(key)
        .laddr(listen)
        .reuseaddr(Some(true))
        .nodelay(true)
        .backlog(4096)
        .max_connections(MAX_CONNECTIONS)
        .max_handshaking_limit(MAX_HANDSHAKES)
        .max_packet_size(MAX_PACKET_BYTES as u32)
        .max_inflight(NonZeroU16::new(MAX_INFLIGHT).unwrap_or(NonZeroU16::MIN))
        .max_mqueue_len(MAX_QUEUED)
        .message_expiry_interval(MESSAGE_EXPIRY)
        .send_timeout(SEND_TIMEOUT)
        .message_retry_interval(RETRY_INTERVAL)
        .allow_anonymous(allow_anonymous)
        .bind()
        .map_err(|e| bind_error(&e))?;
    let addr = listener.local_addr().map_err(|e| bind_error(&e))?;
    let listener = match &options.tls {
        // rmqtt-net reads the files and builds its rustls server here.
        Some(tls) => listener.tls().map_err(|e| BrokerError::Tls {
            cert: tls.cert_chain_file.clone(),
            key: tls.key_file.clone(),
            reason: format!("{e:#}"),
        })?,
        None => listener.tcp().map_err(|e| bind_error(&e))?,
    };
    // The port is the listener's id (0 would collide between brokers started on port 0).
    let server = MqttServer::new(scx.clone())
        .listener_by_id(listener, addr.port())
        .build();
    Ok((server, addr, scx))
}

/// Counts (and logs, sparingly) every delivery the broker drops.
struct CountDrops {
    stats: Arc<BrokerStats>,
}

// rmqtt's trait elides `Parameter`'s lifetime; naming it here would not match the trait.
#[allow(elided_lifetimes_in_paths)]
#[async_trait]
impl Handler for CountDrops {
    async fn hook(&self, param: &Parameter, acc: Option<HookResult>) -> ReturnType {
        if let Parameter::MessageDropped(to, _from, publish, reason) = param {
            let n = self.stats.count_dropped();
            // The first drop, then at 2, 4, 8...: a burst of drops is visible without a flood.
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped_so_far = n,
                    topic = %publish.inner.topic,
                    to = ?to.as_ref().map(|t| t.client_id.to_string()),
                    reason = %reason,
                    "embedded broker dropped a message before delivery (see reason: a full queue or window, an expired message, a client gone)"
                );
            }
        }
        (true, acc)
    }
}

/// Lets each logged-in client use only its identity's topics ([`crate::acl`]); a refusal is
/// counted ([`BrokerStats::refused_topics`]) and logged sparingly, and the client stays connected
/// (a refused subscription gets a failure SUBACK, a refused publish is not delivered).
struct TopicRules {
    stats: Arc<BrokerStats>,
    /// Checked again at every SUBSCRIBE ([`LoginCheck::still_valid`]): a session whose login
    /// no longer holds (its cluster since accepted with another key, or denied) reads nothing
    /// new, even if it connected while the hub was changing its mind.
    recheck: Option<Arc<dyn LoginCheck>>,
}

impl TopicRules {
    fn refused(&self, user: &str, access: Access, topic: &str) {
        let n = self.stats.count_refused_topic();
        if n.is_power_of_two() {
            tracing::warn!(
                refused_so_far = n,
                user,
                ?access,
                topic,
                "embedded broker refused a topic this identity may not use (see ocm_edge_mqtt::acl)"
            );
        }
    }
}

// rmqtt's trait elides `Parameter`'s lifetime; naming it here would not match the trait.
#[allow(elided_lifetimes_in_paths)]
#[async_trait]
impl Handler for TopicRules {
    async fn hook(&self, param: &Parameter, acc: Option<HookResult>) -> ReturnType {
        match param {
            Parameter::ClientSubscribeCheckAcl(session, subscribe) => {
                let user = session.id.username.as_deref().unwrap_or_default();
                let filter = &subscribe.topic_filter[..];
                let password = session.password().map(|p| &p[..]).unwrap_or_default();
                let client_id = &session.id.client_id;
                let login_holds = self
                    .recheck
                    .as_ref()
                    .is_none_or(|check| check.still_valid(user, client_id, password));
                if login_holds
                    && acl::allowed(user, Access::Subscribe, filter)
                    && self
                        .recheck
                        .as_ref()
                        .is_none_or(|check| check.may_subscribe(user, client_id, password, filter))
                {
                    return (true, acc);
                }
                self.refused(user, Access::Subscribe, filter);
                (
                    false,
                    Some(HookResult::SubscribeAclResult(
                        SubscribeAclResult::new_failure(SubscribeAckReason::NotAuthorized),
                    )),
                )
            }
            Parameter::MessagePublishCheckAcl(session, publish) => {
                let user = session.id.username.as_deref().unwrap_or_default();
                let topic = &publish.inner.topic[..];
                if acl::allowed(user, Access::Publish, topic) {
                    return (true, acc);
                }
                self.refused(user, Access::Publish, topic);
                (
                    false,
                    Some(HookResult::PublishAclResult(PublishAclResult::rejected(
                        false, None,
                    ))),
                )
            }
            _ => (true, acc),
        }
    }
}

/// Who may log in.
enum Logins {
    /// These username / password pairs.
    Users(std::collections::HashMap<String, String>),
    /// Whoever the check lets in.
    Checked(Arc<dyn LoginCheck>),
}

impl Logins {
    fn check(&self, user: &str, client_id: &str, password: &[u8]) -> Result<(), String> {
        match self {
            Logins::Users(users) => match users.get(user) {
                Some(expected) if expected.as_bytes() == password => Ok(()),
                Some(_) => Err("wrong password".to_owned()),
                None => Err("unknown user".to_owned()),
            },
            Logins::Checked(check) => check.check(user, client_id, password),
        }
    }
}

/// Lets in only the clients [`Logins`] lets in, with a client id and a will of their own.
struct CheckLogin {
    logins: Logins,
    stats: Arc<BrokerStats>,
}

// rmqtt's trait elides `Parameter`'s lifetime; naming it here would not match the trait.
#[allow(elided_lifetimes_in_paths)]
#[async_trait]
impl Handler for CheckLogin {
    async fn hook(&self, param: &Parameter, acc: Option<HookResult>) -> ReturnType {
        let Parameter::ClientAuthenticate(connect) = param else {
            return (true, acc);
        };
        let client_id = &connect.id().client_id[..];
        let checked = match connect.username().zip(connect.password()) {
            None => Err("no username and password".to_owned()),
            Some((user, password)) => self
                .logins
                .check(&user[..], client_id, &password[..])
                .map(|()| &user[..]),
        };
        let user = match checked {
            Ok(user) => user,
            Err(reason) => {
                self.stats.count_refused_login();
                tracing::info!(
                    client = %client_id,
                    user = ?connect.username().map(|u| u.to_string()),
                    %reason,
                    "embedded broker refused a login"
                );
                return (
                    false,
                    Some(HookResult::AuthResult(AuthResult::BadUsernameOrPassword)),
                );
            }
        };
        // rmqtt publishes a will without its publish ACL check: the will's topic is checked
        // here, once, against the same rules.
        let bad_will = connect
            .last_will()
            .map(|w| match w {
                LastWill::V3(w) => &w.topic[..],
                LastWill::V5(w) => &w.topic[..],
            })
            .filter(|topic| !acl::allowed(user, Access::Publish, topic));
        if acl::client_id_allowed(user, client_id) && bad_will.is_none() {
            return (
                false,
                Some(HookResult::AuthResult(AuthResult::Allow(false, None))),
            );
        }
        self.stats.count_refused_login();
        tracing::warn!(
            client = %client_id,
            user,
            will_topic = ?bad_will,
            "embedded broker refused a login: the client id or the will's topic belongs to another identity (see ocm_edge_mqtt::acl)"
        );
        (
            false,
            Some(HookResult::AuthResult(AuthResult::NotAuthorized)),
        )
    }
}
