//! `ocm-edge`: the command line of ocm-edge. Operators drive the hub with it through the broker
//! (MQTT 5 request/response, like agents they need only the broker's address), and `ocm-edge hub`
//! runs the hub server (the `ocm-edge-hub` library).
//!
//! Map:
//! - this file: [`Cli`] (the clap definition), [`GlobalArgs`], [`run`] and [`CliError`].
//! - [`commands`]: one file per command, each a thin shell over the admin client or the hub
//!   library: `hub`, `cluster`, `work`, `apply`, `clusterset` and `placement`, `rollout`,
//!   `delete`, `user`, `token`.
//! - [`client`]: the admin API client (typed calls, paging, resends) and the credential that
//!   signs each request.
//! - [`manifests`]: reading Kubernetes manifests and OCM YAML from files and directories, with
//!   located errors.
//! - [`output`]: tables for people, `-o json|yaml` for scripts.
//! - [`demo`]: `ocm-edge demo` (default feature `demo`: the only part that runs agents, so the only
//!   one that needs the agent crate).
//!
//! Every command either succeeds or returns a [`CliError`] whose message says what failed,
//! where, and how to fix it; `main` prints it and exits non-zero.

pub mod client;
pub mod commands;
#[cfg(feature = "demo")]
pub mod demo;
pub mod manifests;
pub mod output;

use std::time::Duration;

use ocm_edge_mqtt::BrokerArgs;

use clap::{Args, Parser, Subcommand};
use thiserror::Error;

use crate::client::{AdminClient, AdminError, ConnectOptions};
use crate::commands::{
    addon, apply, cluster, delete, hub, placement, rollout, stats, token, user, work,
};

/// Default broker URL of the CLI (the hub's embedded broker on this machine).
pub const DEFAULT_BROKER_URL: &str = "mqtts://127.0.0.1:8883";
/// Default data directory of `ocm-edge hub` (also `OCM_EDGE_DATA_DIR`).
pub const DEFAULT_DATA_DIR: &str = "./ocm-edge-data";

/// `ocm-edge`: Open Cluster Management for edge Kubernetes fleets over MQTT.
#[derive(Debug, Parser)]
#[command(
    name = "ocm-edge",
    version,
    about = "Open Cluster Management for edge Kubernetes fleets, over MQTT",
    propagate_version = true
)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// The broker and how to reach it (URL, login, TLS files).
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Source id of the hub (the `S` in `sources/S/...` topics).
    #[arg(
        long,
        global = true,
        env = "OCM_EDGE_SOURCE_ID",
        default_value = "ocm-edge",
        value_name = "ID"
    )]
    pub source_id: String,
    /// How long to wait for the broker and the hub, e.g. `5s`, `500ms`, `1m`.
    #[arg(long, global = true, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// The credential admin requests are signed with (`ocm-edge user create` makes one)
    /// [default: ~/.config/ocm-edge/credentials.pem, else the first admin credential of a hub
    /// on this machine, $OCM_EDGE_DATA_DIR/admin-credentials.pem or
    /// ./ocm-edge-data/admin-credentials.pem].
    #[arg(long, global = true, env = "OCM_EDGE_CREDENTIALS", value_name = "FILE")]
    pub credentials: Option<std::path::PathBuf>,
}

impl GlobalArgs {
    /// The broker URL the CLI talks through.
    pub fn broker_url(&self) -> &str {
        self.broker.url_or(DEFAULT_BROKER_URL)
    }

    /// The TLS files given; for an `mqtts://` broker with neither a CA file nor a pin, the CA of
    /// a hub on this machine (`$OCM_EDGE_DATA_DIR/pki/ca.pem`, else `./ocm-edge-data/pki/ca.pem`)
    /// when there is one, so the CLI next to `ocm-edge hub` needs no flag.
    pub fn tls(&self) -> ocm_edge_mqtt::TlsFiles {
        let mut tls = self.broker.tls();
        let is_tls = self.broker_url().starts_with("mqtts://");
        if is_tls && tls.ca_file.is_none() && tls.ca_pin.is_none() {
            let local_ca = local_data_dir().join("pki").join("ca.pem");
            if local_ca.is_file() {
                tracing::debug!(ca = %local_ca.display(), "trusting the CA of the hub on this machine");
                tls.ca_file = Some(local_ca);
            }
        }
        tls
    }

    /// Connects the admin client.
    ///
    /// # Errors
    /// Broker unreachable, bad URL or source id.
    pub async fn connect(&self) -> Result<AdminClient, CliError> {
        let options = ConnectOptions {
            timeout: self.timeout,
            username: self.broker.broker_username.clone(),
            password: self.broker.broker_password.clone(),
            tls: self.tls(),
            credentials: crate::client::credential::find_credentials(
                self.credentials.as_deref(),
                &local_data_dir(),
            ),
        };
        Ok(AdminClient::connect_with(self.broker_url(), &self.source_id, &options).await?)
    }
}

/// The data directory of a hub on this machine: `$OCM_EDGE_DATA_DIR`, else `./ocm-edge-data`.
/// `--data-dir` of the commands that run on the hub's machine (`hub`, `user create`).
#[derive(Debug, Clone, clap::Args)]
pub struct DataDirArg {
    /// The hub's data directory: its store, and its CA in DIR/pki (created by `ocm-edge hub`
    /// when missing).
    #[arg(
        long,
        env = "OCM_EDGE_DATA_DIR",
        default_value = DEFAULT_DATA_DIR,
        value_name = "DIR"
    )]
    pub data_dir: std::path::PathBuf,
}

fn local_data_dir() -> std::path::PathBuf {
    std::env::var_os("OCM_EDGE_DATA_DIR")
        .map_or_else(|| DEFAULT_DATA_DIR.into(), std::path::PathBuf::from)
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the hub (with an embedded MQTT broker unless --broker is given).
    Hub(hub::HubArgs),
    /// List, inspect, accept and deny managed clusters.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Create, list, inspect and delete works (ManifestWorks).
    #[command(subcommand)]
    Work(work::WorkCommand),
    /// Create or update OCM objects from their YAML: ManifestWork, ManagedClusterSet,
    /// ManagedClusterSetBinding, Placement, AddOnPlacementScore, ManifestWorkReplicaSet.
    Apply(apply::ApplyArgs),
    /// List and inspect cluster sets.
    #[command(subcommand)]
    Clusterset(placement::ClusterSetCommand),
    /// List placements and show why each cluster was or was not selected.
    #[command(subcommand)]
    Placement(placement::PlacementCommand),
    /// Follow ManifestWorkReplicaSet rollouts.
    #[command(subcommand)]
    Rollout(rollout::RolloutCommand),
    /// Enable, disable and inspect OCM add-ons (apply them with `apply -f`).
    #[command(subcommand)]
    Addon(addon::AddonCommand),
    /// Delete a cluster set, binding, placement, add-on score, ManifestWorkReplicaSet, add-on,
    /// cluster's add-on, add-on template or add-on config.
    Delete(delete::DeleteArgs),
    /// Show the hub's figures and counters (what it dropped, refused or ignored, and why).
    Stats(stats::StatsArgs),
    /// Create admin API credentials for users (on the hub's machine).
    #[command(subcommand)]
    User(user::UserCommand),
    /// Create and revoke join tokens for new clusters (on the hub's machine).
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Run a self-contained demo: broker, hub and three simulated clusters in one process.
    #[cfg(feature = "demo")]
    Demo(DemoArgs),
}

/// `ocm-edge demo` options.
#[cfg(feature = "demo")]
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Give up when the fleet has not converged within this time.
    #[arg(long, default_value = "90s", value_parser = parse_duration, value_name = "DURATION")]
    pub converge_timeout: Duration,
    /// How long the hub stays down in the middle of the demo.
    #[arg(long, default_value = "6s", value_parser = parse_duration, value_name = "DURATION")]
    pub hub_downtime: Duration,
}

/// Why a command failed.
#[derive(Debug, Error)]
pub enum CliError {
    /// Talking to the hub failed or the hub refused the command.
    #[error(transparent)]
    Admin(#[from] AdminError),
    /// Manifest or ManifestWork files could not be read or are invalid.
    #[error(transparent)]
    Input(#[from] manifests::InputError),
    /// Command-line arguments that clap cannot check alone.
    #[error("{0}")]
    Usage(String),
    /// The hub could not start or stopped with an error.
    #[error("{0}")]
    Hub(String),
    /// The demo failed.
    #[cfg(feature = "demo")]
    #[error(transparent)]
    Demo(#[from] crate::demo::DemoError),
    /// Writing the output failed.
    #[error("cannot print the result: {0}")]
    Output(String),
}

/// Runs one command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Hub(args) => hub::run(&cli.global, args).await,
        Command::Cluster(cmd) => cluster::run(&cli.global, cmd).await,
        Command::Work(cmd) => work::run(&cli.global, cmd).await,
        Command::Apply(args) => apply::run(&cli.global, args).await,
        Command::Clusterset(cmd) => placement::run_cluster_set(&cli.global, cmd).await,
        Command::Placement(cmd) => placement::run_placement(&cli.global, cmd).await,
        Command::Rollout(cmd) => rollout::run(&cli.global, cmd).await,
        Command::Addon(cmd) => addon::run(&cli.global, cmd).await,
        Command::Delete(args) => delete::run(&cli.global, args).await,
        Command::Stats(args) => stats::run(&cli.global, args).await,
        Command::User(cmd) => output::print(&user::run(cmd)?),
        Command::Token(cmd) => output::print(&token::run(cmd)?),
        #[cfg(feature = "demo")]
        Command::Demo(args) => {
            let options = crate::demo::DemoOptions {
                converge_timeout: args.converge_timeout,
                hub_downtime: args.hub_downtime,
                ..crate::demo::DemoOptions::default()
            };
            crate::demo::run(options, &mut std::io::stdout()).await?;
            Ok(())
        }
    }
}

/// Parses `5`, `5s`, `500ms`, `2m` into a duration (a bare number means seconds).
///
/// # Errors
/// A message naming the accepted forms.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write e.g. 5s, 500ms or 2m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("{text:?} has an unknown unit: use ms, s, m or h")),
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("{text:?} must be more than zero"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The hub configuration of `ocm-edge hub EXTRA...`.
    fn hub(extra: &[&str]) -> Result<ocm_edge_hub::config::HubConfig, CliError> {
        let mut args = vec!["ocm-edge", "hub"];
        args.extend_from_slice(extra);
        let cli = Cli::try_parse_from(args).unwrap();
        let Command::Hub(hub) = &cli.command else {
            panic!("not the hub command")
        };
        hub::hub_config(&cli.global, hub)
    }

    #[test]
    fn cluster_certificate_days_default_to_30_and_90_and_zero_days_are_refused() {
        let cfg = hub(&[]).unwrap();
        assert_eq!(cfg.cluster_cert_validity, chrono::Duration::days(30));
        assert_eq!(cfg.cluster_cert_grace, chrono::Duration::days(90));
        let cfg = hub(&["--cluster-cert-days", "7"]).unwrap();
        assert_eq!(cfg.cluster_cert_validity, chrono::Duration::days(7));
        let err = hub(&["--cluster-cert-days", "0"]).unwrap_err().to_string();
        assert!(
            err.contains("--cluster-cert-days must be 1 to 397"),
            "{err}"
        );
    }

    #[test]
    fn the_brokers_certificate_listener_goes_with_an_external_broker_and_tls() {
        let mtls = "mqtts://broker.example:8884";
        let cfg = hub(&["--broker", "mqtts://broker.example", "--broker-mtls", mtls]).unwrap();
        assert_eq!(cfg.broker_mtls.unwrap().to_string(), mtls);
        let err = hub(&["--broker-mtls", mtls]).unwrap_err().to_string();
        assert!(err.contains("goes with --broker"), "{err}");
        let err = hub(&[
            "--broker",
            "mqtts://broker.example",
            "--broker-mtls",
            "mqtt://broker.example:1884",
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("is no TLS listener"), "{err}");
    }

    #[test]
    fn durations_take_common_units_and_bare_seconds() {
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").unwrap_err().contains("5s"));
        assert!(parse_duration("3d").unwrap_err().contains("unit"));
    }
}
