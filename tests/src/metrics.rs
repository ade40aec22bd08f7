//! Scraping a hub's or an agent's Prometheus endpoint as Prometheus would: an HTTP GET (hyper's
//! client) and the text read by `prometheus-parse`, a parser ocm-edge did not write.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use prometheus_parse::{Scrape, Value};

/// What a GET returned: the status and the body.
///
/// # Errors
/// The connection or the request failed.
pub async fn get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let uri: hyper::Uri = format!("http://{addr}{path}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let response = client
        .get(uri)
        .await
        .map_err(|e| format!("GET http://{addr}{path}: {e}"))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("reading the body of http://{addr}{path}: {e}"))?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// One scrape, parsed.
#[derive(Debug)]
pub struct Scraped {
    pub text: String,
    pub scrape: Scrape,
}

/// Scrapes `http://addr/metrics`.
///
/// # Errors
/// The GET failed, did not answer 200, or the text does not parse.
pub async fn scrape(addr: SocketAddr) -> Result<Scraped, String> {
    let (status, text) = get(addr, "/metrics").await?;
    if status != 200 {
        return Err(format!("http://{addr}/metrics answered {status}: {text}"));
    }
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .map_err(|e| format!("the metrics do not parse: {e}"))?;
    Ok(Scraped { text, scrape })
}

impl Scraped {
    /// The sum of the samples of counter or gauge `name` whose labels include every pair of
    /// `labels` (0 when there is none).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
                Value::Histogram(_) | Value::Summary(_) => 0.0,
            })
            .sum()
    }

    /// Whether a sample of `name` (a histogram's name for its buckets) has these labels.
    pub fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.scrape
            .samples
            .iter()
            .any(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
    }

    /// Every name a query may use: each family's (its `# HELP` line), each sample's, and a
    /// histogram's `_bucket`, `_sum` and `_count`.
    pub fn names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.scrape.docs.keys().cloned().collect();
        // A histogram nothing was observed in yet has no samples, only its `# TYPE` line.
        for line in self.text.lines() {
            if let Some(name) = line
                .strip_prefix("# TYPE ")
                .and_then(|rest| rest.strip_suffix(" histogram"))
            {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        }
        for line in self.text.lines().filter(|l| !l.starts_with('#')) {
            if let Some(name) = line.split(['{', ' ']).next().filter(|n| !n.is_empty()) {
                names.insert(name.to_owned());
            }
        }
        names
    }
}
