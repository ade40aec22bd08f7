//! A scoped credential on the hub's own broker (TLS and logins, as `ocm-edge hub` runs it): the
//! CLI works with it, and a session logged in with it reads only its own admin answers, not the
//! dashboards nor other users' answers, which show what lies outside its scope.

use ocm_edge_cli::client::credential::Credential;
use ocm_edge_mqtt::TlsFiles;
use ocm_edge_mqtt::acl::OPERATOR_USER;
use ocm_edge_tests::probe::{Probe, ProbeOptions};

use crate::cli_commands::{
    TestHub, assert_failure_mentioning, assert_success, cli_as, run_user_create, stdout, user_cmd,
};

/// A raw session of the CLI's identity logged in with `credential` as `client_id`.
async fn session(hub: &TestHub, credential: &Credential, client_id: &str) -> Probe {
    Probe::connect_with(
        hub.fleet().broker_url(),
        ProbeOptions {
            client_id: client_id.to_owned(),
            credentials: Some((
                OPERATOR_USER.to_owned(),
                credential.login_password(OPERATOR_USER, client_id),
            )),
            tls: TlsFiles {
                ca_file: hub.fleet().options().broker_ca_file.clone(),
                ..TlsFiles::default()
            },
            ..ProbeOptions::default()
        },
    )
    .await
    .expect("a credential of the hub's CA gets in")
}

#[tokio::test]
async fn a_scoped_credential_reads_only_its_own_answers_on_the_hubs_broker() {
    let hub = TestHub::start().await;
    let file = hub.scratch().join("vera.pem");
    let created = run_user_create(
        &hub.hub_dir(),
        &file,
        "vera",
        "viewer",
        &["--namespace", "team-a"],
    )
    .await;
    assert_success(&created);
    let list = user_cmd(&hub, &["list"]).await;
    assert_success(&list);
    let row = stdout(&list)
        .lines()
        .find(|l| l.contains("vera"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("vera is not listed: {}", stdout(&list)));
    assert!(row.contains("namespaces team-a; any cluster set"), "{row}");

    // The CLI subscribes to its own answers only: it works.
    let out = cli_as(&hub, Some(&file), &["cluster", "list"]).await;
    assert_success(&out);
    assert!(
        stdout(&out).contains(
            "No clusters within this credential's scope (namespaces team-a; any cluster set): an admin binds a cluster set there with `ocm-edge clusterset bind SET -n team-a`"
        ),
        "{}",
        stdout(&out)
    );
    let out = cli_as(&hub, Some(&file), &["stats"]).await;
    assert_failure_mentioning(
        &out,
        &[
            "user \"vera\" (viewer of namespaces team-a; any cluster set) may not read the hub's counters",
        ],
    );

    let vera = Credential::from_pem(&std::fs::read(&file).unwrap()).unwrap();
    let own = session(&hub, &vera, "ocm-edge-cli-vera").await;
    for filter in [
        "ocm-edge/ocm-edge/dashboard/#",
        "ocm-edge/ocm-edge/dashboard/summary",
        "ocm-edge/ocm-edge/admin/responses/#",
        "ocm-edge/+/admin/responses/ocm-edge-cli-vera",
        "ocm-edge/ocm-edge/admin/responses/ocm-edge-cli-other",
    ] {
        let granted = own.subscribe(filter).await.unwrap();
        assert!(
            granted.iter().all(Result::is_err),
            "a scoped credential may subscribe to {filter}: {granted:?}"
        );
    }
    let granted = own
        .subscribe("ocm-edge/ocm-edge/admin/responses/ocm-edge-cli-vera")
        .await
        .unwrap();
    assert!(granted.iter().all(Result::is_ok), "{granted:?}");

    // An unscoped credential reads the dashboards, as before scopes.
    let admin =
        Credential::from_pem(&std::fs::read(hub.fleet().admin_credentials()).unwrap()).unwrap();
    let unscoped = session(&hub, &admin, "ocm-edge-cli-root").await;
    let granted = unscoped
        .subscribe("ocm-edge/ocm-edge/dashboard/#")
        .await
        .unwrap();
    assert!(granted.iter().all(Result::is_ok), "{granted:?}");
    hub.stop().await;
}
