//! The hub's certificate authority: created at the hub's first start (rcgen, ECDSA P-256), kept in
//! `DATA_DIR/pki/`, and used to sign the embedded broker's serving certificate at every start.
//!
//! Agents trust the hub by the CA's SHA-256 ([`CaPin`], printed at start), like kubeadm's
//! `--discovery-token-ca-cert-hash`: the broker presents its certificate followed by the CA, and an
//! agent with the pin checks both. The CA's key never leaves the hub's data directory (mode 0600);
//! an operator may also put a CA of their own there (`ca.pem` + `ca-key.pem`) before the first start.
//!
//! Files:
//! - `ca.pem`, `ca-key.pem`: the CA (10 years), created once;
//! - `broker.pem` (certificate + CA), `broker-key.pem`: the broker's, signed again at every start
//!   for the names given then (1 year), so a new name needs only a restart;
//! - `signer.pem`, `signer-key.pem`: the key that signs every event the hub sends to agents
//!   ([`signing`]).
//!
//! An operator may give the CA and the join-token key from outside the data directory instead
//! (`ocm-edge hub --pki-from DIR`, a mounted Secret): [`seed`] copies them in at start.
//!
//! It also signs user credentials for the admin API ([`crate::admin::users::issue`]) and, through
//! the cluster CA ([`crate::registration::cluster_ca`]), clusters' TLS client certificates.

pub mod seed;
pub mod signing;

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use ocm_edge_mqtt::CaPin;

use ocm_edge_mqtt::broker::ServerTls;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData,
};

/// How long the CA the hub creates is valid.
pub const CA_VALIDITY: Duration = Duration::days(3650);
/// How long the broker's serving certificate is valid (it is signed again at every start).
pub const SERVING_VALIDITY: Duration = Duration::days(365);
/// The OU of a cluster's TLS client certificate ([`HubPki::issue_cluster_tls`]); no admin role.
pub const CLUSTER_OU: &str = "cluster";
/// How far back certificates start, for clients whose clock is behind the hub's.
pub const CLOCK_SKEW: Duration = Duration::hours(1);

const CA_CERT: &str = "ca.pem";
const CA_KEY: &str = "ca-key.pem";
const BROKER_CERT: &str = "broker.pem";
const BROKER_KEY: &str = "broker-key.pem";

/// A CA or certificate the hub cannot create, read or use. Nothing is overwritten when this is
/// returned.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// A file or directory cannot be read or written.
    #[error("{path}: {reason}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// One of the CA's two files is missing.
    #[error(
        "{present} exists but {missing} does not: restore the missing file, or remove both to create a new CA (every agent then needs the new CA pin)"
    )]
    HalfCa {
        /// The file that is there.
        present: PathBuf,
        /// The file that is not.
        missing: PathBuf,
    },
    /// The CA's files cannot be used (not PEM, not a CA, key and certificate do not match).
    #[error("the hub's CA in {dir}: {reason}")]
    BadCa {
        /// The pki directory.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// There is no CA to use (`ocm-edge user create` run away from the hub's data directory).
    #[error(
        "no hub CA in {dir} (ca.pem, ca-key.pem): run this on the hub's machine with --data-dir (or OCM_EDGE_DATA_DIR) set to the hub's data directory"
    )]
    NoCa {
        /// The pki directory looked in.
        dir: PathBuf,
    },
    /// A file given with `--pki-from` is not the one the data directory holds.
    #[error(
        "{seed} differs from {target}: the data directory keeps the keys agents already trust (a new CA cuts every agent off); give the same file, or start on an empty data directory"
    )]
    SeedDiffers {
        /// The data directory's file.
        target: PathBuf,
        /// The file given.
        seed: PathBuf,
    },
    /// rcgen refused to build a certificate (e.g. a name that is not a DNS name or an IP).
    #[error("cannot issue a certificate: {0}")]
    Issue(String),
}

/// The hub's CA, loaded or created.
#[derive(Debug)]
pub struct HubPki {
    dir: PathBuf,
    ca_pem: String,
    ca_key_pem: String,
    pin: CaPin,
}

impl HubPki {
    /// Loads the CA from `dir` (usually `DATA_DIR/pki`), or creates it there when neither of its
    /// files exists.
    ///
    /// # Errors
    /// [`PkiError`] for a directory that cannot be created, a half CA (one file of two), or files
    /// that cannot be used.
    pub fn load_or_create(dir: &Path, now: DateTime<Utc>) -> Result<Self, PkiError> {
        create_private_dir(dir)?;
        if ca_files_exist(dir, CA_CERT, CA_KEY)? {
            Self::load(dir)
        } else {
            Self::create(dir, now)
        }
    }

    fn load(dir: &Path) -> Result<Self, PkiError> {
        let ca_pem = read(&dir.join(CA_CERT))?;
        let ca_key_pem = read(&dir.join(CA_KEY))?;
        let bad = |reason: String| PkiError::BadCa {
            dir: dir.to_owned(),
            reason,
        };
        let key = KeyPair::from_pem(&ca_key_pem)
            .map_err(|e| bad(format!("{CA_KEY} is not a PEM private key: {e}")))?;
        let der = first_pem_der(&ca_pem)
            .ok_or_else(|| bad(format!("{CA_CERT} holds no PEM certificate")))?;
        // The certificate embeds its public key verbatim: a key of another CA is not in it.
        if !contains(&der, &key.subject_public_key_info()) {
            return Err(bad(format!(
                "{CA_KEY} is not the key of the certificate in {CA_CERT}"
            )));
        }
        Issuer::from_ca_cert_pem(&ca_pem, &key)
            .map_err(|e| bad(format!("{CA_CERT} cannot sign certificates: {e}")))?;
        Ok(HubPki {
            dir: dir.to_owned(),
            pin: CaPin::of_der(&der),
            ca_pem,
            ca_key_pem,
        })
    }

    fn create(dir: &Path, now: DateTime<Utc>) -> Result<Self, PkiError> {
        let (cert, key) = create_ca_files(dir, CA_CERT, CA_KEY, "ocm-edge hub CA", now)?;
        tracing::info!(dir = %dir.display(), "created the hub's certificate authority");
        Ok(HubPki {
            dir: dir.to_owned(),
            pin: CaPin::of_der(cert.der()),
            ca_pem: cert.pem(),
            ca_key_pem: key.serialize_pem(),
        })
    }

    /// Loads the CA from `dir` without creating one (for `ocm-edge user create`, which must use
    /// the running hub's CA).
    ///
    /// # Errors
    /// [`PkiError::NoCa`] when `dir` holds no CA; as [`HubPki::load_or_create`] otherwise.
    pub fn load_existing(dir: &Path) -> Result<Self, PkiError> {
        match (dir.join(CA_CERT).exists(), dir.join(CA_KEY).exists()) {
            (false, false) => Err(PkiError::NoCa {
                dir: dir.to_owned(),
            }),
            _ => Self::load_or_create(dir, Utc::now()),
        }
    }

    /// The CA's certificate, DER (what the admin API checks credentials against).
    ///
    /// # Errors
    /// [`PkiError::BadCa`] if the CA file no longer holds a certificate (it was checked at load).
    pub fn ca_der(&self) -> Result<Vec<u8>, PkiError> {
        first_pem_der(&self.ca_pem).ok_or_else(|| PkiError::BadCa {
            dir: self.dir.clone(),
            reason: format!("{CA_CERT} holds no PEM certificate"),
        })
    }

    /// A TLS client certificate and its key (PEM) for cluster `cluster` (CN = the cluster, OU =
    /// `cluster`, which is no admin role: the admin API refuses it), for OCM's own work agent,
    /// whose MQTT client (sdk-go) speaks TLS only with a client certificate. The hub's embedded
    /// broker asks for no client certificate: there the cluster proves who it is with its broker
    /// password ([`crate::registration::join_token::JoinTokens::cluster_password`]).
    ///
    /// # Errors
    /// [`PkiError::Issue`] for a name that cannot be a CN or a validity rcgen refuses.
    pub fn issue_cluster_tls(
        &self,
        cluster: &str,
        validity: Duration,
        now: DateTime<Utc>,
    ) -> Result<(String, String), PkiError> {
        let key = KeyPair::generate().map_err(|e| PkiError::Issue(e.to_string()))?;
        let params = client_params(cluster, CLUSTER_OU, validity, now)?;
        let cert = self.sign_for(&params, &key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Signs `params` (for `key`) with the CA.
    pub(crate) fn sign_for(
        &self,
        params: &CertificateParams,
        key: &KeyPair,
    ) -> Result<rcgen::Certificate, PkiError> {
        let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
        let ca_key = KeyPair::from_pem(&self.ca_key_pem).map_err(issue)?;
        let issuer = Issuer::from_ca_cert_pem(&self.ca_pem, &ca_key).map_err(issue)?;
        params.signed_by(key, &issuer).map_err(issue)
    }

    /// The pki directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The CA's pin, which agents are given (`--broker-ca-pin`).
    pub fn pin(&self) -> CaPin {
        self.pin
    }

    /// The CA's certificate file, for clients on the hub's machine (`--broker-ca-file`).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join(CA_CERT)
    }

    /// Signs a serving certificate for the broker, valid for `names` (DNS names or IP addresses)
    /// and written with the CA after it to `broker.pem`, its key to `broker-key.pem` (0600).
    ///
    /// # Errors
    /// [`PkiError`] for a name rcgen refuses or a file that cannot be written.
    pub fn issue_serving(
        &self,
        names: &[String],
        now: DateTime<Utc>,
    ) -> Result<ServerTls, PkiError> {
        let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
        let key = KeyPair::generate().map_err(issue)?;
        let mut params = CertificateParams::new(names.to_vec())
            .map_err(|e| PkiError::Issue(format!("names {names:?}: {e}")))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "ocm-edge broker");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.not_before = to_time(now - CLOCK_SKEW)?;
        params.not_after = to_time(now + SERVING_VALIDITY)?;
        let cert = self.sign_for(&params, &key)?;
        let tls = ServerTls {
            cert_chain_file: self.dir.join(BROKER_CERT),
            key_file: self.dir.join(BROKER_KEY),
        };
        write_file(&tls.key_file, &key.serialize_pem(), true)?;
        write_file(
            &tls.cert_chain_file,
            &format!("{}{}", cert.pem(), self.ca_pem),
            false,
        )?;
        Ok(tls)
    }
}

/// The names the broker's certificate is valid for by default: loopback by name and address, and
/// this machine's host name (Linux).
pub fn default_serving_names() -> Vec<String> {
    let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let host = host.trim();
        if !host.is_empty() && !names.iter().any(|n| n == host) {
            names.push(host.to_owned());
        }
    }
    names
}

/// Whether a CA's two files, `cert` and `key` in `dir`, are there: both (true) or neither (false).
///
/// # Errors
/// [`PkiError::HalfCa`] when only one is.
pub(crate) fn ca_files_exist(dir: &Path, cert: &str, key: &str) -> Result<bool, PkiError> {
    let (cert_path, key_path) = (dir.join(cert), dir.join(key));
    match (cert_path.exists(), key_path.exists()) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (true, false) => Err(PkiError::HalfCa {
            present: cert_path,
            missing: key_path,
        }),
        (false, true) => Err(PkiError::HalfCa {
            present: key_path,
            missing: cert_path,
        }),
    }
}

/// Creates a CA named `cn` (ECDSA P-256, valid [`CA_VALIDITY`]) and writes it to `dir`: its key
/// first (`key_name`, 0600; a certificate without its key would stop the next start), then its
/// certificate (`cert_name`).
///
/// # Errors
/// [`PkiError`] for what rcgen refuses or a file that cannot be written.
pub(crate) fn create_ca_files(
    dir: &Path,
    cert_name: &str,
    key_name: &str,
    cn: &str,
    now: DateTime<Utc>,
) -> Result<(rcgen::Certificate, KeyPair), PkiError> {
    let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
    let key = KeyPair::generate().map_err(issue)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue)?;
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = to_time(now - CLOCK_SKEW)?;
    params.not_after = to_time(now + CA_VALIDITY)?;
    let cert = params.self_signed(&key).map_err(issue)?;
    write_file(&dir.join(key_name), &key.serialize_pem(), true)?;
    write_file(&dir.join(cert_name), &cert.pem(), false)?;
    Ok((cert, key))
}

/// 16 random bytes for a certificate's serial number, the first bit clear and the fourth set: a
/// positive number of 125 to 128 bits.
///
/// # Errors
/// [`PkiError::Issue`] when the system has no random numbers.
pub(crate) fn random_serial() -> Result<[u8; 16], PkiError> {
    let mut serial = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut serial)
        .map_err(|_| PkiError::Issue("no random numbers for a serial number".to_owned()))?;
    serial[0] &= 0x7f;
    serial[0] |= 0x10;
    Ok(serial)
}

pub(crate) fn to_time(t: DateTime<Utc>) -> Result<time::OffsetDateTime, PkiError> {
    time::OffsetDateTime::from_unix_timestamp(t.timestamp())
        .map_err(|e| PkiError::Issue(format!("time {t}: {e}")))
}

pub(crate) fn first_pem_der(pem: &str) -> Option<Vec<u8>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()?
        .ok()
        .map(|c| c.to_vec())
}

pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn read(path: &Path) -> Result<String, PkiError> {
    std::fs::read_to_string(path).map_err(|e| PkiError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<(), PkiError> {
    let io = |e: std::io::Error| PkiError::Io {
        path: dir.to_owned(),
        reason: e.to_string(),
    };
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io)
}

/// A TLS client certificate's parameters: CN `cn`, OU `ou`, clientAuth, valid from `now` (less
/// [`CLOCK_SKEW`]) for `validity`.
pub(crate) fn client_params(
    cn: &str,
    ou: &str,
    validity: Duration,
    now: DateTime<Utc>,
) -> Result<CertificateParams, PkiError> {
    let mut params =
        CertificateParams::new(Vec::<String>::new()).map_err(|e| PkiError::Issue(e.to_string()))?;
    params.distinguished_name.push(DnType::CommonName, cn);
    params
        .distinguished_name
        .push(DnType::OrganizationalUnitName, ou);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = to_time(now - CLOCK_SKEW)?;
    params.not_after = to_time(now + validity)?;
    Ok(params)
}

/// Writes `path` through a temporary file and a rename, so a crash never leaves half a key;
/// `private` files are created with mode 0600.
pub fn write_file(path: &Path, contents: &str, private: bool) -> Result<(), PkiError> {
    let io = |e: std::io::Error| PkiError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let tmp = path.with_extension("pem.tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, if private { 0o600 } else { 0o644 });
    let mut file = options.open(&tmp).map_err(io)?;
    file.write_all(contents.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Appends `lines` with one write (O_APPEND), so concurrent writers do not lose each other's.
pub(crate) fn append_lines(path: &Path, lines: &str) -> Result<(), PkiError> {
    let io = |e: std::io::Error| PkiError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    // A file edited by hand may lack its last newline: the first line appended stays its own.
    let mut text = String::with_capacity(lines.len() + 1);
    let len = file.metadata().map_err(io)?.len();
    if len > 0 {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut last = [0u8; 1];
        let mut reader = std::fs::File::open(path).map_err(io)?;
        reader.seek(SeekFrom::Start(len - 1)).map_err(io)?;
        reader.read_exact(&mut last).map_err(io)?;
        if last[0] != b'\n' {
            text.push('\n');
        }
    }
    text.push_str(lines);
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-25T10:00:00Z".parse().unwrap()
    }

    #[test]
    fn the_ca_is_created_once_and_the_same_ca_is_loaded_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let pki_dir = dir.path().join("pki");
        let first = HubPki::load_or_create(&pki_dir, now()).unwrap();
        let again = HubPki::load_or_create(&pki_dir, now() + Duration::days(1)).unwrap();
        assert_eq!(first.pin(), again.pin());
        let pem = std::fs::read_to_string(first.ca_file()).unwrap();
        let der = first_pem_der(&pem).unwrap();
        assert!(first.pin().matches(&der));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&pki_dir.join(CA_KEY)), 0o600);
            assert_eq!(mode(&pki_dir), 0o700);
        }
    }

    #[test]
    fn half_a_ca_or_a_foreign_key_is_an_error_that_names_the_files_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let pki_dir = dir.path().join("pki");
        HubPki::load_or_create(&pki_dir, now()).unwrap();
        let key = std::fs::read(pki_dir.join(CA_KEY)).unwrap();
        std::fs::remove_file(pki_dir.join(CA_KEY)).unwrap();
        let e = HubPki::load_or_create(&pki_dir, now())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ca.pem exists but") && e.contains("ca-key.pem"),
            "{e}"
        );
        assert!(
            !pki_dir.join(CA_KEY).exists(),
            "nothing is created over half a CA"
        );
        std::fs::write(pki_dir.join(CA_KEY), key).unwrap();

        let other = tempfile::tempdir().unwrap();
        HubPki::load_or_create(other.path(), now()).unwrap();
        std::fs::copy(other.path().join(CA_KEY), pki_dir.join(CA_KEY)).unwrap();
        let e = HubPki::load_or_create(&pki_dir, now())
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not the key of the certificate"), "{e}");
    }

    #[test]
    fn the_serving_certificate_verifies_against_the_ca_for_its_names_only() {
        use rustls::client::danger::ServerCertVerifier;
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
        let dir = tempfile::tempdir().unwrap();
        let pki = HubPki::load_or_create(dir.path(), now()).unwrap();
        let tls = pki
            .issue_serving(&["hub.example".into(), "10.1.2.3".into()], now())
            .unwrap();
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(&tls.cert_chain_file)
                .unwrap()
                .map(Result::unwrap)
                .collect();
        assert_eq!(
            chain.len(),
            2,
            "the broker sends its certificate and the CA"
        );
        assert!(pki.pin().matches(&chain[1]));
        let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            (now() + Duration::days(2)).timestamp() as u64,
        ));
        let roots = {
            let mut r = rustls::RootCertStore::empty();
            r.add(chain[1].clone()).unwrap();
            std::sync::Arc::new(r)
        };
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
            roots,
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        for name in ["hub.example", "10.1.2.3"] {
            let server = ServerName::try_from(name).unwrap();
            webpki
                .verify_server_cert(&chain[0], &chain[1..], &server, &[], at)
                .unwrap();
        }
        let other = ServerName::try_from("other.example").unwrap();
        assert!(
            webpki
                .verify_server_cert(&chain[0], &chain[1..], &other, &[], at)
                .is_err()
        );
    }
}
