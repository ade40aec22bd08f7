//! The Prometheus endpoint the hub and the agent serve (`--metrics-listen`): `GET /metrics` in
//! the Prometheus text format, 404 anywhere else, nothing else. What goes in the body is the
//! caller's ([`Render`]); this file carries it over HTTP/1.1 and gives both sides [`Scrape`], the
//! metrics read at scrape time from what a process already counts.
//!
//! The request head is parsed by `httparse` (the parser hyper uses); the answer is one response
//! and the connection closes, which is all a scraper needs. hyper's server was measured against
//! it and costs more than the endpoint is worth (docs/performance.md, "Metrics").
//!
//! Nothing here runs while nobody scrapes: the task waits in `accept`, with no timer.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// The default of `ocm-edge hub --metrics-listen`: loopback only, Prometheus's port range.
pub const DEFAULT_HUB_METRICS_LISTEN: &str = "127.0.0.1:9464";
/// `Content-Type` of the Prometheus text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Longest request head read (a scraper sends a few hundred bytes).
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request and read the answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections answered at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 16;

/// Where a process serves its metrics: `HOST:PORT`, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsListen {
    /// No endpoint.
    Off,
    /// Listen on this address (port 0: a free one).
    On(SocketAddr),
}

impl MetricsListen {
    /// The address, unless off.
    pub fn addr(self) -> Option<SocketAddr> {
        match self {
            MetricsListen::Off => None,
            MetricsListen::On(addr) => Some(addr),
        }
    }
}

impl FromStr for MetricsListen {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "off" {
            return Ok(MetricsListen::Off);
        }
        s.parse().map(MetricsListen::On).map_err(|_| {
            format!(
                "{s:?} is not an address to serve metrics on: give IP:PORT (e.g. 127.0.0.1:9464, \
                 or 0.0.0.0:9464 for every interface), or `off`"
            )
        })
    }
}

impl std::fmt::Display for MetricsListen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetricsListen::Off => f.write_str("off"),
            MetricsListen::On(addr) => write!(f, "{addr}"),
        }
    }
}

/// Renders the body of one scrape (the Prometheus text format).
pub type Render = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync>;

/// Label pairs of one series.
pub type Labels = Vec<(&'static str, String)>;

/// Histograms by label set, each made by a constructor of fixed buckets.
pub type Histograms = Family<
    Labels,
    prometheus_client::metrics::histogram::Histogram,
    fn() -> prometheus_client::metrics::histogram::Histogram,
>;

/// sdk-go's buckets for `resources_spec_resync_duration_seconds` and
/// `resources_status_resync_duration_seconds`.
pub fn resync_histogram() -> prometheus_client::metrics::histogram::Histogram {
    prometheus_client::metrics::histogram::Histogram::new([0.1, 0.2, 0.5, 1.0, 2.0, 10.0, 30.0])
}

/// sdk-go's labels of a CloudEvent, `type` (the data type), `subresource` and `action`, read
/// from a message in binary content mode. A data type ocm-edge does not speak, or a type that
/// does not parse, is `other`: what a peer sends cannot grow the number of series.
pub fn cloudevent_labels(msg: &ocm_edge_schemas::wire::MqttMessage) -> Labels {
    let parsed = msg
        .user_property("ce-type")
        .and_then(|t| ocm_edge_schemas::wire::event_type::EventType::parse(t).ok());
    match parsed {
        Some(t) if t.data_type.is_known() => vec![
            ("type", t.data_type.to_string()),
            ("subresource", t.sub_resource.as_str().to_owned()),
            ("action", t.action.as_str().to_owned()),
        ],
        _ => vec![
            ("type", "other".to_owned()),
            ("subresource", "other".to_owned()),
            ("action", "other".to_owned()),
        ],
    }
}

/// Metrics read at scrape time from what a process already counts and holds (its counters, its
/// state), so nothing is counted twice: a registry built for one scrape, encoded with the
/// registries of the instruments the process keeps ([`Scrape::encode`]).
#[derive(Debug, Default)]
pub struct Scrape {
    registry: Registry,
}

impl Scrape {
    /// A counter (`name` without `_total`, which the encoding adds).
    pub fn counter(&mut self, name: &str, help: &str, value: u64) {
        let c = Counter::<u64>::default();
        c.inc_by(value);
        self.registry.register(name, help, c);
    }

    /// A gauge.
    pub fn gauge(&mut self, name: &str, help: &str, value: i64) {
        let g = Gauge::<i64>::default();
        g.set(value);
        self.registry.register(name, help, g);
    }

    /// A counter per label set.
    pub fn counters(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, u64)>,
    ) {
        let family = Family::<Labels, Counter>::default();
        for (labels, value) in series {
            family.get_or_create(&labels).inc_by(value);
        }
        self.registry.register(name, help, family);
    }

    /// A gauge per label set.
    pub fn gauges(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, i64)>,
    ) {
        let family = Family::<Labels, Gauge>::default();
        for (labels, value) in series {
            family.get_or_create(&labels).set(value);
        }
        self.registry.register(name, help, family);
    }

    /// The Prometheus text of `kept` (the instruments a process keeps) and of this scrape.
    pub fn encode(&self, kept: &Registry) -> String {
        let mut out = String::new();
        for registry in [kept, &self.registry] {
            // Writing to a String cannot fail.
            let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, registry);
        }
        out
    }
}

/// Why the endpoint did not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address cannot be bound (taken, not this machine's, a privileged port). Not
    /// retryable.
    #[error(
        "cannot serve Prometheus metrics on {addr} (--metrics-listen): {reason}; give another \
         address, or `off`"
    )]
    Bind { addr: SocketAddr, reason: String },
}

/// A running endpoint; it stops when dropped.
#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Binds `listen` now (so a bad address fails the start) and serves `render` at
    /// `/metrics` from a task of the current runtime.
    ///
    /// # Errors
    /// [`MetricsError::Bind`] naming the address.
    pub fn start(listen: SocketAddr, render: Render) -> Result<Self, MetricsError> {
        let bind = |e: std::io::Error| MetricsError::Bind {
            addr: listen,
            reason: e.to_string(),
        };
        let std_listener = std::net::TcpListener::bind(listen).map_err(bind)?;
        std_listener.set_nonblocking(true).map_err(bind)?;
        let addr = std_listener.local_addr().map_err(bind)?;
        let listener = TcpListener::from_std(std_listener).map_err(bind)?;
        let task = tokio::spawn(serve(listener, render));
        Ok(MetricsEndpoint { addr, task })
    }

    /// The address it listens on (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, render: Render) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, typically: let some close before trying again.
                tracing::warn!(error = %e, "metrics endpoint cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let render = render.clone();
        tokio::spawn(async move {
            if tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, render))
                .await
                .is_err()
            {
                tracing::debug!("metrics request timed out");
            }
            drop(slot);
        });
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics,
    NotFound,
    WrongMethod,
    Malformed,
    TooLarge,
}

/// Reads the request head (the body, if any, is not read: the connection closes after the
/// answer).
async fn read_request(stream: &mut TcpStream) -> Option<Asked> {
    let mut buf = vec![0u8; MAX_HEAD_BYTES];
    let mut filled = 0;
    loop {
        let n = stream.read(&mut buf[filled..]).await.ok()?;
        if n == 0 {
            return None;
        }
        filled += n;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(_)) => return Some(asked(&request)),
            Ok(httparse::Status::Partial) if filled < buf.len() => {}
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                return Some(Asked::TooLarge);
            }
            Err(_) => return Some(Asked::Malformed),
        }
    }
}

fn asked(request: &httparse::Request<'_, '_>) -> Asked {
    let path = request.path.unwrap_or_default();
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    match (request.method, path) {
        (Some("GET"), "/metrics") => Asked::Metrics,
        (_, "/metrics") => Asked::WrongMethod,
        _ => Asked::NotFound,
    }
}

async fn answer(mut stream: TcpStream, render: Render) {
    let Some(asked) = read_request(&mut stream).await else {
        return;
    };
    let (status, extra, body) = match asked {
        Asked::Metrics => ("200 OK", "", render().await),
        Asked::NotFound => (
            "404 Not Found",
            "",
            "not found: metrics are at /metrics\n".to_owned(),
        ),
        Asked::WrongMethod => (
            "405 Method Not Allowed",
            "allow: GET\r\n",
            "only GET\n".to_owned(),
        ),
        Asked::Malformed => ("400 Bad Request", "", "not an HTTP request\n".to_owned()),
        Asked::TooLarge => (
            "431 Request Header Fields Too Large",
            "",
            "request head too large\n".to_owned(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {CONTENT_TYPE}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
        body.len()
    );
    if stream.write_all(head.as_bytes()).await.is_ok()
        && stream.write_all(body.as_bytes()).await.is_ok()
    {
        let _ = stream.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(body: &'static str) -> Render {
        Arc::new(move || Box::pin(async move { body.to_owned() }))
    }

    async fn get(addr: SocketAddr, request: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[test]
    fn off_is_the_one_word_that_turns_it_off_and_a_bad_address_says_what_to_give() {
        assert_eq!("off".parse::<MetricsListen>(), Ok(MetricsListen::Off));
        assert_eq!(
            "0.0.0.0:9464".parse::<MetricsListen>(),
            Ok(MetricsListen::On("0.0.0.0:9464".parse().unwrap()))
        );
        for bad in ["", "9464", "localhost:9464", "OFF"] {
            let e = bad.parse::<MetricsListen>().unwrap_err();
            assert!(e.contains("IP:PORT") && e.contains("`off`"), "{e}");
        }
    }

    #[test]
    fn a_cloudevents_type_is_labelled_as_sdk_go_does_and_a_foreign_one_as_other() {
        let msg = |ty: &str| ocm_edge_schemas::wire::MqttMessage {
            user_properties: vec![("ce-type".to_owned(), ty.to_owned())],
            ..Default::default()
        };
        assert_eq!(
            cloudevent_labels(&msg(
                "io.open-cluster-management.works.v1alpha1.manifestbundles.status.resync_response"
            )),
            vec![
                (
                    "type",
                    "io.open-cluster-management.works.v1alpha1.manifestbundles".to_owned()
                ),
                ("subresource", "status".to_owned()),
                ("action", "resync_response".to_owned()),
            ]
        );
        let other = vec![
            ("type", "other".to_owned()),
            ("subresource", "other".to_owned()),
            ("action", "other".to_owned()),
        ];
        assert_eq!(
            cloudevent_labels(&msg("com.example.v1.anything.spec.create_request")),
            other
        );
        assert_eq!(cloudevent_labels(&msg("nonsense")), other);
        assert_eq!(
            cloudevent_labels(&ocm_edge_schemas::wire::MqttMessage::default()),
            other
        );
    }

    #[tokio::test]
    async fn metrics_are_served_at_slash_metrics_and_nothing_elsewhere() {
        let endpoint =
            MetricsEndpoint::start("127.0.0.1:0".parse().unwrap(), fixed("up 1\n")).unwrap();
        let ok = get(endpoint.addr(), "GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains(CONTENT_TYPE), "{ok}");
        assert!(ok.ends_with("\r\n\r\nup 1\n"), "{ok}");
        let with_query = get(endpoint.addr(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n").await;
        assert!(with_query.starts_with("HTTP/1.1 200 OK"), "{with_query}");
        let elsewhere = get(endpoint.addr(), "GET / HTTP/1.1\r\n\r\n").await;
        assert!(elsewhere.starts_with("HTTP/1.1 404"), "{elsewhere}");
        let post = get(endpoint.addr(), "POST /metrics HTTP/1.1\r\n\r\n").await;
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        let garbage = get(endpoint.addr(), "\x16\x03\x01 hello\r\n\r\n").await;
        assert!(garbage.starts_with("HTTP/1.1 400"), "{garbage}");
    }

    #[tokio::test]
    async fn a_taken_address_is_an_error_naming_it_and_the_flag() {
        let first = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap(), fixed("")).unwrap();
        let e = MetricsEndpoint::start(first.addr(), fixed("")).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&first.addr().to_string()), "{text}");
        assert!(text.contains("--metrics-listen"), "{text}");
    }
}
