//! Admin API credentials: the files the CLI loads ([`ocm_edge_cli::client::credential`]), and
//! requests it signs with them checked by the hub's authenticator ([`ocm_edge_hub::admin::auth`]):
//! the two halves together.

use chrono::{DateTime, Utc};
use ocm_edge_cli::client::credential::Credential;
use ocm_edge_hub::admin::auth::{AuthError, Authenticator, Identity};
use ocm_edge_hub::pki::HubPki;
use ocm_edge_schemas::admin::Role;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::login;

fn now() -> DateTime<Utc> {
    "2026-11-25T10:00:00Z".parse().unwrap()
}

fn pki() -> (tempfile::TempDir, HubPki) {
    let dir = tempfile::tempdir().unwrap();
    let pki = HubPki::load_or_create(&dir.path().join("pki"), now()).unwrap();
    (dir, pki)
}

fn credential(pki: &HubPki, user: &str, role: Role) -> Credential {
    let (pem, _) =
        ocm_edge_hub::admin::users::issue(pki, user, role, chrono::Duration::days(30), now())
            .unwrap();
    Credential::from_pem(pem.as_bytes()).unwrap()
}

const TOPIC: &str = "ocm-edge/ocm-edge/admin/requests";
const REPLY: &str = "ocm-edge/ocm-edge/admin/responses/ocm-edge-cli-1";

fn signed(c: &Credential, payload: &[u8], at: DateTime<Utc>) -> MqttMessage {
    MqttMessage {
        topic: TOPIC.to_owned(),
        payload: payload.to_vec(),
        content_type: None,
        user_properties: c.sign_at(TOPIC, REPLY, b"c1", payload, at.timestamp()),
    }
}

#[test]
fn a_request_signed_with_a_credential_of_this_hub_names_its_user_and_role() {
    let (_dir, pki) = pki();
    let c = credential(&pki, "alice", Role::Operator);
    assert_eq!((c.user(), c.role()), ("alice", Role::Operator));
    let auth = Authenticator::new(pki.ca_der().unwrap());
    let m = signed(&c, b"{\"command\":\"stats\"}", now());
    let who = auth.authenticate(&m, REPLY, b"c1", now()).unwrap();
    assert_eq!(who, Identity::new("alice", Role::Operator));
}

#[test]
fn a_scoped_credential_names_its_scope_and_a_changed_scope_is_no_credential() {
    use base64::Engine as _;
    use ocm_edge_schemas::admin::CredentialScope;
    use ocm_edge_schemas::admin::auth::CREDENTIAL_PROPERTY;
    let (_dir, pki) = pki();
    let scope = CredentialScope::new(Role::Operator, ["team-a".into()], ["eu".into()]).unwrap();
    let (pem, record) = ocm_edge_hub::admin::users::issue_scoped(
        &pki,
        "alice",
        Role::Operator,
        Some(&scope),
        chrono::Duration::days(30),
        now(),
    )
    .unwrap();
    assert_eq!(record.scope.as_ref(), Some(&scope));
    let c = Credential::from_pem(pem.as_bytes()).unwrap();
    let auth = Authenticator::new(pki.ca_der().unwrap());
    let m = signed(&c, b"{\"command\":\"stats\"}", now());
    let who = auth.authenticate(&m, REPLY, b"c1", now()).unwrap();
    assert_eq!(who.scope, Some(scope.clone()));

    // The scope is under the CA's signature: the same credential with team-b is not this CA's.
    let mut widened = m.clone();
    let property = widened
        .user_properties
        .iter_mut()
        .find(|(n, _)| n == CREDENTIAL_PROPERTY)
        .unwrap();
    let der = base64::engine::general_purpose::STANDARD
        .decode(&property.1)
        .unwrap();
    let at = der.windows(6).position(|w| w == b"team-a").unwrap();
    let mut der = der;
    der[at..at + 6].copy_from_slice(b"team-b");
    property.1 = base64::engine::general_purpose::STANDARD.encode(der);
    let e = auth
        .authenticate(&widened, REPLY, b"c1", now())
        .unwrap_err();
    assert!(
        e.to_string().contains("it is not signed by this hub's CA"),
        "{e}"
    );

    // An admin keeps every right: the CA signs no scoped admin.
    let e = ocm_edge_hub::admin::users::issue_scoped(
        &pki,
        "root",
        Role::Admin,
        Some(&scope),
        chrono::Duration::days(30),
        now(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("the admin role cannot be scoped"),
        "{e}"
    );
}

#[test]
fn unsigned_foreign_expired_tampered_stale_and_redirected_requests_are_refused() {
    let (_dir, pki) = pki();
    let (_other_dir, other) = self::pki();
    let auth = Authenticator::new(pki.ca_der().unwrap());
    let c = credential(&pki, "alice", Role::Admin);
    let payload = b"{\"command\":\"acceptCluster\",\"name\":\"a\"}";

    let mut unsigned = signed(&c, payload, now());
    unsigned.user_properties.clear();
    assert_eq!(
        auth.authenticate(&unsigned, REPLY, b"c1", now()),
        Err(AuthError::NoCredential)
    );

    let foreign = credential(&other, "mallory", Role::Admin);
    let e = auth
        .authenticate(&signed(&foreign, payload, now()), REPLY, b"c1", now())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("user \"mallory\" is not accepted: it is not signed by this hub's CA"),
        "{e}"
    );

    let later = now() + chrono::Duration::days(31);
    let e = auth
        .authenticate(&signed(&c, payload, later), REPLY, b"c1", later)
        .unwrap_err();
    assert!(matches!(e, AuthError::Expired { .. }), "{e}");

    let mut tampered = signed(&c, payload, now());
    tampered.payload = b"{\"command\":\"acceptCluster\",\"name\":\"b\"}".to_vec();
    let e = auth
        .authenticate(&tampered, REPLY, b"c1", now())
        .unwrap_err();
    assert!(matches!(e, AuthError::BadSignature { .. }), "{e}");

    // Replayed to another reply address or with other correlation data.
    let m = signed(&c, payload, now());
    assert!(auth.authenticate(&m, "elsewhere", b"c1", now()).is_err());
    assert!(auth.authenticate(&m, REPLY, b"c2", now()).is_err());

    // Replayed after the skew window.
    let e = auth
        .authenticate(&m, REPLY, b"c1", now() + chrono::Duration::seconds(301))
        .unwrap_err();
    assert!(matches!(e, AuthError::Clock { off: -301, .. }), "{e}");
    assert!(e.to_string().contains("clock"), "{e}");

    // Another credential's certificate with this one's signature.
    let bob = credential(&pki, "bob", Role::Viewer);
    let mut swapped = signed(&bob, payload, now());
    swapped.user_properties[0] = signed(&c, payload, now()).user_properties[0].clone();
    swapped.user_properties[2] = signed(&bob, payload, now()).user_properties[2].clone();
    let e = auth
        .authenticate(&swapped, REPLY, b"c1", now())
        .unwrap_err();
    assert!(matches!(e, AuthError::BadSignature { .. }), "{e}");

    for garbage in ["", "!!!", "AAAA", &"A".repeat(9000)] {
        let mut m = signed(&c, payload, now());
        m.user_properties[0].1 = garbage.to_owned();
        assert!(matches!(
            auth.authenticate(&m, REPLY, b"c1", now()),
            Err(AuthError::Untrusted { .. })
        ));
    }
}

#[test]
fn a_revoked_credential_is_refused_for_requests_and_logins_and_the_users_other_ones_are_too() {
    let (dir, pki) = pki();
    let data = dir.path();
    let auth = Authenticator::new(pki.ca_der().unwrap()).with_revocations(data);
    let issue = |user: &str| {
        let (pem, record) = ocm_edge_hub::admin::users::issue(
            &pki,
            user,
            Role::Admin,
            chrono::Duration::days(30),
            now(),
        )
        .unwrap();
        ocm_edge_hub::admin::users::record_issued(data, &record).unwrap();
        (Credential::from_pem(pem.as_bytes()).unwrap(), record.serial)
    };
    let (alice1, serial1) = issue("alice");
    let (alice2, _) = issue("alice");
    let (bob, _) = issue("bob");
    let payload = b"{\"command\":\"stats\"}";
    let login = |c: &Credential| {
        let password = c.login_password("ocm-edge-operator", "cli-1");
        let (certificate, signature) = match login::parse(&password) {
            Ok(login::LoginProof::Credential {
                certificate,
                signature,
            }) => (certificate, signature),
            other => panic!("not a credential proof: {other:?}"),
        };
        auth.authenticate_login("ocm-edge-operator", "cli-1", certificate, signature, now())
    };
    for c in [&alice1, &alice2, &bob] {
        assert!(
            auth.authenticate(&signed(c, payload, now()), REPLY, b"c1", now())
                .is_ok()
        );
        assert!(login(c).is_ok());
    }

    ocm_edge_hub::admin::users::revoke(
        data,
        &ocm_edge_hub::admin::users::Revoke::User("alice"),
        now(),
    )
    .unwrap();
    for c in [&alice1, &alice2] {
        let e = auth
            .authenticate(&signed(c, payload, now()), REPLY, b"c1", now())
            .unwrap_err();
        assert!(matches!(e, AuthError::Revoked { .. }), "{e}");
        assert!(
            e.to_string().contains("revoked (`ocm-edge user revoke`)"),
            "{e}"
        );
        assert!(matches!(login(c), Err(AuthError::Revoked { .. })));
    }
    let e = login(&alice1).unwrap_err().to_string();
    assert!(e.contains(&serial1), "the refusal names the serial: {e}");
    assert!(
        auth.authenticate(&signed(&bob, payload, now()), REPLY, b"c1", now())
            .is_ok()
    );
    // A new credential for alice is not revoked.
    let (alice3, _) = issue("alice");
    assert!(login(&alice3).is_ok());
    // An authenticator without the list (the CLI's side) knows nothing of it.
    let plain = Authenticator::new(pki.ca_der().unwrap());
    assert!(
        plain
            .authenticate(&signed(&alice1, payload, now()), REPLY, b"c1", now())
            .is_ok()
    );
}

#[test]
fn a_clusters_tls_certificate_is_no_admin_credential() {
    let (_dir, pki) = pki();
    let (cert, key) = pki
        .issue_cluster_tls("ocm-1", chrono::Duration::days(1), now())
        .unwrap();
    // Its OU is no role: it does not load as a credential.
    let e = Credential::from_pem(format!("{cert}{key}").as_bytes()).unwrap_err();
    assert!(e.to_string().contains("cluster"), "{e}");
}

#[test]
fn a_file_that_is_not_a_credential_is_named_with_what_is_wrong() {
    let (dir, pki) = pki();
    let path = dir.path().join("c.pem");
    std::fs::write(&path, "hello").unwrap();
    let e = Credential::load(&path).unwrap_err().to_string();
    assert!(
        e.contains("c.pem") && e.contains("holds no certificate"),
        "{e}"
    );
    // Someone else's key with this certificate.
    let (a, _) =
        ocm_edge_hub::admin::users::issue(&pki, "a", Role::Admin, chrono::Duration::days(1), now())
            .unwrap();
    let (b, _) =
        ocm_edge_hub::admin::users::issue(&pki, "b", Role::Admin, chrono::Duration::days(1), now())
            .unwrap();
    let split = |s: &str| s.find("-----BEGIN PRIVATE KEY").unwrap();
    let mixed = format!("{}{}", &a[..split(&a)], &b[split(&b)..]);
    std::fs::write(&path, mixed).unwrap();
    let e = Credential::load(&path).unwrap_err().to_string();
    assert!(e.contains("not the key of its certificate"), "{e}");
    let e = Credential::load(&dir.path().join("absent.pem"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("absent.pem"), "{e}");
}
