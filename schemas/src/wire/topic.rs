//! MQTT topics: OCM's per-cluster work topics (docs/reference/protocol.md section 1) and ocm-edge's admin and
//! dashboard topics (CONTRACTS: `ocm-edge/<source>/...`).
//!
//! Builders validate every name so a bad cluster or source id never reaches the broker; [`Topic::parse`]
//! maps a received topic to a [`Topic`] or says why it is not one of ours.

use std::fmt;

/// Errors building or parsing topics. Not retryable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    #[error(
        "{what} {name:?} is not valid in a topic: use lowercase letters, digits and '-' only ([a-z0-9-]+)"
    )]
    BadName { what: &'static str, name: String },
    #[error(
        "work name {0:?} is not valid in a topic: use lowercase letters, digits, '-' and '.' (a Kubernetes name)"
    )]
    BadWorkName(String),
    #[error("client id {0:?} is not valid in a response topic: use [A-Za-z0-9_-]+")]
    BadClientId(String),
    #[error("topic {0:?} is not an ocm-edge or OCM topic")]
    Unknown(String),
}

/// A topic ocm-edge publishes or receives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Topic {
    /// `sources/S/consumers/C/sourceevents`: hub to the agent of C.
    SourceEvents { source: String, cluster: String },
    /// `sources/S/consumers/C/agentevents`: the agent of C to the hub.
    AgentEvents { source: String, cluster: String },
    /// `sources/S/sourcebroadcast`: hub to all agents.
    SourceBroadcast { source: String },
    /// `sources/C/agentbroadcast`: the agent of C to all sources.
    AgentBroadcast { cluster: String },
    /// `ocm-edge/S/admin/requests`: CLI to hub.
    AdminRequests { source: String },
    /// `ocm-edge/S/admin/responses/<client-id>`: hub to one CLI.
    AdminResponses { source: String, client_id: String },
    /// `ocm-edge/S/dashboard/summary` (retained).
    DashboardSummary { source: String },
    /// `ocm-edge/S/dashboard/clusters/C` (retained).
    DashboardCluster { source: String, cluster: String },
    /// `ocm-edge/S/dashboard/works/C/W` (retained).
    DashboardWork {
        source: String,
        cluster: String,
        work: String,
    },
    /// `ocm-edge/S/dashboard/addons/A` (retained).
    DashboardAddOn { source: String, addon: String },
    /// `ocm-edge/S/dashboard/addons/A/clusters/C` (retained).
    DashboardClusterAddOn {
        source: String,
        addon: String,
        cluster: String,
    },
    /// `addons/A/clusters/C/placementscores`: add-on A's agent on C to the hub
    /// (`crate::wire::addon_identity`).
    AddOnScores { addon: String, cluster: String },
}

/// The prefix of ocm-edge's own topics.
pub const OCM_EDGE_PREFIX: &str = "ocm-edge";

/// Whether `name` is `[a-z0-9-]+` (sdk-go's rule for source and cluster names in topics).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn is_valid_work_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

fn is_valid_client_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn name(what: &'static str, n: &str) -> Result<(), TopicError> {
    if is_valid_name(n) {
        Ok(())
    } else {
        Err(TopicError::BadName {
            what,
            name: n.to_owned(),
        })
    }
}

impl Topic {
    /// Checks every name in the topic.
    ///
    /// # Errors
    /// [`TopicError`] naming the bad part.
    pub fn validate(&self) -> Result<(), TopicError> {
        match self {
            Self::SourceEvents { source, cluster } | Self::AgentEvents { source, cluster } => {
                name("source id", source)?;
                name("cluster name", cluster)
            }
            Self::SourceBroadcast { source }
            | Self::AdminRequests { source }
            | Self::DashboardSummary { source } => name("source id", source),
            Self::AgentBroadcast { cluster } => name("cluster name", cluster),
            Self::AdminResponses { source, client_id } => {
                name("source id", source)?;
                if is_valid_client_id(client_id) {
                    Ok(())
                } else {
                    Err(TopicError::BadClientId(client_id.clone()))
                }
            }
            Self::DashboardCluster { source, cluster } => {
                name("source id", source)?;
                name("cluster name", cluster)
            }
            Self::DashboardWork {
                source,
                cluster,
                work,
            } => {
                name("source id", source)?;
                name("cluster name", cluster)?;
                if is_valid_work_name(work) {
                    Ok(())
                } else {
                    Err(TopicError::BadWorkName(work.clone()))
                }
            }
            Self::AddOnScores { addon, cluster } => {
                name("add-on name", addon)?;
                name("cluster name", cluster)
            }
            Self::DashboardAddOn { source, addon } => {
                name("source id", source)?;
                name("add-on name", addon)
            }
            Self::DashboardClusterAddOn {
                source,
                addon,
                cluster,
            } => {
                name("source id", source)?;
                name("add-on name", addon)?;
                name("cluster name", cluster)
            }
        }
    }

    /// The validated topic string.
    ///
    /// # Errors
    /// [`TopicError`] when a name is not valid in a topic.
    pub fn build(&self) -> Result<String, TopicError> {
        self.validate()?;
        Ok(self.to_string())
    }

    /// Parses a received topic (no wildcards, no `$share/` prefix: brokers deliver the real name).
    ///
    /// # Errors
    /// [`TopicError::Unknown`] for topics that are not ours, [`TopicError::BadName`] and friends when the
    /// shape is ours but a name is not valid.
    pub fn parse(topic: &str) -> Result<Self, TopicError> {
        let parts: Vec<&str> = topic.split('/').collect();
        let owned = |s: &str| s.to_owned();
        let parsed = match parts.as_slice() {
            ["sources", s, "consumers", c, "sourceevents"] => Self::SourceEvents {
                source: owned(s),
                cluster: owned(c),
            },
            ["sources", s, "consumers", c, "agentevents"] => Self::AgentEvents {
                source: owned(s),
                cluster: owned(c),
            },
            ["sources", s, "sourcebroadcast"] => Self::SourceBroadcast { source: owned(s) },
            ["sources", c, "agentbroadcast"] => Self::AgentBroadcast { cluster: owned(c) },
            [OCM_EDGE_PREFIX, s, "admin", "requests"] => Self::AdminRequests { source: owned(s) },
            [OCM_EDGE_PREFIX, s, "admin", "responses", id] => Self::AdminResponses {
                source: owned(s),
                client_id: owned(id),
            },
            [OCM_EDGE_PREFIX, s, "dashboard", "summary"] => {
                Self::DashboardSummary { source: owned(s) }
            }
            [OCM_EDGE_PREFIX, s, "dashboard", "clusters", c] => Self::DashboardCluster {
                source: owned(s),
                cluster: owned(c),
            },
            [OCM_EDGE_PREFIX, s, "dashboard", "works", c, w] => Self::DashboardWork {
                source: owned(s),
                cluster: owned(c),
                work: owned(w),
            },
            [
                "addons",
                a,
                "clusters",
                c,
                super::addon_identity::SCORES_LEVEL,
            ] => Self::AddOnScores {
                addon: owned(a),
                cluster: owned(c),
            },
            [OCM_EDGE_PREFIX, s, "dashboard", "addons", a] => Self::DashboardAddOn {
                source: owned(s),
                addon: owned(a),
            },
            [OCM_EDGE_PREFIX, s, "dashboard", "addons", a, "clusters", c] => {
                Self::DashboardClusterAddOn {
                    source: owned(s),
                    addon: owned(a),
                    cluster: owned(c),
                }
            }
            _ => return Err(TopicError::Unknown(topic.to_owned())),
        };
        parsed.validate()?;
        Ok(parsed)
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SourceEvents { source, cluster } => {
                write!(f, "sources/{source}/consumers/{cluster}/sourceevents")
            }
            Self::AgentEvents { source, cluster } => {
                write!(f, "sources/{source}/consumers/{cluster}/agentevents")
            }
            Self::SourceBroadcast { source } => write!(f, "sources/{source}/sourcebroadcast"),
            Self::AgentBroadcast { cluster } => write!(f, "sources/{cluster}/agentbroadcast"),
            Self::AdminRequests { source } => {
                write!(f, "{OCM_EDGE_PREFIX}/{source}/admin/requests")
            }
            Self::AdminResponses { source, client_id } => {
                write!(f, "{OCM_EDGE_PREFIX}/{source}/admin/responses/{client_id}")
            }
            Self::DashboardSummary { source } => {
                write!(f, "{OCM_EDGE_PREFIX}/{source}/dashboard/summary")
            }
            Self::DashboardCluster { source, cluster } => {
                write!(f, "{OCM_EDGE_PREFIX}/{source}/dashboard/clusters/{cluster}")
            }
            Self::DashboardWork {
                source,
                cluster,
                work,
            } => write!(
                f,
                "{OCM_EDGE_PREFIX}/{source}/dashboard/works/{cluster}/{work}"
            ),
            Self::AddOnScores { addon, cluster } => write!(
                f,
                "addons/{addon}/clusters/{cluster}/{}",
                super::addon_identity::SCORES_LEVEL
            ),
            Self::DashboardAddOn { source, addon } => {
                write!(f, "{OCM_EDGE_PREFIX}/{source}/dashboard/addons/{addon}")
            }
            Self::DashboardClusterAddOn {
                source,
                addon,
                cluster,
            } => write!(
                f,
                "{OCM_EDGE_PREFIX}/{source}/dashboard/addons/{addon}/clusters/{cluster}"
            ),
        }
    }
}

/// `sources/S/consumers/C/sourceevents`.
///
/// # Errors
/// [`TopicError::BadName`] for an invalid source or cluster name (also for the other builders).
pub fn source_events(source: &str, cluster: &str) -> Result<String, TopicError> {
    Topic::SourceEvents {
        source: source.to_owned(),
        cluster: cluster.to_owned(),
    }
    .build()
}

/// `sources/S/consumers/C/agentevents`.
pub fn agent_events(source: &str, cluster: &str) -> Result<String, TopicError> {
    Topic::AgentEvents {
        source: source.to_owned(),
        cluster: cluster.to_owned(),
    }
    .build()
}

/// `sources/S/sourcebroadcast`.
pub fn source_broadcast(source: &str) -> Result<String, TopicError> {
    Topic::SourceBroadcast {
        source: source.to_owned(),
    }
    .build()
}

/// `sources/C/agentbroadcast`.
pub fn agent_broadcast(cluster: &str) -> Result<String, TopicError> {
    Topic::AgentBroadcast {
        cluster: cluster.to_owned(),
    }
    .build()
}

/// The hub's subscription to every cluster's agent events: `sources/S/consumers/+/agentevents`, or
/// `$share/G/sources/S/consumers/+/agentevents` when several hub workers share the stream.
pub fn hub_agent_events_subscription(
    source: &str,
    share_group: Option<&str>,
) -> Result<String, TopicError> {
    name("source id", source)?;
    let base = format!("sources/{source}/consumers/+/agentevents");
    match share_group {
        None => Ok(base),
        Some(g) => {
            name("shared subscription group", g)?;
            Ok(format!("$share/{g}/{base}"))
        }
    }
}

/// An agent's subscription to its spec events: `sources/S/consumers/C/sourceevents`, or
/// `sources/+/consumers/C/sourceevents` to hear every source.
pub fn agent_source_events_subscription(
    source: Option<&str>,
    cluster: &str,
) -> Result<String, TopicError> {
    name("cluster name", cluster)?;
    match source {
        Some(s) => source_events(s, cluster),
        None => Ok(format!("sources/+/consumers/{cluster}/sourceevents")),
    }
}

/// `ocm-edge/S/admin/requests`.
pub fn admin_requests(source: &str) -> Result<String, TopicError> {
    Topic::AdminRequests {
        source: source.to_owned(),
    }
    .build()
}

/// `ocm-edge/S/admin/responses/<client-id>`.
pub fn admin_responses(source: &str, client_id: &str) -> Result<String, TopicError> {
    Topic::AdminResponses {
        source: source.to_owned(),
        client_id: client_id.to_owned(),
    }
    .build()
}

/// `ocm-edge/S/dashboard/summary`.
pub fn dashboard_summary(source: &str) -> Result<String, TopicError> {
    Topic::DashboardSummary {
        source: source.to_owned(),
    }
    .build()
}

/// `ocm-edge/S/dashboard/clusters/C`.
pub fn dashboard_cluster(source: &str, cluster: &str) -> Result<String, TopicError> {
    Topic::DashboardCluster {
        source: source.to_owned(),
        cluster: cluster.to_owned(),
    }
    .build()
}

/// `ocm-edge/S/dashboard/works/C/W`.
pub fn dashboard_work(source: &str, cluster: &str, work: &str) -> Result<String, TopicError> {
    Topic::DashboardWork {
        source: source.to_owned(),
        cluster: cluster.to_owned(),
        work: work.to_owned(),
    }
    .build()
}

/// `ocm-edge/S/dashboard/addons/A`.
pub fn dashboard_addon(source: &str, addon: &str) -> Result<String, TopicError> {
    Topic::DashboardAddOn {
        source: source.to_owned(),
        addon: addon.to_owned(),
    }
    .build()
}

/// `ocm-edge/S/dashboard/addons/A/clusters/C`.
pub fn dashboard_cluster_addon(
    source: &str,
    addon: &str,
    cluster: &str,
) -> Result<String, TopicError> {
    Topic::DashboardClusterAddOn {
        source: source.to_owned(),
        addon: addon.to_owned(),
        cluster: cluster.to_owned(),
    }
    .build()
}

/// sdk-go's topic check, without a regex engine:
/// `^(\$share/[a-z0-9-]+/)?([a-z]+)/([a-z0-9-]+|\+)/([a-z]+)/([a-z0-9-]+|\+)/(sourceevents|agentevents)$`.
pub fn matches_sdk_go_pattern(topic: &str) -> bool {
    let mut parts: Vec<&str> = topic.split('/').collect();
    if parts.first() == Some(&"$share") {
        if parts.len() < 2 || !is_valid_name(parts[1]) {
            return false;
        }
        parts.drain(..2);
    }
    let lower = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase());
    let name_or_plus = |s: &str| s == "+" || is_valid_name(s);
    matches!(parts.as_slice(),
        [a, b, c, d, e] if lower(a) && name_or_plus(b) && lower(c) && name_or_plus(d)
            && (*e == "sourceevents" || *e == "agentevents"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_topics_are_built_and_parsed_back() {
        let t = source_events("ocm-edge", "edge-1").unwrap();
        assert_eq!(t, "sources/ocm-edge/consumers/edge-1/sourceevents");
        assert_eq!(
            Topic::parse(&t).unwrap(),
            Topic::SourceEvents {
                source: "ocm-edge".into(),
                cluster: "edge-1".into()
            }
        );
        assert!(matches_sdk_go_pattern(&t));
        let a = agent_events("maestro", "c1").unwrap();
        assert!(matches_sdk_go_pattern(&a));
        assert!(matches!(Topic::parse(&a), Ok(Topic::AgentEvents { .. })));
    }

    #[test]
    fn hub_subscriptions_use_a_wildcard_and_optionally_a_shared_group() {
        let plain = hub_agent_events_subscription("ocm-edge", None).unwrap();
        assert_eq!(plain, "sources/ocm-edge/consumers/+/agentevents");
        let shared = hub_agent_events_subscription("ocm-edge", Some("hubs")).unwrap();
        assert_eq!(
            shared,
            "$share/hubs/sources/ocm-edge/consumers/+/agentevents"
        );
        assert!(matches_sdk_go_pattern(&plain));
        assert!(matches_sdk_go_pattern(&shared));
    }

    #[test]
    fn names_that_are_not_topic_safe_are_refused_with_the_reason() {
        let err = source_events("ocm-edge", "Edge_1").unwrap_err();
        assert!(err.to_string().contains("[a-z0-9-]+"), "{err}");
        assert!(source_events("ocm-edge", "a/b").is_err());
        assert!(source_events("ocm-edge", "+").is_err());
        assert!(source_events("", "c").is_err());
        assert!(!matches_sdk_go_pattern(
            "sources/S/consumers/c/sourceevents"
        ));
    }

    #[test]
    fn admin_and_dashboard_topics_round_trip() {
        for t in [
            admin_requests("ocm-edge").unwrap(),
            admin_responses("ocm-edge", "cli-Ab_3").unwrap(),
            dashboard_summary("ocm-edge").unwrap(),
            dashboard_cluster("ocm-edge", "c1").unwrap(),
            dashboard_work("ocm-edge", "c1", "web.v2").unwrap(),
            source_broadcast("ocm-edge").unwrap(),
            agent_broadcast("c1").unwrap(),
        ] {
            assert_eq!(Topic::parse(&t).unwrap().to_string(), t);
        }
    }

    #[test]
    fn foreign_topics_are_unknown() {
        assert_eq!(
            Topic::parse("spBv1.0/g/NBIRTH/n"),
            Err(TopicError::Unknown("spBv1.0/g/NBIRTH/n".into()))
        );
    }
}
