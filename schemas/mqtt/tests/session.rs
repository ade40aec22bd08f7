//! The reconnecting session against a real broker (the embedded one on port 0): reconnects with
//! jittered exponential backoff (paused time), resubscribes after every reconnect, and carries
//! request/response.

use std::net::SocketAddr;
use std::time::Duration;

use ocm_edge_mqtt::broker::{EmbeddedBroker, start_embedded};
use ocm_edge_mqtt::{
    Backoff, BrokerUrl, LinkError, Requester, Session, SessionConfig, SessionEvent,
};
use ocm_edge_schemas::wire::MqttMessage;
use tokio::sync::{mpsc, watch};

const WAIT: Duration = Duration::from_secs(15);

fn message(topic: &str, payload: &str) -> MqttMessage {
    MqttMessage {
        topic: topic.to_owned(),
        payload: payload.as_bytes().to_vec(),
        ..MqttMessage::default()
    }
}

async fn next(
    events: &mut mpsc::UnboundedReceiver<SessionEvent>,
    what: &str,
    mut pred: impl FnMut(&SessionEvent) -> bool,
) -> SessionEvent {
    tokio::time::timeout(WAIT, async {
        loop {
            let ev = events.recv().await.expect("session open");
            if pred(&ev) {
                return ev;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}"))
}

async fn embedded_broker() -> EmbeddedBroker {
    tokio::task::spawn_blocking(|| start_embedded("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap()
        .unwrap()
}

/// `sender` publishes `payload` on `t/resubscribe`; the subscriber's `events` must carry it.
async fn round_trip(
    sender: &Session,
    events: &mut mpsc::UnboundedReceiver<SessionEvent>,
    payload: &str,
) {
    let publication = message("t/resubscribe", payload);
    sender.publisher().publish(publication).await.unwrap();
    next(
        events,
        payload,
        |e| matches!(e, SessionEvent::Message(p) if p.message.payload == payload.as_bytes()),
    )
    .await;
}

/// A TCP proxy to the broker whose open connections can be cut.
async fn cuttable_proxy(upstream: SocketAddr) -> (BrokerUrl, watch::Sender<u64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = BrokerUrl::plain(listener.local_addr().unwrap());
    let (cuts, cut_rx) = watch::channel(0u64);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let mut cut = cut_rx.clone();
            cut.mark_unchanged();
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cut.changed() => {}
                }
            });
        }
    });
    (url, cuts)
}

#[tokio::test(start_paused = true)]
async fn reconnect_attempts_back_off_exponentially_with_jitter_up_to_the_cap() {
    // Nothing listens on this port: every attempt is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = BrokerUrl::parse(&format!("mqtt://127.0.0.1:{port}")).unwrap();
    let mut cfg = SessionConfig::new(url, "backoff-test");
    cfg.backoff = Backoff {
        min: Duration::from_secs(1),
        max: Duration::from_secs(8),
    };
    let (_session, mut events) = Session::start(cfg, None).unwrap();
    let mut at = Vec::new();
    for _ in 0..7 {
        let ev = next(&mut events, "a failed attempt", |e| {
            matches!(e, SessionEvent::Disconnected { .. })
        })
        .await;
        let SessionEvent::Disconnected { why } = ev else {
            unreachable!()
        };
        assert!(matches!(why, LinkError::Refused { .. }), "{why}");
        at.push(tokio::time::Instant::now());
    }
    // Gap k follows attempt k: min x 2^k capped at max, jittered into [0.5, 1) of that.
    for (k, pair) in at.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let full = Duration::from_secs(1 << k.min(3));
        assert!(
            gap >= full / 2 && gap <= full,
            "gap {k} was {gap:?}, expected between {:?} and {full:?}",
            full / 2
        );
    }
}

#[tokio::test]
async fn a_session_resubscribes_after_its_link_is_cut_and_receives_again() {
    let broker = embedded_broker().await;
    let (proxied, cuts) = cuttable_proxy(broker.addr()).await;
    let mut cfg = SessionConfig::new(proxied, "resubscriber");
    cfg.backoff = Backoff {
        min: Duration::from_millis(50),
        max: Duration::from_millis(200),
    };
    cfg.subscriptions = vec!["t/resubscribe".to_owned()];
    let (session, mut events) = Session::start(cfg, None).unwrap();
    next(
        &mut events,
        "the first SUBACK",
        |e| matches!(e, SessionEvent::Subscribed { refused } if refused.is_empty()),
    )
    .await;

    let (sender, _sender_events) =
        Session::connect(SessionConfig::new(broker.url(), "sender"), WAIT)
            .await
            .unwrap();
    round_trip(&sender, &mut events, "before").await;

    cuts.send_modify(|n| *n += 1);
    next(&mut events, "the loss of the link", |e| {
        matches!(e, SessionEvent::Disconnected { .. })
    })
    .await;
    next(&mut events, "a new connection", |e| {
        matches!(e, SessionEvent::Connected { .. })
    })
    .await;
    next(&mut events, "the SUBACK after the reconnect", |e| {
        matches!(e, SessionEvent::Subscribed { .. })
    })
    .await;
    round_trip(&sender, &mut events, "after").await;
    session.shutdown().await;
    sender.shutdown().await;
}

#[tokio::test]
async fn a_request_gets_the_answer_with_its_correlation_data_and_times_out_without_one() {
    let broker = embedded_broker().await;
    // A responder that answers "ping" with "pong" on the request's response topic.
    let mut cfg = SessionConfig::new(broker.url(), "responder");
    cfg.subscriptions = vec!["svc/requests".to_owned()];
    let (responder, mut requests) = Session::connect(cfg, WAIT).await.unwrap();
    let publisher = responder.publisher();
    tokio::spawn(async move {
        while let Some(ev) = requests.recv().await {
            let SessionEvent::Message(req) = ev else {
                continue;
            };
            let answer = ocm_edge_mqtt::Publication {
                message: message(req.response_topic.as_deref().unwrap(), "pong"),
                correlation_data: req.correlation_data.clone(),
                ..Default::default()
            };
            publisher.publish(answer).await.unwrap();
        }
    });

    let requester = Requester::connect(
        SessionConfig::new(broker.url(), "requester"),
        "svc/responses/requester",
        WAIT,
    )
    .await
    .unwrap();
    let answer = requester
        .request(message("svc/requests", "ping"), WAIT)
        .await
        .unwrap();
    assert_eq!(answer.message.payload, b"pong");

    let e = requester
        .request(
            message("svc/nobody-listens", "ping"),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("svc/nobody-listens"), "{e}");
    requester.disconnect().await;
}

#[tokio::test]
async fn a_publication_larger_than_the_broker_allows_is_refused_and_the_link_stays_up() {
    let broker = embedded_broker().await;
    let mut sub_cfg = SessionConfig::new(broker.url(), "big-receiver");
    sub_cfg.subscriptions = vec!["t/big".to_owned()];
    let (_receiver, mut received) = Session::connect(sub_cfg, WAIT).await.unwrap();
    // The client would accept 16 MiB; the broker announces its own, smaller, limit.
    let mut cfg = SessionConfig::new(broker.url(), "big-sender");
    cfg.max_packet_bytes = 16 * 1024 * 1024;
    let (sender, mut sender_events) = Session::connect(cfg, WAIT).await.unwrap();
    let limit = sender.publisher().max_packet_bytes();
    assert_eq!(limit as usize, ocm_edge_mqtt::broker::MAX_PACKET_BYTES);

    let too_big = MqttMessage {
        topic: "t/big".to_owned(),
        payload: vec![b'x'; limit as usize],
        ..MqttMessage::default()
    };
    let err = sender.publisher().publish(too_big).await.unwrap_err();
    let (bytes, refused_at) = err.too_large.expect("refused as too large");
    assert!(bytes > limit as usize, "{bytes}");
    assert_eq!(refused_at, limit);
    assert!(err.to_string().contains("nothing was sent"), "{err}");

    // The link was not touched: the next message goes through and nobody disconnected.
    sender
        .publisher()
        .publish(message("t/big", "small"))
        .await
        .unwrap();
    next(
        &mut received,
        "the small message",
        |e| matches!(e, SessionEvent::Message(p) if p.message.payload == b"small"),
    )
    .await;
    while let Ok(ev) = sender_events.try_recv() {
        assert!(
            !matches!(ev, SessionEvent::Disconnected { .. }),
            "the sender lost its link: {ev:?}"
        );
    }
}

#[tokio::test]
async fn the_embedded_broker_with_users_refuses_a_wrong_password_and_counts_it() {
    let users = std::collections::HashMap::from([("edge-1".to_owned(), "s3cret".to_owned())]);
    let broker = tokio::task::spawn_blocking(move || {
        ocm_edge_mqtt::broker::start_embedded_with_users(
            "127.0.0.1:0".parse().unwrap(),
            Some(users),
        )
    })
    .await
    .unwrap()
    .unwrap();
    let login = |password: &str| {
        // The agent's client id: with logins, a cluster may use only `<cluster>-agent`.
        let mut cfg = SessionConfig::new(broker.url(), "edge-1-agent");
        cfg.credentials = Some(ocm_edge_mqtt::Credentials {
            username: "edge-1".to_owned(),
            password: password.to_owned(),
        });
        cfg
    };
    let err = Session::connect(login("wrong"), WAIT).await.unwrap_err();
    assert!(
        matches!(
            err,
            ocm_edge_mqtt::session::ConnectError::Link(LinkError::LoginRefused { .. })
        ),
        "{err:?}"
    );
    assert_eq!(broker.stats().refused_logins(), 1);
    // Anonymous is refused too; the right password gets in.
    let anonymous = SessionConfig::new(broker.url(), "login-anonymous");
    assert!(Session::connect(anonymous, WAIT).await.is_err());
    Session::connect(login("s3cret"), WAIT).await.unwrap();
}

/// The next SUBACK-related event: `Acked(Subscribe)` or `Subscribed`.
async fn next_suback(
    events: &mut mpsc::UnboundedReceiver<SessionEvent>,
    what: &str,
) -> SessionEvent {
    next(events, what, |e| {
        matches!(
            e,
            SessionEvent::Subscribed { .. } | SessionEvent::Acked(ocm_edge_mqtt::Ack::Subscribe(_))
        )
    })
    .await
}

#[tokio::test]
async fn with_acks_reported_a_request_gets_its_suback_and_the_sessions_own_renewed_subscription_does_not()
 {
    let broker = embedded_broker().await;
    let (url, cuts) = cuttable_proxy(broker.addr()).await;
    let mut cfg = SessionConfig::new(url, "acks-test");
    cfg.subscriptions = vec!["t/own".to_owned()];
    cfg.report_acks = true;
    // Few packet ids in flight, so they come round again soon.
    cfg.inflight = 4;
    cfg.backoff = Backoff {
        min: Duration::from_millis(50),
        max: Duration::from_millis(200),
    };
    let (session, mut events) = Session::start(cfg, None).unwrap();
    assert!(
        matches!(next_suback(&mut events, "the own SUBACK").await, SessionEvent::Subscribed { refused } if refused.is_empty()),
        "the session's own subscription is reported as Subscribed, not as an Ack"
    );
    let publisher = session.publisher();
    for round in 0..3 {
        // Publications take the packet ids round, so a request may get the own SUBSCRIBE's id.
        for i in 0..5 {
            publisher
                .publish(message("t/elsewhere", &format!("{round}-{i}")))
                .await
                .unwrap();
            next(&mut events, "a PUBACK", |e| {
                matches!(e, SessionEvent::Acked(ocm_edge_mqtt::Ack::Publish(_)))
            })
            .await;
        }
        publisher.subscribe("t/request").await.unwrap();
        assert!(
            matches!(
                next_suback(&mut events, "the request's SUBACK").await,
                SessionEvent::Acked(_)
            ),
            "round {round}: the request's SUBACK is an Ack, not the session's own"
        );
    }
    // A cut link: the session subscribes again on its own, and says so as Subscribed only.
    cuts.send_modify(|n| *n += 1);
    assert!(
        matches!(
            next_suback(&mut events, "the renewed SUBACK").await,
            SessionEvent::Subscribed { .. }
        ),
        "the renewed subscription is not taken for the answer to a request"
    );
    publisher.subscribe("t/request-2").await.unwrap();
    assert!(matches!(
        next_suback(&mut events, "the second request's SUBACK").await,
        SessionEvent::Acked(_)
    ));
    session.shutdown().await;
}
