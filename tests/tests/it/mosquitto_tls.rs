//! `mqtts://` on every side: the hub, an agent and the CLI's admin client reach a Mosquitto TLS
//! listener whose certificate a test CA (rcgen) signed, and each side, given the wrong CA, fails
//! with an error that names the broker and says its certificate is not trusted.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, start_agent};
use ocm_edge_cli::client::{AdminClient, AdminError, ConnectOptions};
use ocm_edge_hub::{BrokerConfig, HubConfig, start_hub};
use ocm_edge_mqtt::{LinkError, TlsFiles};
use ocm_edge_schemas::admin::ClusterState;
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};
use ocm_edge_tests::pki::TestPki;
use ocm_edge_tests::wait::wait_until;
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(20);

struct Setup {
    broker: Mosquitto,
    right: TestPki,
    wrong: TestPki,
    dir: tempfile::TempDir,
}

fn setup(test: &str) -> Option<Setup> {
    let program = require_mosquitto(test)?;
    let dir = tempfile::tempdir().unwrap();
    let right = TestPki::create(dir.path(), "right");
    let wrong = TestPki::create(dir.path(), "wrong");
    let broker = Mosquitto::start_tls(&program, &right).expect("mosquitto starts with TLS");
    Some(Setup {
        broker,
        right,
        wrong,
        dir,
    })
}

fn tls(ca: &Path) -> TlsFiles {
    TlsFiles {
        ca_file: Some(ca.to_owned()),
        ..TlsFiles::default()
    }
}

/// The CLI's admin client on `url`, trusting `ca` (the system's roots when `None`), signing with
/// `credentials`.
async fn admin(
    url: &str,
    ca: Option<&Path>,
    credentials: Option<&Path>,
) -> Result<AdminClient, AdminError> {
    let options = ConnectOptions {
        timeout: WAIT,
        tls: ca.map(tls).unwrap_or_default(),
        credentials: credentials.map(Path::to_owned),
        ..ConnectOptions::default()
    };
    AdminClient::connect_with(url, "ocm-edge", &options).await
}

/// Runs a test binary (with `args`) against the broker with the wrong CA and returns the first
/// stderr line that says the broker's certificate is not trusted.
async fn untrusted_line(program: &str, s: &Setup, args: &[&str]) -> String {
    let data_dir = s
        .dir
        .path()
        .join(format!("wrong-{}", uuid::Uuid::new_v4().simple()));
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .args(["--broker", &s.broker.url()])
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--broker-ca-file")
        .arg(&s.wrong.ca_file)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let found = tokio::time::timeout(WAIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("not trusted") {
                return Some(line);
            }
            seen.push(line);
        }
        None
    })
    .await;
    let _ = child.kill().await;
    match found {
        Ok(Some(line)) => line,
        _ => panic!("{program} never said the certificate is not trusted; stderr:\n{seen:?}"),
    }
}

#[tokio::test]
async fn the_hub_serves_an_agent_over_mqtts_and_names_an_untrusted_broker() {
    let Some(s) = setup("the_hub_serves_an_agent_over_mqtts_and_names_an_untrusted_broker") else {
        return;
    };
    let url = s.broker.url();
    assert!(url.starts_with("mqtts://"), "{url}");

    let mut cfg = HubConfig::new(s.dir.path().join("hub"));
    cfg.broker = BrokerConfig::External { url: url.clone() };
    cfg.broker_tls = tls(&s.right.ca_file);
    let hub = start_hub(cfg).await.unwrap();
    tokio::time::timeout(WAIT, hub.subscribed())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the hub did not subscribe over TLS; log:\n{}",
                s.broker.log()
            )
        });

    let mut agent_cfg = AgentConfig::new("edge-tls", &url, s.dir.path().join("agent"));
    agent_cfg.tls = tls(&s.right.ca_file);
    let agent = start_agent(agent_cfg).await.unwrap();

    let admin = admin(&url, Some(&s.right.ca_file), hub.admin_credentials())
        .await
        .unwrap();
    // The agent's join request crossed TLS to the hub, and the CLI's request and answer too.
    wait_until(
        "the agent's join request reaches the hub over TLS",
        WAIT,
        || async {
            admin
                .list_clusters()
                .await
                .unwrap()
                .iter()
                .any(|c| c.name == "edge-tls" && c.state == ClusterState::Pending)
        },
    )
    .await
    .unwrap();

    let line = untrusted_line(env!("CARGO_BIN_EXE_test-hub"), &s, &[]).await;
    assert!(
        line.contains(&url),
        "the hub's error names the broker: {line}"
    );

    agent.shutdown().await.unwrap();
    admin.disconnect().await;
    hub.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_agent_with_the_wrong_ca_says_the_broker_is_not_trusted() {
    let Some(s) = setup("an_agent_with_the_wrong_ca_says_the_broker_is_not_trusted") else {
        return;
    };
    let url = s.broker.url();
    let line = untrusted_line(
        env!("CARGO_BIN_EXE_test-agent"),
        &s,
        &["--cluster", "edge-wrong"],
    )
    .await;
    assert!(
        line.contains(&url),
        "the agent's error names the broker: {line}"
    );
    assert!(
        line.contains("--broker-ca-file"),
        "it says what to fix: {line}"
    );
}

#[tokio::test]
async fn the_cli_with_the_wrong_ca_fails_naming_the_broker_and_the_untrusted_certificate() {
    let Some(s) =
        setup("the_cli_with_the_wrong_ca_fails_naming_the_broker_and_the_untrusted_certificate")
    else {
        return;
    };
    let url = s.broker.url();
    let e = admin(&url, Some(&s.wrong.ca_file), None).await.unwrap_err();
    assert!(
        matches!(e, AdminError::Link(LinkError::Untrusted { .. })) && !e.is_retryable(),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains(&url) && text.contains("not trusted"),
        "{text}"
    );

    // Without any CA file the system's roots are used, and they do not know the test CA either.
    let e = admin(&url, None, None).await.unwrap_err();
    assert!(e.to_string().contains("not trusted"), "{e}");
}
