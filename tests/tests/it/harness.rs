//! The harness itself: brokers on free ports carry MQTT 5 messages with their properties.

use std::time::Duration;

use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_tests::broker::TestBroker;
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};
use ocm_edge_tests::probe::Probe;

fn sample(topic: &str) -> MqttMessage {
    MqttMessage {
        topic: topic.into(),
        payload: br#"{"hello":"edge"}"#.to_vec(),
        content_type: Some("application/json".into()),
        user_properties: vec![("ce-specversion".into(), "1.0".into())],
    }
}

async fn round_trip(url: &str) {
    let mut sub = Probe::connect(url).await.unwrap();
    sub.subscribe("sources/ocm-edge/consumers/+/agentevents")
        .await
        .unwrap();
    let publisher = Probe::connect(url).await.unwrap();
    let sent = sample("sources/ocm-edge/consumers/c1/agentevents");
    publisher.publish(&sent).await.unwrap();
    let got = sub
        .recv(Duration::from_secs(5))
        .await
        .expect("message delivered");
    assert_eq!(got, sent);
}

#[tokio::test]
async fn the_embedded_test_broker_carries_mqtt5_properties_end_to_end() {
    let broker = TestBroker::start_async().await;
    round_trip(&broker.url()).await;
}

#[tokio::test]
async fn mosquitto_on_a_free_port_carries_mqtt5_properties_end_to_end() {
    let Some(program) =
        require_mosquitto("mosquitto_on_a_free_port_carries_mqtt5_properties_end_to_end")
    else {
        return;
    };
    let broker = Mosquitto::start(&program).unwrap();
    round_trip(&broker.url()).await;
}
