//! `ocm-edge hub` with no flag about security: its embedded broker takes TLS only, with a
//! certificate of the hub's own CA, and a client trusts it by the CA's pin (printed at start) or by
//! the CA file. A plaintext client, a client trusting only the system's roots and a client with
//! another hub's pin are all refused; an agent with the pin joins and an operator elsewhere accepts
//! it with the pin. The CA survives a restart (same pin). `--insecure-plaintext` is the only way
//! to a plaintext broker, and it says so on stderr.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ocm_edge_agent::Registration;
use ocm_edge_mqtt::{
    BrokerUrl, CaPin, ConnectError, Credentials, LinkError, Session, SessionConfig, TlsFiles,
};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use tokio::time::timeout;

use crate::join::{start_joining, wait_registration};

const BIN: &str = env!("CARGO_BIN_EXE_ocm-edge");
const WAIT: Duration = Duration::from_secs(30);

/// A running `ocm-edge hub` and what it printed.
struct HubProcess {
    child: Child,
    _stdout: Lines<BufReader<ChildStdout>>,
    url: String,
    pin: Option<CaPin>,
    /// The pin printed for agents' signature checks when the broker has no CA of the hub's.
    hub_pin: Option<CaPin>,
    /// What the hub printed on stdout up to its `then:` line.
    printed: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl HubProcess {
    async fn start(data_dir: &Path, extra: &[&str]) -> HubProcess {
        let mut child = tokio::process::Command::new(BIN)
            .args(["hub", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            // Tests run side by side: not the default port (unless the test chooses).
            .args(
                ["--metrics-listen", "127.0.0.1:0"]
                    .iter()
                    .filter(|_| !extra.contains(&"--metrics-listen")),
            )
            .args(extra)
            .env_remove("OCM_EDGE_BROKER")
            .env_remove("OCM_EDGE_SOURCE_ID")
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err_lines = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn({
            let stderr = stderr.clone();
            async move {
                while let Ok(Some(line)) = err_lines.next_line().await {
                    let mut all = stderr.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                }
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = Vec::new();
        while !printed.iter().any(|l: &String| l.starts_with("then:")) {
            let line = timeout(WAIT, stdout.next_line())
                .await
                .expect("the hub announces itself")
                .unwrap()
                .unwrap_or_else(|| panic!("the hub exited: {}", stderr.lock().unwrap()));
            printed.push(line);
        }
        let words = || printed.iter().flat_map(|l| l.split_whitespace());
        let url = words()
            .find(|w| w.starts_with("mqtt://") || w.starts_with("mqtts://"))
            .map(|w| w.trim_end_matches(',').to_owned())
            .unwrap_or_else(|| panic!("no broker URL in {printed:?}"));
        // `CA pin ...` (the broker's CA, also the hub's) or `hub CA pin ...` (signatures only).
        let pin_on = |prefix: &str| {
            printed
                .iter()
                .filter(|l| l.starts_with(prefix))
                .flat_map(|l| l.split_whitespace())
                .find(|w| w.starts_with("sha256:"))
                .map(|w| w.parse().unwrap())
        };
        let pin = pin_on("CA pin");
        let hub_pin = pin_on("hub CA pin");
        HubProcess {
            child,
            _stdout: stdout,
            url,
            pin,
            hub_pin,
            printed,
            stderr,
        }
    }

    async fn stop(mut self) {
        let pid = self.child.id().unwrap().to_string();
        assert!(
            std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = timeout(WAIT, self.child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// Connects a plain MQTT session to `url` with `tls`, or says why it could not.
async fn connect(url: &str, tls: TlsFiles) -> Result<Session, ConnectError> {
    connect_as(url, tls, None).await
}

/// [`connect`] with a username and password.
async fn connect_as(
    url: &str,
    tls: TlsFiles,
    credentials: Option<Credentials>,
) -> Result<Session, ConnectError> {
    let mut cfg = SessionConfig::new(BrokerUrl::parse(url).unwrap(), "tls-probe");
    cfg.tls = tls;
    cfg.credentials = credentials;
    Session::connect(cfg, Duration::from_secs(5))
        .await
        .map(|(session, _events)| session)
}

fn pinned(pin: CaPin) -> TlsFiles {
    TlsFiles {
        ca_pin: Some(pin),
        ..TlsFiles::default()
    }
}

async fn ocm_edge(args: &[&str]) -> std::process::Output {
    timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(BIN)
            .args(args)
            .env_remove("OCM_EDGE_BROKER")
            .env_remove("OCM_EDGE_DATA_DIR")
            .env_remove("OCM_EDGE_BROKER_CA_FILE")
            .env_remove("OCM_EDGE_BROKER_CA_PIN")
            .env_remove("OCM_EDGE_CREDENTIALS")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("ocm-edge finishes")
    .unwrap()
}

/// The address in the hub's `metrics: http://ADDR/metrics ...` line, if it printed one.
fn printed_metrics(hub: &HubProcess) -> Option<std::net::SocketAddr> {
    hub.printed
        .iter()
        .find_map(|l| l.strip_prefix("metrics: http://"))
        .and_then(|rest| rest.split('/').next())
        .map(|addr| addr.parse().unwrap())
}

#[tokio::test]
async fn the_hub_serves_its_metrics_where_it_says_and_off_turns_them_off() {
    let dir = tempfile::tempdir().unwrap();
    let hub = HubProcess::start(&dir.path().join("on"), &[]).await;
    let addr = printed_metrics(&hub).unwrap_or_else(|| panic!("{:?}", hub.printed));
    let scraped = ocm_edge_tests::metrics::scrape(addr).await.unwrap();
    // The fleet counted by the hub task, and its own sessions on its embedded broker.
    assert!(
        scraped.has("ocm_edge_clusters", &[("state", "Pending")]),
        "{}",
        scraped.text
    );
    assert!(
        scraped.sum("ocm_edge_broker_connections", &[]) >= 1.0,
        "{}",
        scraped.text
    );
    hub.stop().await;
    let quiet = HubProcess::start(&dir.path().join("off"), &["--metrics-listen", "off"]).await;
    assert_eq!(printed_metrics(&quiet), None, "{:?}", quiet.printed);
    assert!(
        !quiet.stderr.lock().unwrap().contains("Prometheus"),
        "{}",
        quiet.stderr.lock().unwrap()
    );
    quiet.stop().await;
}

/// `ocm-edge cluster accept NAME` as an operator on another machine runs it, with the hub's
/// `pin` and the admin `credentials`; waits until `agent` hears it was accepted.
async fn accept_elsewhere(
    url: &str,
    name: &str,
    pin: CaPin,
    credentials: &Path,
    agent: &ocm_edge_agent::AgentHandle,
) {
    let pin = pin.to_string();
    let out = ocm_edge(&[
        "cluster",
        "accept",
        name,
        "--broker",
        url,
        "--broker-ca-pin",
        &pin,
        "--credentials",
        credentials.to_str().unwrap(),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_registration(
        agent,
        Registration::Accepted,
        WAIT,
        "the agent hears it was accepted",
    )
    .await;
}

#[tokio::test]
async fn the_default_hub_takes_only_tls_and_clients_that_trust_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let hub = HubProcess::start(&data, &[]).await;
    assert!(hub.url.starts_with("mqtts://127.0.0.1:"), "{}", hub.url);
    let pin = hub.pin.expect("the hub prints its CA pin");
    let ca_pem = std::fs::read_to_string(data.join("pki/ca.pem")).unwrap();
    let ca_der = rustls::pki_types::pem::PemObject::from_pem_slice(ca_pem.as_bytes())
        .map(|c: rustls::pki_types::CertificateDer<'_>| c.to_vec())
        .unwrap();
    assert!(
        pin.matches(&ca_der),
        "the printed pin is the CA's in DATA/pki/ca.pem"
    );

    // Refused: plaintext MQTT, TLS trusting only the system's roots, TLS with another hub's pin.
    let plain = hub.url.replace("mqtts://", "mqtt://");
    assert!(
        connect(&plain, TlsFiles::default()).await.is_err(),
        "plaintext got in"
    );
    let e = connect(&hub.url, TlsFiles::default())
        .await
        .expect_err("system roots got in");
    assert!(e.to_string().contains("--broker-ca-pin"), "{e}");
    let other = CaPin::of_der(b"the CA of another hub");
    let e = connect(&hub.url, pinned(other))
        .await
        .expect_err("a wrong pin got in");
    assert!(e.to_string().contains("pinned"), "{e}");
    // Trusted: the pin, or the CA file; and then the broker wants to know who logs in.
    let e = connect(&hub.url, pinned(pin))
        .await
        .expect_err("an anonymous client got in");
    assert!(
        matches!(e, ConnectError::Link(LinkError::LoginRefused { .. })),
        "the pin is trusted, the login is what is refused: {e}"
    );
    let dashboard = Credentials {
        username: "ocm-edge-dashboard".to_owned(),
        password: std::fs::read_to_string(data.join("dashboard-password"))
            .expect("the hub wrote the dashboard's password")
            .trim()
            .to_owned(),
    };
    connect_as(&hub.url, pinned(pin), Some(dashboard.clone()))
        .await
        .expect("the pin is trusted and the dashboard logs in");
    let ca_file = TlsFiles {
        ca_file: Some(data.join("pki/ca.pem")),
        ..TlsFiles::default()
    };
    connect_as(&hub.url, ca_file, Some(dashboard))
        .await
        .expect("the CA file is trusted");

    // An agent given the pin but no join token is kept out; with a token from `ocm-edge token
    // create` it joins, and an operator on another machine accepts it with the pin and the admin
    // credential the hub wrote at its first start.
    let out = ocm_edge(&["token", "create", "--data-dir", data.to_str().unwrap()]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let token = printed
        .lines()
        .find(|l| l.starts_with("oet1."))
        .unwrap_or_else(|| panic!("no token in {printed}"))
        .to_owned();
    assert!(
        printed.contains(&format!("--broker-ca-pin {pin}")) && printed.contains("--token oet1."),
        "the agent's command line is printed: {printed}"
    );
    let agent = start_joining(&hub.url, "edge-1", pin, &token, &dir.path().join("edge-1")).await;
    accept_elsewhere(
        &hub.url,
        "edge-1",
        pin,
        &data.join("admin-credentials.pem"),
        &agent,
    )
    .await;
    agent.shutdown().await.unwrap();
    hub.stop().await;

    // The CA is the hub's identity: a restart keeps it, so agents keep trusting the hub.
    let again = HubProcess::start(&data, &[]).await;
    assert_eq!(again.pin, Some(pin));
    again.stop().await;
}

#[tokio::test]
async fn a_plaintext_hub_needs_the_loud_flag_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let hub = HubProcess::start(&data, &["--insecure-plaintext"]).await;
    assert!(hub.url.starts_with("mqtt://"), "{}", hub.url);
    assert_eq!(hub.pin, None);
    // Its events are still signed: agents are told which CA to trust for that.
    let hub_pin = hub
        .hub_pin
        .expect("a plaintext hub prints its CA pin for signatures");
    assert!(
        hub.printed
            .iter()
            .any(|l| l.starts_with("agents:") && l.contains(&format!("--hub-ca-pin {hub_pin}"))),
        "{:?}",
        hub.printed
    );
    connect(&hub.url, TlsFiles::default())
        .await
        .expect("plaintext is what was asked for");
    let stderr = hub.stderr.lock().unwrap().clone();
    assert!(
        stderr.contains("WARNING") && stderr.contains("--insecure-plaintext"),
        "no warning on stderr: {stderr}"
    );
    assert!(
        !data.join("pki/broker.pem").exists(),
        "no broker certificate for a plaintext hub"
    );
    // Plaintext is about the broker: the admin API still takes only signed requests.
    let out = ocm_edge(&["cluster", "list", "--broker", &hub.url]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only signed admin requests"), "{err}");
    hub.stop().await;

    // An open admin API needs its own loud flag.
    let open = dir.path().join("open");
    let hub = HubProcess::start(&open, &["--insecure-plaintext", "--insecure-open-admin"]).await;
    let stderr = hub.stderr.lock().unwrap().clone();
    assert!(
        stderr.contains("WARNING") && stderr.contains("--insecure-open-admin"),
        "no warning on stderr: {stderr}"
    );
    let out = ocm_edge(&["cluster", "list", "--broker", &hub.url]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!open.join("admin-credentials.pem").exists());
    hub.stop().await;

    // The flag is about the embedded broker: with an external broker it is a usage error.
    let other = dir.path().join("other").display().to_string();
    let out = ocm_edge(&[
        "hub",
        "--insecure-plaintext",
        "--broker",
        "mqtt://127.0.0.1:1",
        "--data-dir",
        &other,
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("about the embedded broker"), "{stderr}");
}

/// The hub chart's way in and out of the hub's keys: a CA and token key given in a directory (a
/// mounted Secret, `--pki-from`) are the hub's from its first start, so agents know its pin
/// before it runs and tokens made elsewhere with the key are taken; a different CA later is
/// refused rather than cutting agents off; and an admin credential comes out on standard output
/// (`user create --out -`, from inside the hub's pod) and signs admin requests.
#[tokio::test]
async fn a_hub_takes_its_ca_and_token_key_from_pki_from_and_hands_out_credentials_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let given = dir.path().join("given");
    let given_pki =
        ocm_edge_hub::pki::HubPki::load_or_create(&given.join("pki"), chrono::Utc::now()).unwrap();
    let tokens =
        ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(&given).unwrap();
    let data = dir.path().join("data");
    let from = given.join("pki");
    let hub = HubProcess::start(&data, &["--pki-from", from.to_str().unwrap()]).await;
    assert_eq!(
        hub.pin,
        Some(given_pki.pin()),
        "the hub's CA is the one given"
    );
    // A token made with the given key, away from the hub, lets an agent ask to join.
    let token = tokens
        .create(chrono::Duration::hours(1), chrono::Utc::now())
        .unwrap();
    let agent = start_joining(
        &hub.url,
        "edge-given",
        given_pki.pin(),
        &token.token,
        &dir.path().join("edge-given"),
    )
    .await;

    // A credential printed on standard output, as `kubectl exec` hands it out of the pod, accepts
    // the cluster from another machine.
    let out = ocm_edge(&[
        "user",
        "create",
        "ops",
        "--role",
        "admin",
        "--out",
        "-",
        "--data-dir",
        data.to_str().unwrap(),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pem = String::from_utf8(out.stdout).unwrap();
    assert!(
        pem.starts_with("-----BEGIN CERTIFICATE-----"),
        "only the credential: {pem}"
    );
    assert!(!dir.path().join("-").exists() && !Path::new("-").exists());
    let file = dir.path().join("ops.pem");
    std::fs::write(&file, &pem).unwrap();
    accept_elsewhere(&hub.url, "edge-given", given_pki.pin(), &file, &agent).await;
    agent.shutdown().await.unwrap();
    hub.stop().await;

    // Another CA given to the same data directory is refused, naming both files.
    let other = dir.path().join("other");
    ocm_edge_hub::pki::HubPki::load_or_create(&other.join("pki"), chrono::Utc::now()).unwrap();
    let out = ocm_edge(&[
        "hub",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--pki-from",
        other.join("pki").to_str().unwrap(),
    ])
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("differs from") && err.contains("agents already trust"),
        "{err}"
    );
    let again = HubProcess::start(&data, &[]).await;
    assert_eq!(
        again.pin,
        Some(given_pki.pin()),
        "the data directory kept its CA"
    );
    again.stop().await;
}
