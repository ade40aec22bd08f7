//! The hub and the CLI log in to a Mosquitto that wants passwords and enforces ocm-edge's ACL
//! (`broker-config/mosquitto/ocm-edge.acl`): the hub as `ocm-edge-hub`, the CLI as
//! `ocm-edge-operator`, both configured through the CLI's global flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ocm_edge_cli::client::AdminError;
use ocm_edge_cli::{Cli, CliError, Command, GlobalArgs};
use ocm_edge_tests::mosquitto::{Mosquitto, MosquittoAuth, require_mosquitto};

const WAIT: Duration = Duration::from_secs(10);

fn acl_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../broker-config/mosquitto/ocm-edge.acl")
}

/// `ocm-edge --broker URL --broker-username USER --broker-password PASS ARGS...`.
fn cli(url: &str, user: &str, password: &str, args: &[&str]) -> Cli {
    let global = [
        "ocm-edge",
        "--broker",
        url,
        "--broker-username",
        user,
        "--broker-password",
        password,
        "--timeout",
        "10s",
    ];
    Cli::try_parse_from(global.iter().chain(args)).expect("the command line parses")
}

/// The operator's CLI options: a broker login, and the hub's first admin credential in `data_dir`
/// to sign its requests with.
fn operator(url: &str, password: &str, data_dir: &str) -> GlobalArgs {
    let mut global = cli(url, "ocm-edge-operator", password, &["cluster", "list"]).global;
    global.credentials = Some(std::path::Path::new(data_dir).join("admin-credentials.pem"));
    global
}

#[tokio::test]
async fn hub_and_cli_log_in_to_a_mosquitto_with_passwords_and_a_wrong_password_is_named() {
    let test = "hub_and_cli_log_in_to_a_mosquitto_with_passwords_and_a_wrong_password_is_named";
    let Some(program) = require_mosquitto(test) else {
        return;
    };
    let auth = MosquittoAuth {
        users: ["ocm-edge-hub", "ocm-edge-operator"]
            .iter()
            .map(|u| (u.to_string(), format!("{u}-secret")))
            .collect(),
        acl_file: acl_file(),
    };
    let broker = Mosquitto::start_with(&program, Some(&auth)).expect("mosquitto starts");
    let url = broker.url();

    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_str().unwrap();
    let hub_cli = cli(
        &url,
        "ocm-edge-hub",
        "ocm-edge-hub-secret",
        &["hub", "--metrics-listen", "off", "--data-dir", data_dir],
    );
    let Command::Hub(hub_args) = &hub_cli.command else {
        panic!("`hub` parses as the hub command");
    };
    let cfg = ocm_edge_cli::commands::hub::hub_config(&hub_cli.global, hub_args).unwrap();
    let hub = ocm_edge_hub::start_hub(cfg).await.unwrap();
    tokio::time::timeout(WAIT, hub.subscribed())
        .await
        .unwrap_or_else(|_| panic!("the hub did not log in; mosquitto log:\n{}", broker.log()));

    // The operator's request and the hub's answer both pass the ACL.
    let admin = operator(&url, "ocm-edge-operator-secret", data_dir)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("the operator could not log in: {e}"));
    let clusters = admin
        .list_clusters()
        .await
        .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
    assert!(clusters.is_empty(), "{clusters:?}");

    let e = match operator(&url, "not-the-password", data_dir).connect().await {
        Ok(_) => panic!("a wrong password was accepted"),
        Err(CliError::Admin(e)) => e,
        Err(e) => panic!("not an admin client error: {e}"),
    };
    assert!(
        matches!(
            e,
            AdminError::Link(ocm_edge_mqtt::LinkError::LoginRefused { .. })
        ) && !e.is_retryable(),
        "{e}"
    );
    let e = e.to_string();
    assert!(
        e.contains("refused the credentials for user \"ocm-edge-operator\""),
        "{e}"
    );
    assert!(e.contains("--broker-password"), "{e}");

    hub.shutdown().await.unwrap();
}
