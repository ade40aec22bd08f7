//! `schemas/CONTRACTS.md`: a short guide to the topics and payloads, rendered from the [`Catalog`] so
//! its tables always match the AsyncAPI document.

use std::fmt::Write as _;

use super::catalog::{Actor, Catalog, Direction, Envelope, Need};
use super::{ASYNCAPI_FILE, JSON_DIR, REGENERATE_SCHEMAS};

const INTRO: &str = "\
# ocm-edge contracts

Generated from `ocm_edge_schemas::contracts`; do not edit.

What ocm-edge publishes on an MQTT 5 broker, for people writing a peer, a dashboard or a test:

- `asyncapi.yaml`: AsyncAPI 3.0 document of every topic (channel), who sends and who receives
  (operations, tagged `hub`, `agent`, `cli`, `watcher`) and every message (headers and payload).
- `json/*.schema.json`: JSON Schema (draft-07) of every payload, generated from the Rust types.

Work events follow Open Cluster Management's CloudEvents binding (as sdk-go and maestro speak it):
each CloudEvent attribute and extension is an MQTT 5 user property `ce-<name>`, the payload is the
event's data as compact JSON with Content Type `application/json`, QoS 1, never retained. ocm-edge's
extension events (registration, hub view, cluster status, lease, presence) use the same grammar
`<group>.<version>.<resource>.<spec|status>.<action>` on the same per-cluster topics.
";

/// Actors that send and receive `message`; a reply is sent by the request's receiver and received
/// by its sender.
fn direction(catalog: &Catalog, message: &str) -> String {
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for o in &catalog.operations {
        let (plain, reply) = match o.direction {
            Direction::Send => (&mut senders, &mut receivers),
            Direction::Receive => (&mut receivers, &mut senders),
        };
        if o.messages.contains(&message) {
            plain.push(o.actor.as_str());
        }
        if o.reply
            .as_ref()
            .is_some_and(|r| r.messages.contains(&message))
        {
            reply.push(o.actor.as_str());
        }
    }
    for v in [&mut senders, &mut receivers] {
        v.sort_unstable();
        v.dedup();
    }
    format!("{} → {}", senders.join(", "), receivers.join(", "))
}

/// Topics `actor` subscribes to: those it receives on, and the reply topics of what it sends.
fn subscriptions(catalog: &Catalog, actor: Actor) -> Vec<String> {
    let mut topics: Vec<&str> = Vec::new();
    for o in catalog.operations.iter().filter(|o| o.actor == actor) {
        let channel = match (o.direction, &o.reply) {
            (Direction::Receive, _) => Some(o.channel),
            (Direction::Send, Some(reply)) => Some(reply.channel),
            (Direction::Send, None) => None,
        };
        if let Some(c) = channel.and_then(|c| catalog.channel(c))
            && !topics.contains(&c.address.as_str())
        {
            topics.push(&c.address);
        }
    }
    topics.iter().map(|t| format!("`{t}`")).collect()
}

/// The guide's text.
pub fn guide(catalog: &Catalog) -> String {
    let mut out = String::from(INTRO);
    out.push_str("\n## Topics\n\n| topic | retained | messages |\n|---|---|---|\n");
    for c in &catalog.channels {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            c.address,
            if c.retained { "yes" } else { "no" },
            c.messages
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str(
        "\n## Messages\n\n| message | CloudEvent type | direction | payload | required extensions |\n\
         |---|---|---|---|---|\n",
    );
    for m in &catalog.messages {
        let (ty, extensions) = match &m.envelope {
            Envelope::CloudEvent { ty, extensions } => (
                format!("`{ty}`"),
                extensions
                    .iter()
                    .filter(|(_, need)| *need == Need::Required)
                    .map(|(name, _)| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Envelope::AdminRequest => ("-".into(), "Response Topic, Correlation Data".into()),
            Envelope::AdminResponse => ("-".into(), "Correlation Data".into()),
            Envelope::Dashboard | Envelope::AddOnJson => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "| `{}`: {} | {ty} | {} | [`{}`]({JSON_DIR}/{}) | {extensions} |",
            m.id,
            m.summary,
            direction(catalog, m.id),
            m.payload,
            m.payload
        );
    }
    let actors = [
        Actor::Hub,
        Actor::Agent,
        Actor::Cli,
        Actor::Watcher,
        Actor::AddOn,
    ];
    out.push_str("\n## Who subscribes to what\n\n");
    for actor in actors {
        let _ = writeln!(
            out,
            "- {}: {}",
            actor.as_str(),
            subscriptions(catalog, actor).join(", ")
        );
    }
    let _ = write!(
        out,
        "\n## Keeping these files in sync\n\n\
         `cargo test -p ocm-edge-schemas --test it contracts_in_sync` fails when a checked-in file differs\n\
         from what the code generates. After changing a type, a topic or an event type, regenerate:\n\n\
         ```sh\n{REGENERATE_SCHEMAS}\n```\n\n\
         and review the diff of `{ASYNCAPI_FILE}` and `{JSON_DIR}/` like any other API change.\n"
    );
    out
}
