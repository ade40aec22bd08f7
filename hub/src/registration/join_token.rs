//! Join tokens: who may ask to join. The hub's embedded broker lets a cluster it has not accepted
//! in only with a valid token (`ocm-edge-agent --token`), like kubeadm's bootstrap tokens; an
//! accepted cluster logs in with its own key and needs no token any more, however long it was
//! offline.
//!
//! A token is `oet1.<id>.<expires>.<mac>`: a random id (8 hex digits), its expiry (Unix seconds)
//! and an HMAC-SHA256 of both with the hub's token key (`DATA_DIR/pki/join-token-key`, 32 random
//! bytes, mode 0600, made at first use). The hub keeps no list of tokens: `ocm-edge token create`
//! on the hub's machine makes one from the key, and the hub checks the MAC and the expiry.
//! `ocm-edge token revoke ID` adds the id to `DATA_DIR/revoked-join-tokens` (one id per line),
//! which the hub reads at every check of a token. The embedded broker checks the sessions of
//! clusters not accepted again every 30 s (`HubConfig::login_recheck`) and drops those whose
//! token expired or was revoked meanwhile; an accepted cluster stays. Removing the key file revokes every token at
//! the hub's next start.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use chrono::{DateTime, Utc};
use ring::hmac;
use ring::rand::{SecureRandom as _, SystemRandom};

use crate::pki::{PkiError, append_lines, write_file};

/// What [`JoinTokens::cluster_password`] signs before the cluster's name; no token MAC signs it
/// (those start with the token id, 8 hex digits).
const CLUSTER_PASSWORD_DOMAIN: &str = "ocm-edge cluster broker password v1\n";
/// Domain of the add-on controllers' broker passwords (apart from clusters' and tokens').
const ADDON_CONTROLLER_PASSWORD_DOMAIN: &str = "ocm-edge addon controller broker password v1\n";
/// The token key, in the hub's `pki` directory.
pub const TOKEN_KEY_FILE: &str = "join-token-key";
/// Revoked token ids, one per line, in the hub's data directory.
pub const REVOKED_FILE: &str = "revoked-join-tokens";
const PREFIX: &str = "oet1";
/// Longest token read.
const MAX_TOKEN_CHARS: usize = 128;

/// Why a token is not taken. Each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error(
        "no join token: a cluster the hub has not accepted needs one to ask to join (`ocm-edge token create` on the hub's machine, then `ocm-edge-agent --token`)"
    )]
    Missing,
    #[error(
        "the join token is malformed (it looks like oet1.ID.EXPIRES.MAC, as `ocm-edge token create` prints it)"
    )]
    Malformed,
    #[error(
        "the join token {id} was not made by this hub (another hub's, or the hub's token key was replaced): make a new one with `ocm-edge token create`"
    )]
    Forged { id: String },
    #[error(
        "the join token {id} expired at {expired}: make a new one with `ocm-edge token create`"
    )]
    Expired { id: String, expired: DateTime<Utc> },
    #[error("the join token {id} was revoked (`ocm-edge token revoke`): make a new one")]
    Revoked { id: String },
}

/// A token made by [`JoinTokens::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinToken {
    /// The id (`ocm-edge token revoke ID`).
    pub id: String,
    /// When it expires.
    pub expires: DateTime<Utc>,
    /// The whole token, for `ocm-edge-agent --token`.
    pub token: String,
}

/// The hub's token key and revocation list.
pub struct JoinTokens {
    key: hmac::Key,
    revoked_file: PathBuf,
}

impl std::fmt::Debug for JoinTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinTokens")
            .field("revoked_file", &self.revoked_file)
            .finish_non_exhaustive()
    }
}

impl JoinTokens {
    /// The token key of the hub whose data directory is `data_dir`, made (0600) when missing.
    ///
    /// # Errors
    /// [`PkiError`] when the key file cannot be read or written, or is damaged.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, PkiError> {
        let pki = data_dir.join("pki");
        crate::pki::create_private_dir(&pki)?;
        let path = pki.join(TOKEN_KEY_FILE);
        let io = |e: std::io::Error| PkiError::Io {
            path: path.clone(),
            reason: e.to_string(),
        };
        let secret = if path.exists() {
            let text = std::fs::read_to_string(&path).map_err(io)?;
            BASE64URL
                .decode(text.trim())
                .ok()
                .filter(|k| k.len() == 32)
                .ok_or_else(|| PkiError::Io {
                    path: path.clone(),
                    reason: "not a join token key (32 bytes, base64url); remove it to make a new one, which revokes every token made so far".to_owned(),
                })?
        } else {
            let mut secret = vec![0u8; 32];
            SystemRandom::new()
                .fill(&mut secret)
                .map_err(|_| PkiError::Io {
                    path: path.clone(),
                    reason: "the system's random source failed".to_owned(),
                })?;
            write_file(&path, &format!("{}\n", BASE64URL.encode(&secret)), true)?;
            secret
        };
        Ok(JoinTokens {
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            revoked_file: data_dir.join(REVOKED_FILE),
        })
    }

    /// Tokens with the key `secret` and the revocation list `revoked_file` (fuzzing, tests).
    pub fn from_secret(secret: &[u8; 32], revoked_file: PathBuf) -> Self {
        JoinTokens {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            revoked_file,
        }
    }

    /// A new token valid until `now + ttl`.
    ///
    /// # Errors
    /// [`PkiError`] when the system's random source fails.
    pub fn create(&self, ttl: chrono::Duration, now: DateTime<Utc>) -> Result<JoinToken, PkiError> {
        let mut id = [0u8; 4];
        SystemRandom::new()
            .fill(&mut id)
            .map_err(|_| PkiError::Io {
                path: PathBuf::new(),
                reason: "the system's random source failed".to_owned(),
            })?;
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let expires = now + ttl;
        let mac = self.mac(&id, expires.timestamp());
        Ok(JoinToken {
            token: format!("{PREFIX}.{id}.{}.{mac}", expires.timestamp()),
            id,
            expires: DateTime::from_timestamp(expires.timestamp(), 0).unwrap_or(expires),
        })
    }

    /// The id of `token` when this hub made it, it has not expired at `now` and it is not revoked.
    ///
    /// # Errors
    /// [`TokenError`] saying which check failed.
    pub fn check(&self, token: &str, now: DateTime<Utc>) -> Result<String, TokenError> {
        if token.len() > MAX_TOKEN_CHARS {
            return Err(TokenError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(PREFIX), Some(id), Some(expires), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(TokenError::Malformed);
        };
        if !is_token_id(id) {
            return Err(TokenError::Malformed);
        }
        let expires: i64 = expires.parse().map_err(|_| TokenError::Malformed)?;
        let mac = BASE64URL.decode(mac).map_err(|_| TokenError::Malformed)?;
        hmac::verify(&self.key, &signed(id, expires), &mac)
            .map_err(|_| TokenError::Forged { id: id.to_owned() })?;
        if expires <= now.timestamp() {
            return Err(TokenError::Expired {
                id: id.to_owned(),
                expired: DateTime::from_timestamp(expires, 0).unwrap_or(now),
            });
        }
        if self.is_revoked(id) {
            return Err(TokenError::Revoked { id: id.to_owned() });
        }
        Ok(id.to_owned())
    }

    /// The broker password of `cluster` when it was added without an agent key (`ocm-edge cluster
    /// add`, for OCM's or maestro's own work agent, which logs in with a username and password):
    /// an HMAC-SHA256 of the cluster's name with the token key, so it is never stored and a
    /// cluster's password opens no other cluster. Replacing the token key changes every one.
    pub fn cluster_password(&self, cluster: &str) -> String {
        let message = format!("{CLUSTER_PASSWORD_DOMAIN}{cluster}");
        BASE64URL.encode(hmac::sign(&self.key, message.as_bytes()).as_ref())
    }

    /// The broker password of `addon`'s hub-side controller (`addons/<addon>/controller`,
    /// `ocm-edge addon broker-config`): an HMAC-SHA256 of the add-on's name with the token key,
    /// like [`JoinTokens::cluster_password`] and in its own domain.
    pub fn addon_controller_password(&self, addon: &str) -> String {
        let message = format!("{ADDON_CONTROLLER_PASSWORD_DOMAIN}{addon}");
        BASE64URL.encode(hmac::sign(&self.key, message.as_bytes()).as_ref())
    }

    fn mac(&self, id: &str, expires: i64) -> String {
        BASE64URL.encode(hmac::sign(&self.key, &signed(id, expires)).as_ref())
    }

    /// Whether `id` is in the revocation list, read at every check (only tokens with a valid
    /// MAC get here: a short file read per cluster asking to join, never stale).
    fn is_revoked(&self, id: &str) -> bool {
        std::fs::read_to_string(&self.revoked_file)
            .map(|text| parse_revoked(&text).iter().any(|r| r == id))
            .unwrap_or(false)
    }
}

/// Adds `id` to the revocation list of the hub whose data directory is `data_dir`.
///
/// # Errors
/// [`PkiError`] when `id` is no token id or the file cannot be written.
pub fn revoke(data_dir: &Path, id: &str) -> Result<(), PkiError> {
    // Ids are written in lowercase; one typed in uppercase is the same token.
    let id = id.to_ascii_lowercase();
    let id = id.as_str();
    if !is_token_id(id) {
        return Err(PkiError::Io {
            path: data_dir.join(REVOKED_FILE),
            reason: format!(
                "{id:?} is no token id (8 hex digits: the second part of oet1.ID.EXPIRES.MAC)"
            ),
        });
    }
    let path = data_dir.join(REVOKED_FILE);
    let ids = std::fs::read_to_string(&path)
        .map(|t| parse_revoked(&t))
        .unwrap_or_default();
    if ids.iter().any(|r| r == id) {
        return Ok(());
    }
    // One append: two revocations at once both land.
    append_lines(&path, &format!("{id}\n"))
}

/// A token's id: 8 hex digits.
fn is_token_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn parse_revoked(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn signed(id: &str, expires: i64) -> Vec<u8> {
    format!("ocm-edge join token v1|{id}|{expires}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-25T10:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_token_is_good_until_it_expires_or_is_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = JoinTokens::load_or_create(dir.path()).unwrap();
        let t = tokens.create(chrono::Duration::hours(24), now()).unwrap();
        assert!(t.token.starts_with("oet1."));
        assert_eq!(tokens.check(&t.token, now()), Ok(t.id.clone()));
        // The key is kept: the same hub takes it after a restart.
        let again = JoinTokens::load_or_create(dir.path()).unwrap();
        assert_eq!(again.check(&t.token, now()), Ok(t.id.clone()));
        assert!(matches!(
            tokens.check(&t.token, now() + chrono::Duration::hours(24)),
            Err(TokenError::Expired { .. })
        ));
        revoke(dir.path(), &t.id.to_ascii_uppercase()).unwrap();
        assert_eq!(
            tokens.check(&t.token, now()),
            Err(TokenError::Revoked { id: t.id.clone() })
        );
        let other = tokens.create(chrono::Duration::hours(1), now()).unwrap();
        assert_eq!(tokens.check(&other.token, now()), Ok(other.id));
    }

    #[test]
    fn a_changed_forged_or_foreign_token_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = JoinTokens::load_or_create(dir.path()).unwrap();
        let t = tokens.create(chrono::Duration::hours(1), now()).unwrap();
        // A later expiry with the same MAC.
        let parts: Vec<&str> = t.token.split('.').collect();
        let stretched = format!("oet1.{}.{}.{}", parts[1], 4_000_000_000i64, parts[3]);
        assert!(matches!(
            tokens.check(&stretched, now()),
            Err(TokenError::Forged { .. })
        ));
        let other_dir = tempfile::tempdir().unwrap();
        let foreign = JoinTokens::load_or_create(other_dir.path())
            .unwrap()
            .create(chrono::Duration::hours(1), now())
            .unwrap();
        assert!(matches!(
            tokens.check(&foreign.token, now()),
            Err(TokenError::Forged { .. })
        ));
        for bad in [
            "",
            "oet1",
            "oet1.zz.1.x",
            "oet2.00000000.1.x",
            "oet1.00000000.x.y",
        ] {
            assert_eq!(
                tokens.check(bad, now()),
                Err(TokenError::Malformed),
                "{bad}"
            );
        }
        assert!(revoke(dir.path(), "../x").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn the_token_key_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        JoinTokens::load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join("pki").join(TOKEN_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
