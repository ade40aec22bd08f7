//! `ocm-edge cluster bootstrap NAME`: what installs the agent on an edge cluster, in one
//! command, as `clusteradm join` is in OCM: `ocm-edge cluster bootstrap store-17 --agent-broker
//! mqtts://hub.example.net:8883 | kubectl apply -f -` on the edge cluster is the whole install.
//!
//! Like `token create` it runs on the hub's machine, against the hub's data directory: it makes a
//! new join token and reads the CA pin there. The manifests are the agent chart's own rendering,
//! `deploy/k3s/agent.yaml` (generated from `deploy/helm/ocm-edge-agent` and checked against it by
//! a test), embedded here with the cluster's settings filled into its Secret: there is no second
//! copy of them to drift. `-o helm-values` prints the same settings as a values file of the chart.

use chrono::Utc;
use clap::{Args, ValueEnum};
use serde_yaml_ng::Value;

use crate::CliError;
use ocm_edge_hub::pki::HubPki;
use ocm_edge_hub::registration::join_token::JoinTokens;
use ocm_edge_mqtt::BrokerUrl;

/// The agent chart rendered with the placeholder values of `deploy/k3s/agent-values.yaml`.
const AGENT_MANIFESTS: &str = include_str!("../../../../deploy/k3s/agent.yaml");

/// `cluster bootstrap` options.
#[derive(Debug, Clone, Args)]
pub struct BootstrapArgs {
    /// The cluster's name on the hub (lower case letters, digits and '-', at most 63).
    pub name: String,
    /// The hub's broker as the edge cluster reaches it, mqtts://HOST[:PORT]: the hub's
    /// certificate must name HOST (`ocm-edge hub --tls-san HOST`).
    #[arg(long, value_name = "URL")]
    pub agent_broker: String,
    /// Take a loopback --agent-broker (localhost, 127.0.0.0/8, ::1), which an edge cluster
    /// cannot reach: only for an agent on the hub's own machine, outside any container.
    #[arg(long)]
    pub allow_loopback: bool,
    /// How long the join token in the output lets the cluster ask to join (e.g. 30m, 24h, 7d; at
    /// most 30 days). Keep it short: the output is a secret until the cluster is accepted.
    #[arg(long, default_value = "24h", value_parser = super::token::parse_ttl, value_name = "DURATION")]
    pub ttl: chrono::Duration,
    /// What to print: the manifests for `kubectl apply -f -` (yaml), or a values file for the
    /// agent's Helm chart (helm-values).
    #[arg(short, long, value_enum, default_value_t = BootstrapOutput::Yaml)]
    pub output: BootstrapOutput,
    #[command(flatten)]
    pub data: crate::DataDirArg,
}

/// What `cluster bootstrap` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BootstrapOutput {
    /// Namespace, ServiceAccount, RBAC, Secret, PersistentVolumeClaim and Deployment.
    Yaml,
    /// Values of deploy/helm/ocm-edge-agent.
    HelmValues,
}

/// The agent's join settings for one cluster: the Secret's keys, in the order they are written.
struct Settings {
    cluster: String,
    broker: String,
    ca_pin: String,
    token: String,
}

impl Settings {
    fn pairs(&self) -> [(&'static str, &str); 4] {
        [
            ("OCM_EDGE_CLUSTER_NAME", &self.cluster),
            ("OCM_EDGE_BROKER", &self.broker),
            ("OCM_EDGE_BROKER_CA_PIN", &self.ca_pin),
            ("OCM_EDGE_JOIN_TOKEN", &self.token),
        ]
    }
}

/// Runs `cluster bootstrap` with the hub's source id `source_id`; returns what to print.
///
/// # Errors
/// [`CliError::Usage`] for a name the hub would refuse or a broker URL an edge cluster cannot
/// use; [`CliError::Hub`] when the data directory holds no hub CA. Nothing is made then.
pub fn run(args: &BootstrapArgs, source_id: &str) -> Result<String, CliError> {
    ocm_edge_schemas::validate::validate_cluster_name(&args.name)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let broker = agent_broker(&args.agent_broker, args.allow_loopback)?;
    let pki = HubPki::load_existing(&args.data.data_dir.join("pki"))
        .map_err(|e| CliError::Hub(e.to_string()))?;
    let token = JoinTokens::load_or_create(&args.data.data_dir)
        .and_then(|tokens| tokens.create(args.ttl, Utc::now()))
        .map_err(|e| CliError::Hub(e.to_string()))?;
    let settings = Settings {
        cluster: args.name.clone(),
        broker: broker.to_string(),
        ca_pin: pki.pin().to_string(),
        token: token.token,
    };
    let until = token.expires.format("%Y-%m-%d %H:%M UTC");
    let header = format!(
        "# ocm-edge agent of cluster {name}, from `ocm-edge cluster bootstrap`.\n\
         # A SECRET: it holds join token {id}, valid until {until}\n\
         # (`ocm-edge token revoke {id}` ends it sooner). Once the cluster is accepted\n\
         # (`ocm-edge cluster accept {name}` on the hub's side) the agent logs in with its own key\n\
         # and the token is no longer used.\n",
        name = args.name,
        id = token.id,
    );
    let body = match args.output {
        BootstrapOutput::Yaml => manifests(&settings, source_id)?,
        BootstrapOutput::HelmValues => helm_values(&settings, source_id)?,
    };
    Ok(header + &body)
}

/// `url` checked as the broker an edge cluster dials: TLS (the hub's embedded broker takes
/// nothing else) and, unless `allow_loopback`, not a loopback address.
fn agent_broker(url: &str, allow_loopback: bool) -> Result<BrokerUrl, CliError> {
    let parsed =
        BrokerUrl::parse(url).map_err(|e| CliError::Usage(format!("--agent-broker: {e}")))?;
    if !parsed.is_tls() {
        return Err(CliError::Usage(format!(
            "--agent-broker {url}: the hub's broker takes TLS only; give mqtts://HOST:8883, with \
             HOST a name the hub's certificate holds (`ocm-edge hub --tls-san HOST`)"
        )));
    }
    if is_loopback(parsed.host()) && !allow_loopback {
        return Err(CliError::Usage(format!(
            "--agent-broker {url} is this machine's loopback, which an edge cluster cannot reach: \
             give the name or address agents reach the hub by (and start the hub with \
             `--listen 0.0.0.0:8883 --tls-san HOST`), or --allow-loopback for an agent on this \
             machine"
        )));
    }
    Ok(parsed)
}

/// Whether `host` names this machine only: `localhost` (and names under it), 127.0.0.0/8, ::1,
/// or an unspecified address.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

/// The agent chart's plain manifests with `settings` in the Secret, the hub's source id in the
/// Deployment and, on its pod, the checksum the chart puts there for its settings (so applying
/// the output again with a new token restarts the agent).
fn manifests(settings: &Settings, source_id: &str) -> Result<String, CliError> {
    let broken = |what: String| {
        CliError::Hub(format!(
            "the agent manifests built into this ocm-edge are broken ({what}); rebuild it from a \
             checkout where `cargo test -p ocm-edge-tests --test it helm_` passes"
        ))
    };
    let mut out = String::new();
    let (mut secrets, mut deployments) = (0, 0);
    for doc in AGENT_MANIFESTS.split("\n---\n") {
        let mut value: Value =
            serde_yaml_ng::from_str(doc).map_err(|e| broken(format!("a document: {e}")))?;
        if value.is_null() {
            // The file's own header: this output has its own.
            continue;
        }
        let kind = value["kind"].as_str().unwrap_or_default().to_owned();
        let text = match kind.as_str() {
            "Secret" => {
                secrets += 1;
                let data = settings
                    .pairs()
                    .iter()
                    .map(|(k, v)| (Value::from(*k), Value::from(*v)))
                    .collect();
                value["stringData"] = Value::Mapping(data);
                to_yaml(&value)?
            }
            "Deployment" => {
                deployments += 1;
                let template = &mut value["spec"]["template"];
                let digest =
                    ring::digest::digest(&ring::digest::SHA256, secret_text(settings).as_bytes());
                template["metadata"]["annotations"]["checksum/settings"] =
                    Value::from(hex::encode(digest.as_ref()));
                let env = template["spec"]["containers"][0]["env"]
                    .as_sequence_mut()
                    .ok_or_else(|| broken("the Deployment has no env".to_owned()))?;
                let source = env
                    .iter_mut()
                    .find(|e| e["name"] == "OCM_EDGE_SOURCE_ID")
                    .ok_or_else(|| broken("no OCM_EDGE_SOURCE_ID in the Deployment".to_owned()))?;
                source["value"] = Value::from(source_id);
                to_yaml(&value)?
            }
            // The other objects as the chart wrote them, with its comments.
            _ => format!("{}\n", doc.trim_end()),
        };
        if !out.is_empty() {
            out.push_str("---\n");
        }
        out.push_str(&text);
    }
    if (secrets, deployments) != (1, 1) {
        return Err(broken(format!(
            "{secrets} Secret(s) and {deployments} Deployment(s), not one of each"
        )));
    }
    Ok(out)
}

/// The settings as the Secret's lines, which the checksum is taken over.
fn secret_text(settings: &Settings) -> String {
    settings
        .pairs()
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect()
}

/// A values file of the agent chart with `settings`.
fn helm_values(settings: &Settings, source_id: &str) -> Result<String, CliError> {
    let mut values = serde_json::json!({
        "clusterName": settings.cluster,
        "broker": {"url": settings.broker, "caPin": settings.ca_pin},
        "joinToken": settings.token,
    });
    if source_id != ocm_edge_hub::config::DEFAULT_SOURCE_ID {
        values["sourceId"] = serde_json::Value::from(source_id);
    }
    Ok(format!(
        "# Values of deploy/helm/ocm-edge-agent: helm install ocm-edge-agent \
         deploy/helm/ocm-edge-agent \\\n#   -n open-cluster-management-agent --create-namespace -f \
         THIS_FILE\n{}",
        to_yaml(&values)?
    ))
}

fn to_yaml(value: &impl serde::Serialize) -> Result<String, CliError> {
    serde_yaml_ng::to_string(value).map_err(|e| CliError::Output(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_are_this_machine_only() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "hub.localhost",
            "127.0.0.1",
            "127.8.9.1",
            "::1",
            "0.0.0.0",
            "::",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "hub.example.net",
            "10.0.0.7",
            "192.168.1.2",
            "fd00::1",
            "localhost.example.net",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
