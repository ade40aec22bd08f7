//! The broker flags every binary takes (`ocm-edge` and `ocm-edge-agent`), each also an
//! `OCM_EDGE_*` environment variable, so a URL, a login and TLS files are given the same way
//! everywhere.

use std::path::PathBuf;

use crate::tls::{CaPin, TlsFiles};

/// Where the broker is, how to log in, and which certificates to use.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct BrokerArgs {
    /// MQTT broker: mqtt://HOST[:PORT] (1883) or mqtts://HOST[:PORT] (TLS, 8883) [default:
    /// mqtts://127.0.0.1:8883, a hub's embedded broker on this machine].
    #[arg(long, global = true, env = "OCM_EDGE_BROKER", value_name = "URL")]
    pub broker: Option<String>,
    /// MQTT username for a broker with authentication.
    #[arg(
        long,
        global = true,
        env = "OCM_EDGE_BROKER_USERNAME",
        value_name = "USER"
    )]
    pub broker_username: Option<String>,
    /// MQTT password going with --broker-username (prefer the environment variable: command
    /// lines are visible to other users).
    #[arg(
        long,
        global = true,
        env = "OCM_EDGE_BROKER_PASSWORD",
        hide_env_values = true,
        value_name = "PASSWORD"
    )]
    pub broker_password: Option<String>,
    /// PEM CA that signed an mqtts:// broker's certificate [default: the system's roots].
    #[arg(
        long,
        global = true,
        env = "OCM_EDGE_BROKER_CA_FILE",
        value_name = "FILE"
    )]
    pub broker_ca_file: Option<PathBuf>,
    /// Trust an mqtts:// broker only if its chain holds the CA with this SHA-256
    /// (`sha256:<hex>`, printed by `ocm-edge hub` at start): how an agent trusts a hub it has
    /// never seen.
    #[arg(
        long,
        global = true,
        alias = "ca-pin",
        env = "OCM_EDGE_BROKER_CA_PIN",
        value_name = "sha256:HEX",
        value_parser = parse_pin
    )]
    pub broker_ca_pin: Option<CaPin>,
    /// PEM client certificate for a broker that wants mutual TLS (with --broker-client-key).
    #[arg(
        long,
        global = true,
        env = "OCM_EDGE_BROKER_CLIENT_CERT",
        value_name = "FILE"
    )]
    pub broker_client_cert: Option<PathBuf>,
    /// PEM private key of --broker-client-cert.
    #[arg(
        long,
        global = true,
        env = "OCM_EDGE_BROKER_CLIENT_KEY",
        value_name = "FILE"
    )]
    pub broker_client_key: Option<PathBuf>,
}

impl BrokerArgs {
    /// The broker URL given, or `default`.
    pub fn url_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.broker.as_deref().unwrap_or(default)
    }

    /// The TLS files given.
    pub fn tls(&self) -> TlsFiles {
        TlsFiles {
            ca_file: self.broker_ca_file.clone(),
            client_cert_file: self.broker_client_cert.clone(),
            client_key_file: self.broker_client_key.clone(),
            ca_pin: self.broker_ca_pin,
        }
    }
}

fn parse_pin(s: &str) -> Result<CaPin, String> {
    s.parse().map_err(|e: crate::TlsError| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        broker: BrokerArgs,
    }

    #[test]
    fn broker_flags_parse_into_a_url_and_tls_files() {
        let cli = Cli::try_parse_from([
            "x",
            "--broker",
            "mqtts://b:8883",
            "--broker-username",
            "op",
            "--broker-ca-file",
            "/ca.pem",
            "--ca-pin",
            &format!("sha256:{}", "ab".repeat(32)),
        ])
        .unwrap();
        assert_eq!(cli.broker.url_or("mqtt://d"), "mqtts://b:8883");
        assert_eq!(cli.broker.broker_username.as_deref(), Some("op"));
        assert_eq!(cli.broker.tls().ca_file, Some(PathBuf::from("/ca.pem")));
        assert_eq!(
            cli.broker.tls().ca_pin.unwrap().to_string(),
            format!("sha256:{}", "ab".repeat(32))
        );
        let e = Cli::try_parse_from(["x", "--broker-ca-pin", "sha256:12"]).unwrap_err();
        assert!(e.to_string().contains("sha256:<64 hex digits>"), "{e}");
        let none = Cli::try_parse_from(["x"]).unwrap();
        if std::env::var_os("OCM_EDGE_BROKER").is_none() {
            assert_eq!(none.broker.url_or("mqtt://d"), "mqtt://d");
        }
    }
}
