//! [`start_hub`]: the store first (a hub that cannot open it leaves nothing behind), the hub's CA
//! and signing key, the first admin's credential at the first start, the broker (embedded with
//! TLS and logins, or external), the cluster CA and its revocation list, the MQTT sessions and
//! their intake tasks, and the hub task.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use chrono::Utc;
use ocm_edge_mqtt::acl::{DASHBOARD_USER, HUB_USER};
#[cfg(feature = "embedded-broker")]
use ocm_edge_mqtt::broker::{BrokerLogin, EmbeddedOptions, start_embedded_with};
use ocm_edge_mqtt::metrics_endpoint::Render;
use ocm_edge_mqtt::{BrokerUrl, Credentials, MetricsEndpoint, Session, SessionConfig, TlsFiles};
use ocm_edge_schemas::admin::Role;
use ocm_edge_schemas::wire::topic;
use tokio::sync::{mpsc, watch};

use super::commit::HubLoop;
use super::forgotten_clusters;
use super::intake::Intake;
use super::replies::Answered;
use super::{EMBEDDED_KEEPALIVE, HUB_INFLIGHT, HUB_QUEUE, HubError, HubHandle, MAX_INTAKES};
use crate::admin::auth::Authenticator;
use crate::admin::users::{ADMIN_CREDENTIALS, USER_VALIDITY};
use crate::availability::AvailabilityConfig;
use crate::config::{AdminAuth, BrokerConfig, EmbeddedSecurity, HubConfig};
use crate::core::{CoreConfig, HubCore};
use crate::metrics::HubMetrics;
use crate::pki::signing::EventSigner;
use crate::pki::{HubPki, default_serving_names};
use crate::registration::certificates::{CertificatePolicy, RevokedCertificate};
use crate::registration::cluster_ca::ClusterCa;
use crate::registration::join_token::JoinTokens;
use crate::registration::logins::{HubLogins, Standings, dashboard_password, random_password};
use crate::store::Store;
use crate::{dashboard, registration};

/// Starts a hub: the embedded broker (unless external), the store, the MQTT client and the hub task.
///
/// # Errors
/// [`HubError`] for a bad source id or broker URL, a broker that does not start, or a store that
/// cannot be opened (e.g. another hub holds it).
pub async fn start_hub(cfg: HubConfig) -> Result<HubHandle, HubError> {
    if !topic::is_valid_name(&cfg.source_id) {
        return Err(HubError::Config(format!(
            "source id {:?} must match [a-z0-9-]+",
            cfg.source_id
        )));
    }
    // The hub's first start on this data directory creates the store.
    let first_start = !cfg.data_dir.join(crate::store::DB_FILE).exists();
    // The store first: a hub that cannot open it must not leave a broker behind.
    let store = Store::open(&cfg.data_dir)?;
    let loaded = store.load()?;
    let mut broker_tls = cfg.broker_tls.clone();
    let mut ca = None;
    // The CA signs the broker's certificate, admin credentials and the hub's signing key,
    // whatever the broker mode.
    let pki_dir = cfg.data_dir.join("pki");
    if let Some(from) = &cfg.pki_from {
        let copied = crate::pki::seed::seed(&pki_dir, from)?;
        if !copied.is_empty() {
            tracing::info!(from = %from.display(), files = ?copied, "took the hub's keys given with --pki-from");
        }
    }
    let pki = HubPki::load_or_create(&pki_dir, Utc::now())?;
    let signer = Arc::new(EventSigner::load_or_create(&pki, Utc::now())?);
    let admin_credentials = Some(cfg.data_dir.join(ADMIN_CREDENTIALS))
        .filter(|_| cfg.admin_auth == AdminAuth::Credentials);
    let authenticator = match cfg.admin_auth {
        AdminAuth::Credentials => Some(admin_authenticator(
            &pki,
            &cfg.data_dir,
            first_start,
            Utc::now(),
        )?),
        AdminAuth::InsecureOpen => {
            tracing::warn!(
                "INSECURE: the admin API takes unsigned requests (--insecure-open-admin): \
                 anyone who can publish on the broker's admin topic can accept clusters and \
                 run anything on every cluster"
            );
            None
        }
    };
    let keys = Standings::of(&loaded.clusters);
    // The hub's own sessions on its embedded broker with logins.
    let mut own_login = None;
    let mut with_logins = false;
    let mut dashboard_password_file = None;
    let (broker_url, broker) = match &cfg.broker {
        #[cfg(not(feature = "embedded-broker"))]
        BrokerConfig::Embedded { .. } => {
            return Err(HubError::Config(
                "this build of the hub has no embedded broker (built without the \
                 `embedded-broker` feature): give the URL of an external broker (--broker URL)"
                    .into(),
            ));
        }
        #[cfg(feature = "embedded-broker")]
        BrokerConfig::Embedded { listen } => {
            let listen = *listen;
            let options = match &cfg.embedded_security {
                EmbeddedSecurity::Tls { extra_names } => {
                    let now = Utc::now();
                    let tls = pki.issue_serving(&serving_names(listen, extra_names), now)?;
                    // The hub's own sessions trust its CA, as agents do by its pin.
                    broker_tls = TlsFiles {
                        ca_file: Some(pki.ca_file()),
                        ..TlsFiles::default()
                    };
                    ca = Some((pki.pin(), pki.ca_file()));
                    let hub_password = random_password();
                    let (dashboard_file, dashboard_password) = dashboard_password(&cfg.data_dir)?;
                    let tokens = Arc::new(JoinTokens::load_or_create(&cfg.data_dir)?);
                    let check = Arc::new(HubLogins::new(
                        hub_password.clone(),
                        Some(dashboard_password),
                        authenticator.clone(),
                        keys.clone(),
                        tokens,
                    ));
                    with_logins = true;
                    own_login = Some(Credentials {
                        username: HUB_USER.to_owned(),
                        password: hub_password,
                    });
                    tracing::info!(
                        user = DASHBOARD_USER,
                        password_file = %dashboard_file.display(),
                        "dashboards log in to the embedded broker as this user, with the password in this file"
                    );
                    dashboard_password_file = Some(dashboard_file);
                    EmbeddedOptions {
                        tls: Some(tls),
                        login: BrokerLogin::Checked(check),
                        login_recheck: Some(cfg.login_recheck),
                    }
                }
                EmbeddedSecurity::InsecurePlaintext => {
                    tracing::warn!(
                        %listen,
                        "INSECURE: the embedded broker takes plaintext, anonymous connections \
                         (--insecure-plaintext): anyone who reaches this port can read every \
                         cluster's works and run anything on every cluster"
                    );
                    EmbeddedOptions::default()
                }
            };
            let broker = tokio::task::spawn_blocking(move || start_embedded_with(listen, options))
                .await
                .map_err(|e| HubError::Task(e.to_string()))??;
            (broker.url(), Some(broker))
        }
        BrokerConfig::External { url } => (BrokerUrl::parse(url)?, None),
    };
    tracing::info!(
        clusters = loaded.clusters.len(),
        works = loaded.works.len(),
        path = %store.path().display(),
        "hub state loaded"
    );

    let mut core = HubCore::restore(
        CoreConfig {
            source_id: cfg.source_id.clone(),
            availability: AvailabilityConfig::new(cfg.lease_grace_multiplier)
                .map_err(|e| HubError::Config(e.to_string()))?,
            status_resync_batch: cfg.status_resync_batch.clamp(1, 1000),
        },
        loaded.clusters,
        loaded.works,
        loaded.counters,
        loaded.spec_clock,
    );
    core.restore_objects(loaded.objects);
    core.restore_removed_revoked(loaded.removed_revoked);

    // A removal whose last work the hub forgot before it stopped: finished now.
    let finished = core.unfinished_removals(Utc::now());
    if !finished.records.is_empty() {
        store.write(&finished.records)?;
        core.apply(&finished.records);
        keys.forget(forgotten_clusters(&finished.records));
    }
    // The add-on identities bound before the hub stopped log in again at once (those of the
    // removals just finished are gone with them); so do the controllers of its add-ons.
    keys.update_addons(core.cluster_addons().map(super::addon_binding));
    keys.set_addons(core.addons().map(|a| a.metadata.name.clone()));
    core.set_grace_start(Utc::now());
    // Each accepted cluster's client certificate, for brokers that take certificates as
    // identities; the revocation list written again at every start (it must never lapse).
    let cluster_ca = Arc::new(ClusterCa::load_or_create(&cfg.data_dir, Utc::now())?);
    core.set_certificate_policy(CertificatePolicy {
        issuer: cluster_ca.clone(),
        validity: cfg.cluster_cert_validity,
        grace: cfg.cluster_cert_grace,
    });
    let listed = core.revoked_certificates(Utc::now());
    let written_crl: Vec<RevokedCertificate> = listed.iter().map(|(_, r)| r.clone()).collect();
    cluster_ca.write_crl(&written_crl, Utc::now())?;
    let evictor = match (&cfg.broker_mtls, &cfg.broker) {
        (None, _) => None,
        (Some(_), BrokerConfig::Embedded { .. }) => {
            return Err(HubError::Config(
                "a broker certificate listener (--broker-mtls) is for an external broker (--broker): \
                 the embedded broker drops a denied cluster's sessions itself"
                    .into(),
            ));
        }
        (Some(url), BrokerConfig::External { .. }) if !url.is_tls() => {
            return Err(HubError::Config(format!(
                "the broker's certificate listener {url} (--broker-mtls) must be mqtts://: \
                 clusters log in there with TLS client certificates"
            )));
        }
        (Some(url), BrokerConfig::External { .. }) => {
            let listener = registration::evict::Listener {
                url: url.clone(),
                tls: cfg.broker_tls.clone(),
            };
            let tx = registration::evict::spawn(
                listener,
                cluster_ca.clone(),
                cfg.broker_mtls_recheck,
                cluster_ca.crl_file().display().to_string(),
                cfg.data_dir.join(registration::evict::DONE_FILE),
            );
            let _ = tx.send(registration::evict::Revoked::from_listed(listed));
            Some(tx)
        }
    };
    let core_spec_clock = core.spec_clock();
    let admin_topic =
        topic::admin_requests(&cfg.source_id).map_err(|e| HubError::Config(e.to_string()))?;
    if !(1..=MAX_INTAKES).contains(&cfg.intakes) {
        return Err(HubError::Config(format!(
            "intakes must be 1 to {MAX_INTAKES} (MQTT sessions receiving agent events), not {}",
            cfg.intakes
        )));
    }
    // One intake subscribes the plain filter; several share it (MQTT 5 shared subscription).
    let share_group = format!("{}-hub", cfg.source_id);
    let agent_events = topic::hub_agent_events_subscription(
        &cfg.source_id,
        (cfg.intakes > 1).then_some(share_group.as_str()),
    )
    .map_err(|e| HubError::Config(e.to_string()))?;
    let mut session_cfg = SessionConfig::new(broker_url.clone(), cfg.mqtt_client_id());
    session_cfg.keepalive = if broker.is_some() {
        cfg.keepalive.max(EMBEDDED_KEEPALIVE)
    } else {
        cfg.keepalive
    };
    // What the embedded broker accepts (works of 500 KiB, admin payloads of 2 MiB, headers); an
    // external broker may lower it in its CONNACK.
    session_cfg.max_packet_bytes = ocm_edge_mqtt::broker::MAX_PACKET_BYTES as u32;
    // A write to a whole fleet publishes one spec per cluster in one go: a deeper window than an
    // agent's (brokers lower it to their Receive Maximum in the CONNACK; the embedded broker's is
    // 500).
    session_cfg.inflight = HUB_INFLIGHT;
    session_cfg.queue_capacity = HUB_QUEUE;
    session_cfg.credentials = match own_login {
        Some(login) => Some(login),
        None => cfg.broker_credentials().map_err(HubError::Config)?,
    };
    session_cfg.tls = broker_tls;
    let mut intake_cfg = session_cfg.clone();
    intake_cfg.subscriptions = vec![agent_events.clone()];
    session_cfg.subscriptions = vec![
        agent_events,
        "sources/+/agentbroadcast".to_owned(),
        admin_topic.clone(),
        // Add-on agents' AddOnPlacementScores, each on its own identity's topic.
        ocm_edge_schemas::wire::addon_identity::SCORES_FILTER.to_owned(),
    ];
    let (inbound_tx, inbound_rx) = mpsc::unbounded_channel();
    let metrics = HubMetrics::new(&cfg.source_id);
    // Bound before the sessions and the hub task start: a taken address fails the start.
    let metrics_endpoint = match cfg.metrics_listen {
        Some(listen) => Some(serve_metrics(
            listen,
            metrics.clone(),
            inbound_tx.clone(),
            broker.clone(),
        )?),
        None => None,
    };
    let (session, events) = Session::start(session_cfg.clone(), None)?;
    let intake = Intake {
        index: 0,
        source_id: cfg.source_id.clone(),
        admin_topic,
        to_hub: inbound_tx,
        keys: keys.clone(),
        client_id: session_cfg.client_id.clone(),
        metrics: metrics.clone(),
    };
    let mut intakes = Vec::with_capacity(cfg.intakes - 1);
    for index in 1..cfg.intakes {
        let mut c = intake_cfg.clone();
        c.client_id = format!("{}-intake-{index}", cfg.mqtt_client_id());
        let client_id = c.client_id.clone();
        let (s, events) = Session::start(c, None)?;
        tokio::spawn(
            Intake {
                index,
                client_id,
                ..intake.clone()
            }
            .run(events),
        );
        intakes.push(s);
    }
    tokio::spawn(intake.run(events));
    let (stop, stopped) = watch::channel(false);
    let (subscribed, subscriptions) = watch::channel(0u64);
    let hub = HubLoop {
        dashboard: cfg.dashboard,
        dashboards: dashboard::Dashboards::default(),
        subscribed,
        core,
        store,
        publisher: session.publisher(),
        inbound: inbound_rx,
        intakes_subscribed: vec![false; cfg.intakes],
        unflushed_since: None,
        flush_every: cfg.report_flush_every,
        stored_spec_clock: core_spec_clock,
        transfers: HashMap::new(),
        authenticator,
        answered: Answered::default(),
        signer,
        keys,
        login_broker: broker.clone().filter(|_| with_logins),
        cluster_ca,
        written_crl,
        crl_written_at: Utc::now(),
        evictor,
        external_broker: matches!(cfg.broker, BrokerConfig::External { .. }),
        stopped,
        metrics,
    };
    let task = tokio::spawn(hub.run());
    let admin_credentials = admin_credentials.filter(|p| p.is_file());
    Ok(HubHandle {
        broker_url,
        broker,
        hub_ca_pin: pki.pin(),
        ca,
        admin_credentials,
        dashboard_password_file,
        stop,
        subscriptions,
        task,
        session,
        intakes,
        metrics: metrics_endpoint,
    })
}

/// How long a scrape waits for the hub task's count of the fleet (it answers between two
/// batches); after that the scrape goes without the fleet's figures.
const SCRAPE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The metrics endpoint on `listen`: the instruments, the fleet as the hub task counts it, and
/// the embedded broker's figures.
fn serve_metrics(
    listen: SocketAddr,
    metrics: Arc<HubMetrics>,
    to_hub: mpsc::UnboundedSender<super::intake::Inbound>,
    broker: Option<super::EmbeddedBroker>,
) -> Result<MetricsEndpoint, HubError> {
    let render: Render = Arc::new(move || {
        let metrics = metrics.clone();
        let to_hub = to_hub.clone();
        let broker = broker.clone();
        Box::pin(async move {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let fleet = match to_hub.send(super::intake::Inbound::Scrape(reply)) {
                Ok(()) => match tokio::time::timeout(SCRAPE_WAIT, answer).await {
                    Ok(Ok(fleet)) => Some(fleet),
                    Ok(Err(_)) => None,
                    Err(_) => {
                        tracing::warn!(
                            "the hub task did not count the fleet within {SCRAPE_WAIT:?}; this scrape has no fleet figures"
                        );
                        None
                    }
                },
                Err(_) => None,
            };
            #[cfg(feature = "embedded-broker")]
            let figures = broker.as_ref().map(crate::metrics::BrokerFigures::of);
            #[cfg(not(feature = "embedded-broker"))]
            let figures = broker.map(|b| match b {});
            metrics.render(fleet.as_ref(), figures)
        })
    });
    let endpoint = MetricsEndpoint::start(listen, render)?;
    if listen.ip().is_loopback() {
        tracing::info!(url = %endpoint.url(), "serving Prometheus metrics");
    } else {
        tracing::warn!(
            url = %endpoint.url(),
            "serving Prometheus metrics WITHOUT authentication on a non-loopback address: \
             anyone who reaches it reads the fleet's size and health and its placements' and rollouts' names (--metrics-listen)"
        );
    }
    Ok(endpoint)
}

/// The names the embedded broker's certificate is valid for: loopback, the host name, the listen
/// address when it is a specific one, and `extra` (`--tls-san`).
fn serving_names(listen: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut names = default_serving_names();
    let ip = listen.ip();
    let specific = (!ip.is_unspecified() && !ip.is_loopback()).then(|| ip.to_string());
    for name in specific.into_iter().chain(extra.iter().cloned()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The admin API's authenticator: the hub's CA (created when missing) and, at the hub's first
/// start on its data directory, the first admin credential (`DATA_DIR/admin-credentials.pem`,
/// mode 0600). Later starts never write it again: an admin who removed it meant to.
fn admin_authenticator(
    pki: &HubPki,
    data_dir: &Path,
    first_start: bool,
    now: chrono::DateTime<Utc>,
) -> Result<Authenticator, HubError> {
    let path = data_dir.join(ADMIN_CREDENTIALS);
    if first_start && !path.exists() {
        let (pem, record) =
            crate::admin::users::issue(pki, "admin", Role::Admin, USER_VALIDITY, now)?;
        crate::pki::write_file(&path, &pem, true)?;
        crate::admin::users::record_issued(data_dir, &record)?;
        tracing::info!(path = %path.display(), "wrote the first admin credential (user admin, role admin): keep it safe");
    } else if !path.exists() {
        tracing::info!(
            "no {ADMIN_CREDENTIALS} in the data directory: admin requests need a credential made with `ocm-edge user create NAME --role admin`"
        );
    }
    Ok(Authenticator::new(pki.ca_der()?).with_revocations(data_dir))
}
