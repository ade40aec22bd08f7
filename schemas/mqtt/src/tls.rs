//! TLS for `mqtts://` with rustls and the ring provider (one provider for the whole process;
//! ARCHITECTURE.md): the broker is verified against the system's roots, a CA file, or only the CA
//! whose SHA-256 is pinned ([`CaPin`], how an agent trusts a hub it has never seen, like kubeadm's
//! `--discovery-token-ca-cert-hash`), and a client certificate and key can be presented for brokers
//! that want mutual TLS. Files are read once, when the session is built, so a wrong path
//! fails the start instead of every reconnect.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Once};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

/// Installs ring as rustls' process-wide provider, once per process. kube-rs and anything else
/// that asks rustls for the default provider then agrees with the MQTT layer.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another component installed a provider first; ours are built with ring
        // explicitly anyway (see `client_config`).
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A TLS setting that cannot be used. Not retryable: a file or flag must be fixed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read or holds nothing usable.
    #[error("TLS file {path}: {reason}")]
    File {
        /// The file as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Only one of the client certificate and key was given.
    #[error(
        "a client certificate needs its key and a key its certificate: give both or neither (--broker-client-cert and --broker-client-key)"
    )]
    HalfClientPair,
    /// TLS files were given for a plain `mqtt://` broker.
    #[error(
        "TLS files are set but the broker URL {0} is not mqtts://: use mqtts:// or drop the files"
    )]
    FilesWithoutTls(String),
    /// The system has no usable root certificates.
    #[error(
        "no system CA certificates could be loaded ({0}): give the broker's CA with --broker-ca-file"
    )]
    NoSystemRoots(String),
    /// rustls refused the material (e.g. a key that does not match).
    #[error("TLS configuration refused: {0}")]
    Refused(String),
    /// A CA pin that is not `sha256:` and 64 hex digits.
    #[error(
        "CA pin {0:?} is not sha256:<64 hex digits> (the hub prints its pin at start; `openssl x509 -in ca.pem -outform der | sha256sum` computes it)"
    )]
    BadPin(String),
    /// A CA file was given with a pin, and no certificate in it has the pinned hash.
    #[error(
        "no certificate in the CA file {path} matches the pin {pin}: give the hub's CA, or the pin of this file"
    )]
    PinMismatch {
        /// The CA file.
        path: String,
        /// The pin given.
        pin: CaPin,
    },
}

/// The SHA-256 of a CA certificate (its DER encoding), written `sha256:<hex>`: a client given a
/// pin trusts a broker only when the chain the broker presents holds a CA with that hash and the
/// broker's certificate verifies against it (name, validity, signature). `ocm-edge hub` prints
/// the pin of the CA it created; `openssl x509 -in ca.pem -outform der | sha256sum` computes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CaPin([u8; 32]);

impl CaPin {
    /// The pin of a DER certificate.
    pub fn of_der(der: &[u8]) -> Self {
        CaPin(Sha256::digest(der).into())
    }

    /// Whether `cert` is the pinned one.
    pub fn matches(&self, cert: &[u8]) -> bool {
        Self::of_der(cert) == *self
    }
}

impl fmt::Display for CaPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

impl fmt::Debug for CaPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for CaPin {
    type Err = TlsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || TlsError::BadPin(s.to_owned());
        let digits = s.trim().strip_prefix("sha256:").ok_or_else(bad)?;
        let mut pin = [0u8; 32];
        hex::decode_to_slice(digits, &mut pin).map_err(|_| bad())?;
        Ok(CaPin(pin))
    }
}

/// TLS material for an `mqtts://` broker, as PEM files. Without a CA file the system's roots are
/// trusted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsFiles {
    /// PEM bundle of the CA(s) that signed the broker's certificate.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (chain), for brokers that want mutual TLS.
    pub client_cert_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    pub client_key_file: Option<PathBuf>,
    /// Trust only the CA with this hash (and, with [`TlsFiles::ca_file`], check that the file
    /// holds it).
    pub ca_pin: Option<CaPin>,
}

impl TlsFiles {
    /// Whether no file is set.
    pub fn is_empty(&self) -> bool {
        self == &TlsFiles::default()
    }

    /// Checks the combination without reading anything.
    ///
    /// # Errors
    /// [`TlsError::HalfClientPair`].
    pub fn check(&self) -> Result<(), TlsError> {
        if self.client_cert_file.is_some() != self.client_key_file.is_some() {
            return Err(TlsError::HalfClientPair);
        }
        Ok(())
    }

    /// Reads the files and builds a rustls client configuration with the ring provider.
    ///
    /// # Errors
    /// [`TlsError`] naming the file that cannot be used.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        self.client_config_with(None)
    }

    /// [`TlsFiles::client_config`], presenting `identity` (a certificate chain and its key held
    /// in memory) instead of the client certificate files, which are then neither read nor
    /// checked.
    ///
    /// # Errors
    /// [`TlsError`] naming the file that cannot be used, or a key rustls refuses.
    pub fn client_config_with(
        &self,
        identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    ) -> Result<Arc<ClientConfig>, TlsError> {
        if identity.is_none() {
            self.check()?;
        }
        install_crypto_provider();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Refused(e.to_string()))?;
        let builder = if let Some(pin) = self.ca_pin {
            if let Some(path) = &self.ca_file
                && !read_certs(path)?.iter().any(|c| pin.matches(c))
            {
                return Err(TlsError::PinMismatch {
                    path: path.display().to_string(),
                    pin,
                });
            }
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedCa { pin, provider }))
        } else {
            builder.with_root_certificates(self.roots()?)
        };
        let identity = match (identity, &self.client_cert_file, &self.client_key_file) {
            (Some(identity), _, _) => Some(identity),
            (None, Some(cert), Some(key)) => Some((read_certs(cert)?, read_private_key(key)?)),
            _ => None,
        };
        let config = match identity {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsError::Refused(e.to_string()))?,
            None => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }

    fn roots(&self) -> Result<RootCertStore, TlsError> {
        let mut roots = RootCertStore::empty();
        match &self.ca_file {
            Some(path) => {
                for cert in read_certs(path)? {
                    roots.add(cert).map_err(|e| file_error(path, e))?;
                }
            }
            None => {
                let loaded = rustls_native_certs::load_native_certs();
                let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
                if added == 0 {
                    let why = loaded
                        .errors
                        .first()
                        .map_or_else(|| "none found".to_owned(), ToString::to_string);
                    return Err(TlsError::NoSystemRoots(why));
                }
            }
        }
        Ok(roots)
    }
}

/// A private key file: PEM, or PKCS#8 DER (an agent's `agent-key.p8`, which signs the TLS
/// handshake with the cluster's certificate).
fn read_private_key(path: &std::path::Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    match PrivateKeyDer::from_pem_file(path) {
        Ok(key) => Ok(key),
        Err(pem_error) => match std::fs::read(path) {
            // A DER SEQUENCE: rustls tells a key it cannot use when the config is built.
            Ok(bytes) if bytes.first() == Some(&0x30) => Ok(PrivateKeyDer::Pkcs8(bytes.into())),
            _ => Err(file_error(path, pem_error)),
        },
    }
}

/// The broker's chain lacks the pinned CA.
#[derive(Debug, thiserror::Error)]
#[error(
    "its chain holds no CA with the pinned {0}: another hub, or a broker that does not send its CA"
)]
struct NotPinned(CaPin);

/// Trusts the broker when the chain it presents holds the pinned CA and its certificate verifies
/// against that CA alone (webpki: name, validity, signatures), as it would with the CA as the only
/// root.
#[derive(Debug)]
struct PinnedCa {
    pin: CaPin,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCa {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let ca = intermediates
            .iter()
            .find(|c| self.pin.matches(c))
            .ok_or_else(|| {
                rustls::Error::InvalidCertificate(rustls::CertificateError::Other(
                    rustls::OtherError(Arc::new(NotPinned(self.pin))),
                ))
            })?;
        let mut roots = RootCertStore::empty();
        roots.add(ca.clone().into_owned())?;
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), self.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, e))?;
    if certs.is_empty() {
        return Err(file_error(path, "no PEM certificate in it"));
    }
    Ok(certs)
}

/// The DER of the codeSigning extended key usage (1.3.6.1.5.5.7.3.3), which the hub's event
/// signing certificate has and agents require.
pub const CODE_SIGNING_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// Checks that `cert_der` is a certificate for signing events (extended key usage codeSigning)
/// issued by the CA `ca_der` and valid at `at_unix_secs`: what the hub requires of the signing
/// certificate it keeps and agents of the one they learn.
///
/// # Errors
/// What is wrong, in words.
pub fn verify_code_signing(
    cert_der: &[u8],
    ca_der: &[u8],
    at_unix_secs: u64,
) -> Result<(), String> {
    let ca = rustls::pki_types::CertificateDer::from(ca_der);
    let anchor =
        webpki::anchor_from_trusted_cert(&ca).map_err(|e| format!("the CA certificate: {e}"))?;
    let cert = rustls::pki_types::CertificateDer::from(cert_der);
    let end_entity = webpki::EndEntityCert::try_from(&cert)
        .map_err(|e| format!("the signing certificate: {e}"))?;
    end_entity
        .verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &[],
            rustls::pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                at_unix_secs,
            )),
            webpki::KeyUsage::required(CODE_SIGNING_OID),
            None,
            None,
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_reads_back_as_written_and_bad_pins_say_what_is_expected() {
        let pin = CaPin::of_der(b"a certificate");
        let text = pin.to_string();
        assert!(
            text.starts_with("sha256:") && text.len() == 7 + 64,
            "{text}"
        );
        assert_eq!(text.parse::<CaPin>().unwrap(), pin);
        for bad in [
            "",
            "sha256:",
            "md5:00",
            &text[7..],
            &text[..text.len() - 1],
            "sha256:zz",
        ] {
            let e = bad.parse::<CaPin>().unwrap_err().to_string();
            assert!(e.contains("sha256:<64 hex digits>"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_ca_file_that_does_not_hold_the_pinned_ca_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, ca.cert.pem()).unwrap();
        let right = TlsFiles {
            ca_pin: Some(CaPin::of_der(ca.cert.der())),
            ..ca_only(path.clone())
        };
        right.client_config().unwrap();
        let wrong = TlsFiles {
            ca_pin: Some(CaPin::of_der(b"another CA")),
            ..ca_only(path)
        };
        let e = wrong.client_config().unwrap_err();
        assert!(matches!(e, TlsError::PinMismatch { .. }), "{e}");
    }

    #[test]
    fn half_a_client_pair_is_refused_before_anything_is_read() {
        let files = TlsFiles {
            client_cert_file: Some("/nonexistent/c.pem".into()),
            ..TlsFiles::default()
        };
        assert_eq!(files.client_config().unwrap_err(), TlsError::HalfClientPair);
    }

    fn ca_only(path: PathBuf) -> TlsFiles {
        TlsFiles {
            ca_file: Some(path),
            ..TlsFiles::default()
        }
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_named_in_the_error() {
        let missing = ca_only("/nonexistent/ca.pem".into());
        let e = missing.client_config().unwrap_err().to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = ca_only(empty).client_config().unwrap_err().to_string();
        assert!(
            e.contains("empty.pem") && e.contains("no PEM certificate"),
            "{e}"
        );
    }

    #[test]
    fn a_generated_ca_and_client_pair_make_a_config() {
        let dir = tempfile::tempdir().unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
        let (cert, key) = (dir.path().join("ca.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, ca.cert.pem()).unwrap();
        std::fs::write(&key, ca.signing_key.serialize_pem()).unwrap();
        let files = TlsFiles {
            client_cert_file: Some(cert.clone()),
            client_key_file: Some(key),
            ..ca_only(cert)
        };
        files.client_config().unwrap();
    }

    #[test]
    fn only_a_code_signing_certificate_of_the_ca_valid_at_that_time_is_a_signer() {
        use rcgen::{
            BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
        };
        let ca_params = |name: &str| {
            let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
            p.distinguished_name.push(rcgen::DnType::CommonName, name);
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            p
        };
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params("ca").self_signed(&ca_key).unwrap();
        let other_key = KeyPair::generate().unwrap();
        let other = ca_params("ca").self_signed(&other_key).unwrap();
        let issuer = Issuer::from_ca_cert_der(ca.der(), &ca_key).unwrap();
        let other_issuer = Issuer::from_ca_cert_der(other.der(), &other_key).unwrap();
        let leaf = |usage: ExtendedKeyUsagePurpose, issuer: &Issuer<'_, &KeyPair>| {
            let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
            p.extended_key_usages = vec![usage];
            p.not_before = rcgen::date_time_ymd(2026, 1, 1);
            p.not_after = rcgen::date_time_ymd(2027, 1, 1);
            p.signed_by(&KeyPair::generate().unwrap(), issuer)
                .unwrap()
                .der()
                .to_vec()
        };
        let mid_2026 = 1_780_000_000;
        let signer = leaf(ExtendedKeyUsagePurpose::CodeSigning, &issuer);
        assert_eq!(verify_code_signing(&signer, ca.der(), mid_2026), Ok(()));
        let client = leaf(ExtendedKeyUsagePurpose::ClientAuth, &issuer);
        assert!(verify_code_signing(&client, ca.der(), mid_2026).is_err());
        let foreign = leaf(ExtendedKeyUsagePurpose::CodeSigning, &other_issuer);
        assert!(verify_code_signing(&foreign, ca.der(), mid_2026).is_err());
        let in_2028 = 1_830_000_000;
        let e = verify_code_signing(&signer, ca.der(), in_2028).unwrap_err();
        assert!(e.contains("xpired"), "{e}");
        assert!(verify_code_signing(b"junk", ca.der(), mid_2026).is_err());
        assert!(verify_code_signing(&signer, b"junk", mid_2026).is_err());
    }
}
