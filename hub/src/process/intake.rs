//! The intake tasks: one per MQTT session, each reading its session's events, decoding agent
//! messages (CloudEvent, payload, status hash, the agent's signature) and handing the results to
//! the hub task, so the decoding cost is spread over the runtime's workers, not paid on the one
//! task that owns the core.

use ocm_edge_mqtt::{Publication, SessionEvent};
use tokio::sync::mpsc;

use ocm_edge_schemas::api::placement::AddOnPlacementScore;
use ocm_edge_schemas::wire::addon_identity;
use ocm_edge_schemas::wire::topic::Topic;

use super::{MAX_BATCH, events};
use crate::core::AgentInput;
use crate::pki::signing::check_agent_signature;
use crate::registration::logins::Standings;

/// What reaches the hub task from its sessions' intake tasks.
#[derive(Debug)]
pub(super) enum Inbound {
    /// An admin request (first session only).
    Admin(Box<Publication>),
    /// An agent event, decoded (`None`: well-formed, but nothing the hub handles).
    Agent(Option<AgentInput>),
    /// An agent message that could not be decoded (logged by the intake).
    Malformed,
    /// An agent event not signed by its cluster's agent key (logged by the intake).
    Refused,
    /// An add-on agent's score from an identity the hub has not bound, or naming another
    /// cluster (logged by the intake).
    AddOnScoreRefused,
    /// Session `intake` had a SUBACK; `refused` lists the filters the broker refused.
    Subscribed { intake: usize, refused: Vec<String> },
    /// Prometheus scrapes: the hub task answers with the fleet's figures.
    Scrape(tokio::sync::oneshot::Sender<crate::metrics::fleet::FleetGauges>),
}

/// Reads one session's events, decodes agent messages (CloudEvent, payload, status hash) and
/// hands the results to the hub task: the decoding cost is spread over the runtime's workers,
/// not paid on the one task that owns the core.
#[derive(Debug, Clone)]
pub(super) struct Intake {
    pub(super) index: usize,
    pub(super) source_id: String,
    pub(super) admin_topic: String,
    pub(super) to_hub: mpsc::UnboundedSender<Inbound>,
    pub(super) keys: Standings,
    /// The session's MQTT client id (its reconnects are counted under it).
    pub(super) client_id: String,
    pub(super) metrics: std::sync::Arc<crate::metrics::HubMetrics>,
}

impl Intake {
    /// An add-on agent's AddOnPlacementScore (JSON, on `addons/<addon>/clusters/<cluster>/
    /// placementscores`). The broker's ACL lets only that identity publish there; the hub
    /// takes it while the identity is bound, for that cluster only.
    fn addon_score(&self, message: &ocm_edge_schemas::wire::MqttMessage) -> Inbound {
        let refused = |why: &str| {
            tracing::warn!(topic = %message.topic, %why, "add-on score dropped");
            Inbound::AddOnScoreRefused
        };
        let Ok(Topic::AddOnScores { addon, cluster }) = Topic::parse(&message.topic) else {
            return refused("not an add-on scores topic");
        };
        let cluster = cluster.as_str();
        if !self
            .keys
            .addon_bound(&addon_identity::identity(&addon, cluster))
        {
            return refused(
                "the add-on has no MQTT identity on this cluster (disabled, or never registered)",
            );
        }
        let score: AddOnPlacementScore = match serde_json::from_slice(&message.payload) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(topic = %message.topic, error = %e, "add-on score is not an AddOnPlacementScore in JSON; dropped");
                return Inbound::Malformed;
            }
        };
        let own_name = score.metadata.name == addon
            || score
                .metadata
                .name
                .strip_prefix(addon.as_str())
                .is_some_and(|rest| rest.starts_with('-'));
        if !own_name {
            return refused(&format!(
                "an add-on's scores are named after it ({addon} or {addon}-...), not {:?}",
                score.metadata.name
            ));
        }
        if !score.metadata.namespace.is_empty() && score.metadata.namespace != cluster {
            return refused(&format!(
                "the score is for cluster {:?}, and this identity may score only {cluster:?}",
                score.metadata.namespace
            ));
        }
        Inbound::Agent(Some(AgentInput::AddOnScore {
            cluster: cluster.to_owned(),
            score: Box::new(score),
        }))
    }

    pub(super) async fn run(self, mut events: mpsc::UnboundedReceiver<SessionEvent>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut connected_before = false;
        while events.recv_many(&mut batch, MAX_BATCH).await > 0 {
            for event in batch.drain(..) {
                if matches!(event, SessionEvent::Connected { .. })
                    && std::mem::replace(&mut connected_before, true)
                {
                    self.metrics.reconnected(&self.client_id);
                }
                let Some(item) = self.decode(event) else {
                    continue;
                };
                if self.to_hub.send(item).is_err() {
                    return;
                }
            }
        }
    }

    fn decode(&self, event: SessionEvent) -> Option<Inbound> {
        match event {
            SessionEvent::Subscribed { refused } => Some(Inbound::Subscribed {
                intake: self.index,
                refused,
            }),
            SessionEvent::Connected { .. }
            | SessionEvent::Disconnected { .. }
            | SessionEvent::Acked(_) => None,
            SessionEvent::Malformed(e) => {
                tracing::warn!(error = %e, "unreadable MQTT message dropped");
                Some(Inbound::Malformed)
            }
            SessionEvent::Message(received) if received.topic() == self.admin_topic => {
                Some(Inbound::Admin(received))
            }
            SessionEvent::Message(received)
                if received.topic().starts_with(addon_identity::ADDONS_PREFIX) =>
            {
                Some(self.addon_score(&received.message))
            }
            SessionEvent::Message(received) => {
                self.metrics.received(&received.message);
                match events::decode_agent_message(&self.source_id, &received.message) {
                    Ok(Some(input)) => {
                        let carried = match &input {
                            AgentInput::JoinRequest { request, .. } => request
                                .metadata
                                .annotations
                                .get(ocm_edge_schemas::wire::signature::AGENT_KEY_ANNOTATION)
                                .map(String::as_str),
                            _ => None,
                        };
                        let bound = self.keys.bound(input.cluster());
                        match check_agent_signature(&received.message, bound.as_deref(), carried) {
                            Ok(()) => Some(Inbound::Agent(Some(input))),
                            Err(e) => {
                                tracing::warn!(
                                    cluster = input.cluster(),
                                    error = %e,
                                    "agent event refused"
                                );
                                Some(Inbound::Refused)
                            }
                        }
                    }
                    Ok(None) => Some(Inbound::Agent(None)),
                    Err(e) => {
                        tracing::warn!(
                            topic = %received.message.topic,
                            error = %e,
                            "malformed agent message dropped"
                        );
                        Some(Inbound::Malformed)
                    }
                }
            }
        }
    }
}
