//! One connection that only logs in and leaves: how the hub drops a session it cannot reach
//! otherwise on an external broker.
//!
//! MQTT keeps one session per client id: a broker that accepts a CONNECT closes the connection
//! that had the same id (MQTT 5 §3.1.4, "session takeover"). On a certificate listener that takes
//! the certificate's CN as the client id as well as the username (Mosquitto's
//! `use_identity_as_username` and `use_username_as_clientid`), whoever logs in with a certificate
//! for a cluster takes the place of every connection of that cluster, whatever client id it
//! chose. [`connect_once`] does that with a certificate and key held in memory, then sends a
//! DISCONNECT; its answer also tells whether the broker still accepts a certificate (the probe
//! of a revocation list, [`Outcome::CertificateRefused`]).

use std::time::Duration;

use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::link::{LinkError, certificate_alert};
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
    let mut trust = tls.clone();
    trust.client_cert_file = None;
    trust.client_key_file = None;
    let config = trust.client_config_with(Some((chain, key)))?;
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
