//! `ocm-edge-agent unjoin`: the edge side of a cluster's removal (OCM's klusterlet cleanup),
//! run with the agent stopped, with its flags.
//!
//! 1. Removes what every work applied, each per its `deleteOption` (an orphaned resource stays),
//!    unless `--keep-resources`. A resource that is not gone by the timeout stops the unjoin
//!    there: nothing else is done, so running it again carries on.
//! 2. Tells the hub: a `managedclusters.spec.delete_request` signed with the agent's key, over
//!    the broker, sent again every few seconds until the hub shows it forgot the cluster (a hub
//!    that is down takes it once it is back). A broker or hub that cannot be reached by the
//!    timeout stops the unjoin here too: the store and key are kept so that a second run can
//!    tell the hub, and the error says how to remove the cluster from the hub's side instead.
//! 3. Wipes the agent's store, key and certificate: a later start is a new agent, which must
//!    join again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_edge_mqtt::{Ack, LinkError, Session, SessionEvent};
use ocm_edge_schemas::api::cluster::HUB_ACCEPTED_MANAGED_CLUSTER;
use ocm_edge_schemas::api::meta::is_condition_true;
use ocm_edge_schemas::wire::{encode, topic};

use crate::config::AgentConfig;
use crate::events::{AgentIdentity, Inbound, parse_inbound};
use crate::registration::key::AgentKey;
use crate::registration::trust::HubTrust;
use crate::session::{AgentError, applier_for, login_config};
use crate::store::Store;
use crate::work::bundles::remove_object;
use crate::work::plan::{RemoveAction, plan_delete};

/// What an unjoin did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unjoined {
    /// Works the agent held.
    pub works: usize,
    /// Resources deleted from the cluster.
    pub deleted: usize,
    /// Resources left on the cluster (orphaned by their work's deleteOption, or
    /// `--keep-resources`).
    pub kept: usize,
    /// Files wiped from the data dir.
    pub wiped: Vec<PathBuf>,
}

/// Why an unjoin stopped. Each message says what was done and how to go on.
#[derive(Debug, thiserror::Error)]
pub enum UnjoinError {
    #[error(
        "cannot open the agent's store in {dir}: {reason} (stop the agent first: unjoin runs \
         in its place, with its flags)"
    )]
    Store { dir: String, reason: String },
    #[error(
        "{left} resource(s) are not removed yet ({first}: {why}); nothing else was done: run \
         `ocm-edge-agent unjoin` again, or add --keep-resources to leave them on the cluster"
    )]
    Resources {
        left: usize,
        first: String,
        why: String,
    },
    #[error(
        "what the works applied is removed, but the hub could not be told ({why}); the store \
         and key are kept: run `ocm-edge-agent unjoin` again once the broker is reachable, or \
         remove the cluster on the hub (`ocm-edge cluster remove {cluster} --force`) and \
         delete {dir}"
    )]
    HubNotTold {
        cluster: String,
        dir: String,
        why: String,
    },
    #[error("{0}")]
    Agent(#[from] AgentError),
    #[error("cannot wipe {path}: {source}")]
    Wipe {
        path: String,
        source: std::io::Error,
    },
}

/// Unjoins the cluster of `cfg` (see the module); `timeout` bounds the removal of resources
/// and the wait for the broker each.
///
/// # Errors
/// [`UnjoinError`], after which the data dir is as it was but for the removed resources.
pub async fn unjoin(
    cfg: &AgentConfig,
    keep_resources: bool,
    timeout: Duration,
) -> Result<Unjoined, UnjoinError> {
    cfg.validate().map_err(AgentError::from)?;
    ocm_edge_mqtt::install_crypto_provider();
    let mut done = Unjoined::default();
    {
        let store = Store::open(&cfg.data_dir).map_err(|e| UnjoinError::Store {
            dir: cfg.data_dir.display().to_string(),
            reason: e.to_string(),
        })?;
        let bundles = store.all_desired().map_err(AgentError::from)?;
        done.works = bundles.len();
        let mut removals: Vec<RemoveAction> = Vec::new();
        for bundle in &bundles {
            let inventory = store
                .inventory(&bundle.resource_id)
                .map_err(AgentError::from)?;
            removals.extend(plan_delete(&bundle.bundle, &inventory));
        }
        if keep_resources {
            done.kept = removals.len();
        } else {
            let (applier, _) = applier_for(cfg, &store).await?;
            done.kept = removals
                .iter()
                .filter(|r| matches!(r, RemoveAction::Orphan { .. }))
                .count();
            remove_all(&applier, &removals, timeout).await?;
            done.deleted = removals.len() - done.kept;
        }
        tell_hub(cfg, &store, keep_resources, timeout).await?;
        // The store closes here, before its file is removed.
    }
    for file in files(&cfg.data_dir) {
        match std::fs::remove_file(&file) {
            Ok(()) => done.wiped.push(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(UnjoinError::Wipe {
                    path: file.display().to_string(),
                    source,
                });
            }
        }
    }
    Ok(done)
}

/// The agent's own files in `data_dir`: the store, the key and the cluster's certificate.
fn files(data_dir: &Path) -> [PathBuf; 3] {
    [
        data_dir.join(crate::store::DB_FILE),
        AgentKey::file(data_dir),
        crate::registration::certificate::file(data_dir),
    ]
}

/// Carries out `removals` in order, trying those that fail again (a finalizer running, the API
/// server away) once a second until `timeout`.
async fn remove_all(
    applier: &crate::applier::AnyApplier,
    removals: &[RemoveAction],
    timeout: Duration,
) -> Result<(), UnjoinError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut left: Vec<&RemoveAction> = removals.iter().collect();
    loop {
        let mut failed = Vec::new();
        let mut first_error = None;
        for removal in left {
            match remove_object(applier, removal).await {
                Ok(()) => tracing::info!(resource = %removal.resource().key(), "removed"),
                Err(e) => {
                    first_error.get_or_insert_with(|| (removal.resource().key(), e.to_string()));
                    failed.push(removal);
                }
            }
        }
        let Some((first, why)) = first_error else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(UnjoinError::Resources {
                left: failed.len(),
                first,
                why,
            });
        }
        left = failed;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Publishes the signed unjoin, with a spec resync request after it, and waits until the hub
/// shows it forgot the cluster: its view of a cluster it does not know (the answer to the resync
/// of a forgotten cluster, or sent when it forgets one), or, on the hub's embedded broker, the
/// cluster's key refused at the next login. Both are sent again every few seconds until then: a
/// hub that is down, or a broker that keeps nothing for it, loses what came before.
async fn tell_hub(
    cfg: &AgentConfig,
    store: &Store,
    kept_resources: bool,
    timeout: Duration,
) -> Result<(), UnjoinError> {
    let not_told = |why: String| UnjoinError::HubNotTold {
        cluster: cfg.cluster_name.clone(),
        dir: cfg.data_dir.display().to_string(),
        why,
    };
    if !AgentKey::file(&cfg.data_dir).exists() {
        // Never started: the hub never heard of this agent's key.
        return Ok(());
    }
    let key = AgentKey::load_or_create(&cfg.data_dir).map_err(AgentError::from)?;
    let trust = HubTrust::new(
        cfg.trusted_hub_ca(),
        store.hub_signer().map_err(AgentError::from)?,
    );
    let url = cfg.broker_url().map_err(AgentError::from)?;
    let mut session_cfg = login_config(cfg, &key, url, cfg.tls.clone());
    session_cfg.report_acks = true;
    session_cfg.subscriptions =
        vec![topic::source_events(&cfg.source_id, &cfg.cluster_name).map_err(AgentError::from)?];
    let (session, mut events) = Session::connect(session_cfg, timeout)
        .await
        .map_err(|e| not_told(e.to_string()))?;
    let id = AgentIdentity {
        cluster: cfg.cluster_name.clone(),
        agent_id: cfg.agent_id(),
    };
    let agent_events =
        topic::agent_events(&cfg.source_id, &cfg.cluster_name).map_err(AgentError::from)?;
    let publisher = session.publisher();
    let send = || {
        let t = chrono::Utc::now();
        for event in [
            id.unjoin(kept_resources, t),
            id.spec_resync_request(vec![], None, t),
        ] {
            let Ok(mut msg) = event.and_then(|e| {
                encode(&e, agent_events.clone()).map_err(|e| {
                    ocm_edge_schemas::wire::works::WorkEventError::Build(e.to_string())
                })
            }) else {
                continue;
            };
            key.sign(&mut msg);
            if let Err(e) = publisher.try_publish(msg) {
                tracing::warn!(error = %e, "cannot send the unjoin; sent again soon");
            }
        }
    };
    send();
    let mut again = tokio::time::interval(Duration::from_secs(2));
    again.tick().await;
    let confirmed = tokio::time::timeout(timeout, async {
        loop {
            tokio::select! {
                _ = again.tick() => send(),
                event = events.recv() => match event {
                    Some(SessionEvent::Message(received)) => {
                        if forgotten_by(&trust, &received.message, &cfg.cluster_name) {
                            return Ok(());
                        }
                    }
                    Some(SessionEvent::Acked(Ack::Publish(Err(reason)))) => {
                        return Err(format!("the broker refused the unjoin: {reason}"));
                    }
                    // The hub's embedded broker takes a forgotten cluster's key no more.
                    Some(SessionEvent::Disconnected { why: LinkError::LoginRefused { .. } }) => {
                        return Ok(());
                    }
                    Some(_) => {}
                    None => return Err("the session stopped".to_owned()),
                },
            }
        }
    })
    .await;
    session.shutdown().await;
    match confirmed {
        Ok(Ok(())) => {
            tracing::info!("the hub forgot the cluster");
            Ok(())
        }
        Ok(Err(why)) => Err(not_told(why)),
        Err(_) => Err(not_told(format!(
            "the hub did not confirm within {} s (is it running? the broker took the unjoin)",
            timeout.as_secs()
        ))),
    }
}

/// Whether `msg` is the hub's signed view of `cluster` as a cluster it does not accept.
fn forgotten_by(
    trust: &HubTrust,
    msg: &ocm_edge_schemas::wire::MqttMessage,
    cluster: &str,
) -> bool {
    if let Err(e) = trust.check(msg, chrono::Utc::now()) {
        tracing::warn!(error = %e, "refused an event from the hub's side");
        return false;
    }
    match parse_inbound(msg, cluster) {
        Ok(Inbound::HubView(view)) => {
            !view.spec.hub_accepts_client
                && !is_condition_true(&view.status.conditions, HUB_ACCEPTED_MANAGED_CLUSTER)
        }
        _ => false,
    }
}
