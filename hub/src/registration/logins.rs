//! Who may log in to the hub's embedded broker, and as whom (`ocm_edge_mqtt::acl` then keeps each
//! identity to its own topics). No shared password leaves the hub:
//!
//! - the hub's own sessions: a random password made at every start, known only in this process;
//! - operators (the CLI), as [`OPERATOR_USER`]: a credential login proof made with their admin
//!   credential (any role; the hub still authorizes every admin request by role and scope). A
//!   scoped credential subscribes only to its own admin answers (`ocm-edge/S/admin/responses/`
//!   and its client id): the dashboards and other users' answers show what lies outside its scope;
//! - dashboards, as [`DASHBOARD_USER`]: the password in `DATA_DIR/dashboard-password` (0600,
//!   created at first start), read-only dashboard topics;
//! - an edge cluster, as its name: a login proof made with the agent's own key
//!   (`ocm_edge_schemas::wire::login`). An accepted cluster gets in only with the key bound at
//!   `cluster accept`. A cluster the hub has not accepted (pending, denied, or new) gets in with
//!   any key and a valid join token ([`crate::registration::join_token`]) as a cluster asking to join: it may publish its join request and read its own spec
//!   topic, where the hub sends nothing to a cluster it has not accepted. (That is how a
//!   reinstalled agent with a new key is re-admitted: `cluster deny`, its join request carries
//!   the new key, `cluster accept`.) A cluster added without a key (`ocm-edge cluster add`, for an
//!   agent that does not sign, e.g. OCM's) logs in with its broker password, an HMAC of its name
//!   with the join-token key (`ocm-edge cluster broker-config` writes it for the agent).
//!
//! Every SUBSCRIBE checks the session's login again ([`LoginCheck::still_valid`]). When a cluster
//! is denied the hub drops its session and what the broker queued for it; when one is accepted,
//! it drops the session unless its login proves the bound key; both before it publishes anything
//! of that change (`crate::process`, the hub task).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::Utc;
use ocm_edge_mqtt::acl::{DASHBOARD_USER, HUB_USER, OPERATOR_USER};
use ocm_edge_mqtt::broker::LoginCheck;
use ocm_edge_schemas::admin::ClusterState;
use ocm_edge_schemas::wire::addon_identity::{self, AddOnIdentity};
use ocm_edge_schemas::wire::login::{self, LoginProof};
use ocm_edge_schemas::wire::signature::{key_id, signed_bytes};
use ocm_edge_schemas::wire::topic;
use ring::signature::{ED25519, UnparsedPublicKey};

use crate::admin::auth::Authenticator;
use crate::core::ClusterRecord;
use crate::pki::PkiError;
use crate::registration::join_token::{JoinTokens, TokenError};

/// The dashboard identity's password, in the hub's data directory.
pub const DASHBOARD_PASSWORD_FILE: &str = "dashboard-password";

/// Where a cluster stands, as far as logging in and signing go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Accepted, with the agent key bound at accept (raw Ed25519 public key) or none.
    Accepted(Option<Vec<u8>>),
    /// Denied.
    Denied,
}

impl Standing {
    fn of(c: &ClusterRecord) -> Option<Standing> {
        match c.acceptance {
            ClusterState::Accepted => Some(Standing::Accepted(
                c.bound_agent_key().and_then(|k| BASE64.decode(k).ok()),
            )),
            ClusterState::Denied => Some(Standing::Denied),
            ClusterState::Pending => None,
        }
    }
}

/// Every cluster's [`Standing`], read by the intakes (signatures) and the broker (logins),
/// written by the hub task when it stores a cluster; and the add-on identities the hub bound
/// (identity to password SHA-256, [`ocm_edge_schemas::wire::addon_identity`]), written when it
/// stores a ManagedClusterAddOn.
#[derive(Debug, Clone, Default)]
pub struct Standings(
    Arc<RwLock<HashMap<String, Standing>>>,
    Arc<RwLock<HashMap<String, String>>>,
    /// The add-ons the hub holds (whose controllers may log in).
    Arc<RwLock<std::collections::HashSet<String>>>,
);

impl Standings {
    /// The standings of `clusters`.
    pub fn of(clusters: &[ClusterRecord]) -> Self {
        let standings = Standings::default();
        standings.update(clusters.iter());
        standings
    }

    /// Takes in the add-on identities of changed (`Some`) or forgotten (`None`) cluster
    /// add-ons, keyed by `(cluster, addon)`; returns the identities that lost their binding or
    /// changed it (whose sessions to drop).
    pub fn update_addons(
        &self,
        addons: impl IntoIterator<Item = ((String, String), Option<String>)>,
    ) -> Vec<String> {
        let mut revoked = Vec::new();
        let mut map = self.1.write().unwrap_or_else(PoisonError::into_inner);
        for ((cluster, addon), bound) in addons {
            let identity = addon_identity::identity(&addon, &cluster);
            let old = match bound {
                Some(hash) => map
                    .insert(identity.clone(), hash.clone())
                    .filter(|o| *o != hash),
                None => map.remove(&identity),
            };
            if old.is_some() {
                revoked.push(identity);
            }
        }
        revoked
    }

    /// The add-ons the hub holds, from scratch.
    pub fn set_addons(&self, addons: impl Iterator<Item = String>) {
        *self.2.write().unwrap_or_else(PoisonError::into_inner) = addons.collect();
    }

    /// Takes in add-ons stored (`true`) or deleted (`false`); returns the controller
    /// identities of the deleted ones (whose sessions to drop).
    pub fn update_addon_names(
        &self,
        changes: impl IntoIterator<Item = (String, bool)>,
    ) -> Vec<String> {
        let mut set = self.2.write().unwrap_or_else(PoisonError::into_inner);
        let mut gone = Vec::new();
        for (name, present) in changes {
            if present {
                set.insert(name);
            } else if set.remove(&name) {
                gone.push(addon_identity::controller_identity(&name));
            }
        }
        gone
    }

    fn addon_exists(&self, addon: &str) -> bool {
        self.2
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(addon)
    }

    /// Whether an add-on identity is bound (its add-on enabled and registered on its cluster).
    pub(crate) fn addon_bound(&self, identity: &str) -> bool {
        self.1
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(identity)
    }

    /// The password hash bound to an add-on identity.
    fn addon_binding(&self, identity: &str) -> Option<String> {
        self.1
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(identity)
            .cloned()
    }

    /// Takes in changed cluster records; returns each cluster whose standing changed, with
    /// its new standing (`None`: pending).
    pub fn update<'a>(
        &self,
        clusters: impl Iterator<Item = &'a ClusterRecord>,
    ) -> Vec<(String, Option<Standing>)> {
        let mut changed = Vec::new();
        let mut map = self.0.write().unwrap_or_else(PoisonError::into_inner);
        for c in clusters {
            let new = Standing::of(c);
            let old = match &new {
                Some(s) => map.insert(c.name.clone(), s.clone()),
                None => map.remove(&c.name),
            };
            if old != new {
                changed.push((c.name.clone(), new));
            }
        }
        changed
    }

    /// Drops removed clusters; returns those that had a standing (whose sessions to drop).
    pub fn forget<'a>(&self, clusters: impl Iterator<Item = &'a str>) -> Vec<String> {
        let mut clusters = clusters.peekable();
        if clusters.peek().is_none() {
            // Most batches forget nothing: no write lock for them (the intakes read this map).
            return vec![];
        }
        let mut map = self.0.write().unwrap_or_else(PoisonError::into_inner);
        clusters
            .filter(|c| map.remove(*c).is_some())
            .map(str::to_owned)
            .collect()
    }

    /// The key bound to an accepted cluster.
    pub(crate) fn bound(&self, cluster: &str) -> Option<Vec<u8>> {
        match self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
        {
            Some(Standing::Accepted(key)) => key.clone(),
            _ => None,
        }
    }

    fn standing(&self, cluster: &str) -> Option<Standing> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
            .cloned()
    }
}

/// The embedded broker's login check (see the module).
pub struct HubLogins {
    hub_password: String,
    dashboard_password: Option<String>,
    /// `None` with an open admin API (`--insecure-open-admin`): operators log in with any
    /// password, as they may send anything.
    operators: Option<Authenticator>,
    standings: Standings,
    /// Checks the join token of a cluster the hub has not accepted.
    tokens: Arc<JoinTokens>,
}

impl std::fmt::Debug for HubLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubLogins").finish_non_exhaustive()
    }
}

impl HubLogins {
    /// A check letting in the hub with `hub_password`, dashboards with `dashboard_password`,
    /// operators by a credential `operators` accepts (any password without one), and clusters by
    /// `standings` and `tokens`.
    pub fn new(
        hub_password: String,
        dashboard_password: Option<String>,
        operators: Option<Authenticator>,
        standings: Standings,
        tokens: Arc<JoinTokens>,
    ) -> Self {
        HubLogins {
            hub_password,
            dashboard_password,
            operators,
            standings,
            tokens,
        }
    }

    /// `log`: say so when a cluster asking to join gets in (not on re-checks).
    fn check_cluster(
        &self,
        cluster: &str,
        client_id: &str,
        password: &str,
        log: bool,
    ) -> Result<(), String> {
        // Cheap refusals first: a name that can be no cluster costs no signature check.
        ocm_edge_schemas::validate::validate_cluster_name(cluster)
            .map_err(|e| format!("{e} (a cluster logs in with its name as the username)"))?;
        if self.standings.standing(cluster) == Some(Standing::Accepted(None)) {
            // Added without an agent key: its broker password, nothing else.
            return if same_secret(password, &self.tokens.cluster_password(cluster)) {
                Ok(())
            } else {
                Err(format!(
                    "cluster {cluster:?} was added without an agent key and logs in with its broker password: `ocm-edge cluster broker-config {cluster}` on the hub's machine writes it into the agent's MQTT config"
                ))
            };
        }
        let (public_key, signature, token) = match login::parse(password) {
            Ok(LoginProof::AgentKey {
                public_key,
                signature,
                token,
            }) => (public_key, signature, token),
            Ok(LoginProof::Credential { .. }) => {
                return Err(format!(
                    "an admin credential logs in as {OPERATOR_USER}, not as cluster {cluster:?}"
                ));
            }
            Err(e) => {
                return Err(format!(
                    "{e}: agents log in with their own key (ocm-edge-agent does it by itself; check the agent's version)"
                ));
            }
        };
        let key = BASE64
            .decode(public_key)
            .map_err(|_| "the key in the login proof is not base64".to_owned())?;
        let signature = BASE64
            .decode(signature)
            .map_err(|_| "the signature in the login proof is not base64".to_owned())?;
        UnparsedPublicKey::new(&ED25519, &key)
            .verify(
                &signed_bytes(&login::agent_login_message(cluster, client_id)),
                &signature,
            )
            .map_err(|_| {
                format!(
                    "the login proof is not signed by key {} for this username and client id",
                    key_id(&key)
                )
            })?;
        match self.standings.standing(cluster) {
            // Handled above, before a key proof is looked for.
            Some(Standing::Accepted(None)) => {}
            Some(Standing::Accepted(Some(bound))) if bound != key => {
                return Err(format!(
                    "cluster {cluster:?} is accepted with agent key {}, and this login is made with key {} (another agent, or the agent's key file was replaced: if this is the cluster's new key, an admin runs `ocm-edge cluster deny {cluster}`, checks the key `ocm-edge cluster get {cluster}` shows once the agent has asked to join again, and runs `ocm-edge cluster accept {cluster}`)",
                    key_id(&bound),
                    key_id(&key)
                ));
            }
            Some(Standing::Accepted(Some(_))) => {}
            // New, pending or denied: let in with a join token as a cluster asking to join,
            // whose join request may carry a new key (how an admin re-keys a cluster: deny,
            // then accept its new key). The hub sends such a cluster nothing.
            Some(Standing::Denied) | None => {
                let checked = match token {
                    Some(t) => self.tokens.check(t, Utc::now()),
                    None => Err(TokenError::Missing),
                };
                let id =
                    checked.map_err(|e| format!("cluster {cluster:?} is not accepted: {e}"))?;
                if log {
                    tracing::info!(%cluster, key = %key_id(&key), token = %id, "a cluster asking to join logged in with a join token");
                }
            }
        }
        Ok(())
    }

    /// An add-on identity: its agent's password, whose hash the hub bound when its cluster's
    /// agent asked (the cluster accepted, the add-on installed there); its controller's, an
    /// HMAC of the add-on's name with the join-token key (`ocm-edge addon broker-config`).
    fn check_addon(&self, username: &str, password: &str) -> Result<(), String> {
        match addon_identity::parse_identity(username) {
            Some(AddOnIdentity::Agent { addon, cluster }) => {
                if !matches!(
                    self.standings.standing(cluster),
                    Some(Standing::Accepted(_))
                ) {
                    return Err(format!(
                        "add-on {addon:?} on cluster {cluster:?}: the cluster is not accepted"
                    ));
                }
                match self.standings.addon_binding(username) {
                    Some(bound)
                        if same_secret(&addon_identity::password_sha256(password), &bound) =>
                    {
                        Ok(())
                    }
                    Some(_) => Err(format!(
                        "wrong password for add-on {addon:?} on cluster {cluster:?}: use the one in its Secret {} (the edge agent writes it into the add-on's install namespace)",
                        addon_identity::secret_name(addon)
                    )),
                    None => Err(format!(
                        "add-on {addon:?} has no MQTT identity on cluster {cluster:?}: it is not enabled there, its template has no registration, or the cluster's agent has not asked for it yet"
                    )),
                }
            }
            Some(AddOnIdentity::Controller { addon }) => {
                if !self.standings.addon_exists(addon) {
                    return Err(format!(
                        "there is no add-on {addon:?}: its controller logs in only while the hub holds it"
                    ));
                }
                if same_secret(password, &self.tokens.addon_controller_password(addon)) {
                    Ok(())
                } else {
                    Err(format!(
                        "wrong password for the controller of add-on {addon:?}: `ocm-edge addon broker-config {addon}` on the hub's machine writes it"
                    ))
                }
            }
            None => Err(format!("{username:?} is no add-on identity")),
        }
    }

    fn check_operator(&self, client_id: &str, password: &str) -> Result<(), String> {
        let Some(operators) = &self.operators else {
            return Ok(());
        };
        match login::parse(password) {
            Ok(LoginProof::Credential {
                certificate,
                signature,
            }) => operators
                .authenticate_login(OPERATOR_USER, client_id, certificate, signature, Utc::now())
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Ok(LoginProof::AgentKey { .. }) => {
                Err("an agent key cannot log in as the operator".to_owned())
            }
            Err(e) => Err(format!(
                "{e}: the operator logs in with an admin credential (the CLI does it with --credentials FILE)"
            )),
        }
    }
}

impl LoginCheck for HubLogins {
    fn check(&self, username: &str, client_id: &str, password: &[u8]) -> Result<(), String> {
        let password =
            std::str::from_utf8(password).map_err(|_| "the password is not UTF-8".to_owned())?;
        match username {
            HUB_USER => {
                if same_secret(password, &self.hub_password) {
                    Ok(())
                } else {
                    Err(format!(
                        "wrong password for {HUB_USER} (only the hub process knows it)"
                    ))
                }
            }
            OPERATOR_USER => self.check_operator(client_id, password),
            addon if addon_identity::parse_identity(addon).is_some() => {
                self.check_addon(addon, password)
            }
            DASHBOARD_USER => match &self.dashboard_password {
                Some(expected) if same_secret(password, expected) => Ok(()),
                _ => Err(format!(
                    "wrong password for {DASHBOARD_USER} (it is in the hub's DATA_DIR/{DASHBOARD_PASSWORD_FILE})"
                )),
            },
            cluster => self.check_cluster(cluster, client_id, password, true),
        }
    }

    fn still_valid(&self, username: &str, client_id: &str, password: &[u8]) -> bool {
        let Ok(password) = std::str::from_utf8(password) else {
            return false;
        };
        match username {
            HUB_USER | OPERATOR_USER | DASHBOARD_USER => {
                self.check(username, client_id, password.as_bytes()).is_ok()
            }
            addon if addon_identity::parse_identity(addon).is_some() => {
                self.check_addon(addon, password).is_ok()
            }
            cluster => self
                .check_cluster(cluster, client_id, password, false)
                .is_ok(),
        }
    }

    fn may_subscribe(
        &self,
        username: &str,
        client_id: &str,
        password: &[u8],
        filter: &str,
    ) -> bool {
        let (OPERATOR_USER, Some(operators)) = (username, &self.operators) else {
            return true;
        };
        let Ok(Ok(LoginProof::Credential {
            certificate,
            signature,
        })) = std::str::from_utf8(password).map(login::parse)
        else {
            return false;
        };
        let Ok(who) = operators.authenticate_login(
            OPERATOR_USER,
            client_id,
            certificate,
            signature,
            Utc::now(),
        ) else {
            return false;
        };
        who.scope.is_none()
            || matches!(topic::Topic::parse(filter),
                Ok(topic::Topic::AdminResponses { client_id: own, .. }) if own == client_id)
    }

    fn may_lapse(&self, username: &str, _password: &[u8]) -> bool {
        match username {
            // A credential may be revoked or expire while its session lasts.
            OPERATOR_USER => self.operators.is_some(),
            HUB_USER | DASHBOARD_USER => false,
            // Disabled add-ons and removed clusters unbind add-on identities.
            addon if addon_identity::parse_identity(addon).is_some() => true,
            // A cluster not accepted got in by its join token, which may expire or be revoked;
            // an accepted one by its key, which only deny or re-accept change (and the hub
            // enforces those itself).
            cluster => !matches!(
                self.standings.standing(cluster),
                Some(Standing::Accepted(_))
            ),
        }
    }
}

/// Whether two secrets are equal, compared through their SHA-256 so the time taken says
/// nothing about where they differ.
fn same_secret(given: &str, expected: &str) -> bool {
    let digest = |s: &str| ring::digest::digest(&ring::digest::SHA256, s.as_bytes());
    digest(given).as_ref() == digest(expected).as_ref()
}

/// The MQTT client id of a cluster's agent.
pub(crate) fn agent_client_id(cluster: &str) -> String {
    format!("{cluster}-agent")
}

/// A new random password (32 bytes, base64).
pub(crate) fn random_password() -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 32];
    // ring's system random source fails only on a broken system; a password of zeros would
    // then still be unknown to clients only by luck, so stop instead.
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source works");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The dashboard password of `data_dir`, created (0600) when missing.
///
/// # Errors
/// The file cannot be read or written.
pub(crate) fn dashboard_password(data_dir: &Path) -> Result<(PathBuf, String), PkiError> {
    let path = data_dir.join(DASHBOARD_PASSWORD_FILE);
    if path.exists() {
        let password = std::fs::read_to_string(&path)
            .map_err(|e| PkiError::Io {
                path: path.clone(),
                reason: e.to_string(),
            })?
            .trim()
            .to_owned();
        if !password.is_empty() {
            return Ok((path, password));
        }
    }
    let password = random_password();
    crate::pki::write_file(&path, &format!("{password}\n"), true)?;
    Ok((path, password))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registration::join_token::JoinTokens;

    struct Key {
        pair: ring::signature::Ed25519KeyPair,
    }

    impl Key {
        fn new(seed: u8) -> Self {
            Key {
                pair: ring::signature::Ed25519KeyPair::from_seed_unchecked(&[seed; 32]).unwrap(),
            }
        }

        fn public(&self) -> Vec<u8> {
            use ring::signature::KeyPair as _;
            self.pair.public_key().as_ref().to_vec()
        }

        fn login(&self, cluster: &str, token: Option<&str>) -> String {
            let client_id = agent_client_id(cluster);
            let sig = self.pair.sign(&signed_bytes(&login::agent_login_message(
                cluster, &client_id,
            )));
            login::agent_key_password(
                &BASE64.encode(self.public()),
                &BASE64.encode(sig.as_ref()),
                token,
            )
        }
    }

    fn setup(standings: &[(&str, Standing)]) -> (HubLogins, String, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let tokens = Arc::new(JoinTokens::from_secret(
            &[9; 32],
            dir.path().join("revoked-join-tokens"),
        ));
        let token = tokens
            .create(chrono::Duration::hours(1), Utc::now())
            .unwrap()
            .token;
        let s = Standings::default();
        {
            let mut map = s.0.write().unwrap();
            for (name, standing) in standings {
                map.insert((*name).to_owned(), standing.clone());
            }
        }
        let logins = HubLogins::new("hub-secret".into(), Some("dash".into()), None, s, tokens);
        (logins, token, dir)
    }

    fn check(l: &HubLogins, user: &str, password: &str) -> Result<(), String> {
        l.check(user, &agent_client_id(user), password.as_bytes())
    }

    #[test]
    fn an_accepted_cluster_gets_in_with_its_bound_key_only() {
        let a = Key::new(1);
        let (l, token, _d) = setup(&[("edge-a", Standing::Accepted(Some(a.public())))]);
        assert_eq!(check(&l, "edge-a", &a.login("edge-a", None)), Ok(()));
        let e = check(&l, "edge-a", &Key::new(2).login("edge-a", Some(&token))).unwrap_err();
        assert!(
            e.contains("accepted with agent key") && e.contains("cluster deny"),
            "{e}"
        );
        // A proof made for another cluster's name does not carry over.
        assert!(check(&l, "edge-a", &a.login("edge-b", None)).is_err());
    }

    #[test]
    fn a_cluster_not_accepted_needs_a_valid_token() {
        let k = Key::new(3);
        let (l, token, _d) = setup(&[("edge-d", Standing::Denied)]);
        for cluster in ["edge-new", "edge-d"] {
            let e = check(&l, cluster, &k.login(cluster, None)).unwrap_err();
            assert!(e.contains("no join token"), "{e}");
            assert_eq!(check(&l, cluster, &k.login(cluster, Some(&token))), Ok(()));
        }
        let e = check(&l, "edge-new", &k.login("edge-new", Some("oet1.x"))).unwrap_err();
        assert!(e.contains("malformed"), "{e}");
    }

    #[test]
    fn a_cluster_added_without_a_key_gets_in_with_its_broker_password_only() {
        let (l, token, _d) = setup(&[
            ("ocm-agent", Standing::Accepted(None)),
            ("other", Standing::Accepted(None)),
        ]);
        let password = l.tokens.cluster_password("ocm-agent");
        assert_eq!(check(&l, "ocm-agent", &password), Ok(()));
        assert!(l.still_valid("ocm-agent", "ocm-agent-agent", password.as_bytes()));
        // Another cluster's password, a key proof with a token, or a guess: out, saying how.
        for wrong in [
            l.tokens.cluster_password("other"),
            Key::new(4).login("ocm-agent", Some(&token)),
            "guess".to_owned(),
        ] {
            let e = check(&l, "ocm-agent", &wrong).unwrap_err();
            assert!(
                e.contains("without an agent key") && e.contains("cluster broker-config"),
                "{e}"
            );
        }
        // Denied: its password no longer opens anything.
        l.standings
            .0
            .write()
            .unwrap()
            .insert("ocm-agent".into(), Standing::Denied);
        assert!(check(&l, "ocm-agent", &password).is_err());
        assert!(!l.still_valid("ocm-agent", "ocm-agent-agent", password.as_bytes()));
    }

    #[test]
    fn wrong_secrets_stay_out() {
        let (l, _token, _d) = setup(&[]);
        assert!(l.check(HUB_USER, "ocm-edge-hub", b"guess").is_err());
        assert_eq!(l.check(HUB_USER, "ocm-edge-hub", b"hub-secret"), Ok(()));
        assert!(l.check(DASHBOARD_USER, "grafana", b"").is_err());
        assert_eq!(l.check(DASHBOARD_USER, "grafana", b"dash"), Ok(()));
        assert!(l.check("edge-x", "edge-x-agent", &[0xff, 0xfe]).is_err());
    }

    #[test]
    fn a_login_stops_holding_when_the_cluster_is_accepted_with_another_key_or_denied() {
        let (a, b) = (Key::new(5), Key::new(6));
        let (l, token, _d) = setup(&[]);
        let joined = a.login("edge-a", Some(&token));
        assert!(l.still_valid("edge-a", "edge-a-agent", joined.as_bytes()));
        let set = |standing: Standing| {
            l.standings
                .0
                .write()
                .unwrap()
                .insert("edge-a".into(), standing);
        };
        set(Standing::Accepted(Some(a.public())));
        assert!(l.still_valid("edge-a", "edge-a-agent", joined.as_bytes()));
        set(Standing::Accepted(Some(b.public())));
        assert!(!l.still_valid("edge-a", "edge-a-agent", joined.as_bytes()));
        // Denied: only a cluster asking to join with a valid token, as a new one.
        set(Standing::Denied);
        assert!(l.still_valid("edge-a", "edge-a-agent", joined.as_bytes()));
        assert!(!l.still_valid("edge-a", "edge-a-agent", a.login("edge-a", None).as_bytes()));
    }

    #[test]
    fn only_logins_a_token_or_a_revocable_credential_holds_are_rechecked() {
        let (l, _token, _d) = setup(&[
            ("edge-a", Standing::Accepted(Some(Key::new(7).public()))),
            ("ocm-agent", Standing::Accepted(None)),
            ("edge-d", Standing::Denied),
        ]);
        for cluster in ["edge-d", "edge-new"] {
            assert!(l.may_lapse(cluster, b""), "{cluster} got in by a token");
        }
        for user in ["edge-a", "ocm-agent", HUB_USER, DASHBOARD_USER] {
            assert!(!l.may_lapse(user, b""), "{user}");
        }
        // Operators only when credentials are checked (not with --insecure-open-admin).
        assert!(!l.may_lapse(OPERATOR_USER, b""));
    }

    #[test]
    fn a_username_that_can_be_no_cluster_is_refused_before_any_signature_check() {
        let (l, token, _d) = setup(&[]);
        let long = "a".repeat(300);
        for name in [long.as_str(), "Edge_A", "-edge"] {
            let e = l
                .check(
                    name,
                    &agent_client_id(name),
                    Key::new(7).login(name, Some(&token)).as_bytes(),
                )
                .unwrap_err();
            assert!(e.contains("username"), "{name}: {e}");
        }
    }
}
