//! The decoders never panic on arbitrary or mutated input (property tests, run in the normal test run).
//!
//! Cases per run: 5,000 arbitrary MQTT messages, 6,000 mutated MQTT messages from the maestro vectors,
//! 6,000 mutated structured-JSON vectors, 6,000 arbitrary and mutated topics: 23,000 in all (about 3 s
//! in a debug build).
//! Everything that decodes is also fed to the typed parsers (WorkEvent, ClusterEvent, status hash) and
//! re-encoded.

use cloudevents::Event;
use cloudevents::event::ExtensionValue;
use ocm_edge_schemas::wire::cluster_events::ClusterEvent;
use ocm_edge_schemas::wire::topic::{Topic, matches_sdk_go_pattern};
use ocm_edge_schemas::wire::works::WorkEvent;
use ocm_edge_schemas::wire::{MqttMessage, decode, encode, status_hash, structured};
use proptest::prelude::*;
use proptest::test_runner::Config;

const SPEC: &[u8] = include_bytes!("../fixtures/vectors/maestro/cloudevents.spec.maestro.json");
const STATUS: &[u8] = include_bytes!("../fixtures/vectors/maestro/cloudevents.agent.json");

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Everything a receiver does with an event must be panic-free too.
fn exercise(event: &Event) {
    if let Ok(WorkEvent::Status(s)) = WorkEvent::from_event(event) {
        let _ = status_hash::bundle_status_hash(&s.status);
    }
    let _ = ClusterEvent::from_event(event);
    if let Ok(msg) = encode(event, "t") {
        let again = decode(&msg).expect("what we encode, we decode");
        // Binary mode carries every extension as a string; only known integer extensions get their
        // type back (as with Go peers). Everything else must survive unchanged.
        let mut expected = event.clone();
        let retyped: Vec<(String, ExtensionValue)> = event
            .iter_extensions()
            .filter(|(name, _)| *name != "resourceversion")
            .map(|(name, v)| (name.to_owned(), ExtensionValue::String(v.to_string())))
            .collect();
        for (name, v) in retyped {
            expected.set_extension(&name, v);
        }
        if let Some(ExtensionValue::String(s)) = event.extension("resourceversion")
            && let Ok(i) = s.parse::<i64>()
        {
            expected.set_extension("resourceversion", i);
        }
        assert_eq!(again, expected);
    }
}

fn vector_messages() -> Vec<MqttMessage> {
    [SPEC, STATUS]
        .iter()
        .map(|v| {
            encode(
                &structured::parse(v).unwrap(),
                "sources/maestro/consumers/c/agentevents",
            )
            .unwrap()
        })
        .collect()
}

const NAMES: &[&str] = &[
    "ce-specversion",
    "ce-id",
    "ce-source",
    "ce-type",
    "ce-time",
    "ce-dataschema",
    "ce-subject",
    "ce-datacontenttype",
    "ce-resourceversion",
    "ce-resourceid",
    "ce-clustername",
    "ce-metadata",
    "ce-deletiontimestamp",
    "ce-statushash",
    "ce-sequenceid",
    "Content-Type",
    "ce-",
    "ce-a_b",
];

fn property_name() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(NAMES).prop_map(str::to_owned),
        "ce-[a-zA-Z0-9_.-]{0,12}",
        ".{0,16}",
    ]
}

fn property_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1.0".to_owned()),
        Just("0.3".to_owned()),
        Just("application/json".to_owned()),
        Just(
            "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request"
                .to_owned()
        ),
        Just(
            "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request".to_owned()
        ),
        Just("2025-12-16T06:00:17.921082037Z".to_owned()),
        "-?[0-9]{1,20}",
        ".{0,40}",
    ]
}

fn arbitrary_message() -> impl Strategy<Value = MqttMessage> {
    (
        ".{0,40}",
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200),
            Just(br#"{"manifests":[]}"#.to_vec()),
            Just(
                br#"{"conditions":[{"type":"A"}],"resourceStatus":[{"conditions":null}]}"#.to_vec()
            ),
            Just(br#"{"metadata":{"name":"c"},"state":"online","connectionSeq":1}"#.to_vec()),
        ],
        proptest::option::of(prop_oneof![Just("application/json".to_owned()), ".{0,20}"]),
        proptest::collection::vec((property_name(), property_value()), 0..14),
    )
        .prop_map(
            |(topic, payload, content_type, user_properties)| MqttMessage {
                topic,
                payload,
                content_type,
                user_properties,
            },
        )
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    Truncate(usize),
    Insert(usize, u8),
    DropProperty(usize),
    SetProperty(usize, String),
    AddProperty(String, String),
    ContentType(Option<String>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::DropProperty),
        (any::<usize>(), property_value()).prop_map(|(i, v)| Mutation::SetProperty(i, v)),
        (property_name(), property_value()).prop_map(|(k, v)| Mutation::AddProperty(k, v)),
        proptest::option::of(".{0,20}").prop_map(Mutation::ContentType),
    ]
}

fn mutate_bytes(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len().max(1);
    match m {
        Mutation::FlipByte(i, b) if !bytes.is_empty() => bytes[i % len] ^= b | 1,
        Mutation::Truncate(i) => bytes.truncate(i % len),
        Mutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), *b),
        _ => {}
    }
}

fn apply(msg: &mut MqttMessage, m: &Mutation) {
    match m {
        Mutation::DropProperty(i) if !msg.user_properties.is_empty() => {
            let n = msg.user_properties.len();
            msg.user_properties.remove(i % n);
        }
        Mutation::SetProperty(i, v) if !msg.user_properties.is_empty() => {
            let n = msg.user_properties.len();
            msg.user_properties[i % n].1 = v.clone();
        }
        Mutation::AddProperty(k, v) => msg.user_properties.push((k.clone(), v.clone())),
        Mutation::ContentType(ct) => msg.content_type = ct.clone(),
        other => mutate_bytes(&mut msg.payload, other),
    }
}

proptest! {
    #![proptest_config(config(5_000))]
    #[test]
    fn decode_never_panics_on_arbitrary_messages(msg in arbitrary_message()) {
        if let Ok(event) = decode(&msg) {
            exercise(&event);
        }
    }
}

proptest! {
    #![proptest_config(config(6_000))]
    #[test]
    fn decode_never_panics_on_mutated_vectors(
        which in 0usize..2,
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut msg = vector_messages().swap_remove(which);
        for m in &mutations {
            apply(&mut msg, m);
        }
        if let Ok(event) = decode(&msg) {
            exercise(&event);
        }
    }
}

proptest! {
    #![proptest_config(config(6_000))]
    #[test]
    fn structured_parse_never_panics_on_mutated_vectors(
        which in 0usize..2,
        mutations in proptest::collection::vec(
            prop_oneof![
                (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
                any::<usize>().prop_map(Mutation::Truncate),
                (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
            ],
            1..5,
        ),
        splice in proptest::option::of((any::<usize>(), proptest::sample::select(vec![
            "\"resourceversion\": \"x\",", "\"resourceversion\": 99999999999,", "\"data\": null,",
            "\"bad-ext\": 1,", "\"time\": \"never\",", "\"data_base64\": \"AAAA\",", "\"statushash\": 5,",
            "\"clustername\": [],", "\"resourceStatus\": {\"manifests\": 3},",
        ]))),
    ) {
        let mut bytes = [SPEC, STATUS][which].to_vec();
        if let Some((at, text)) = splice {
            // Insert right after an opening brace so the result is often still valid JSON.
            let braces: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'{').map(|(i, _)| i).collect();
            let pos = braces[at % braces.len()] + 1;
            bytes.splice(pos..pos, text.bytes());
        }
        for m in &mutations {
            mutate_bytes(&mut bytes, m);
        }
        if let Ok(event) = structured::parse(&bytes) {
            exercise(&event);
        }
    }
}

proptest! {
    #![proptest_config(config(6_000))]
    #[test]
    fn topic_parser_never_panics(
        topic in prop_oneof![
            ".{0,60}",
            "(sources|ocm-edge|\\$share)(/[a-z0-9+#.-]{0,10}){0,7}",
            proptest::sample::select(vec![
                "sources/maestro/consumers/c1/sourceevents",
                "ocm-edge/ocm-edge/dashboard/works/c1/web",
                "$share/g/sources/s/consumers/+/agentevents",
            ]).prop_map(str::to_owned),
        ],
        cut in any::<usize>(),
    ) {
        let _ = matches_sdk_go_pattern(&topic);
        if let Ok(t) = Topic::parse(&topic) {
            prop_assert_eq!(t.to_string(), topic.clone());
        }
        let cut = topic.char_indices().nth(cut % (topic.chars().count() + 1)).map_or(topic.len(), |(i, _)| i);
        let _ = Topic::parse(&topic[..cut]);
        let _ = matches_sdk_go_pattern(&topic[..cut]);
    }
}
