//! The cluster CA: issues each accepted cluster's TLS client certificate
//! ([`crate::registration::certificates`]) and the list of those revoked, for brokers that take a
//! certificate as the cluster's identity (Mosquitto: `cafile` and `crlfile` of its cluster
//! listener, `broker-config/mosquitto/`).
//!
//! Apart from the hub's CA on purpose: a broker that trusts this CA for identities trusts
//! nothing else the hub signs (user credentials, the broker's and the signer's certificates), so
//! no credential can pose as a cluster there.
//!
//! Files in `DATA_DIR/pki/` (0700): `cluster-ca.pem`, `cluster-ca-key.pem` (0600, ECDSA P-256,
//! 10 years), created at the hub's first start. What a broker reads, in `DATA_DIR/broker-files/`
//! (0755, files 0644: a broker such as Mosquitto drops to a user of its own before it reads
//! them, and neither is secret): `cluster-ca.pem` again, and `cluster-crl.pem`, rewritten
//! whenever the revoked certificates change and at every start.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use rcgen::{
    CertificateRevocationListParams, Issuer, KeyIdMethod, KeyPair, RevocationReason,
    RevokedCertParams, SerialNumber, SubjectPublicKeyInfo,
};

use crate::pki::{
    CLOCK_SKEW, CLUSTER_OU, PkiError, ca_files_exist, client_params, create_ca_files,
    create_private_dir, random_serial, to_time, write_file,
};
use crate::registration::certificates::{
    ClusterCertIssuer, ClusterCertificate, RevokedCertificate,
};

const CERT: &str = "cluster-ca.pem";
/// The directory, beside `pki/` in the hub's data directory, of the files a broker reads.
pub const BROKER_FILES: &str = "broker-files";
const KEY: &str = "cluster-ca-key.pem";
/// The revocation list's file name in the pki directory.
pub const CRL: &str = "cluster-crl.pem";
/// How long a revocation list the hub writes is valid: five years. A broker refuses every
/// certificate once the list it holds is past its end, and Mosquitto holds the one it read at its
/// last reload, however old; the hub writes the file again at every start, change and month.
pub const CRL_VALIDITY: Duration = Duration::days(5 * 365);

/// The Ed25519 SubjectPublicKeyInfo prefix (RFC 8410): the raw 32-byte key follows.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The cluster CA, loaded or created.
#[derive(Debug)]
pub struct ClusterCa {
    /// [`BROKER_FILES`].
    public: PathBuf,
    ca_pem: String,
    ca_key_pem: String,
}

impl ClusterCa {
    /// Loads the cluster CA from `data_dir/pki`, or creates it when neither of its files
    /// exists, and writes its certificate to `data_dir/broker-files/` for brokers.
    ///
    /// # Errors
    /// [`PkiError`] for a half CA, files that cannot be used or written.
    pub fn load_or_create(data_dir: &Path, now: DateTime<Utc>) -> Result<Self, PkiError> {
        let ca = Self::load_or_create_in(&data_dir.join("pki"), now)?;
        let public = data_dir.join(BROKER_FILES);
        std::fs::create_dir_all(&public).map_err(|e| PkiError::Io {
            path: public.clone(),
            reason: e.to_string(),
        })?;
        write_file(&public.join(CERT), &ca.ca_pem, false)?;
        Ok(ClusterCa { public, ..ca })
    }

    fn load_or_create_in(dir: &Path, now: DateTime<Utc>) -> Result<Self, PkiError> {
        create_private_dir(dir)?;
        if !ca_files_exist(dir, CERT, KEY)? {
            let (cert, key) = create_ca_files(dir, CERT, KEY, "ocm-edge cluster CA", now)?;
            tracing::info!(dir = %dir.display(), "created the cluster CA (clusters' client certificates)");
            return Ok(ClusterCa {
                public: dir.to_owned(),
                ca_pem: cert.pem(),
                ca_key_pem: key.serialize_pem(),
            });
        }
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| PkiError::Io {
                path: p.to_owned(),
                reason: e.to_string(),
            })
        };
        let ca = ClusterCa {
            public: dir.to_owned(),
            ca_pem: read(&dir.join(CERT))?,
            ca_key_pem: read(&dir.join(KEY))?,
        };
        // Fails now, not at the first `cluster accept`.
        ca.issuer().map_err(|e| PkiError::BadCa {
            dir: dir.to_owned(),
            reason: format!("{CERT} / {KEY}: {e}"),
        })?;
        Ok(ca)
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>, rcgen::Error> {
        let key = KeyPair::from_pem(&self.ca_key_pem)?;
        Issuer::from_ca_cert_pem(&self.ca_pem, key)
    }

    /// The cluster CA's certificate file for brokers (what a broker's cluster listener trusts).
    pub fn ca_file(&self) -> PathBuf {
        self.public.join(CERT)
    }

    /// The revocation list's file.
    pub fn crl_file(&self) -> PathBuf {
        self.public.join(CRL)
    }

    /// Writes the revocation list of `revoked` (signed by the cluster CA, valid for
    /// [`CRL_VALIDITY`]) to [`ClusterCa::crl_file`].
    ///
    /// # Errors
    /// [`PkiError`] for a serial that is not hex, or a file that cannot be written.
    pub fn write_crl(
        &self,
        revoked: &[RevokedCertificate],
        now: DateTime<Utc>,
    ) -> Result<(), PkiError> {
        let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
        let revoked_certs = revoked
            .iter()
            .map(|r| {
                let serial = hex::decode(&r.serial)
                    .map_err(|e| PkiError::Issue(format!("serial {:?}: {e}", r.serial)))?;
                Ok(RevokedCertParams {
                    serial_number: SerialNumber::from_slice(&serial),
                    revocation_time: to_time(r.revoked_at)?,
                    reason_code: Some(RevocationReason::CessationOfOperation),
                    invalidity_date: None,
                })
            })
            .collect::<Result<Vec<_>, PkiError>>()?;
        let params = CertificateRevocationListParams {
            this_update: to_time(now - CLOCK_SKEW)?,
            next_update: to_time(now + CRL_VALIDITY)?,
            crl_number: SerialNumber::from(u64::try_from(now.timestamp()).unwrap_or(1)),
            issuing_distribution_point: None,
            revoked_certs,
            key_identifier_method: KeyIdMethod::Sha256,
        };
        let crl = params
            .signed_by(&self.issuer().map_err(issue)?)
            .map_err(issue)?;
        write_file(&self.crl_file(), &crl.pem().map_err(issue)?, false)
    }

    /// A client certificate for `cluster` (CN, OU `cluster`, clientAuth) certifying the agent's
    /// Ed25519 key `agent_key` (base64 of its 32 bytes), with a random serial number.
    ///
    /// # Errors
    /// [`PkiError::Issue`] for a key that is not 32 bytes of base64, or what rcgen refuses.
    pub fn issue_for_key(
        &self,
        cluster: &str,
        agent_key: &str,
        validity: Duration,
        now: DateTime<Utc>,
    ) -> Result<ClusterCertificate, PkiError> {
        let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
        let raw = base64::engine::general_purpose::STANDARD
            .decode(agent_key)
            .ok()
            .filter(|k| k.len() == 32)
            .ok_or_else(|| {
                PkiError::Issue(format!("agent key {agent_key:?} is no Ed25519 public key"))
            })?;
        let spki = [ED25519_SPKI_PREFIX.as_slice(), &raw].concat();
        let public = SubjectPublicKeyInfo::from_der(&spki).map_err(issue)?;
        let mut params = client_params(cluster, CLUSTER_OU, validity, now)?;
        // Back-dated for clocks behind the hub's, by a tenth of a short validity at most (the
        // agent renews after two thirds of the whole span).
        let not_before = now - CLOCK_SKEW.min(validity / 10);
        let not_after = now + validity;
        params.not_before = to_time(not_before)?;
        params.not_after = to_time(not_after)?;
        let serial = random_serial()?;
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        let cert = params
            .signed_by(&public, &self.issuer().map_err(issue)?)
            .map_err(issue)?;
        Ok(ClusterCertificate {
            pem: format!("{}{}", cert.pem(), self.ca_pem),
            serial: hex::encode(serial),
            // Whole seconds, as in the certificate.
            not_before: DateTime::from_timestamp(not_before.timestamp(), 0).unwrap_or(not_before),
            not_after: DateTime::from_timestamp(not_after.timestamp(), 0).unwrap_or(not_after),
            agent_key: agent_key.to_owned(),
        })
    }
}

impl ClusterCa {
    /// A short-lived certificate for `cluster` (the fields of [`ClusterCa::issue_for_key`]) for a
    /// key made here and kept only in memory, with `serial` (hex) or a random serial number:
    /// what the hub logs in with to drop a revoked cluster's session on a broker's certificate
    /// listener ([`crate::registration::evict`]). With the revoked certificate's serial it is refused wherever
    /// the broker has read the revocation list, which is how the hub tells that it has.
    ///
    /// # Errors
    /// [`PkiError::Issue`] for a serial that is not hex, or what rcgen refuses.
    pub fn issue_ephemeral(
        &self,
        cluster: &str,
        serial: Option<&str>,
        validity: Duration,
        now: DateTime<Utc>,
    ) -> Result<
        (
            Vec<rustls::pki_types::CertificateDer<'static>>,
            rustls::pki_types::PrivateKeyDer<'static>,
        ),
        PkiError,
    > {
        let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
        let key = KeyPair::generate().map_err(issue)?;
        let mut params = client_params(cluster, CLUSTER_OU, validity, now)?;
        params.not_before = to_time(now - CLOCK_SKEW.min(validity / 10))?;
        let serial = match serial {
            Some(hex_serial) => hex::decode(hex_serial)
                .map_err(|e| PkiError::Issue(format!("serial {hex_serial:?}: {e}")))?,
            None => random_serial()?.to_vec(),
        };
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        let cert = params
            .signed_by(&key, &self.issuer().map_err(issue)?)
            .map_err(issue)?;
        let ca = crate::pki::first_pem_der(&self.ca_pem)
            .ok_or_else(|| PkiError::Issue("the cluster CA's certificate is not PEM".to_owned()))?;
        Ok((
            vec![cert.der().clone(), ca.into()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        ))
    }
}

impl ClusterCertIssuer for ClusterCa {
    fn issue(
        &self,
        cluster: &str,
        agent_key: &str,
        validity: Duration,
        now: DateTime<Utc>,
    ) -> Result<ClusterCertificate, String> {
        self.issue_for_key(cluster, agent_key, validity, now)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::{CertificateRevocationList, FromDer, X509Certificate};

    fn agent_key() -> (ring::signature::Ed25519KeyPair, String) {
        let rng = ring::rand::SystemRandom::new();
        let doc = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let key = ring::signature::Ed25519KeyPair::from_pkcs8(doc.as_ref()).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD
            .encode(ring::signature::KeyPair::public_key(&key).as_ref());
        (key, b64)
    }

    #[test]
    fn a_cluster_certificate_names_the_cluster_certifies_its_key_and_chains_to_the_cluster_ca() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let ca = ClusterCa::load_or_create(dir.path(), now).unwrap();
        let hub_ca = crate::pki::HubPki::load_or_create(&dir.path().join("pki"), now).unwrap();
        let (_, key) = agent_key();
        let cert = ca
            .issue_for_key("edge-1", &key, Duration::days(30), now)
            .unwrap();
        let der = crate::pki::first_pem_der(&cert.pem).unwrap();
        let (_, x509) = X509Certificate::from_der(&der).unwrap();
        let cn = x509.subject().iter_common_name().next().unwrap();
        assert_eq!(cn.as_str().unwrap(), "edge-1");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .encode(&*x509.public_key().subject_public_key.data),
            key
        );
        assert_eq!(hex::encode(x509.raw_serial()), cert.serial);
        assert_eq!(
            x509.validity().not_after.timestamp(),
            cert.not_after.timestamp()
        );
        // Signed by the cluster CA, not by the hub's CA.
        let ca_der =
            crate::pki::first_pem_der(&std::fs::read_to_string(ca.ca_file()).unwrap()).unwrap();
        let (_, ca_x509) = X509Certificate::from_der(&ca_der).unwrap();
        assert!(x509.verify_signature(Some(ca_x509.public_key())).is_ok());
        let hub_der = hub_ca.ca_der().unwrap();
        let (_, hub_x509) = X509Certificate::from_der(&hub_der).unwrap();
        assert!(x509.verify_signature(Some(hub_x509.public_key())).is_err());
        // Loaded again: the same CA.
        let again = ClusterCa::load_or_create(dir.path(), now).unwrap();
        assert_eq!(again.ca_pem, ca.ca_pem);
    }

    #[test]
    fn a_key_that_is_no_ed25519_key_is_refused_with_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let ca = ClusterCa::load_or_create(dir.path(), Utc::now()).unwrap();
        let err = ca
            .issue_for_key("edge-1", "c2hvcnQ=", Duration::days(30), Utc::now())
            .unwrap_err();
        assert!(err.to_string().contains("c2hvcnQ="), "{err}");
    }

    #[test]
    fn the_revocation_list_holds_the_revoked_serials() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let ca = ClusterCa::load_or_create(dir.path(), now).unwrap();
        let (_, key) = agent_key();
        let cert = ca
            .issue_for_key("edge-1", &key, Duration::days(30), now)
            .unwrap();
        ca.write_crl(
            &[RevokedCertificate {
                serial: cert.serial.clone(),
                revoked_at: now,
                not_after: cert.not_after,
            }],
            now,
        )
        .unwrap();
        let pem = std::fs::read_to_string(ca.crl_file()).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let (_, crl) = CertificateRevocationList::from_der(&pem.contents).unwrap();
        let serials: Vec<String> = crl
            .iter_revoked_certificates()
            .map(|r| hex::encode(r.raw_serial()))
            .collect();
        assert_eq!(serials, vec![cert.serial]);
        assert!(crl.next_update().is_some());
    }

    #[test]
    fn a_login_certificate_names_the_cluster_with_the_serial_asked_and_lives_minutes() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let ca = ClusterCa::load_or_create(dir.path(), now).unwrap();
        let (chain, key) = ca
            .issue_ephemeral("edge-1", Some("0a0b0c"), Duration::minutes(10), now)
            .unwrap();
        let (_, x509) = X509Certificate::from_der(&chain[0]).unwrap();
        assert_eq!(
            x509.subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "edge-1"
        );
        assert_eq!(hex::encode(x509.raw_serial()), "0a0b0c");
        assert_eq!(
            x509.validity().not_after.timestamp(),
            (now + Duration::minutes(10)).timestamp()
        );
        // Chained to the cluster CA, which travels with it, and its key is the one given.
        let (_, ca_x509) = X509Certificate::from_der(&chain[1]).unwrap();
        assert!(x509.verify_signature(Some(ca_x509.public_key())).is_ok());
        let rustls::pki_types::PrivateKeyDer::Pkcs8(der) = key else {
            panic!("not PKCS#8")
        };
        let pair = KeyPair::try_from(der.secret_pkcs8_der()).unwrap();
        assert_eq!(
            pair.public_key_raw(),
            &*x509.public_key().subject_public_key.data
        );
        // Without a serial: a fresh random one each time.
        let serial = |c: &[rustls::pki_types::CertificateDer<'static>]| {
            hex::encode(X509Certificate::from_der(&c[0]).unwrap().1.raw_serial())
        };
        let a = ca
            .issue_ephemeral("edge-1", None, Duration::minutes(10), now)
            .unwrap();
        let b = ca
            .issue_ephemeral("edge-1", None, Duration::minutes(10), now)
            .unwrap();
        assert_ne!(serial(&a.0), serial(&b.0));
        assert!(
            ca.issue_ephemeral("edge-1", Some("zz"), Duration::minutes(10), now)
                .is_err()
        );
    }
}
