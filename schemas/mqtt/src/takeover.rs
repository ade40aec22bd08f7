//! One connection that only logs in and leaves: how the hub drops a session it cannot reach
//! otherwise on an external broker.
//!
//! MQTT keeps one session per client id: a broker that accepts a CONNECT closes the connection
//! that had the same id (MQTT 5 §3.1.4, "session takeover"). On a certificate listener that takes
//! the certificate's CN as the client id as well as the username (Mosquitto's
//! `use_identity_as_username` and `use_username_as_clientid`), whoever logs in with a certificate
//! for a cluster takes the place of every connection of that cluster, whatever client id it
//! chose. [`connect_once`] does that with a certificate and key held in memory, then sends a
//! DISCONNECT. [`probe_certificate`] only asks whether the broker takes a certificate (a TLS
//! handshake, no MQTT login: nobody's session is touched), which is how the hub learns that the
//! broker has read a revocation list.

use std::time::Duration;

use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::link::{LinkError, certificate_alert, io_certificate_alert};
use crate::session::MIN_KEEPALIVE;
use crate::tls::{TlsError, TlsFiles};
use crate::url::BrokerUrl;

/// How a [`connect_once`] went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The broker accepted the login (and so closed any connection with the same client id).
    Accepted,
    /// The broker refused the certificate with this TLS alert (e.g. `CertificateRevoked`).
    CertificateRefused(rustls::AlertDescription),
    /// Anything else: unreachable, a refused login, a timeout.
    Failed(LinkError),
}

/// Connects to `url` as `client_id` with the client certificate `chain` and its `key` (and the
/// broker trust of `tls`: its CA file or pin), waits for the CONNACK and disconnects at once.
///
/// # Errors
/// [`TlsError`] when the TLS configuration cannot be built (a key rustls refuses, a CA file
/// that cannot be read): not a matter of the broker.
pub async fn connect_once(
    url: &BrokerUrl,
    tls: &TlsFiles,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_id: &str,
    timeout: Duration,
) -> Result<Outcome, TlsError> {
    let config = tls.client_config_with(Some((chain, key)))?;
    let mut options = MqttOptions::new(client_id.to_owned(), url.host(), url.port());
    options
        .set_keep_alive(MIN_KEEPALIVE)
        .set_clean_start(true)
        .set_connection_timeout(timeout.as_secs().max(1))
        .set_outgoing_inflight_upper_limit(1);
    options.set_transport(rumqttc::Transport::tls_with_config(
        rumqttc::TlsConfiguration::Rustls(config),
    ));
    let (client, mut eventloop) = AsyncClient::new(options, 1);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut accepted = false;
    loop {
        let polled = tokio::time::timeout_at(deadline, eventloop.poll()).await;
        match polled {
            Err(_) if accepted => return Ok(Outcome::Accepted),
            Err(_) => {
                return Ok(Outcome::Failed(LinkError::Timeout {
                    url: url.to_string(),
                    secs: timeout.as_secs(),
                }));
            }
            Ok(Ok(Event::Incoming(Packet::ConnAck(_)))) => {
                accepted = true;
                // Queued for the loop to send; the broker closes the connection after it.
                let _ = client.try_disconnect();
            }
            Ok(Ok(Event::Outgoing(Outgoing::Disconnect))) if accepted => {
                return Ok(Outcome::Accepted);
            }
            Ok(Ok(_)) => {}
            Ok(Err(_)) if accepted => return Ok(Outcome::Accepted),
            Ok(Err(e)) => {
                return Ok(match certificate_alert(&e) {
                    Some(alert) => Outcome::CertificateRefused(alert),
                    None => Outcome::Failed(LinkError::classify(
                        url,
                        None,
                        timeout.as_secs(),
                        false,
                        &e,
                    )),
                });
            }
        }
    }
}

/// Whether the broker at `url` takes the client certificate `chain` (with `key`), by a TLS
/// handshake alone: with TLS 1.3 a broker judges the client's certificate after the client's
/// side of the handshake is done, and answers a refusal with an alert at once, while one that
/// took it waits for a CONNECT. So an alert read within `wait` is a refusal
/// ([`Outcome::CertificateRefused`]) and silence is acceptance (a refusal slower than `wait`
/// is only seen at the next probe). With TLS 1.2 the refusal ends the handshake itself.
///
/// # Errors
/// [`TlsError`] when the TLS configuration cannot be built.
pub async fn probe_certificate(
    url: &BrokerUrl,
    tls: &TlsFiles,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    timeout: Duration,
    wait: Duration,
) -> Result<Outcome, TlsError> {
    use rumqttc::tokio_rustls::TlsConnector;
    use tokio::io::AsyncReadExt as _;
    let config = tls.client_config_with(Some((chain, key)))?;
    let failed = |reason: String| {
        Outcome::Failed(LinkError::Unreachable {
            url: url.to_string(),
            reason,
        })
    };
    let name = rustls::pki_types::ServerName::try_from(url.host().to_owned())
        .map_err(|e| TlsError::Refused(format!("host {}: {e}", url.host())))?;
    let connect = async {
        let tcp = tokio::net::TcpStream::connect((url.host(), url.port())).await?;
        TlsConnector::from(config).connect(name, tcp).await
    };
    let mut stream = match tokio::time::timeout(timeout, connect).await {
        Err(_) => {
            return Ok(Outcome::Failed(LinkError::Timeout {
                url: url.to_string(),
                secs: timeout.as_secs(),
            }));
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Ok(Outcome::Failed(LinkError::Refused {
                url: url.to_string(),
            }));
        }
        Ok(Err(e)) => {
            return Ok(match io_certificate_alert(&e) {
                Some(alert) => Outcome::CertificateRefused(alert),
                None => failed(e.to_string()),
            });
        }
        Ok(Ok(stream)) => stream,
    };
    let mut byte = [0u8; 1];
    Ok(
        match tokio::time::timeout(wait, stream.read(&mut byte)).await {
            // Waiting for a CONNECT: it took the certificate. Leave with a close_notify.
            Err(_) => {
                let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
                Outcome::Accepted
            }
            Ok(Ok(0)) => failed("the broker closed the connection without a word".to_owned()),
            Ok(Ok(_)) => Outcome::Accepted,
            Ok(Err(e)) => match io_certificate_alert(&e) {
                Some(alert) => Outcome::CertificateRefused(alert),
                None => failed(e.to_string()),
            },
        },
    )
}
