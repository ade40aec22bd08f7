//! The catalog of everything ocm-edge puts on the broker: channels (topics), messages (CloudEvent
//! types and payload schemas) and operations (who sends, who receives).
//!
//! It is plain data built from the wire module's own constants and builders (event types, extension
//! names, topic formats), so the AsyncAPI document and the guide rendered from it cannot drift from
//! what the hub and the agent really send.

use crate::wire::chunks;
use crate::wire::event_type::{
    ADDON_PLACEMENT_SCORES, Action, DataType, LEASES, MANAGED_CLUSTER_ADDONS, MANAGED_CLUSTERS,
    MANIFEST_BUNDLES, PRESENCES, SubResource,
};
use crate::wire::extensions as ext;
use crate::wire::signature;
use crate::wire::topic::Topic;

use super::schema_files as files;

/// Whether a header must be present for receivers to accept the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Required,
    Optional,
}

/// What a message carries besides its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Envelope {
    /// A CloudEvent in binary content mode: `ce-*` user properties, the event type fixed.
    CloudEvent {
        ty: String,
        /// Extension names (`resourceid`, ...) and whether receivers require them.
        extensions: Vec<(&'static str, Need)>,
    },
    /// An admin request: MQTT 5 Response Topic and Correlation Data, the admin version property.
    AdminRequest,
    /// An admin response: Correlation Data copied from the request.
    AdminResponse,
    /// A retained dashboard view: bare compact JSON.
    Dashboard,
    /// Bare JSON from an add-on agent: no CloudEvent, no signature; the broker's topic rules
    /// say who published it.
    AddOnJson,
}

/// One kind of message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSpec {
    /// Identifier in the AsyncAPI document (`workSpecCreate`).
    pub id: &'static str,
    pub title: &'static str,
    pub summary: &'static str,
    pub envelope: Envelope,
    /// File name of the payload's JSON Schema under `schemas/json/`.
    pub payload: &'static str,
}

/// A channel parameter (a topic level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub description: &'static str,
}

/// One topic (or topic family).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSpec {
    pub id: &'static str,
    /// Topic with `{parameter}` placeholders, printed by [`Topic`]'s own formatter.
    pub address: String,
    pub title: &'static str,
    pub description: &'static str,
    pub params: Vec<Param>,
    /// Ids of the messages published on this topic.
    pub messages: Vec<&'static str>,
    /// Published with the retain flag.
    pub retained: bool,
}

/// Who performs an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    Hub,
    Agent,
    Cli,
    /// Dashboards and other read-only watchers.
    Watcher,
    /// Add-on agents on the clusters, with their own identities.
    AddOn,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Hub => "hub",
            Actor::Agent => "agent",
            Actor::Cli => "cli",
            Actor::Watcher => "watcher",
            Actor::AddOn => "add-on agent",
        }
    }
}

/// Send or receive, from the actor's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Send,
    Receive,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Send => "send",
            Direction::Receive => "receive",
        }
    }
}

/// The reply of a request/response operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplySpec {
    pub channel: &'static str,
    pub messages: Vec<&'static str>,
}

/// One operation of one actor on one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationSpec {
    pub id: &'static str,
    pub actor: Actor,
    pub direction: Direction,
    pub channel: &'static str,
    pub summary: &'static str,
    pub messages: Vec<&'static str>,
    pub reply: Option<ReplySpec>,
}

/// Everything on the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    pub channels: Vec<ChannelSpec>,
    pub messages: Vec<MessageSpec>,
    pub operations: Vec<OperationSpec>,
}

impl Catalog {
    pub fn message(&self, id: &str) -> Option<&MessageSpec> {
        self.messages.iter().find(|m| m.id == id)
    }

    pub fn channel(&self, id: &str) -> Option<&ChannelSpec> {
        self.channels.iter().find(|c| c.id == id)
    }

    /// The message describing CloudEvent type `ty` (the first one when several share a type, as
    /// presence birth and will do).
    pub fn message_for_type(&self, ty: &str) -> Option<&MessageSpec> {
        self.messages
            .iter()
            .find(|m| matches!(&m.envelope, Envelope::CloudEvent { ty: t, .. } if t == ty))
    }
}

const SOURCE: Param = Param {
    name: "source",
    description: "Source id of the hub (`ocm-edge` by default, `maestro` for maestro): [a-z0-9-]+.",
};
const CLUSTER: Param = Param {
    name: "cluster",
    description: "Managed cluster name: [a-z0-9-]+.",
};
const CLIENT_ID: Param = Param {
    name: "clientId",
    description: "Random id the CLI picks for its responses: [A-Za-z0-9_-]+.",
};
const ADDON: Param = Param {
    name: "addon",
    description: "Add-on name (a DNS label: [a-z0-9-]+).",
};
const WORK: Param = Param {
    name: "work",
    description: "ManifestWork name (a Kubernetes name: [a-z0-9.-]+).",
};

fn ty(data: &DataType, sub: SubResource, action: Action) -> String {
    data.event_type(sub, action).to_string()
}

use Need::{Optional, Required};

fn spec_extensions(deletion: Option<Need>) -> Vec<(&'static str, Need)> {
    let mut v = vec![
        (ext::RESOURCE_ID, Required),
        (ext::RESOURCE_VERSION, Required),
        (ext::CLUSTER_NAME, Required),
        (ext::ORIGINAL_SOURCE, Optional),
        (ext::METADATA, Optional),
        (ext::LOG_TRACING, Optional),
    ];
    if let Some(need) = deletion {
        v.push((ext::DELETION_TIMESTAMP, need));
    }
    signed(v, false)
}

/// `extensions` and the hub's signature (optional on the wire: maestro does not sign; ocm-edge
/// agents refuse events without it unless told otherwise), with its certificate chain on hub
/// views.
fn signed(mut extensions: Vec<(&'static str, Need)>, chain: bool) -> Vec<(&'static str, Need)> {
    extensions.push((signature::SIGNER_EXTENSION, Optional));
    extensions.push((signature::SIGNATURE_EXTENSION, Optional));
    if chain {
        extensions.push((signature::SIGNER_CHAIN_EXTENSION, Optional));
    }
    extensions
}

fn status_extensions() -> Vec<(&'static str, Need)> {
    vec![
        (ext::RESOURCE_ID, Required),
        (ext::RESOURCE_VERSION, Required),
        (ext::CLUSTER_NAME, Required),
        (ext::ORIGINAL_SOURCE, Required),
        (ext::SEQUENCE_ID, Required),
        (ext::STATUS_HASH, Optional),
        (ext::METADATA, Optional),
        (ext::LOG_TRACING, Optional),
    ]
}

fn cluster_extensions() -> Vec<(&'static str, Need)> {
    vec![
        (ext::CLUSTER_NAME, Required),
        (ext::ORIGINAL_SOURCE, Optional),
    ]
}

fn ce(ty: String, extensions: Vec<(&'static str, Need)>) -> Envelope {
    Envelope::CloudEvent { ty, extensions }
}

fn messages() -> Vec<MessageSpec> {
    use Action::*;
    use SubResource::*;
    let work = &MANIFEST_BUNDLES;
    vec![
        MessageSpec {
            id: "workSpecCreate",
            title: "ManifestWork spec: create",
            summary: "The desired bundle of a new work (agents treat create and update alike).",
            envelope: ce(ty(work, Spec, CreateRequest), spec_extensions(None)),
            payload: files::MANIFEST_BUNDLE,
        },
        MessageSpec {
            id: "workSpecUpdate",
            title: "ManifestWork spec: update",
            summary: "The desired bundle after a spec change (resourceversion bumped).",
            envelope: ce(ty(work, Spec, UpdateRequest), spec_extensions(None)),
            payload: files::MANIFEST_BUNDLE,
        },
        MessageSpec {
            id: "workSpecDelete",
            title: "ManifestWork spec: delete",
            summary: "Delete the bundle; recognised by deletiontimestamp. Data may be absent (bare delete).",
            envelope: ce(
                ty(work, Spec, DeleteRequest),
                spec_extensions(Some(Required)),
            ),
            payload: files::MANIFEST_BUNDLE,
        },
        MessageSpec {
            id: "workSpecResyncRequest",
            title: "ManifestWork spec resync request",
            summary: "The agent lists the bundle versions it holds, after every (re)subscribe; an ocm-edge agent also offers chunked transfers (ocmedgechunkbytes) and lists the chunks of unfinished ones it holds (ocmedgeheldchunks).",
            envelope: ce(ty(work, Spec, ResyncRequest), {
                let mut e = cluster_extensions();
                e.push((chunks::CHUNK_BYTES_EXTENSION, Optional));
                e.push((chunks::HELD_CHUNKS_EXTENSION, Optional));
                e
            }),
            payload: files::RESOURCE_VERSION_LIST,
        },
        MessageSpec {
            id: "workSpecResyncResponse",
            title: "ManifestWork spec resync response",
            summary: "A missing or newer bundle, or a delete (with deletiontimestamp, maybe no data).",
            envelope: ce(
                ty(work, Spec, ResyncResponse),
                spec_extensions(Some(Optional)),
            ),
            payload: files::MANIFEST_BUNDLE,
        },
        MessageSpec {
            id: "workStatusUpdate",
            title: "ManifestWork status update",
            summary: "Current status of one bundle; the Deleted condition ends a deletion.",
            envelope: ce(ty(work, Status, UpdateRequest), status_extensions()),
            payload: files::MANIFEST_BUNDLE_STATUS,
        },
        MessageSpec {
            id: "workStatusResyncRequest",
            title: "ManifestWork status resync request",
            summary: "The hub lists the status hashes it holds (at most 1000 per message; empty: send all).",
            envelope: ce(
                ty(work, Status, ResyncRequest),
                signed(cluster_extensions(), false),
            ),
            payload: files::STATUS_HASH_LIST,
        },
        MessageSpec {
            id: "workStatusResyncResponse",
            title: "ManifestWork status resync response",
            summary: "A status whose hash differs from the hub's.",
            envelope: ce(ty(work, Status, ResyncResponse), status_extensions()),
            payload: files::MANIFEST_BUNDLE_STATUS,
        },
        MessageSpec {
            id: "clusterJoinRequest",
            title: "ManagedCluster join request",
            summary: "The agent asks to join: name, labels, spec.leaseDurationSeconds, status.clusterClaims.",
            envelope: ce(
                ty(&MANAGED_CLUSTERS, Spec, CreateRequest),
                cluster_extensions(),
            ),
            payload: files::MANAGED_CLUSTER,
        },
        MessageSpec {
            id: "clusterUnjoin",
            title: "ManagedCluster unjoin",
            summary: "The agent leaves the hub (`ocm-edge-agent unjoin`): it removed what it applied, or kept it when the annotation edge.open-cluster-management.io/kept-resources is \"true\", and wiped its store and key. Signed with the key bound at acceptance; the hub then forgets the cluster, its works and statuses.",
            envelope: ce(
                ty(&MANAGED_CLUSTERS, Spec, DeleteRequest),
                cluster_extensions(),
            ),
            payload: files::MANAGED_CLUSTER,
        },
        MessageSpec {
            id: "clusterHubView",
            title: "ManagedCluster: the hub's view",
            summary: "hubAcceptsClient, taints and conditions (HubAcceptedManagedCluster, ...); carries the hub's signing certificate, from which agents learn its key.",
            envelope: ce(
                ty(&MANAGED_CLUSTERS, Spec, UpdateRequest),
                signed(cluster_extensions(), true),
            ),
            payload: files::MANAGED_CLUSTER,
        },
        MessageSpec {
            id: "clusterStatus",
            title: "ManagedCluster status",
            summary: "Claims, capacity, allocatable, version and the agent's API-server health conditions.",
            envelope: ce(
                ty(&MANAGED_CLUSTERS, Status, UpdateRequest),
                cluster_extensions(),
            ),
            payload: files::MANAGED_CLUSTER,
        },
        MessageSpec {
            id: "leaseRenew",
            title: "Lease renewal",
            summary: "spec.renewTime, leaseDurationSeconds and holderIdentity of the cluster lease.",
            envelope: ce(ty(&LEASES, Spec, UpdateRequest), cluster_extensions()),
            payload: files::LEASE,
        },
        MessageSpec {
            id: "addOnPlacementScore",
            title: "AddOnPlacementScore",
            summary: "Scores an agent or an add-on beside it publishes for placement's AddOn prioritizer; past validUntil they count as 0.",
            envelope: ce(
                ty(&ADDON_PLACEMENT_SCORES, Status, UpdateRequest),
                cluster_extensions(),
            ),
            payload: files::ADD_ON_PLACEMENT_SCORE,
        },
        MessageSpec {
            id: "addOnRegistration",
            title: "ManagedClusterAddOn: an add-on's MQTT identity asked for",
            summary: "The agent asks the hub to bind the SHA-256 of the password it derived for an add-on's own identity (annotation edge.open-cluster-management.io/mqtt-password-sha256); the hub binds it when the add-on is installed there and its template registers, and sends the add-on's work again with it.",
            envelope: ce(
                ty(&MANAGED_CLUSTER_ADDONS, Status, UpdateRequest),
                cluster_extensions(),
            ),
            payload: files::MANAGED_CLUSTER_ADD_ON,
        },
        MessageSpec {
            id: "addOnAgentScore",
            title: "AddOnPlacementScore from an add-on agent",
            summary: "An add-on agent's scores for its own cluster, as bare JSON; taken while its identity is bound, dropped and counted (addonScoresRefused) when it names another cluster.",
            envelope: Envelope::AddOnJson,
            payload: files::ADD_ON_PLACEMENT_SCORE,
        },
        MessageSpec {
            id: "presenceBirth",
            title: "Presence: birth",
            summary: "Published on every connect: state online and the connection's sequence number.",
            envelope: ce(ty(&PRESENCES, Status, UpdateRequest), {
                let mut e = cluster_extensions();
                e.push((chunks::CHUNK_BYTES_EXTENSION, Optional));
                e.push((chunks::HELD_CHUNKS_EXTENSION, Optional));
                e
            }),
            payload: files::PRESENCE,
        },
        MessageSpec {
            id: "presenceWill",
            title: "Presence: will",
            summary: "Registered as the MQTT will: state offline with the same sequence number as the birth.",
            envelope: ce(ty(&PRESENCES, Status, UpdateRequest), cluster_extensions()),
            payload: files::PRESENCE,
        },
        MessageSpec {
            id: "adminRequest",
            title: "Admin request",
            summary: "One CLI command (tagged by `command`).",
            envelope: Envelope::AdminRequest,
            payload: files::ADMIN_REQUEST,
        },
        MessageSpec {
            id: "adminResponse",
            title: "Admin response",
            summary: "The hub's answer: `{\"ok\":{...}}` or `{\"error\":{\"kind\",\"message\"}}`.",
            envelope: Envelope::AdminResponse,
            payload: files::ADMIN_RESPONSE,
        },
        MessageSpec {
            id: "dashboardSummary",
            title: "Dashboard: fleet summary",
            summary: "Fleet counters: clusters by state and available, works total, applied and deleting.",
            envelope: Envelope::Dashboard,
            payload: files::DASHBOARD_SUMMARY,
        },
        MessageSpec {
            id: "dashboardCluster",
            title: "Dashboard: one cluster",
            summary: "One cluster: state, Available status, labels, last lease, number of works.",
            envelope: Envelope::Dashboard,
            payload: files::DASHBOARD_CLUSTER,
        },
        MessageSpec {
            id: "dashboardWork",
            title: "Dashboard: one work",
            summary: "One work: version, deleting, conditions by type; an empty payload once forgotten.",
            envelope: Envelope::Dashboard,
            payload: files::DASHBOARD_WORK,
        },
        MessageSpec {
            id: "dashboardAddOn",
            title: "Dashboard: one add-on",
            summary: "One add-on over the fleet: install strategy, and on how many clusters it is enabled, available, progressing and registered; an empty payload once deleted.",
            envelope: Envelope::Dashboard,
            payload: files::DASHBOARD_ADDON,
        },
        MessageSpec {
            id: "dashboardClusterAddOn",
            title: "Dashboard: one add-on on one cluster",
            summary: "Install namespace, conditions by type, deleting; an empty payload once removed from the cluster.",
            envelope: Envelope::Dashboard,
            payload: files::DASHBOARD_CLUSTER_ADDON,
        },
    ]
}

fn address(topic: Topic) -> String {
    topic.to_string()
}

fn p(name: &str) -> String {
    format!("{{{name}}}")
}

fn channels() -> Vec<ChannelSpec> {
    let (s, c) = (p(SOURCE.name), p(CLUSTER.name));
    vec![
        ChannelSpec {
            id: "sourceEvents",
            address: address(Topic::SourceEvents {
                source: s.clone(),
                cluster: c.clone(),
            }),
            title: "Source events (hub to one cluster)",
            description: "OCM's per-cluster topic from a source (the hub, or maestro) to the agent of one cluster.",
            params: vec![SOURCE, CLUSTER],
            messages: vec![
                "workSpecCreate",
                "workSpecUpdate",
                "workSpecDelete",
                "workSpecResyncResponse",
                "workStatusResyncRequest",
                "clusterHubView",
            ],
            retained: false,
        },
        ChannelSpec {
            id: "agentEvents",
            address: address(Topic::AgentEvents {
                source: s.clone(),
                cluster: c.clone(),
            }),
            title: "Agent events (one cluster to the hub)",
            description: "OCM's per-cluster topic from the agent to a source. The hub subscribes to \
                          `sources/{source}/consumers/+/agentevents` (optionally through `$share/<group>/`).",
            params: vec![SOURCE, CLUSTER],
            messages: vec![
                "workSpecResyncRequest",
                "workStatusUpdate",
                "workStatusResyncResponse",
                "clusterJoinRequest",
                "clusterUnjoin",
                "clusterStatus",
                "leaseRenew",
                "addOnPlacementScore",
                "addOnRegistration",
                "presenceBirth",
                "presenceWill",
            ],
            retained: false,
        },
        ChannelSpec {
            id: "addOnScores",
            address: address(Topic::AddOnScores {
                addon: p(ADDON.name),
                cluster: c.clone(),
            }),
            title: "Add-on scores (an add-on agent to the hub)",
            description: "Under the add-on agent's own topics `addons/{addon}/clusters/{cluster}/#`, which only it, its add-on's controller and the hub may use. The hub subscribes to `addons/+/clusters/+/placementscores`.",
            params: vec![ADDON, CLUSTER],
            messages: vec!["addOnAgentScore"],
            retained: false,
        },
        ChannelSpec {
            id: "sourceBroadcast",
            address: address(Topic::SourceBroadcast { source: s.clone() }),
            title: "Source broadcast (hub to every cluster)",
            description: "Optional: a status resync request to every agent at once.",
            params: vec![SOURCE],
            messages: vec!["workStatusResyncRequest"],
            retained: false,
        },
        ChannelSpec {
            id: "agentBroadcast",
            address: address(Topic::AgentBroadcast { cluster: c.clone() }),
            title: "Agent broadcast (one cluster to every source)",
            description: "Optional: a spec resync request to every source at once (OCM agents fall back to agentevents).",
            params: vec![CLUSTER],
            messages: vec!["workSpecResyncRequest"],
            retained: false,
        },
        ChannelSpec {
            id: "adminRequests",
            address: address(Topic::AdminRequests { source: s.clone() }),
            title: "Admin requests (CLI to hub)",
            description: "MQTT 5 request/response: the CLI sets Response Topic and Correlation Data.",
            params: vec![SOURCE],
            messages: vec!["adminRequest"],
            retained: false,
        },
        ChannelSpec {
            id: "adminResponses",
            address: address(Topic::AdminResponses {
                source: s.clone(),
                client_id: p(CLIENT_ID.name),
            }),
            title: "Admin responses (hub to one CLI)",
            description: "The Response Topic of the request; the hub copies its Correlation Data.",
            params: vec![SOURCE, CLIENT_ID],
            messages: vec!["adminResponse"],
            retained: false,
        },
        ChannelSpec {
            id: "dashboardSummary",
            address: address(Topic::DashboardSummary { source: s.clone() }),
            title: "Dashboard: fleet summary (retained)",
            description: "Retained compact JSON for MQTT dashboards; never required to arrive.",
            params: vec![SOURCE],
            messages: vec!["dashboardSummary"],
            retained: true,
        },
        ChannelSpec {
            id: "dashboardCluster",
            address: address(Topic::DashboardCluster {
                source: s.clone(),
                cluster: c.clone(),
            }),
            title: "Dashboard: one cluster (retained)",
            description: "Retained compact JSON for MQTT dashboards; never required to arrive.",
            params: vec![SOURCE, CLUSTER],
            messages: vec!["dashboardCluster"],
            retained: true,
        },
        ChannelSpec {
            id: "dashboardWork",
            address: address(Topic::DashboardWork {
                source: s,
                cluster: c,
                work: p(WORK.name),
            }),
            title: "Dashboard: one work (retained)",
            description: "Retained compact JSON for MQTT dashboards; never required to arrive.",
            params: vec![SOURCE, CLUSTER, WORK],
            messages: vec!["dashboardWork"],
            retained: true,
        },
        ChannelSpec {
            id: "dashboardAddOn",
            address: address(Topic::DashboardAddOn {
                source: p(SOURCE.name),
                addon: p(ADDON.name),
            }),
            title: "Dashboard: one add-on (retained)",
            description: "Retained compact JSON for MQTT dashboards; never required to arrive.",
            params: vec![SOURCE, ADDON],
            messages: vec!["dashboardAddOn"],
            retained: true,
        },
        ChannelSpec {
            id: "dashboardClusterAddOn",
            address: address(Topic::DashboardClusterAddOn {
                source: p(SOURCE.name),
                addon: p(ADDON.name),
                cluster: p(CLUSTER.name),
            }),
            title: "Dashboard: one add-on on one cluster (retained)",
            description: "Retained compact JSON for MQTT dashboards; never required to arrive.",
            params: vec![SOURCE, ADDON, CLUSTER],
            messages: vec!["dashboardClusterAddOn"],
            retained: true,
        },
    ]
}

fn op(
    id: &'static str,
    actor: Actor,
    direction: Direction,
    channel: &'static str,
    summary: &'static str,
    messages: Vec<&'static str>,
) -> OperationSpec {
    OperationSpec {
        id,
        actor,
        direction,
        channel,
        summary,
        messages,
        reply: None,
    }
}

fn operations(channels: &[ChannelSpec]) -> Vec<OperationSpec> {
    use Actor::*;
    use Direction::*;
    let all = |id: &str| -> Vec<&'static str> {
        channels
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.messages.clone())
            .unwrap_or_default()
    };
    let mut ops = vec![
        op(
            "hubSendSourceEvents",
            Hub,
            Send,
            "sourceEvents",
            "The hub sends specs, deletes, resync answers, status resync requests and its view of the cluster.",
            all("sourceEvents"),
        ),
        op(
            "agentReceiveSourceEvents",
            Agent,
            Receive,
            "sourceEvents",
            "The agent applies specs and deletes, answers status resyncs and follows the hub's view.",
            all("sourceEvents"),
        ),
        op(
            "agentSendAgentEvents",
            Agent,
            Send,
            "agentEvents",
            "The agent joins, renews its lease, reports statuses and presence, and asks for a spec resync.",
            all("agentEvents"),
        ),
        op(
            "hubReceiveAgentEvents",
            Hub,
            Receive,
            "agentEvents",
            "The hub reads every cluster's events through one wildcard subscription.",
            all("agentEvents"),
        ),
        op(
            "hubSendSourceBroadcast",
            Hub,
            Send,
            "sourceBroadcast",
            "Optional: one status resync request for every cluster (ocm-edge's hub sends them per cluster).",
            all("sourceBroadcast"),
        ),
        op(
            "agentReceiveSourceBroadcast",
            Agent,
            Receive,
            "sourceBroadcast",
            "Agents answer a broadcast status resync like a per-cluster one.",
            all("sourceBroadcast"),
        ),
        op(
            "agentSendAgentBroadcast",
            Agent,
            Send,
            "agentBroadcast",
            "Optional: one spec resync request for every source (ocm-edge's agent uses agentevents).",
            all("agentBroadcast"),
        ),
        op(
            "hubReceiveAgentBroadcast",
            Hub,
            Receive,
            "agentBroadcast",
            "The hub answers a broadcast spec resync like a per-cluster one.",
            all("agentBroadcast"),
        ),
        op(
            "addOnSendScores",
            AddOn,
            Send,
            "addOnScores",
            "An add-on agent publishes its cluster's AddOnPlacementScores with its own identity (the Secret <addon>-hub-mqtt).",
            all("addOnScores"),
        ),
        op(
            "hubReceiveAddOnScores",
            Hub,
            Receive,
            "addOnScores",
            "The hub takes an add-on agent's scores for its own cluster while its identity is bound.",
            all("addOnScores"),
        ),
        OperationSpec {
            reply: Some(ReplySpec {
                channel: "adminResponses",
                messages: vec!["adminResponse"],
            }),
            ..op(
                "cliSendAdminRequest",
                Cli,
                Send,
                "adminRequests",
                "The CLI sends one command and waits for the answer on its response topic (resending until then).",
                all("adminRequests"),
            )
        },
        OperationSpec {
            reply: Some(ReplySpec {
                channel: "adminResponses",
                messages: vec!["adminResponse"],
            }),
            ..op(
                "hubReceiveAdminRequest",
                Hub,
                Receive,
                "adminRequests",
                "The hub answers each request once on its Response Topic with the same Correlation Data.",
                all("adminRequests"),
            )
        },
        // The replies again as operations of their own, so tools that ignore `reply` still see
        // who publishes and who subscribes to the response topics.
        op(
            "hubSendAdminResponse",
            Hub,
            Send,
            "adminResponses",
            "The hub publishes exactly one response per request it can answer.",
            all("adminResponses"),
        ),
        op(
            "cliReceiveAdminResponse",
            Cli,
            Receive,
            "adminResponses",
            "The CLI subscribes to its own response topic and takes the first answer per correlation.",
            all("adminResponses"),
        ),
    ];
    for (channel, send, receive) in [
        (
            "dashboardSummary",
            "hubSendDashboardSummary",
            "watcherReceiveDashboardSummary",
        ),
        (
            "dashboardCluster",
            "hubSendDashboardCluster",
            "watcherReceiveDashboardCluster",
        ),
        (
            "dashboardWork",
            "hubSendDashboardWork",
            "watcherReceiveDashboardWork",
        ),
        (
            "dashboardAddOn",
            "hubSendDashboardAddOn",
            "watcherReceiveDashboardAddOn",
        ),
        (
            "dashboardClusterAddOn",
            "hubSendDashboardClusterAddOn",
            "watcherReceiveDashboardClusterAddOn",
        ),
    ] {
        ops.push(op(
            send,
            Hub,
            Send,
            channel,
            "The hub publishes the view retained whenever it changes.",
            all(channel),
        ));
        ops.push(op(
            receive,
            Watcher,
            Receive,
            channel,
            "Dashboards subscribe and get the latest retained view at once.",
            all(channel),
        ));
    }
    ops
}

/// The whole catalog.
pub fn catalog() -> Catalog {
    let channels = channels();
    let operations = operations(&channels);
    Catalog {
        messages: messages(),
        channels,
        operations,
    }
}
