//! One broker-URL type for hub, agent, CLI, benchmarks and tests.
//!
//! Accepted: `mqtt://HOST[:PORT]` (plain TCP, port 1883) and `mqtts://HOST[:PORT]` (TLS, port 8883),
//! with `tcp://` and `ssl://` as aliases; IPv6 hosts in brackets (`mqtt://[::1]:1883`); one trailing
//! slash. Anything else (a path, a query, credentials in the URL, port 0) is refused with a message
//! saying what is wrong and what to write instead. Credentials travel separately ([`Credentials`]):
//! a password in a URL ends up in shell history and process listings.

use std::fmt;

/// Default port of `mqtt://`.
pub const MQTT_PORT: u16 = 1883;
/// Default port of `mqtts://`.
pub const MQTTS_PORT: u16 = 8883;

/// A broker URL that cannot be used. Not retryable: the URL must be changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid broker URL {url:?}: {reason} (expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT], e.g. mqtt://127.0.0.1:1883)"
)]
pub struct UrlError {
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Where a broker is and whether TLS is used.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerUrl {
    host: String,
    port: u16,
    tls: bool,
}

impl BrokerUrl {
    /// Parses a broker URL (see the module docs).
    ///
    /// # Errors
    /// [`UrlError`] naming the URL and what is wrong.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let bad = |reason: &str| UrlError {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("missing scheme"))?;
        let (tls, default_port) = match scheme.to_ascii_lowercase().as_str() {
            "mqtt" | "tcp" => (false, MQTT_PORT),
            "mqtts" | "ssl" => (true, MQTTS_PORT),
            _ => return Err(bad("unsupported scheme (use mqtt:// or mqtts://)")),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains('@') {
            return Err(bad(
                "credentials do not belong in the URL (use --broker-username and OCM_EDGE_BROKER_PASSWORD)",
            ));
        }
        if authority.contains(['/', '?', '#']) {
            return Err(bad("only host and port are allowed"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("unexpected text after the IPv6 address")),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("missing host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("the port must be a number from 1 to 65535"))?,
            None => default_port,
        };
        Ok(BrokerUrl {
            host: host.to_owned(),
            port,
            tls,
        })
    }

    /// A plain `mqtt://` URL for a socket address (an embedded broker on port 0 reports its port).
    pub fn plain(addr: std::net::SocketAddr) -> Self {
        let ip = if addr.ip().is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            addr.ip()
        };
        BrokerUrl {
            host: ip.to_string(),
            port: addr.port(),
            tls: false,
        }
    }

    /// An `mqtts://` URL for a socket address (an embedded TLS broker on port 0).
    pub fn tls(addr: std::net::SocketAddr) -> Self {
        BrokerUrl {
            tls: true,
            ..Self::plain(addr)
        }
    }

    /// Host name or IP address (IPv6 without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the URL asks for TLS (`mqtts://`).
    pub fn is_tls(&self) -> bool {
        self.tls
    }
}

impl fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

impl std::str::FromStr for BrokerUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BrokerUrl::parse(s)
    }
}

/// MQTT username and password. The password never appears in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// MQTT username.
    pub username: String,
    /// MQTT password (empty when the broker wants only a username).
    pub password: String,
}

impl Credentials {
    /// Credentials from flags or the environment: `None` without a username. A password
    /// without a username is kept with `default_username` when one is given (agents log in as
    /// their cluster name), else it is an error the caller reports.
    ///
    /// # Errors
    /// A message naming the missing username flag when only a password is set.
    pub fn from_parts(
        username: Option<&str>,
        password: Option<&str>,
        default_username: Option<&str>,
    ) -> Result<Option<Self>, String> {
        match (username.or(default_username.filter(|_| password.is_some())), password) {
            (Some(u), p) => Ok(Some(Credentials {
                username: u.to_owned(),
                password: p.unwrap_or_default().to_owned(),
            })),
            (None, Some(_)) => Err(
                "a broker password is set but no username: set --broker-username (or OCM_EDGE_BROKER_USERNAME)"
                    .to_owned(),
            ),
            (None, None) => Ok(None),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mqtt_and_mqtts_urls_parse_with_their_default_ports() {
        let cases = [
            ("mqtt://127.0.0.1:1884", ("127.0.0.1", 1884, false)),
            ("mqtt://broker.local", ("broker.local", 1883, false)),
            ("tcp://broker:42/", ("broker", 42, false)),
            ("mqtts://broker.local/", ("broker.local", 8883, true)),
            ("ssl://broker:9000", ("broker", 9000, true)),
            ("MQTTS://broker", ("broker", 8883, true)),
            ("mqtt://[::1]:1885", ("::1", 1885, false)),
            ("mqtts://[fd00::2]", ("fd00::2", 8883, true)),
        ];
        for (url, (host, port, tls)) in cases {
            let u = BrokerUrl::parse(url).unwrap();
            assert_eq!((u.host(), u.port(), u.is_tls()), (host, port, tls), "{url}");
        }
    }

    #[test]
    fn broken_urls_say_what_is_wrong_and_name_the_url() {
        for (url, needle) in [
            ("127.0.0.1:1883", "missing scheme"),
            ("http://x:1", "unsupported scheme"),
            ("mqtt://x:port", "port must be a number"),
            ("mqtt://x:0", "port must be a number"),
            ("mqtt://x:70000", "port must be a number"),
            ("mqtt://:1883", "missing host"),
            ("mqtt://x:1883/topic", "only host and port"),
            ("mqtt://user:pw@x:1883", "credentials do not belong"),
            ("mqtt://[::1", "unclosed"),
        ] {
            let e = BrokerUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
            assert!(e.contains(url), "{url}: {e}");
            assert!(e.contains("mqtts://HOST"), "{url}: {e}");
        }
    }

    #[test]
    fn a_url_prints_back_in_canonical_form() {
        assert_eq!(
            BrokerUrl::parse("tcp://b/").unwrap().to_string(),
            "mqtt://b:1883"
        );
        assert_eq!(
            BrokerUrl::parse("mqtts://[::1]").unwrap().to_string(),
            "mqtts://[::1]:8883"
        );
        let plain = BrokerUrl::plain("0.0.0.0:4000".parse().unwrap());
        assert_eq!(plain.to_string(), "mqtt://127.0.0.1:4000");
    }

    #[test]
    fn credentials_need_a_username_and_hide_the_password() {
        assert_eq!(Credentials::from_parts(None, None, None), Ok(None));
        let c = Credentials::from_parts(None, Some("pw"), Some("edge-1"))
            .unwrap()
            .unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("edge-1", "pw"));
        assert!(!format!("{c:?}").contains("pw"));
        let e = Credentials::from_parts(None, Some("pw"), None).unwrap_err();
        assert!(e.contains("--broker-username"), "{e}");
        let c = Credentials::from_parts(Some("op"), None, None)
            .unwrap()
            .unwrap();
        assert_eq!(c.password, "");
    }
}
