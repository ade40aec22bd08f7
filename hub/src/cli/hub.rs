//! `ocm-edge hub`: runs the hub until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::{CliError, GlobalArgs};
use crate::config::{BrokerConfig, DEFAULT_LEASE_GRACE_MULTIPLIER, HubConfig};

/// `hub` options.
#[derive(Debug, Clone, Args)]
pub struct HubArgs {
    /// Directory of the hub's store (created when missing).
    #[arg(
        long,
        env = "OCM_EDGE_DATA_DIR",
        default_value = "./ocm-edge-data",
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
    /// Listen address of the embedded MQTT broker (port 0 picks a free one). Not with --broker.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// A cluster becomes Available=Unknown after this many lease periods without a renewal.
    #[arg(long, alias = "lease-grace", default_value_t = DEFAULT_LEASE_GRACE_MULTIPLIER, value_name = "N")]
    pub lease_grace_multiplier: u32,
}

/// The hub configuration for these arguments.
///
/// # Errors
/// [`CliError::Usage`] for --listen together with --broker, or a zero grace multiplier.
pub fn hub_config(global: &GlobalArgs, args: &HubArgs) -> Result<HubConfig, CliError> {
    let broker = match (&global.broker, args.listen) {
        (Some(_), Some(_)) => {
            return Err(CliError::Usage(
                "--listen (embedded broker) and --broker (external broker) cannot be used together: \
                 drop one of them (is OCM_EDGE_BROKER set?)"
                    .to_owned(),
            ));
        }
        (Some(url), None) => BrokerConfig::External { url: url.clone() },
        (None, Some(listen)) => BrokerConfig::Embedded { listen },
        (None, None) => BrokerConfig::default(),
    };
    if args.lease_grace_multiplier == 0 {
        return Err(CliError::Usage(
            "--lease-grace-multiplier must be at least 1".to_owned(),
        ));
    }
    let mut cfg = HubConfig::new(args.data_dir.clone());
    cfg.broker = broker;
    cfg.source_id = global.source_id.clone();
    cfg.lease_grace_multiplier = args.lease_grace_multiplier;
    Ok(cfg)
}

/// Runs the hub until Ctrl-C / SIGTERM.
///
/// # Errors
/// Bad arguments, or the hub failing to start or stopping with an error.
pub async fn run(global: &GlobalArgs, args: HubArgs) -> Result<(), CliError> {
    let cfg = hub_config(global, &args)?;
    Err(CliError::Hub(format!(
        "the hub library is not wired into the CLI yet (config: {cfg:?})"
    )))
}
