//! ocm-edge's one MQTT layer, the only crate of the workspace that uses rumqttc: hub, agent, CLI,
//! demo, benchmarks and tests reach the broker through it.
//!
//! Map:
//! - [`args`]: [`BrokerArgs`], the broker flags (and `OCM_EDGE_*` variables) of every binary.
//! - [`url`]: [`BrokerUrl`] (`mqtt://`, `mqtts://`, default ports, clear errors) and
//!   [`Credentials`].
//! - [`tls`]: rustls with the ring provider, installed once; system roots or a CA file, optional
//!   client certificate ([`TlsFiles`]).
//! - [`session`]: [`SessionConfig`] (the client options every side sets: packet size, in-flight
//!   limit, keepalive, clean start, session expiry) and [`Session`], one reconnecting session
//!   with jittered exponential [`Backoff`] that yields [`SessionEvent`]s and resubscribes after
//!   every reconnect; [`Publisher`] to publish on it.
//! - [`publication`]: [`Publication`], the one conversion between an MQTT 5 PUBLISH and the
//!   schemas crate's `MqttMessage` (user properties, content type, response topic, correlation
//!   data, retain).
//! - [`link`]: [`LinkError`], why a connection failed, by cause (refused port, untrusted
//!   certificate, refused login, timeout, lost link), each naming the broker.
//! - [`request`]: [`Requester`], MQTT 5 request/response (the admin API's client side).
//! - [`shutdown`]: the process shutdown signal (Ctrl-C, SIGTERM).
//! - [`takeover`]: [`takeover::connect_once`], a login that only takes a client id's place (how the
//!   hub drops a revoked cluster's session on an external broker).
//! - [`broker`]: the embedded broker the hub runs by default (its engine behind the feature
//!   `embedded-broker`; its login rules and limits always).
//! - [`acl`]: which identity may use which topic (the embedded broker's topic rules).
//! - [`metrics_endpoint`]: the Prometheus endpoint hub and agent serve (`--metrics-listen`), and
//!   its address flag's value ([`MetricsListen`]).

pub mod acl;
pub mod args;
pub mod broker;
pub mod link;
pub mod metrics_endpoint;
pub mod publication;
pub mod request;
pub mod session;
pub mod shutdown;
pub mod takeover;
pub mod tls;
pub mod url;

pub use args::BrokerArgs;
pub use link::LinkError;
pub use metrics_endpoint::{MetricsEndpoint, MetricsError, MetricsListen};
pub use publication::Publication;
pub use request::{RequestError, Requester, SignRequest};
pub use session::{
    Ack, Backoff, ConnectError, PublishError, Publisher, Session, SessionConfig, SessionError,
    SessionEvent, WillFn,
};
pub use shutdown::shutdown_signal;
pub use tls::{CaPin, TlsError, TlsFiles, install_crypto_provider};
pub use url::{BrokerUrl, Credentials, UrlError};
