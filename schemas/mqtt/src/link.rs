//! Why a connection to the broker failed or ended, in words an operator can act on.
//!
//! rumqttc reports a refused port, an untrusted certificate, a refused login and a dead link as
//! different shapes of `ConnectionError`; [`LinkError::classify`] turns them into one error per
//! cause, each naming the broker.

use rumqttc::v5::ConnectionError;
use rumqttc::v5::mqttbytes::v5::ConnectReturnCode;

use crate::BrokerUrl;

/// Why the link to the broker is down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Nothing listens at the address. Retryable once the broker runs.
    #[error(
        "cannot connect to the MQTT broker at {url}: connection refused (is the broker or `ocm-edge hub` running there? set --broker or OCM_EDGE_BROKER to its address)"
    )]
    Refused {
        /// The broker.
        url: String,
    },
    /// The broker's certificate is not trusted. Not retryable as is.
    #[error(
        "the MQTT broker at {url} presented a certificate that is not trusted ({reason}): give the CA that signed it with --broker-ca-file or its pin with --broker-ca-pin (`ocm-edge hub` prints it), or check the host name in the URL"
    )]
    Untrusted {
        /// The broker.
        url: String,
        /// What rustls said.
        reason: String,
    },
    /// The broker refused the username and password (or their absence). Not retryable as is.
    #[error(
        "the MQTT broker at {url} refused {} ({code}): the hub's embedded broker lets the CLI in with an admin credential (--credentials FILE or OCM_EDGE_CREDENTIALS; an admin makes one with `ocm-edge user create`) and an agent with its own key unless its cluster is denied or accepted with another key (`ocm-edge cluster get`, and the hub's log, say why); for another broker check --broker-username and --broker-password (or OCM_EDGE_BROKER_USERNAME and OCM_EDGE_BROKER_PASSWORD)",
        user.as_deref().map_or_else(|| "a client without credentials".to_owned(), |u| format!("the credentials for user {u:?}"))
    )]
    LoginRefused {
        /// The broker.
        url: String,
        /// The username sent, if any.
        user: Option<String>,
        /// The broker's reason code.
        code: String,
    },
    /// The broker refused the connection for another reason (e.g. a client id in use, quota).
    #[error("the MQTT broker at {url} refused the connection: {code}")]
    NotAccepted {
        /// The broker.
        url: String,
        /// The broker's reason code.
        code: String,
    },
    /// The broker refused the client certificate this side presented (a TLS alert after the
    /// handshake: revoked, expired, or from a CA it does not trust). Not retryable as is.
    #[error(
        "the MQTT broker at {url} refused this client's certificate ({alert}): a revoked certificate is a cluster the hub denied or accepted with another key (`ocm-edge cluster get`), an expired one is renewed through --broker with the cluster's own key; otherwise check that the broker trusts the CA that issued it"
    )]
    CertificateRefused {
        /// The broker.
        url: String,
        /// The TLS alert it sent (e.g. `CertificateRevoked`).
        alert: String,
    },
    /// No CONNACK in time. Retryable.
    #[error(
        "the MQTT broker at {url} did not answer within {secs} s (is it reachable from here? raise --timeout on a slow link)"
    )]
    Timeout {
        /// The broker.
        url: String,
        /// The connect timeout.
        secs: u64,
    },
    /// A connection attempt failed before the broker ever answered (name lookup, network,
    /// TLS to a plain port). Retryable.
    #[error(
        "cannot reach the MQTT broker at {url}: {reason} (check the host and port in --broker, and whether the broker expects mqtts://)"
    )]
    Unreachable {
        /// The broker.
        url: String,
        /// What happened.
        reason: String,
    },
    /// An established link ended. Retryable.
    #[error("lost the connection to the MQTT broker at {url}: {reason}")]
    Lost {
        /// The broker.
        url: String,
        /// What happened.
        reason: String,
    },
}

impl LinkError {
    /// Sorts a rumqttc error by cause; `ever_connected` tells a lost link from a broker that was
    /// never reached.
    pub fn classify(
        url: &BrokerUrl,
        user: Option<&str>,
        timeout_secs: u64,
        ever_connected: bool,
        e: &ConnectionError,
    ) -> Self {
        let url = url.to_string();
        if let Some(alert) = certificate_alert(e) {
            return LinkError::CertificateRefused {
                url,
                alert: format!("{alert:?}"),
            };
        }
        match e {
            ConnectionError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                LinkError::Refused { url }
            }
            ConnectionError::Timeout(_) => LinkError::Timeout {
                url,
                secs: timeout_secs,
            },
            ConnectionError::ConnectionRefused(
                code @ (ConnectReturnCode::BadUserNamePassword | ConnectReturnCode::NotAuthorized),
            ) => LinkError::LoginRefused {
                url,
                user: user.map(str::to_owned),
                code: format!("{code:?}"),
            },
            ConnectionError::ConnectionRefused(code) => LinkError::NotAccepted {
                url,
                code: format!("{code:?}"),
            },
            ConnectionError::Tls(tls) => match untrusted(tls) {
                Some(reason) => LinkError::Untrusted { url, reason },
                None if ever_connected => LinkError::Lost {
                    url,
                    reason: format!("TLS: {tls}"),
                },
                None => LinkError::Unreachable {
                    url,
                    reason: format!("TLS: {tls}"),
                },
            },
            other if ever_connected => LinkError::Lost {
                url,
                reason: other.to_string(),
            },
            other => LinkError::Unreachable {
                url,
                reason: other.to_string(),
            },
        }
    }

    /// Whether waiting and trying again may help without changing anything.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LinkError::Refused { .. }
                | LinkError::Timeout { .. }
                | LinkError::Unreachable { .. }
                | LinkError::Lost { .. }
        )
    }
}

/// The TLS alert by which a broker refused the client certificate this side presented, if that
/// is why `e` happened. With TLS 1.3 the client's handshake is over before the broker checks its
/// certificate, so the alert comes with the first read after it: rumqttc reports it as an I/O
/// error of reading the CONNECT's answer, wrapped in its MQTT decoding error (whose `source()`
/// does not lead to it), not as a TLS error.
pub fn certificate_alert(e: &ConnectionError) -> Option<rustls::AlertDescription> {
    use rumqttc::v5::StateError;
    use rumqttc::v5::mqttbytes::Error as MqttError;
    match e {
        ConnectionError::Io(io)
        | ConnectionError::MqttState(
            StateError::Io(io) | StateError::Deserialization(MqttError::Io(io)),
        )
        | ConnectionError::Tls(rumqttc::TlsError::Io(io)) => io_certificate_alert(io),
        ConnectionError::Tls(rumqttc::TlsError::TLS(tls)) => refusal(tls),
        _ => None,
    }
}

/// [`certificate_alert`] of an I/O error of a TLS stream.
pub fn io_certificate_alert(io: &std::io::Error) -> Option<rustls::AlertDescription> {
    refusal(io.get_ref()?.downcast_ref::<rustls::Error>()?)
}

fn refusal(e: &rustls::Error) -> Option<rustls::AlertDescription> {
    use rustls::AlertDescription as A;
    match e {
        rustls::Error::AlertReceived(
            alert @ (A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::CertificateRequired
            | A::UnknownCA),
        ) => Some(*alert),
        _ => None,
    }
}

/// The certificate problem behind a TLS error, if that is what it is.
fn untrusted(e: &rumqttc::TlsError) -> Option<String> {
    let rustls_error = match e {
        rumqttc::TlsError::TLS(e) => Some(e),
        rumqttc::TlsError::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    }?;
    match rustls_error {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(e)) => {
            Some(e.to_string())
        }
        rustls::Error::InvalidCertificate(reason) => Some(format!("{reason:?}")),
        _ => None,
    }
}
