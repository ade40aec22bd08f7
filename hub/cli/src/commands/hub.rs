//! `ocm-edge hub`: runs the hub until Ctrl-C or SIGTERM.

use std::net::SocketAddr;

use clap::Args;

use ocm_edge_mqtt::MetricsListen;
use ocm_edge_mqtt::metrics_endpoint::DEFAULT_HUB_METRICS_LISTEN;

use crate::output::print;
use crate::{CliError, GlobalArgs};
use ocm_edge_hub::config::{
    BrokerConfig, DEFAULT_INTAKES, DEFAULT_LEASE_GRACE_MULTIPLIER, DEFAULT_PLAINTEXT_PORT,
    EmbeddedSecurity, HubConfig,
};

/// `hub` options.
#[derive(Debug, Clone, Args)]
pub struct HubArgs {
    #[command(flatten)]
    pub data: crate::DataDirArg,
    /// A directory holding the hub's CA (ca.pem and ca-key.pem, both or neither) and the
    /// join-token key (join-token-key), e.g. a Kubernetes Secret mounted read-only: each is
    /// copied into DATA_DIR/pki at start when the data directory has none, instead of the hub
    /// creating its own. One that differs from the data directory's is refused (agents trust
    /// the CA they were given).
    #[arg(long, env = "OCM_EDGE_PKI_FROM", value_name = "DIR")]
    pub pki_from: Option<std::path::PathBuf>,
    /// Listen address of the embedded MQTT broker (port 0 picks a free one) [default:
    /// 127.0.0.1:8883; with --insecure-plaintext 127.0.0.1:1883]. Not with --broker.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Another DNS name or IP address agents reach the hub by, for the embedded broker's TLS
    /// certificate (repeatable; loopback, the host name and a specific --listen address are
    /// always in it).
    #[arg(long = "tls-san", value_name = "NAME")]
    pub tls_sans: Vec<String>,
    /// Run the embedded broker WITHOUT TLS and without authentication: anyone who reaches its
    /// port can read every work and run anything on every cluster. For a laptop or a lab only;
    /// logged as a warning at every start.
    #[arg(long)]
    pub insecure_plaintext: bool,
    /// Take admin requests WITHOUT a credential: anyone who can publish on the broker's admin
    /// topic can accept clusters and run anything on every cluster. For a lab only; logged as a
    /// warning at every start.
    #[arg(long)]
    pub insecure_open_admin: bool,
    /// A cluster becomes Available=Unknown (tainted unreachable) after this many lease periods
    /// without a proof of life (OCM uses 5). At least 1.
    #[arg(long, alias = "lease-grace", default_value_t = DEFAULT_LEASE_GRACE_MULTIPLIER, value_name = "N")]
    pub lease_grace_multiplier: f64,
    /// MQTT sessions receiving agent events, each decoding on its own task. More than one share
    /// the subscription (`$share/`, MQTT 5): use it when one session cannot keep up with the
    /// fleet. 1 to 16.
    #[arg(long, default_value_t = DEFAULT_INTAKES, value_name = "N")]
    pub intakes: usize,
    /// Days each accepted cluster's TLS client certificate is valid (issued by the hub's cluster
    /// CA at `cluster accept`, for brokers that take certificates as identities; the agent asks
    /// for the next one after two thirds of it). 1 to 397.
    #[arg(long, default_value_t = 30, value_name = "DAYS")]
    pub cluster_cert_days: u32,
    /// Days after its certificate ended that a cluster still gets a new one by asking (signed
    /// with its bound key), with nobody touching it; later, only `cluster accept` issues it.
    #[arg(long, default_value_t = 90, value_name = "DAYS")]
    pub cluster_cert_grace_days: u32,
    /// The external broker's certificate listener (mqtts://HOST:8884 in broker-config/mosquitto/),
    /// where clusters log in with their certificates: the hub drops the live sessions of a
    /// cluster whose certificate it revoked (`cluster deny`) there once the broker has read the
    /// revocation list, and says so until it has. With --broker only; trusted like it
    /// (--broker-ca-file, --broker-ca-pin).
    #[arg(long, env = "OCM_EDGE_BROKER_MTLS", value_name = "URL")]
    pub broker_mtls: Option<String>,
    /// Where to serve Prometheus metrics (`GET /metrics`): IP:PORT, or `off` for none. No
    /// authentication: the metrics show the fleet's size and health and name placements and
    /// rollouts, so keep it on loopback or on a network only Prometheus reaches (another address
    /// is logged as a warning).
    #[arg(long, value_name = "IP:PORT|off", default_value = DEFAULT_HUB_METRICS_LISTEN)]
    pub metrics_listen: MetricsListen,
}

/// The hub configuration for these arguments.
///
/// # Errors
/// [`CliError::Usage`] for --listen together with --broker, or a zero grace multiplier.
pub fn hub_config(global: &GlobalArgs, args: &HubArgs) -> Result<HubConfig, CliError> {
    let broker = match (&global.broker.broker, args.listen) {
        (Some(_), Some(_)) => {
            return Err(CliError::Usage(
                "--listen (embedded broker) and --broker (external broker) cannot be used together: \
                 drop one of them (is OCM_EDGE_BROKER set?)"
                    .to_owned(),
            ));
        }
        (Some(url), None) => BrokerConfig::External { url: url.clone() },
        (None, Some(listen)) => BrokerConfig::Embedded { listen },
        (None, None) if args.insecure_plaintext => BrokerConfig::Embedded {
            listen: ([127, 0, 0, 1], DEFAULT_PLAINTEXT_PORT).into(),
        },
        (None, None) => BrokerConfig::default(),
    };
    if global.broker.broker.is_some() && (args.insecure_plaintext || !args.tls_sans.is_empty()) {
        return Err(CliError::Usage(
            "--insecure-plaintext and --tls-san are about the embedded broker; with --broker the \
             external broker's own configuration decides (see broker-config/)"
                .to_owned(),
        ));
    }
    if args.insecure_plaintext && !args.tls_sans.is_empty() {
        return Err(CliError::Usage(
            "--tls-san names the embedded broker's TLS certificate, which --insecure-plaintext \
             turns off: drop one of them"
                .to_owned(),
        ));
    }
    if !(args.lease_grace_multiplier.is_finite() && args.lease_grace_multiplier >= 1.0) {
        return Err(CliError::Usage(
            "--lease-grace-multiplier must be at least 1".to_owned(),
        ));
    }
    if !(1..=ocm_edge_hub::process::MAX_INTAKES).contains(&args.intakes) {
        return Err(CliError::Usage(format!(
            "--intakes must be 1 to {} (MQTT sessions receiving agent events), not {}",
            ocm_edge_hub::process::MAX_INTAKES,
            args.intakes
        )));
    }
    if !(1..=397).contains(&args.cluster_cert_days) {
        return Err(CliError::Usage(format!(
            "--cluster-cert-days must be 1 to 397 (the longest a TLS client certificate should live), not {}",
            args.cluster_cert_days
        )));
    }
    let broker_mtls = match &args.broker_mtls {
        None => None,
        Some(_) if global.broker.broker.is_none() => {
            return Err(CliError::Usage(
                "--broker-mtls names an external broker's certificate listener and goes with \
                 --broker: the embedded broker drops a denied cluster's sessions itself"
                    .to_owned(),
            ));
        }
        Some(url) => {
            let url = ocm_edge_mqtt::BrokerUrl::parse(url)
                .map_err(|e| CliError::Usage(format!("--broker-mtls: {e}")))?;
            if !url.is_tls() {
                return Err(CliError::Usage(format!(
                    "--broker-mtls {url} is no TLS listener: clusters log in there with TLS \
                     client certificates (mqtts://HOST:PORT)"
                )));
            }
            Some(url)
        }
    };
    let mut cfg = HubConfig::new(args.data.data_dir.clone());
    cfg.pki_from = args.pki_from.clone();
    cfg.broker_mtls = broker_mtls;
    cfg.broker = broker;
    cfg.cluster_cert_validity = chrono::Duration::days(i64::from(args.cluster_cert_days));
    cfg.cluster_cert_grace = chrono::Duration::days(i64::from(args.cluster_cert_grace_days));
    cfg.embedded_security = if args.insecure_plaintext {
        EmbeddedSecurity::InsecurePlaintext
    } else {
        EmbeddedSecurity::Tls {
            extra_names: args.tls_sans.clone(),
        }
    };
    if args.insecure_open_admin {
        cfg.admin_auth = ocm_edge_hub::config::AdminAuth::InsecureOpen;
    }
    cfg.source_id = global.source_id.clone();
    cfg.lease_grace_multiplier = args.lease_grace_multiplier;
    cfg.intakes = args.intakes;
    cfg.broker_username = global.broker.broker_username.clone();
    cfg.broker_password = global.broker.broker_password.clone();
    cfg.broker_tls = global.broker.tls();
    cfg.metrics_listen = args.metrics_listen.addr();
    Ok(cfg)
}

/// Runs the hub until Ctrl-C / SIGTERM, then stops it gracefully (store closed).
///
/// Prints one line `ocm-edge hub running: broker URL, ...` on stdout once it is up, so scripts
/// (and tests) started with `--listen 127.0.0.1:0` learn the port.
///
/// # Errors
/// Bad arguments, or the hub failing to start or stopping with an error.
pub async fn run(global: &GlobalArgs, args: HubArgs) -> Result<(), CliError> {
    let cfg = hub_config(global, &args)?;
    // Listening from now on: a SIGTERM right after the announcement below (a supervisor, a test)
    // stops the hub gracefully instead of killing it.
    let shutdown = ocm_edge_mqtt::shutdown_signal();
    let data_dir = cfg.data_dir.display().to_string();
    let source_id = cfg.source_id.clone();
    let handle = ocm_edge_hub::process::start_hub(cfg)
        .await
        .map_err(|e| CliError::Hub(format!("the hub did not start: {e}")))?;
    let url = handle.broker_url();
    let (ca_line, trust) = match (handle.ca_pin(), handle.ca_file()) {
        (Some(pin), Some(file)) => (
            format!("CA pin {pin} (CA certificate: {})\n", file.display()),
            format!(" --broker-ca-pin {pin}"),
        ),
        // No broker CA of the hub's own: agents pin the hub's CA for its signatures alone.
        _ => {
            let pin = handle.hub_ca_pin();
            (
                format!("hub CA pin {pin} (signs everything the hub sends to agents)\n"),
                format!(" --hub-ca-pin {pin}"),
            )
        }
    };
    if handle.runs_embedded_broker() && handle.ca_pin().is_none() {
        eprintln!(
            "WARNING: --insecure-plaintext: the embedded broker at {url} takes plaintext, anonymous \
             connections; anyone who reaches it can read every work and run anything on every cluster"
        );
    }
    if args.insecure_open_admin {
        eprintln!(
            "WARNING: --insecure-open-admin: the admin API takes unsigned requests; anyone who \
             can publish on the broker can accept clusters and run anything on every cluster"
        );
    }
    let metrics_line = handle.metrics_addr().map_or_else(String::new, |addr| {
        format!("metrics: http://{addr}/metrics (Prometheus, no authentication)\n")
    });
    let admin_line = handle.admin_credentials().map_or_else(String::new, |path| {
        format!(
            "admin credential: {} (the CLI on this machine finds it; copy it to ~/.config/ocm-edge/credentials.pem elsewhere)\n",
            path.display()
        )
    });
    // Announce the hub only once it listens on the broker, so a script that waits for the line
    // below can use the CLI at once.
    if tokio::time::timeout(global.timeout, handle.subscribed())
        .await
        .is_err()
    {
        tracing::warn!(broker = %url, "the hub has not reached the broker yet; it keeps trying");
    }
    // The embedded broker with logins wants a join token from a new cluster.
    let (token, token_line) = match handle.dashboard_password_file() {
        Some(dashboard) => (
            " --token TOKEN",
            format!(
                "join tokens: ocm-edge token create --data-dir {data_dir} (prints TOKEN)\n\
                 dashboards: user ocm-edge-dashboard, password in {}\n",
                dashboard.display()
            ),
        ),
        None => ("", String::new()),
    };
    print(&format!(
        "ocm-edge hub running: broker {url}, source id {source_id}, data {data_dir}\n\
         {ca_line}\
         {admin_line}\
         {token_line}\
         {metrics_line}\
         agents: ocm-edge-agent --cluster-name NAME --broker {url}{trust}{token}\n\
         then: ocm-edge cluster accept NAME\n"
    ))?;
    shutdown.await;
    tracing::info!("stopping the hub");
    handle
        .shutdown()
        .await
        .map_err(|e| CliError::Hub(format!("the hub stopped with an error: {e}")))
}
