//! Who may use which topic: ocm-edge's topic rules per broker identity, the same rules as
//! `broker-config/mosquitto/ocm-edge.acl` and `broker-config/rmqtt-cluster/plugins/rmqtt-acl.toml`,
//! for the embedded broker when it knows its clients' identities.
//!
//! - [`HUB_USER`]: every work and registration topic (`sources/#`), the admin API and the
//!   dashboard (`ocm-edge/#`).
//! - [`OPERATOR_USER`] (the CLI): publish admin requests, read admin responses and dashboards.
//! - [`DASHBOARD_USER`]: read dashboards.
//! - an add-on's agent on a cluster, `addons/<addon>/clusters/<cluster>`
//!   (`ocm_edge_schemas::wire::addon_identity`): publish and subscribe below its own name, nothing
//!   else; its hub-side controller, `addons/<addon>/controller`: the same on every cluster of
//!   that add-on. The hub reads and writes every add-on topic (`addons/#`).
//! - any other username is an edge cluster of that name: read its own spec topic and the
//!   broadcast, publish its own agent events and agent broadcast. Nothing else.
//!
//! A subscription filter is allowed only when every topic it can match is allowed (a cluster may
//! not subscribe to `sources/+/consumers/+/sourceevents`). A username that could act as a
//! wildcard or a topic level (`+`, `#`, `/`, empty) is no cluster: it may use nothing. A will
//! is a publish like any other ([`allowed`] with [`Access::Publish`] on its topic).
//!
//! Client ids are tied to identities ([`client_id_allowed`]): taking over a client id takes over
//! its session and, with `clean_start = false`, its subscriptions, so no identity may use an id
//! that belongs to another.

use ocm_edge_schemas::wire::addon_identity::{self, AddOnIdentity};

/// The hub's identity.
pub const HUB_USER: &str = "ocm-edge-hub";
/// The CLI's identity (operators).
pub const OPERATOR_USER: &str = "ocm-edge-operator";
/// The read-only dashboard identity.
pub const DASHBOARD_USER: &str = "ocm-edge-dashboard";

/// What a client wants to do with a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Publish on a topic name.
    Publish,
    /// Subscribe to a topic filter (a `$share/GROUP/` prefix already removed).
    Subscribe,
}

/// Whether `username` may `access` `topic` (a topic name to publish on, or a filter to subscribe
/// to).
pub fn allowed(username: &str, access: Access, topic: &str) -> bool {
    if access == Access::Publish && topic.contains(['+', '#']) {
        return false;
    }
    if let Some(addon) = addon_identity::parse_identity(username) {
        let own = match addon {
            AddOnIdentity::Agent { .. } => format!("{username}/#"),
            AddOnIdentity::Controller { addon } => format!("addons/{addon}/clusters/+/#"),
        };
        // No `%u` in `own`: the username's levels are already in it.
        return covers(&own, topic, "");
    }
    // `%u` stands for the username, as in Mosquitto's pattern lines (one literal level).
    let patterns: &[&str] = match (username, access) {
        (HUB_USER, _) => &["sources/#", "ocm-edge/#", "addons/#"],
        (OPERATOR_USER, Access::Publish) => &["ocm-edge/+/admin/requests"],
        (OPERATOR_USER, Access::Subscribe) => {
            &["ocm-edge/+/admin/responses/#", "ocm-edge/+/dashboard/#"]
        }
        (DASHBOARD_USER, Access::Subscribe) => &["ocm-edge/+/dashboard/#"],
        (DASHBOARD_USER, Access::Publish) => &[],
        (cluster, _) if !is_plain_level(cluster) => &[],
        (_, Access::Subscribe) => &[
            "sources/+/consumers/%u/sourceevents",
            "sources/+/sourcebroadcast",
        ],
        (_, Access::Publish) => &[
            "sources/+/consumers/%u/agentevents",
            "sources/%u/agentbroadcast",
        ],
    };
    patterns.iter().any(|p| covers(p, topic, username))
}

/// Whether `username` may connect with `client_id`. The ids ocm-edge's own clients use belong
/// to their identities: `<cluster>-agent` to that cluster, and `<cluster>-client` too (what OCM's
/// sdk-go makes of `--cloudevents-client-id=<cluster>`; a cluster may use no other id),
/// `<anything>-hub` and `<anything>-hub-intake-<n>` to the hub, `ocm-edge-cli-<anything>` to the
/// operator; an add-on identity its own name, or its name and one more level (several replicas
/// of one add-on agent); the dashboard may use any id that belongs to nobody.
pub fn client_id_allowed(username: &str, client_id: &str) -> bool {
    let owner = id_owner(client_id);
    if addon_identity::parse_identity(username).is_some() {
        return owner == IdOwner::AddOn
            && client_id.strip_prefix(username).is_some_and(|rest| {
                rest.is_empty() || rest.strip_prefix('/').is_some_and(is_plain_level)
            });
    }
    match username {
        HUB_USER => owner == IdOwner::Hub,
        OPERATOR_USER => owner == IdOwner::Operator,
        DASHBOARD_USER => owner == IdOwner::Nobody,
        cluster => is_plain_level(cluster) && owner == IdOwner::Cluster(cluster),
    }
}

/// The MQTT client id of `cluster`'s agent (the embedded broker lets a cluster use only its
/// own: `<cluster>-agent`, or `<cluster>-client` for a maestro-style client).
pub fn agent_client_id(cluster: &str) -> String {
    format!("{cluster}-agent")
}

#[derive(Debug, PartialEq, Eq)]
enum IdOwner<'a> {
    Cluster(&'a str),
    Hub,
    Operator,
    /// An id below `addons/`: add-on identities' only.
    AddOn,
    Nobody,
}

fn id_owner(client_id: &str) -> IdOwner<'_> {
    if client_id.starts_with("addons/") {
        return IdOwner::AddOn;
    }
    if let Some(cluster) = client_id
        .strip_suffix("-agent")
        .or_else(|| client_id.strip_suffix("-client"))
    {
        return IdOwner::Cluster(cluster);
    }
    let intake = client_id
        .rsplit_once("-hub-intake-")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if client_id.ends_with("-hub") || intake {
        return IdOwner::Hub;
    }
    if client_id.starts_with("ocm-edge-cli-") {
        return IdOwner::Operator;
    }
    IdOwner::Nobody
}

/// A username that is one literal topic level.
fn is_plain_level(name: &str) -> bool {
    !name.is_empty() && !name.contains(['+', '#', '/']) && !name.starts_with('$')
}

/// Whether every topic `filter` matches is matched by `pattern` (both MQTT filters; a `%u`
/// level of `pattern` is the literal level `user`).
fn covers(pattern: &str, filter: &str, user: &str) -> bool {
    let mut f = filter.split('/');
    for p in pattern.split('/') {
        if p == "#" {
            // `a/#` matches `a` and everything below it.
            return true;
        }
        let Some(level) = f.next() else {
            return false;
        };
        let ok = match (p, level) {
            (_, "#") => false,
            ("+", _) => true,
            (_, "+") => false,
            ("%u", level) => level == user,
            (p, level) => p == level,
        };
        if !ok {
            return false;
        }
    }
    f.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A_SPEC: &str = "sources/ocm-edge/consumers/edge-a/sourceevents";
    const B_SPEC: &str = "sources/ocm-edge/consumers/edge-b/sourceevents";
    const A_STATUS: &str = "sources/ocm-edge/consumers/edge-a/agentevents";
    const B_STATUS: &str = "sources/ocm-edge/consumers/edge-b/agentevents";

    #[test]
    fn a_cluster_reads_its_own_works_and_the_broadcast_and_nothing_else() {
        let sub = |t| allowed("edge-a", Access::Subscribe, t);
        assert!(sub(A_SPEC));
        assert!(sub("sources/+/consumers/edge-a/sourceevents"));
        assert!(sub("sources/ocm-edge/sourcebroadcast"));
        assert!(!sub(B_SPEC));
        assert!(!sub("sources/ocm-edge/consumers/+/sourceevents"));
        assert!(!sub("sources/#"));
        assert!(!sub("#"));
        assert!(!sub("sources/ocm-edge/consumers/edge-a/#"));
        assert!(!sub(A_STATUS), "its own statuses are the hub's to read");
        assert!(!sub("ocm-edge/ocm-edge/admin/responses/x"));
        assert!(!sub("ocm-edge/ocm-edge/dashboard/summary"));
    }

    #[test]
    fn a_cluster_publishes_only_its_own_events() {
        let publish = |t| allowed("edge-a", Access::Publish, t);
        assert!(publish(A_STATUS));
        assert!(publish("sources/edge-a/agentbroadcast"));
        assert!(!publish(B_STATUS));
        assert!(
            !publish(A_SPEC),
            "a cluster cannot write its own desired state"
        );
        assert!(!publish("sources/edge-b/agentbroadcast"));
        assert!(!publish("ocm-edge/ocm-edge/admin/requests"));
        assert!(!publish("sources/ocm-edge/consumers/+/agentevents"));
    }

    #[test]
    fn a_username_that_would_act_as_a_wildcard_or_a_level_may_use_nothing() {
        for user in ["+", "#", "a/b", "", "$SYS"] {
            for access in [Access::Publish, Access::Subscribe] {
                for topic in [A_SPEC, A_STATUS, "sources/+/consumers/+/sourceevents", "#"] {
                    assert!(!allowed(user, access, topic), "{user:?} {access:?} {topic}");
                }
            }
        }
    }

    #[test]
    fn the_hub_the_operator_and_the_dashboard_get_their_own_topics() {
        assert!(allowed(
            HUB_USER,
            Access::Subscribe,
            "sources/ocm-edge/consumers/+/agentevents"
        ));
        assert!(allowed(HUB_USER, Access::Publish, B_SPEC));
        assert!(allowed(
            HUB_USER,
            Access::Publish,
            "ocm-edge/ocm-edge/dashboard/summary"
        ));
        assert!(!allowed(HUB_USER, Access::Subscribe, "#"));
        assert!(!allowed(HUB_USER, Access::Subscribe, "$SYS/brokers"));

        assert!(allowed(
            OPERATOR_USER,
            Access::Publish,
            "ocm-edge/ocm-edge/admin/requests"
        ));
        assert!(allowed(
            OPERATOR_USER,
            Access::Subscribe,
            "ocm-edge/ocm-edge/admin/responses/cli-1"
        ));
        assert!(allowed(
            OPERATOR_USER,
            Access::Subscribe,
            "ocm-edge/+/dashboard/#"
        ));
        assert!(!allowed(OPERATOR_USER, Access::Subscribe, A_SPEC));
        assert!(!allowed(OPERATOR_USER, Access::Publish, A_SPEC));

        assert!(allowed(
            DASHBOARD_USER,
            Access::Subscribe,
            "ocm-edge/ocm-edge/dashboard/clusters/edge-a"
        ));
        assert!(!allowed(
            DASHBOARD_USER,
            Access::Publish,
            "ocm-edge/ocm-edge/dashboard/summary"
        ));
        assert!(!allowed(
            DASHBOARD_USER,
            Access::Subscribe,
            "ocm-edge/ocm-edge/admin/responses/#"
        ));
    }

    #[test]
    fn client_ids_belong_to_their_identities() {
        assert!(client_id_allowed("edge-a", "edge-a-agent"));
        assert!(!client_id_allowed("edge-a", "edge-b-agent"));
        assert!(
            !client_id_allowed("edge", "edge-a-agent"),
            "no prefix games"
        );
        assert!(!client_id_allowed("edge-a", "edge-a-probe"));
        // OCM's work agent: `--cloudevents-client-id=<cluster>` connects as `<cluster>-client`.
        assert!(client_id_allowed("edge-a", "edge-a-client"));
        assert!(!client_id_allowed("edge-b", "edge-a-client"));
        assert!(!client_id_allowed(DASHBOARD_USER, "edge-a-client"));
        assert!(!client_id_allowed("edge-a", "ocm-edge-hub"));
        assert!(!client_id_allowed("+", "+-agent"));
        assert!(client_id_allowed(HUB_USER, "ocm-edge-hub"));
        assert!(client_id_allowed(HUB_USER, "ocm-edge-hub-intake-3"));
        assert!(!client_id_allowed(HUB_USER, "edge-a-agent"));
        assert!(!client_id_allowed(HUB_USER, "ocm-edge-hub-intake-x"));
        assert!(client_id_allowed(OPERATOR_USER, "ocm-edge-cli-0af3"));
        assert!(!client_id_allowed(OPERATOR_USER, "ocm-edge-hub"));
        assert!(client_id_allowed(DASHBOARD_USER, "grafana-1"));
        assert!(!client_id_allowed(DASHBOARD_USER, "ocm-edge-hub"));
        assert!(!client_id_allowed(DASHBOARD_USER, "edge-a-agent"));
        assert!(!client_id_allowed(DASHBOARD_USER, "ocm-edge-cli-x"));
    }

    #[test]
    fn the_identities_here_are_the_names_no_cluster_may_take() {
        assert_eq!(
            ocm_edge_schemas::validate::RESERVED_IDENTITY_NAMES,
            [HUB_USER, OPERATOR_USER, DASHBOARD_USER]
        );
    }

    #[test]
    fn an_addon_agent_uses_only_its_own_topics_and_its_controller_those_of_its_addon() {
        let agent = "addons/hello/clusters/edge-a";
        for access in [Access::Publish, Access::Subscribe] {
            assert!(allowed(
                agent,
                access,
                "addons/hello/clusters/edge-a/to-hub"
            ));
            assert!(allowed(
                agent,
                access,
                "addons/hello/clusters/edge-a/placementscores"
            ));
            assert!(
                !allowed(agent, access, "addons/hello/clusters/edge-b/to-hub"),
                "another cluster"
            );
            assert!(
                !allowed(agent, access, "addons/other/clusters/edge-a/to-hub"),
                "another add-on"
            );
            assert!(!allowed(agent, access, A_STATUS));
            assert!(!allowed(agent, access, A_SPEC));
            assert!(!allowed(agent, access, "ocm-edge/ocm-edge/admin/requests"));
        }
        assert!(allowed(
            agent,
            Access::Subscribe,
            "addons/hello/clusters/edge-a/#"
        ));
        assert!(!allowed(
            agent,
            Access::Subscribe,
            "addons/hello/clusters/+/#"
        ));
        assert!(!allowed(agent, Access::Subscribe, "addons/#"));
        assert!(!allowed(
            agent,
            Access::Publish,
            "addons/hello/clusters/edge-a/#"
        ));

        let controller = "addons/hello/controller";
        assert!(allowed(
            controller,
            Access::Subscribe,
            "addons/hello/clusters/+/to-hub"
        ));
        assert!(allowed(
            controller,
            Access::Publish,
            "addons/hello/clusters/edge-b/to-agent"
        ));
        assert!(!allowed(
            controller,
            Access::Subscribe,
            "addons/other/clusters/+/to-hub"
        ));
        assert!(!allowed(controller, Access::Subscribe, "addons/#"));
        assert!(!allowed(controller, Access::Subscribe, A_SPEC));

        assert!(allowed(
            HUB_USER,
            Access::Subscribe,
            "addons/+/clusters/+/placementscores"
        ));
        // A cluster agent named like a level of an add-on topic gets none of them.
        assert!(!allowed(
            "addons",
            Access::Subscribe,
            "addons/hello/clusters/edge-a/to-hub"
        ));
        assert!(!allowed(
            "edge-a",
            Access::Subscribe,
            "addons/hello/clusters/edge-a/to-hub"
        ));
    }

    #[test]
    fn addon_client_ids_belong_to_their_identities() {
        let agent = "addons/hello/clusters/edge-a";
        assert!(client_id_allowed(agent, agent));
        assert!(client_id_allowed(
            agent,
            "addons/hello/clusters/edge-a/replica-1"
        ));
        assert!(!client_id_allowed(agent, "addons/hello/clusters/edge-b"));
        assert!(!client_id_allowed(agent, "addons/hello/clusters/edge-ab"));
        assert!(!client_id_allowed(
            agent,
            "addons/hello/clusters/edge-a/x/y"
        ));
        assert!(!client_id_allowed(agent, "edge-a-agent"));
        assert!(
            !client_id_allowed(DASHBOARD_USER, agent),
            "nobody else takes an add-on's id"
        );
        assert!(!client_id_allowed("edge-a", agent));
    }

    #[test]
    fn coverage_follows_mqtt_matching() {
        assert!(covers("a/#", "a", "u"));
        assert!(covers("a/#", "a/b/c", "u"));
        assert!(covers("a/#", "a/+/#", "u"));
        assert!(covers("a/+/c", "a/+/c", "u"));
        assert!(!covers("a/+/c", "a/#", "u"));
        assert!(!covers("a/b", "a/+", "u"));
        assert!(!covers("a/b", "a/b/c", "u"));
        assert!(!covers("a/b/c", "a/b", "u"));
    }
}
