//! Users of the admin API: the credentials the hub's CA issues ([`issue`]), which of them it
//! issued, and which of them are revoked.
//!
//! `ocm-edge user create` (and the hub, for the first admin) appends each credential it signs to
//! `DATA_DIR/issued-credentials`; `ocm-edge user revoke` appends serial numbers to
//! `DATA_DIR/revoked-credentials`, which the hub reads at every check of a credential (each admin
//! request and each operator login on the embedded broker), so a revocation takes effect at the
//! next request without a restart. Both files are plain text, one entry per line, written with
//! single appends (two commands run at once both land).
//!
//! ```text
//! issued-credentials:   SERIAL USER ROLE NOT_AFTER [SCOPE]   (RFC 3339; SCOPE: the scope's JSON)
//! revoked-credentials:  SERIAL USER REVOKED_AT
//! ```

use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use ocm_edge_schemas::admin::auth::SCOPE_EXTENSION_OID;
use ocm_edge_schemas::admin::{CredentialScope, Role};
use rcgen::KeyPair;

use crate::pki::{HubPki, PkiError, append_lines, client_params, random_serial};

/// The first admin's credential, in the hub's data directory (written at the hub's first start).
pub const ADMIN_CREDENTIALS: &str = "admin-credentials.pem";
/// How long a user credential is valid unless told otherwise.
pub const USER_VALIDITY: Duration = Duration::days(365);

/// The credentials the hub's CA signed, in the hub's data directory.
pub const ISSUED_FILE: &str = "issued-credentials";
/// The revoked credentials' serial numbers, in the hub's data directory.
pub const REVOKED_FILE: &str = "revoked-credentials";

/// One credential the CA signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCredential {
    /// Its certificate's serial number (lowercase hex).
    pub serial: String,
    /// The user (CN).
    pub user: String,
    /// The role (OU), as written.
    pub role: String,
    /// When it expires.
    pub not_after: DateTime<Utc>,
    /// What it is limited to (`None`: unscoped).
    pub scope: Option<CredentialScope>,
}

/// Signs a credential for the admin API with the hub's CA: a client certificate for `user` (CN)
/// with `role` (OU) and a random serial number, valid from now (less [`crate::pki::CLOCK_SKEW`])
/// for `validity`, and its new key. Returns one PEM text, certificate then key (what the CLI
/// signs requests with), and the record for the issued list ([`record_issued`]); nothing is
/// written (the caller chooses the file). The credential is unscoped: [`issue_scoped`] limits one.
///
/// # Errors
/// [`PkiError::Issue`] for a user name that cannot be a CN or a validity rcgen refuses.
pub fn issue(
    pki: &HubPki,
    user: &str,
    role: Role,
    validity: Duration,
    now: DateTime<Utc>,
) -> Result<(String, IssuedCredential), PkiError> {
    issue_scoped(pki, user, role, None, validity, now)
}

/// [`issue`], limited to `scope` when given: the CA signs the scope into the certificate (the
/// extension [`SCOPE_EXTENSION_OID`]), so the user cannot widen it.
///
/// # Errors
/// As [`issue`], and [`PkiError::Issue`] for a scope its role cannot have (an admin's).
pub fn issue_scoped(
    pki: &HubPki,
    user: &str,
    role: Role,
    scope: Option<&CredentialScope>,
    validity: Duration,
    now: DateTime<Utc>,
) -> Result<(String, IssuedCredential), PkiError> {
    let key = KeyPair::generate().map_err(|e| PkiError::Issue(e.to_string()))?;
    let mut params = client_params(user, role.as_str(), validity, now)?;
    if let Some(scope) = scope {
        // Checked as the hub checks it when it reads the credential back.
        let value = scope.to_extension_value();
        CredentialScope::from_extension_value(&value, role)
            .map_err(|e| PkiError::Issue(e.to_string()))?;
        params
            .custom_extensions
            .push(rcgen::CustomExtension::from_oid_content(
                &SCOPE_EXTENSION_OID,
                value,
            ));
    }
    let serial = random_serial()?;
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    let cert = pki.sign_for(&params, &key)?;
    let record = IssuedCredential {
        serial: serial.iter().map(|b| format!("{b:02x}")).collect(),
        user: user.to_owned(),
        role: role.as_str().to_owned(),
        not_after: now + validity,
        scope: scope.cloned(),
    };
    Ok((format!("{}{}", cert.pem(), key.serialize_pem()), record))
}

/// Adds `credential` to the issued list of `data_dir`.
///
/// # Errors
/// [`PkiError::Io`] when the file cannot be written.
pub fn record_issued(data_dir: &Path, credential: &IssuedCredential) -> Result<(), PkiError> {
    append_lines(
        &data_dir.join(ISSUED_FILE),
        &format!(
            "{} {} {} {}{}\n",
            credential.serial,
            credential.user,
            credential.role,
            credential.not_after.to_rfc3339(),
            // JSON of names that are DNS labels: no whitespace, one field.
            credential.scope.as_ref().map_or_else(String::new, |s| {
                format!(" {}", serde_json::to_string(s).unwrap_or_default())
            }),
        ),
    )
}

/// The credentials issued on `data_dir`, oldest first (lines that cannot be read are skipped).
///
/// # Errors
/// [`PkiError::Io`] when the file exists but cannot be read.
pub fn issued(data_dir: &Path) -> Result<Vec<IssuedCredential>, PkiError> {
    let text = read_or_empty(&data_dir.join(ISSUED_FILE))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let serial = fields.next()?;
            let user = fields.next()?;
            let role = fields.next()?;
            let not_after = fields.next()?.parse().ok()?;
            // Lines written before scopes existed have none.
            let scope = fields.next().and_then(|s| serde_json::from_str(s).ok());
            is_serial(serial).then(|| IssuedCredential {
                serial: serial.to_owned(),
                user: user.to_owned(),
                role: role.to_owned(),
                not_after,
                scope,
            })
        })
        .collect())
}

/// The serial numbers revoked on `data_dir`.
///
/// # Errors
/// [`PkiError::Io`] when the file exists but cannot be read.
pub fn revoked_serials(data_dir: &Path) -> Result<Vec<String>, PkiError> {
    Ok(parse_revoked(&read_or_empty(&data_dir.join(REVOKED_FILE))?))
}

/// What to revoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoke<'a> {
    /// Every credential issued to this user (as recorded in the issued list).
    User(&'a str),
    /// The credential with this serial number (hex, as `ocm-edge user list` shows it).
    Serial(&'a str),
}

/// Why nothing was revoked.
#[derive(Debug, thiserror::Error)]
pub enum RevokeError {
    /// The request names nothing that can be revoked.
    #[error("{0}")]
    Usage(String),
    /// A file cannot be read or written.
    #[error(transparent)]
    Io(#[from] PkiError),
}

/// Revokes `what` on `data_dir`; returns the serial numbers newly revoked (empty when all of them
/// already were).
///
/// # Errors
/// [`RevokeError::Usage`] for a user with no recorded credential or a serial that is not hex,
/// [`RevokeError::Io`] for a file that cannot be read or written.
pub fn revoke(
    data_dir: &Path,
    what: &Revoke<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<String>, RevokeError> {
    let refuse = RevokeError::Usage;
    let issued = issued(data_dir)?;
    let targets: Vec<(String, String)> = match what {
        Revoke::User(user) => {
            let of_user: Vec<_> = issued
                .iter()
                .filter(|c| c.user == *user)
                .map(|c| (c.serial.clone(), c.user.clone()))
                .collect();
            if of_user.is_empty() {
                return Err(refuse(format!(
                    "no credential of user {user:?} was issued on this data directory (`ocm-edge user list` shows them; revoke one issued elsewhere with --serial)"
                )));
            }
            of_user
        }
        Revoke::Serial(serial) => {
            let serial = normalize_serial(serial);
            if !is_serial(&serial) {
                return Err(refuse(format!(
                    "{serial:?} is no serial number (hex digits, as `ocm-edge user list` shows them)"
                )));
            }
            let user = issued
                .iter()
                .find(|c| c.serial == serial)
                .map_or_else(|| "-".to_owned(), |c| c.user.clone());
            vec![(serial, user)]
        }
    };
    let already = revoked_serials(data_dir)?;
    let new: Vec<_> = targets
        .into_iter()
        .filter(|(serial, _)| !already.contains(serial))
        .collect();
    if !new.is_empty() {
        let lines: String = new
            .iter()
            .map(|(serial, user)| format!("{serial} {user} {}\n", now.to_rfc3339()))
            .collect();
        append_lines(&data_dir.join(REVOKED_FILE), &lines)?;
    }
    Ok(new.into_iter().map(|(serial, _)| serial).collect())
}

/// The hub's view of the revocation list: read at every check, so a revocation needs no restart.
#[derive(Debug, Clone)]
pub struct Revocations {
    file: PathBuf,
}

impl Revocations {
    /// The revocation list of the hub's data directory `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Revocations {
            file: data_dir.join(REVOKED_FILE),
        }
    }

    /// Whether the credential with `serial` (lowercase hex) is revoked. A list that exists but
    /// cannot be read revokes everything (a credential is not taken on a guess).
    ///
    /// # Errors
    /// The reason the list cannot be read.
    pub fn is_revoked(&self, serial: &str) -> Result<bool, String> {
        match read_or_empty(&self.file) {
            Ok(text) => Ok(parse_revoked(&text).iter().any(|s| s == serial)),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// `serial` as the files hold it: lowercase hex without separators.
pub fn normalize_serial(serial: &str) -> String {
    serial
        .chars()
        .filter(|c| *c != ':')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn is_serial(serial: &str) -> bool {
    (1..=40).contains(&serial.len()) && serial.bytes().all(|b| b.is_ascii_hexdigit())
}

fn parse_revoked(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| !s.starts_with('#'))
        .map(normalize_serial)
        .collect()
}

fn read_or_empty(path: &Path) -> Result<String, PkiError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(PkiError::Io {
            path: path.to_owned(),
            reason: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-25T10:00:00Z".parse().unwrap()
    }

    fn credential(serial: &str, user: &str) -> IssuedCredential {
        IssuedCredential {
            serial: serial.to_owned(),
            user: user.to_owned(),
            role: "admin".to_owned(),
            not_after: now() + chrono::Duration::days(1),
            scope: None,
        }
    }

    #[test]
    fn the_issued_list_keeps_a_scope_and_reads_lines_written_before_scopes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(ISSUED_FILE),
            "0a old operator 2027-01-01T00:00:00+00:00\n",
        )
        .unwrap();
        let scope = CredentialScope::new(Role::Operator, ["team-a".into()], ["eu".into()]).unwrap();
        let scoped = IssuedCredential {
            scope: Some(scope),
            ..credential("0b", "alice")
        };
        record_issued(dir.path(), &scoped).unwrap();
        let list = issued(dir.path()).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].scope, None);
        assert_eq!(list[1], scoped);
    }

    #[test]
    fn revoking_a_user_revokes_each_of_its_credentials_and_nobody_elses() {
        let dir = tempfile::tempdir().unwrap();
        for (serial, user) in [("0a", "ann"), ("0b", "bob"), ("0c", "ann")] {
            record_issued(dir.path(), &credential(serial, user)).unwrap();
        }
        assert_eq!(issued(dir.path()).unwrap().len(), 3);
        let revoked = revoke(dir.path(), &Revoke::User("ann"), now()).unwrap();
        assert_eq!(revoked, ["0a", "0c"]);
        let list = Revocations::new(dir.path());
        assert!(list.is_revoked("0a").unwrap());
        assert!(list.is_revoked("0c").unwrap());
        assert!(!list.is_revoked("0b").unwrap());
        // Again: nothing new, and the file does not grow.
        assert!(
            revoke(dir.path(), &Revoke::User("ann"), now())
                .unwrap()
                .is_empty()
        );
        assert_eq!(revoked_serials(dir.path()).unwrap().len(), 2);
    }

    #[test]
    fn a_serial_is_revoked_as_typed_with_colons_or_capitals_and_junk_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            revoke(dir.path(), &Revoke::Serial("0A:1b"), now()).unwrap(),
            ["0a1b"]
        );
        assert!(Revocations::new(dir.path()).is_revoked("0a1b").unwrap());
        let err = revoke(dir.path(), &Revoke::Serial("zz"), now()).unwrap_err();
        assert!(err.to_string().contains("no serial number"), "{err}");
        let err = revoke(dir.path(), &Revoke::User("nobody"), now()).unwrap_err();
        assert!(err.to_string().contains("user list"), "{err}");
    }

    #[test]
    fn a_list_edited_by_hand_without_its_last_newline_keeps_every_serial() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(REVOKED_FILE), "# revoked by hand\n0a").unwrap();
        revoke(dir.path(), &Revoke::Serial("0b"), now()).unwrap();
        let list = Revocations::new(dir.path());
        assert!(list.is_revoked("0a").unwrap() && list.is_revoked("0b").unwrap());
    }

    #[test]
    fn an_unreadable_list_revokes_everything() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(REVOKED_FILE)).unwrap();
        assert!(Revocations::new(dir.path()).is_revoked("0a").is_err());
    }
}
