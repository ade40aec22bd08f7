//! A CONNECT's username, client id and password as the hub's embedded broker checks them
//! (`ocm_edge_hub::registration::logins`): agents' key proofs with join tokens, the CLI's credential proofs,
//! the hub's and the dashboard's passwords. Nothing may panic, and nothing gets in as anyone it
//! cannot prove to be: not as the accepted cluster (its key's private half is in no input), not
//! as the hub or the dashboard without their passwords, not as the operator without a credential
//! of the fixture CA, not as a new cluster without a valid join token, not as an add-on's agent
//! that no cluster registered nor as an add-on's controller without its password.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_fuzz::{
    ADMIN_USER, CLUSTER, DASHBOARD_SECRET, HUB_SECRET, admin_authenticator, broker_logins, login_of,
};
use ocm_edge_mqtt::acl::{DASHBOARD_USER, HUB_USER, OPERATOR_USER};
use ocm_edge_mqtt::broker::LoginCheck as _;
use ocm_edge_schemas::wire::login::{self, LoginProof};

fuzz_target!(|data: &[u8]| {
    let Some((user, client_id, password)) = login_of(data) else {
        return;
    };
    // Built once: the check keeps no state an input could change but the live key of a
    // cluster that got in, which decides nothing about the next login.
    static LOGINS: std::sync::OnceLock<(
        ocm_edge_hub::registration::logins::HubLogins,
        std::sync::Arc<ocm_edge_hub::registration::join_token::JoinTokens>,
    )> = std::sync::OnceLock::new();
    let (logins, tokens) = LOGINS.get_or_init(broker_logins);
    if logins.check(&user, &client_id, password).is_err() {
        return;
    }
    let text = std::str::from_utf8(password).expect("a password that got in is UTF-8");
    match user.as_str() {
        HUB_USER => assert_eq!(text, HUB_SECRET, "in as the hub without its password"),
        DASHBOARD_USER => assert_eq!(text, DASHBOARD_SECRET, "in as the dashboard"),
        OPERATOR_USER => {
            let Ok(LoginProof::Credential {
                certificate,
                signature,
            }) = login::parse(text)
            else {
                panic!("in as the operator without a credential proof");
            };
            let who = admin_authenticator()
                .authenticate_login(
                    &user,
                    &client_id,
                    certificate,
                    signature,
                    chrono::Utc::now(),
                )
                .expect("the credential got in");
            assert_eq!(who.user, ADMIN_USER, "in as a user nobody signed");
        }
        CLUSTER => panic!("in as the accepted cluster without its key"),
        addon if addon.starts_with("addons/") => {
            match ocm_edge_schemas::wire::addon_identity::parse_identity(addon) {
                Some(ocm_edge_schemas::wire::addon_identity::AddOnIdentity::Controller {
                    addon,
                }) => assert_eq!(
                    text,
                    tokens.addon_controller_password(addon),
                    "in as an add-on's controller without its password"
                ),
                // No cluster of the fixture registered an add-on: no agent identity is bound.
                _ => panic!("in as an add-on agent nobody bound"),
            }
        }
        _ => {
            let Ok(LoginProof::AgentKey {
                token: Some(token), ..
            }) = login::parse(text)
            else {
                panic!("a new cluster in without a join token");
            };
            assert!(
                tokens.check(token, chrono::Utc::now()).is_ok(),
                "a new cluster in with a token that is not valid"
            );
        }
    }
});
