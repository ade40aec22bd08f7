//! Drops the live sessions of clusters whose certificate the hub revoked, on an external
//! broker's certificate listener (`ocm-edge hub --broker-mtls URL`).
//!
//! A broker such as Mosquitto reads the revocation list when reloaded and checks it at each new
//! handshake only: a connection made before stays. The hub closes it by session takeover
//! ([`ocm_edge_mqtt::takeover`]): it logs in as the cluster with a certificate of its own
//! cluster CA, made for this login and kept in memory, and leaves; on a listener that takes the
//! certificate's CN as the client id (Mosquitto's `use_username_as_clientid`, as shipped) that
//! closes every connection of the cluster, whatever client id it chose. It must happen after the
//! broker read the list, or the cluster logs in again at once, so before it the hub shakes hands
//! (TLS only, no login: no session is touched) with a certificate carrying the *revoked serial*:
//! while the broker takes that, it has not read the list (the hub says so, with how to reload
//! it, and tries again later); once the broker refuses it as revoked, the hub takes the
//! session's place with a fresh serial, and the cluster's next login is refused. A certificate
//! that has ended is refused for its dates anyway: its session is taken over without waiting.
//! The serials whose sessions were dropped are kept in [`DONE_FILE`], so a restart does not
//! take a cluster's place again.
//!
//! [`Plan`] is the bookkeeping, with the time as an argument; [`spawn`] runs it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use ocm_edge_mqtt::takeover::{Outcome, connect_once, probe_certificate};
use ocm_edge_mqtt::{BrokerUrl, TlsFiles};
use tokio::sync::mpsc;

use crate::registration::cluster_ca::ClusterCa;

/// A revoked certificate whose cluster's session may still be up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    /// The cluster (the certificate's CN).
    pub cluster: String,
    /// Its serial number (hex).
    pub serial: String,
    /// Its end.
    pub not_after: DateTime<Utc>,
}

impl Revoked {
    /// The core's revoked certificates with their clusters
    /// ([`crate::core::HubCore::revoked_certificates`]).
    pub fn from_listed(
        listed: Vec<(
            String,
            crate::registration::certificates::RevokedCertificate,
        )>,
    ) -> Vec<Revoked> {
        listed
            .into_iter()
            .map(|(cluster, r)| Revoked {
                cluster,
                serial: r.serial,
                not_after: r.not_after,
            })
            .collect()
    }
}

/// What to do next for a revoked certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Shake hands with the revoked serial: refused as revoked means the broker read the list.
    Probe,
    /// Take the cluster's sessions' place.
    TakeOver,
}

/// What an attempt showed, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The broker still accepts the revoked certificate (it has not read the list); `tries`
    /// probes so far.
    StillAccepted {
        /// Probes that found it accepted.
        tries: u32,
    },
    /// The broker refuses the revoked certificate: its sessions are taken over next.
    ListRead,
    /// The cluster's sessions were taken over: done.
    Dropped,
    /// The attempt failed (broker unreachable, another refusal); tried again later.
    Failed {
        /// Failed attempts in a row.
        tries: u32,
    },
}

#[derive(Debug, Clone)]
struct Pending {
    cluster: String,
    not_after: DateTime<Utc>,
    action: Action,
    /// Attempts since the last step (the retry delay doubles with each).
    tries: u32,
    /// Probes that found the revoked certificate accepted.
    accepted: u32,
    /// Failed attempts in a row.
    failed: u32,
    due: DateTime<Utc>,
}

/// The revoked certificates whose sessions are still to be dropped.
#[derive(Debug, Clone)]
pub struct Plan {
    pending: BTreeMap<String, Pending>,
    done: BTreeSet<String>,
    max_delay: chrono::Duration,
}

impl Plan {
    /// A plan whose retries wait at most `max_delay` (1 s, doubling; at least 1 s), knowing the
    /// serials whose sessions were dropped already (`done`, e.g. before a restart).
    pub fn new(max_delay: Duration, done: BTreeSet<String>) -> Self {
        Plan {
            pending: BTreeMap::new(),
            done,
            max_delay: chrono::Duration::from_std(max_delay.max(Duration::from_secs(1)))
                .unwrap_or(chrono::Duration::seconds(30)),
        }
    }

    /// The serials whose sessions were dropped, among those still revoked.
    pub fn done(&self) -> &BTreeSet<String> {
        &self.done
    }

    /// Takes the hub's current revoked certificates (all those not ended): those neither
    /// pending nor done are due now. A done serial no longer in the list is forgotten; a
    /// pending one stays until its sessions were dropped (once ended, it leaves the list).
    pub fn add(&mut self, revoked: &[Revoked], now: DateTime<Utc>) {
        let listed: BTreeSet<&str> = revoked.iter().map(|r| r.serial.as_str()).collect();
        self.done.retain(|s| listed.contains(s.as_str()));
        for r in revoked {
            if self.done.contains(&r.serial) || self.pending.contains_key(&r.serial) {
                continue;
            }
            self.pending.insert(
                r.serial.clone(),
                Pending {
                    cluster: r.cluster.clone(),
                    not_after: r.not_after,
                    action: Action::Probe,
                    tries: 0,
                    accepted: 0,
                    failed: 0,
                    due: now,
                },
            );
        }
    }

    /// The next attempt due at `now`: (serial, cluster, what to do).
    pub fn next(&self, now: DateTime<Utc>) -> Option<(String, String, Action)> {
        self.pending
            .iter()
            .filter(|(_, p)| p.due <= now)
            .min_by_key(|(_, p)| p.due)
            .map(|(serial, p)| {
                // An ended certificate is refused for its dates: no list to wait for.
                let action = if now >= p.not_after {
                    Action::TakeOver
                } else {
                    p.action.clone()
                };
                (serial.clone(), p.cluster.clone(), action)
            })
    }

    /// When the next attempt is due, if any is pending.
    pub fn next_due(&self) -> Option<DateTime<Utc>> {
        self.pending.values().map(|p| p.due).min()
    }

    /// Whether nothing is pending.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty()
    }

    /// Records how `action` for `serial` went at `now`.
    pub fn record(
        &mut self,
        serial: &str,
        action: &Action,
        outcome: &Outcome,
        now: DateTime<Utc>,
    ) -> Verdict {
        let Some(p) = self.pending.get_mut(serial) else {
            return Verdict::Dropped;
        };
        let verdict = match (action, outcome) {
            (Action::TakeOver, Outcome::Accepted) => {
                self.pending.remove(serial);
                self.done.insert(serial.to_owned());
                return Verdict::Dropped;
            }
            (
                Action::Probe,
                Outcome::CertificateRefused(rustls::AlertDescription::CertificateRevoked),
            ) => {
                p.action = Action::TakeOver;
                p.tries = 0;
                p.failed = 0;
                p.due = now;
                return Verdict::ListRead;
            }
            (Action::Probe, Outcome::Accepted) => {
                p.tries += 1;
                p.accepted += 1;
                p.failed = 0;
                Verdict::StillAccepted { tries: p.accepted }
            }
            _ => {
                p.tries += 1;
                p.failed += 1;
                Verdict::Failed { tries: p.failed }
            }
        };
        let delay = chrono::Duration::seconds(1 << p.tries.clamp(1, 20).saturating_sub(1))
            .min(self.max_delay);
        p.due = now + delay;
        verdict
    }
}

/// Where the cluster sessions are: the broker's certificate listener and how to trust it.
#[derive(Debug, Clone)]
pub struct Listener {
    /// `mqtts://HOST:PORT` of the certificate listener.
    pub url: BrokerUrl,
    /// The broker's CA file or pin (its client certificate files are not used: each login
    /// presents a certificate made for it).
    pub tls: TlsFiles,
}

/// The file in the hub's data directory of the serials whose sessions were dropped.
pub const DONE_FILE: &str = "dropped-sessions";

/// How long each login may take.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a probe waits for the broker to refuse the certificate after the handshake.
const PROBE_WAIT: Duration = Duration::from_secs(2);
/// How long the certificates made for a login are valid.
const LOGIN_CERT_VALIDITY: chrono::Duration = chrono::Duration::minutes(10);

/// Starts the task that drops revoked clusters' sessions on `listener`; it takes the hub's
/// revoked certificates (all of them, each time they change) from the returned sender and
/// stops when the sender is dropped.
///
/// The serials whose sessions were dropped are kept in `done_file` (one per line, rewritten at
/// each drop), so a restarted hub does not take a cluster's place again: a cluster accepted
/// again since (or with another key) would lose its session at every restart.
pub fn spawn(
    listener: Listener,
    ca: Arc<ClusterCa>,
    max_delay: Duration,
    crl_file: String,
    done_file: PathBuf,
) -> mpsc::UnboundedSender<Vec<Revoked>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let done = read_done(&done_file);
    let plan = Plan::new(max_delay, done);
    tokio::spawn(run(listener, ca, plan, rx, crl_file, done_file));
    tx
}

/// The file of dropped serials; empty when missing or unreadable (the sessions are then
/// dropped again, which is safe).
fn read_done(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn write_done(path: &Path, done: &BTreeSet<String>) {
    let text: String = done.iter().map(|s| format!("{s}\n")).collect();
    if let Err(e) = crate::pki::write_file(path, &text, false) {
        tracing::warn!(file = %path.display(), error = %e, "cannot record the dropped sessions (a restarted hub drops them again)");
    }
}

async fn run(
    listener: Listener,
    ca: Arc<ClusterCa>,
    mut plan: Plan,
    mut rx: mpsc::UnboundedReceiver<Vec<Revoked>>,
    crl_file: String,
    done_file: PathBuf,
) {
    loop {
        let wait = plan
            .next_due()
            .map(|due| (due - Utc::now()).to_std().unwrap_or(Duration::ZERO));
        tokio::select! {
            list = rx.recv() => match list {
                Some(list) => plan.add(&list, Utc::now()),
                None => return,
            },
            () = async {
                match wait {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => std::future::pending().await,
                }
            } => {
                while let Some((serial, cluster, action)) = plan.next(Utc::now()) {
                    let outcome = attempt(&listener, &ca, &cluster, &serial, &action).await;
                    let verdict = plan.record(&serial, &action, &outcome, Utc::now());
                    report(&listener.url, &cluster, &serial, &outcome, &verdict, &crl_file);
                    if verdict == Verdict::Dropped {
                        write_done(&done_file, plan.done());
                    }
                }
            }
        }
    }
}

/// One login for `action`; [`Outcome::Failed`] when the certificate cannot even be made.
async fn attempt(
    listener: &Listener,
    ca: &ClusterCa,
    cluster: &str,
    serial: &str,
    action: &Action,
) -> Outcome {
    let failed = |reason: String| {
        Outcome::Failed(ocm_edge_mqtt::LinkError::Unreachable {
            url: listener.url.to_string(),
            reason,
        })
    };
    let serial = matches!(action, Action::Probe).then_some(serial);
    let (chain, key) = match ca.issue_ephemeral(cluster, serial, LOGIN_CERT_VALIDITY, Utc::now()) {
        Ok(identity) => identity,
        Err(e) => return failed(format!("cannot make a login certificate: {e}")),
    };
    if matches!(action, Action::Probe) {
        // A handshake only: no login, so no session of the cluster is touched (one accepted
        // again with another key works on meanwhile).
        return probe_certificate(
            &listener.url,
            &listener.tls,
            chain,
            key,
            LOGIN_TIMEOUT,
            PROBE_WAIT,
        )
        .await
        .unwrap_or_else(|e| failed(e.to_string()));
    }
    // The CN where the listener makes it the client id (every session of the cluster, whatever
    // id it chose), and the agent's and a maestro-style client's own where it does not. Done
    // when one was let in (a broker may refuse ids it ties to identities).
    let ids = [
        cluster.to_owned(),
        ocm_edge_mqtt::acl::agent_client_id(cluster),
        format!("{cluster}-client"),
    ];
    let mut outcome = None;
    for id in ids {
        let login = connect_once(
            &listener.url,
            &listener.tls,
            chain.clone(),
            key.clone_key(),
            &id,
            LOGIN_TIMEOUT,
        )
        .await;
        match login {
            Ok(Outcome::Accepted) => outcome = Some(Outcome::Accepted),
            Ok(other) if outcome != Some(Outcome::Accepted) => outcome = Some(other),
            Ok(_) => {}
            Err(e) => return failed(e.to_string()),
        }
    }
    outcome.unwrap_or(Outcome::Accepted)
}

fn report(
    url: &BrokerUrl,
    cluster: &str,
    serial: &str,
    outcome: &Outcome,
    verdict: &Verdict,
    crl_file: &str,
) {
    match verdict {
        Verdict::Dropped => tracing::info!(
            %cluster, %serial, broker = %url,
            "took the place of the revoked cluster's sessions on the broker's certificate listener (all of them where the listener makes the certificate's CN the client id, as broker-config/mosquitto/ does); the broker refuses its next login"
        ),
        Verdict::ListRead => tracing::debug!(
            %cluster, %serial, broker = %url,
            "the broker refuses the revoked certificate; taking over its sessions"
        ),
        // Said at the first probe and then every ~10 minutes at 30-second retries.
        Verdict::StillAccepted { tries } if *tries == 1 || tries % 20 == 0 => tracing::warn!(
            %cluster, %serial, broker = %url, file = %crl_file,
            "the broker still accepts the revoked certificate of this cluster: it has not read the revocation list; reload it (Mosquitto: kill -HUP its process) so the cluster is refused and its live session dropped"
        ),
        Verdict::StillAccepted { .. } => {}
        Verdict::Failed { tries } if *tries == 1 || tries % 20 == 0 => tracing::warn!(
            %cluster, %serial, broker = %url, outcome = ?outcome,
            "cannot check or drop the revoked cluster's session on the broker's certificate listener (is --broker-mtls that listener, which trusts the hub's cluster CA: 8884 in broker-config/mosquitto/?); trying again"
        ),
        Verdict::Failed { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revoked(cluster: &str, serial: &str, now: DateTime<Utc>) -> Revoked {
        Revoked {
            cluster: cluster.into(),
            serial: serial.into(),
            not_after: now + chrono::Duration::days(10),
        }
    }

    const REVOKED: Outcome =
        Outcome::CertificateRefused(rustls::AlertDescription::CertificateRevoked);

    #[test]
    fn a_revoked_certificate_is_probed_until_the_broker_refuses_it_then_its_sessions_are_taken_over()
     {
        let now = Utc::now();
        let mut plan = Plan::new(Duration::from_secs(30), BTreeSet::new());
        plan.add(&[revoked("edge-1", "aa", now)], now);
        assert_eq!(
            plan.next(now),
            Some(("aa".into(), "edge-1".into(), Action::Probe))
        );
        // Not read yet: later, waiting longer each time up to the maximum.
        let mut at = now;
        let mut waits = Vec::new();
        for tries in 1..=7 {
            let v = plan.record("aa", &Action::Probe, &Outcome::Accepted, at);
            assert_eq!(v, Verdict::StillAccepted { tries });
            assert_eq!(plan.next(at), None, "nothing due right after a probe");
            let due = plan.next_due().unwrap();
            waits.push((due - at).num_seconds());
            at = due;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        // Read: the takeover is due at once, and done once it succeeded.
        assert_eq!(
            plan.record("aa", &Action::Probe, &REVOKED, at),
            Verdict::ListRead
        );
        assert_eq!(
            plan.next(at),
            Some(("aa".into(), "edge-1".into(), Action::TakeOver))
        );
        assert_eq!(
            plan.record("aa", &Action::TakeOver, &Outcome::Accepted, at),
            Verdict::Dropped
        );
        assert!(plan.is_idle());
        // The hub sends its whole list again at the next change: a done one is not redone.
        plan.add(&[revoked("edge-1", "aa", now)], at);
        assert!(plan.is_idle());
    }

    #[test]
    fn sessions_dropped_before_a_restart_are_not_dropped_again_and_a_serial_no_longer_listed_is_forgotten()
     {
        let now = Utc::now();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DONE_FILE);
        let mut plan = Plan::new(Duration::from_secs(30), read_done(&file));
        plan.add(
            &[revoked("edge-1", "aa", now), revoked("edge-2", "bb", now)],
            now,
        );
        plan.record("aa", &Action::Probe, &REVOKED, now);
        plan.record("aa", &Action::TakeOver, &Outcome::Accepted, now);
        write_done(&file, plan.done());
        // Restarted: the hub sends its whole list; only what was not dropped is due.
        let mut again = Plan::new(Duration::from_secs(30), read_done(&file));
        again.add(
            &[revoked("edge-1", "aa", now), revoked("edge-2", "bb", now)],
            now,
        );
        assert_eq!(
            again.next(now),
            Some(("bb".into(), "edge-2".into(), Action::Probe))
        );
        again.record("bb", &Action::TakeOver, &Outcome::Accepted, now);
        assert!(again.is_idle());
        // "aa" ended (it left the hub's list): forgotten.
        again.add(&[revoked("edge-2", "bb", now)], now);
        assert_eq!(again.done().iter().collect::<Vec<_>>(), ["bb"]);
        // A zero maximum still waits a second between tries.
        let mut quick = Plan::new(Duration::ZERO, BTreeSet::new());
        quick.add(&[revoked("edge-3", "cc", now)], now);
        quick.record("cc", &Action::Probe, &Outcome::Accepted, now);
        assert_eq!(quick.next_due(), Some(now + chrono::Duration::seconds(1)));
    }

    #[test]
    fn a_failed_takeover_is_tried_again_and_another_refusal_is_no_proof_the_list_was_read() {
        let now = Utc::now();
        let mut plan = Plan::new(Duration::from_secs(30), BTreeSet::new());
        plan.add(&[revoked("edge-1", "aa", now)], now);
        let unknown_ca = Outcome::CertificateRefused(rustls::AlertDescription::UnknownCA);
        assert_eq!(
            plan.record("aa", &Action::Probe, &unknown_ca, now),
            Verdict::Failed { tries: 1 }
        );
        let at = plan.next_due().unwrap();
        assert_eq!(
            plan.next(at),
            Some(("aa".into(), "edge-1".into(), Action::Probe))
        );
        plan.record("aa", &Action::Probe, &REVOKED, at);
        let refused = Outcome::Failed(ocm_edge_mqtt::LinkError::Refused { url: "x".into() });
        assert_eq!(
            plan.record("aa", &Action::TakeOver, &refused, at),
            Verdict::Failed { tries: 1 }
        );
        let again = plan.next_due().unwrap();
        assert_eq!(
            plan.next(again),
            Some(("aa".into(), "edge-1".into(), Action::TakeOver))
        );
    }

    #[test]
    fn an_ended_certificates_sessions_are_taken_over_without_a_probe_and_each_serial_on_its_own() {
        let now = Utc::now();
        let mut plan = Plan::new(Duration::from_secs(30), BTreeSet::new());
        let mut ended = revoked("edge-1", "aa", now);
        ended.not_after = now - chrono::Duration::seconds(1);
        plan.add(&[ended, revoked("edge-2", "bb", now)], now);
        let first = plan.next(now).unwrap();
        assert_eq!(first, ("aa".into(), "edge-1".into(), Action::TakeOver));
        plan.record("aa", &first.2, &Outcome::Accepted, now);
        assert_eq!(
            plan.next(now),
            Some(("bb".into(), "edge-2".into(), Action::Probe))
        );
    }
}
