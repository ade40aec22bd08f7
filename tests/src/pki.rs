//! Certificates for TLS tests, made with rcgen: a CA, a broker certificate it signs (for
//! `localhost` and 127.0.0.1), and files a broker and clients read.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};

/// A CA and a broker certificate signed by it, as PEM files in a directory.
#[derive(Debug, Clone)]
pub struct TestPki {
    /// The CA certificate (what clients trust).
    pub ca_file: PathBuf,
    /// The broker's certificate.
    pub server_cert_file: PathBuf,
    /// The broker's private key.
    pub server_key_file: PathBuf,
}

impl TestPki {
    /// Writes `NAME-ca.pem`, `NAME-server.pem` and `NAME-server-key.pem` into `dir`.
    ///
    /// # Panics
    /// When rcgen or the file system fails: a harness failure.
    pub fn create(dir: &Path, name: &str) -> TestPki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().expect("server key");
        let mut server_params =
            CertificateParams::new(vec!["localhost".to_owned()]).expect("server params");
        server_params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        server_params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let server_cert = server_params
            .signed_by(&server_key, &issuer)
            .expect("server certificate");

        let pki = TestPki {
            ca_file: dir.join(format!("{name}-ca.pem")),
            server_cert_file: dir.join(format!("{name}-server.pem")),
            server_key_file: dir.join(format!("{name}-server-key.pem")),
        };
        std::fs::write(&pki.ca_file, ca_cert.pem()).expect("write CA");
        std::fs::write(&pki.server_cert_file, server_cert.pem()).expect("write server cert");
        std::fs::write(&pki.server_key_file, server_key.serialize_pem()).expect("write key");
        pki
    }
}
