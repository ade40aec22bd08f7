//! CloudEvent types: `<group>.<version>.<resource>.<spec|status>.<action>`.
//!
//! The group may itself contain dots (`io.open-cluster-management.works`), so a type is parsed from the
//! right: the last four dot-separated parts are version, resource, sub-resource and action; everything
//! before them is the group.

use std::fmt;
use std::str::FromStr;

/// Data type of ManifestWork bundles, the one OCM work agents and maestro speak.
pub const MANIFEST_BUNDLES: DataType = DataType::from_static(
    "io.open-cluster-management.works",
    "v1alpha1",
    "manifestbundles",
);
/// ocm-edge extension: cluster registration, the hub's view of a cluster, and cluster status.
pub const MANAGED_CLUSTERS: DataType = DataType::from_static(
    "cluster.open-cluster-management.io",
    "v1",
    "managedclusters",
);
/// ocm-edge extension: cluster lease renewals.
pub const LEASES: DataType = DataType::from_static("coordination.k8s.io", "v1", "leases");
/// ocm-edge extension: agent presence (MQTT birth and will).
pub const PRESENCES: DataType =
    DataType::from_static("edge.open-cluster-management.io", "v1alpha1", "presences");
/// ocm-edge extension: AddOnPlacementScores published by agents or add-ons (agent to hub).
pub const ADDON_PLACEMENT_SCORES: DataType = DataType::from_static(
    "cluster.open-cluster-management.io",
    "v1alpha1",
    "addonplacementscores",
);
/// OCM's ManagedClusterAddOns: an edge agent asks the hub to bind its add-on's MQTT identity
/// (agent to hub, `status.update_request`).
pub const MANAGED_CLUSTER_ADDONS: DataType = DataType::from_static(
    "addon.open-cluster-management.io",
    "v1beta1",
    "managedclusteraddons",
);

/// Every data type ocm-edge speaks.
pub const KNOWN_DATA_TYPES: [DataType; 6] = [
    MANIFEST_BUNDLES,
    MANAGED_CLUSTERS,
    LEASES,
    PRESENCES,
    ADDON_PLACEMENT_SCORES,
    MANAGED_CLUSTER_ADDONS,
];

/// Errors from parsing an event type string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventTypeError {
    /// Fewer than five dot-separated parts.
    #[error(
        "event type {0:?} has too few parts: expected <group>.<version>.<resource>.<spec|status>.<action>"
    )]
    TooFewParts(String),
    /// A part is empty (two dots in a row, or a leading/trailing dot).
    #[error("event type {0:?} has an empty part")]
    EmptyPart(String),
    /// The sub-resource is neither `spec` nor `status`.
    #[error("event type {ty:?}: sub-resource {found:?} is not \"spec\" or \"status\"")]
    BadSubResource { ty: String, found: String },
    /// The action is not one of the five known actions.
    #[error(
        "event type {ty:?}: action {found:?} is not one of create_request, update_request, delete_request, resync_request, resync_response"
    )]
    BadAction { ty: String, found: String },
}

/// `<group>.<version>.<resource>`, e.g. `io.open-cluster-management.works.v1alpha1.manifestbundles`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataType {
    group: std::borrow::Cow<'static, str>,
    version: std::borrow::Cow<'static, str>,
    resource: std::borrow::Cow<'static, str>,
}

impl DataType {
    /// Builds a data type from its three parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into().into(),
            version: version.into().into(),
            resource: resource.into().into(),
        }
    }

    const fn from_static(
        group: &'static str,
        version: &'static str,
        resource: &'static str,
    ) -> Self {
        Self {
            group: std::borrow::Cow::Borrowed(group),
            version: std::borrow::Cow::Borrowed(version),
            resource: std::borrow::Cow::Borrowed(resource),
        }
    }

    pub fn group(&self) -> &str {
        &self.group
    }
    pub fn version(&self) -> &str {
        &self.version
    }
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Whether ocm-edge speaks it ([`KNOWN_DATA_TYPES`]).
    pub fn is_known(&self) -> bool {
        KNOWN_DATA_TYPES.contains(self)
    }

    /// The full event type for this data type with a sub-resource and action.
    pub fn event_type(&self, sub_resource: SubResource, action: Action) -> EventType {
        EventType {
            data_type: self.clone(),
            sub_resource,
            action,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.group, self.version, self.resource)
    }
}

/// Whether an event is about the desired state (`spec`) or the observed state (`status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubResource {
    Spec,
    Status,
}

impl SubResource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Spec => "spec",
            Self::Status => "status",
        }
    }
}

/// The action of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    CreateRequest,
    UpdateRequest,
    DeleteRequest,
    ResyncRequest,
    ResyncResponse,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CreateRequest => "create_request",
            Self::UpdateRequest => "update_request",
            Self::DeleteRequest => "delete_request",
            Self::ResyncRequest => "resync_request",
            Self::ResyncResponse => "resync_response",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "create_request" => Self::CreateRequest,
            "update_request" => Self::UpdateRequest,
            "delete_request" => Self::DeleteRequest,
            "resync_request" => Self::ResyncRequest,
            "resync_response" => Self::ResyncResponse,
            _ => return None,
        })
    }
}

/// A parsed CloudEvent type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventType {
    pub data_type: DataType,
    pub sub_resource: SubResource,
    pub action: Action,
}

impl EventType {
    /// Parses `<group>.<version>.<resource>.<spec|status>.<action>`, reading from the right.
    ///
    /// # Errors
    /// [`EventTypeError`] naming the part that is wrong.
    pub fn parse(s: &str) -> Result<Self, EventTypeError> {
        let mut parts = s.rsplitn(5, '.');
        let (Some(action), Some(sub), Some(resource), Some(version), Some(group)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(EventTypeError::TooFewParts(s.to_owned()));
        };
        if [action, sub, resource, version, group]
            .iter()
            .any(|p| p.is_empty())
            || group.split('.').any(str::is_empty)
        {
            return Err(EventTypeError::EmptyPart(s.to_owned()));
        }
        let sub_resource = match sub {
            "spec" => SubResource::Spec,
            "status" => SubResource::Status,
            other => {
                return Err(EventTypeError::BadSubResource {
                    ty: s.to_owned(),
                    found: other.to_owned(),
                });
            }
        };
        let action = Action::parse(action).ok_or_else(|| EventTypeError::BadAction {
            ty: s.to_owned(),
            found: action.to_owned(),
        })?;
        Ok(Self {
            data_type: DataType::new(group, version, resource),
            sub_resource,
            action,
        })
    }
}

impl FromStr for EventType {
    type Err = EventTypeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}",
            self.data_type,
            self.sub_resource.as_str(),
            self.action.as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_status_type_parses_from_the_right_and_prints_back() {
        let s = "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request";
        let t = EventType::parse(s).unwrap();
        assert_eq!(t.data_type, MANIFEST_BUNDLES);
        assert_eq!(t.sub_resource, SubResource::Status);
        assert_eq!(t.action, Action::UpdateRequest);
        assert_eq!(t.to_string(), s);
    }

    #[test]
    fn extension_types_print_as_documented() {
        assert_eq!(
            MANAGED_CLUSTERS
                .event_type(SubResource::Spec, Action::CreateRequest)
                .to_string(),
            "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request"
        );
        assert_eq!(
            LEASES
                .event_type(SubResource::Spec, Action::UpdateRequest)
                .to_string(),
            "coordination.k8s.io.v1.leases.spec.update_request"
        );
        assert_eq!(
            PRESENCES
                .event_type(SubResource::Status, Action::UpdateRequest)
                .to_string(),
            "edge.open-cluster-management.io.v1alpha1.presences.status.update_request"
        );
    }

    #[test]
    fn malformed_types_are_errors_that_name_the_problem() {
        assert!(matches!(
            EventType::parse("a.b.spec.create_request"),
            Err(EventTypeError::TooFewParts(_))
        ));
        assert!(matches!(
            EventType::parse("g..r.spec.create_request"),
            Err(EventTypeError::EmptyPart(_))
        ));
        assert!(matches!(
            EventType::parse("g.v1.r.meta.create_request"),
            Err(EventTypeError::BadSubResource { .. })
        ));
        let err = EventType::parse("g.v1.r.spec.explode").unwrap_err();
        assert!(err.to_string().contains("explode"), "{err}");
    }
}
