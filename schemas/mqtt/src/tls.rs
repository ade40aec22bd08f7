//! TLS for `mqtts://` with rustls and the ring provider (DESIGN.md decision 10): the broker is
//! verified against the system's roots or a CA file, and a client certificate and key can be
//! presented for brokers that want mutual TLS. Files are read once, when the session is built, so
//! a wrong path fails the start instead of every reconnect.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

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
        self.check()?;
        install_crypto_provider();
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
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| TlsError::Refused(e.to_string()))?
                .with_root_certificates(roots);
        let config = match (&self.client_cert_file, &self.client_key_file) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| TlsError::Refused(e.to_string()))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
