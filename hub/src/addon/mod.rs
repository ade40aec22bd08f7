//! Add-ons: OCM's add-on manager for template add-ons (`addon.open-cluster-management.io`).
//!
//! - A ClusterManagementAddOn names the add-on, its default configs (an AddOnTemplate makes it a
//!   template add-on, an AddOnDeploymentConfig gives it variables and settings) and how it is
//!   installed: by hand (`Manual`: `ocm-edge addon enable` creates the ManagedClusterAddOn) or on
//!   every cluster its placements select (`Placements`: the hub creates and removes the
//!   ManagedClusterAddOns).
//! - For each ManagedClusterAddOn, the hub resolves its configs (its own, then its placement's,
//!   then the defaults, one per group and resource), renders the template for the cluster
//!   ([`render`]) and delivers it as the ManifestWork `addon-<name>-deploy-0` (labelled
//!   `open-cluster-management.io/addon-name`); the work's status gives the add-on's conditions
//!   (`Configured`, `ManifestApplied`, `Available`; Unknown while the cluster is unreachable).
//! - A ManagedClusterAddOn removed (disable, its add-on deleted, its cluster removed, or no
//!   longer selected) takes its work with it.
//!
//! What is applied is checked first ([`HubCore::check_addon_object`]): an add-on's configs must
//! exist, a template's variables must be given, a cluster's add-on must name a known add-on on a
//! known cluster. A config change reaches every cluster at once: the placements'
//! `rolloutStrategy` is kept, not yet followed.

pub mod health;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::addon::{
    ADDON_DEPLOYMENT_CONFIGS, ADDON_GROUP, ADDON_TEMPLATES, AddOnConfig, AddOnDeploymentConfig,
    AddOnTemplate, CONDITION_AVAILABLE, CONDITION_CERTIFICATE_ROTATED, CONDITION_CONFIGURED,
    CONDITION_MANIFEST_APPLIED, CONDITION_PROGRESSING, CONDITION_REGISTRATION_APPLIED,
    ClusterManagementAddOn, ConfigReference, ConfigSpecHash, DEFAULT_INSTALL_NAMESPACE,
    DefaultConfigReference, INSTALL_MANUAL, INSTALL_NAMESPACE_ANNOTATION, INSTALL_PLACEMENTS,
    InstallConfigReference, InstallProgression, LABEL_ADDON_NAME, ManagedClusterAddOn,
    ManagedClusterAddOnStatus, ObjectReference, RegistrationConfig,
};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, ObjectMeta, Time, set_condition};
use ocm_edge_schemas::api::work::{Manifest, ManifestWorkSpec, WORK_APPLIED, WORK_AVAILABLE};
use ocm_edge_schemas::wire::addon_identity;

use crate::core::objects::{ObjectError, ObjectKey, ObjectKind, StoredObject};
use crate::core::{Change, HubCore, Record, WorkKey, time};
use crate::rollout::{
    ClusterRolloutStatus, ClusterWork, RolloutStatus, TemplateState, rollout_clusters,
    work_rollout_status,
};
use crate::work::WorkInput;

/// Annotation of a ManagedClusterAddOn: when the hub last sent its cluster a new agent (its
/// rollout's progressDeadline and minSuccessTime count from it), RFC 3339.
pub const CONFIG_SENT_AT_ANNOTATION: &str = "edge.open-cluster-management.io/config-sent-at";

/// `addon`'s health check (its annotation was checked at apply).
fn health_mode(addon: &ClusterManagementAddOn) -> health::Mode {
    health::Mode::parse(
        addon
            .metadata
            .annotations
            .get(health::HEALTH_CHECK_ANNOTATION)
            .map(String::as_str),
    )
    .unwrap_or(health::Mode::WorkloadAvailability)
}

/// When the hub last sent `mca`'s cluster a new agent.
fn sent_at(mca: &ManagedClusterAddOn) -> Option<DateTime<Utc>> {
    mca.metadata
        .annotations
        .get(CONFIG_SENT_AT_ANNOTATION)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// The annotations of a ManagedClusterAddOn only the hub writes (an apply keeps the hub's).
pub const HUB_OWNED_ANNOTATIONS: [&str; 7] = [
    INSTALLED_BY_PLACEMENT_ANNOTATION,
    CONFIG_SENT_AT_ANNOTATION,
    CERTIFICATE_ANNOTATION,
    PREVIOUS_CERTIFICATES_ANNOTATION,
    PENDING_SHA256_ANNOTATION,
    PENDING_KEY_ANNOTATION,
    // The MQTT identity's bound password hash: only a request signed by the cluster's agent
    // sets it, never an apply.
    addon_identity::PASSWORD_SHA256_ANNOTATION,
];

/// How long a cluster's add-on waits for its pre-delete hooks before it is removed anyway.
pub const HOOK_TIMEOUT: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// Annotation of a ManagedClusterAddOn the install strategy created (and may remove).
pub const INSTALLED_BY_PLACEMENT_ANNOTATION: &str =
    "edge.open-cluster-management.io/installed-by-placement";

/// The ManifestWork that carries add-on `addon`'s agent (OCM's name).
pub fn work_name(addon: &str) -> String {
    addon_identity::deploy_work_name(addon)
}

/// The ManifestWork that runs add-on `addon`'s pre-delete hooks (OCM's name).
pub fn pre_delete_work_name(addon: &str) -> String {
    format!("addon-{addon}-pre-delete")
}

/// The add-on whose work `work` is (`addon-<name>-deploy-0` or `addon-<name>-pre-delete`), if
/// it is one.
pub fn addon_of_work(work: &str) -> Option<&str> {
    let rest = work.strip_prefix("addon-")?;
    rest.strip_suffix("-deploy-0")
        .or_else(|| rest.strip_suffix("-pre-delete"))
}

/// ManagedClusterAddOn condition: its pre-delete hooks finished (OCM's).
pub const CONDITION_HOOK_COMPLETED: &str = "HookManifestCompleted";

/// An add-on's configs, one per (group, resource), the first given winning.
fn resolve(layers: &[&[AddOnConfig]]) -> BTreeMap<(String, String), AddOnConfig> {
    let mut out = BTreeMap::new();
    for layer in layers {
        for c in *layer {
            out.entry((c.group.clone(), c.resource.clone()))
                .or_insert_with(|| c.clone());
        }
    }
    out
}

/// SHA-256 of a config's spec, hex (what OCM's `specHash` is).
fn spec_hash(spec: &impl serde::Serialize) -> String {
    let bytes = serde_json::to_vec(spec).unwrap_or_default();
    ring::digest::digest(&ring::digest::SHA256, &bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether an add-on config names the template or config `key`.
fn config_matcher(key: &ObjectKey) -> impl Fn(&AddOnConfig) -> bool + '_ {
    move |c: &AddOnConfig| match key.kind {
        ObjectKind::AddOnTemplate => c.is(ADDON_TEMPLATES) && c.name == key.name,
        _ => c.is(ADDON_DEPLOYMENT_CONFIGS) && c.name == key.name && c.namespace == key.namespace,
    }
}

/// The clusters each placement of the add-ons selects, by `(namespace, name)` (computed once a
/// pass).
type Placed = BTreeMap<(String, String), BTreeSet<String>>;

/// The placement of `addon`'s install strategy that `cluster` follows: the last one selecting it
/// (OCM's rule).
fn owning_placement<'a>(
    addon: &'a ClusterManagementAddOn,
    cluster: &str,
    placed: &Placed,
) -> Option<&'a ocm_edge_schemas::api::addon::PlacementStrategy> {
    addon
        .spec
        .install_strategy
        .placements
        .iter()
        .rev()
        .find(|p| {
            placed
                .get(&(p.namespace.clone(), p.name.clone()))
                .is_some_and(|c| c.contains(cluster))
        })
}

/// Whether each `(cluster, add-on)` of a Placements add-on may take its new agent now.
type RolloutGate = BTreeMap<(String, String), bool>;

/// Resolved configs by group and resource.
type ConfigSet = BTreeMap<(String, String), AddOnConfig>;

/// Every set of configs a cluster of add-on `a` may end up with (before its own
/// ManagedClusterAddOn's): its defaults, and each of its placements' over them (with the
/// placement's `namespace/name`).
fn config_sets(a: &ClusterManagementAddOn) -> Vec<(Option<String>, ConfigSet)> {
    let mut sets = vec![(None, resolve(&[&a.spec.default_configs]))];
    for p in &a.spec.install_strategy.placements {
        sets.push((
            Some(format!("{}/{}", p.namespace, p.name)),
            resolve(&[&p.configs, &a.spec.default_configs]),
        ));
    }
    sets
}

/// Progressing of a cluster just sent the add-on's current work.
fn sent_progressing() -> Condition {
    Condition::new(
        CONDITION_PROGRESSING,
        ConditionStatus::True,
        "Progressing",
        "The cluster is taking the current configs",
    )
}

/// The password hash the hub bound to `mca`'s MQTT identity.
fn bound_password(mca: &ManagedClusterAddOn) -> Option<&str> {
    mca.metadata
        .annotations
        .get(addon_identity::PASSWORD_SHA256_ANNOTATION)
        .map(String::as_str)
}

/// `status.registrations` and RegistrationApplied of a cluster's add-on whose template
/// registers (`registration`), or neither.
fn registration_status(
    status: &mut ManagedClusterAddOnStatus,
    registration: Option<&addon_identity::Registration>,
    pending: bool,
    at: Time,
) {
    // As OCM's registration agent says it: the dates of the client certificate in force.
    match registration.and_then(|r| r.certificate.as_ref()) {
        Some(c) => {
            set_condition(
                &mut status.conditions,
                Condition::new(
                    CONDITION_CERTIFICATE_ROTATED,
                    ConditionStatus::True,
                    "ClientCertificateUpdated",
                    format!(
                        "client certificate rotated starting from {} to {}",
                        c.not_before.to_rfc3339(),
                        c.not_after.to_rfc3339()
                    ),
                ),
                at,
            );
        }
        None => status
            .conditions
            .retain(|c| c.type_ != CONDITION_CERTIFICATE_ROTATED),
    }
    let Some(r) = registration else {
        // As OCM: an agent that registers nothing is configured.
        status.registrations.clear();
        set_condition(
            &mut status.conditions,
            Condition::new(
                CONDITION_REGISTRATION_APPLIED,
                ConditionStatus::True,
                "NilRegistration",
                "Registration of the addon agent is configured",
            ),
            at,
        );
        return;
    };
    status.registrations = vec![RegistrationConfig {
        type_: "CustomSigner".to_owned(),
        kube_client: None,
        custom_signer: Some(serde_json::json!({
            "signerName": addon_identity::MQTT_SIGNER,
            "subject": { "user": r.identity() },
        })),
    }];
    let condition = match &r.approved_sha256 {
        // A new request (a new agent key) waits for the operator even with an old hash bound.
        _ if pending => Condition::new(
            CONDITION_REGISTRATION_APPLIED,
            ConditionStatus::False,
            "WaitingForApproval",
            format!(
                "The cluster's agent asked for the add-on's MQTT identity: `ocm-edge addon approve \
                 --names {} --clusters {}` approves it",
                r.addon, r.cluster
            ),
        ),
        Some(_) => Condition::new(
            CONDITION_REGISTRATION_APPLIED,
            ConditionStatus::True,
            // OCM's reason once its agent's permissions are set (here: its topics).
            "SetPermissionApplied",
            format!(
                "The add-on's agent logs in as {} with the Secret {} in {}",
                r.identity(),
                addon_identity::secret_name(&r.addon),
                r.namespace
            ),
        ),
        None => Condition::new(
            CONDITION_REGISTRATION_APPLIED,
            ConditionStatus::False,
            "WaitingForAgent",
            "Waiting for the cluster's agent to ask for the add-on's MQTT identity",
        ),
    };
    set_condition(&mut status.conditions, condition, at);
}

impl HubCore {
    /// An edge agent asks to bind the password hash of `addon`'s MQTT identity on its
    /// `cluster` and to certify `public_key` for it (the intake checked its signature): bound
    /// at once (the approval policy is automatic) when the add-on is installed there and its
    /// template registers, and a client certificate of the cluster CA issued for the key
    /// unless the one it has serves; otherwise logged, counted and dropped.
    pub(crate) fn addon_registration(
        &self,
        request: AddOnRegistrationRequest<'_>,
        now: DateTime<Utc>,
    ) -> Change {
        let AddOnRegistrationRequest {
            cluster,
            addon,
            password_sha256: hash,
            public_key,
            nonce,
        } = request;
        let refuse = |why: &str| {
            tracing::warn!(%cluster, %addon, %why, "add-on registration refused");
            self.count(crate::core::counter::ADDON_REGISTRATIONS_REFUSED)
        };
        if !addon_identity::is_sha256_hex(hash) {
            return refuse("the password hash is not a SHA-256 in hex");
        }
        let key_ok = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, public_key)
            .is_ok_and(|k| k.len() == 32);
        if !public_key.is_empty() && !key_ok {
            return refuse("the public key is not an Ed25519 key in base64");
        }
        let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, cluster, addon);
        let Some(mca) = self.objects().get(&key).and_then(|o| o.as_cluster_addon()) else {
            return refuse("the add-on is not enabled on this cluster");
        };
        if mca.metadata.deletion_timestamp.is_some() {
            return refuse("the add-on is being removed from this cluster");
        }
        if mca.status.registrations.is_empty() {
            return refuse("the add-on's template asks for no registration");
        }
        if nonce != mca.metadata.uid {
            // Made for another enable of the add-on (or replayed): its password is not the one
            // the current work asks for.
            return refuse("the request is for another enable of the add-on (its nonce)");
        }
        let manual = self
            .addon(addon)
            .is_some_and(|a| approval(a) == Approval::Manual);
        if manual && bound_password(mca) != Some(hash) {
            // Held until an operator approves it (`ocm-edge addon approve`).
            let mut updated = mca.clone();
            let a = &mut updated.metadata.annotations;
            a.insert(PENDING_SHA256_ANNOTATION.to_owned(), hash.to_owned());
            a.insert(PENDING_KEY_ANNOTATION.to_owned(), public_key.to_owned());
            if updated == *mca {
                return Change::default();
            }
            tracing::info!(%cluster, %addon, "add-on MQTT identity asked for; waiting for an operator's approval (`ocm-edge addon approve`)");
            return Change {
                records: vec![Record::Object(Box::new(StoredObject::ClusterAddOn(
                    Box::new(updated),
                )))],
                outbound: vec![],
            };
        }
        self.bind_identity(mca, hash, public_key, now)
    }

    /// An operator approves the identity `mca`'s cluster agent asked for (its add-on's approval
    /// is Manual).
    ///
    /// # Errors
    /// Why there is nothing to approve.
    pub(crate) fn approve_identity(
        &self,
        mca: &ManagedClusterAddOn,
        now: DateTime<Utc>,
    ) -> Result<Change, String> {
        if mca.metadata.deletion_timestamp.is_some() {
            return Err(format!(
                "add-on {:?} is being removed from cluster {:?}",
                mca.metadata.name, mca.metadata.namespace
            ));
        }
        if !self.is_accepted(&mca.metadata.namespace) {
            return Err(format!(
                "cluster {:?} is not accepted",
                mca.metadata.namespace
            ));
        }
        if mca.status.registrations.is_empty() {
            return Err(format!(
                "add-on {:?}'s template asks for no registration",
                mca.metadata.name
            ));
        }
        let a = &mca.metadata.annotations;
        let Some(hash) = a.get(PENDING_SHA256_ANNOTATION) else {
            return Err(if bound_password(mca).is_some() {
                format!(
                    "add-on {:?} on cluster {:?} has its identity already",
                    mca.metadata.name, mca.metadata.namespace
                )
            } else {
                format!(
                    "the agent of cluster {:?} has not asked for add-on {:?}'s identity yet \
                     (its template must register, and the add-on be applied there)",
                    mca.metadata.namespace, mca.metadata.name
                )
            });
        };
        let key = a.get(PENDING_KEY_ANNOTATION).cloned().unwrap_or_default();
        let mut cleared = mca.clone();
        cleared
            .metadata
            .annotations
            .retain(|k, _| k != PENDING_SHA256_ANNOTATION && k != PENDING_KEY_ANNOTATION);
        tracing::info!(cluster = %mca.metadata.namespace, addon = %mca.metadata.name, "add-on MQTT identity approved");
        let mut change = self.bind_identity(&cleared, hash, &key, now);
        if !change
            .records
            .iter()
            .any(|r| matches!(r, Record::Object(o) if o.kind() == ObjectKind::ManagedClusterAddOn))
        {
            change
                .records
                .push(Record::Object(Box::new(StoredObject::ClusterAddOn(
                    Box::new(cleared),
                ))));
        }
        Ok(change)
    }

    /// Binds `hash` to `mca`'s identity and certifies `public_key` (unless its certificate
    /// serves).
    fn bind_identity(
        &self,
        mca: &ManagedClusterAddOn,
        hash: &str,
        public_key: &str,
        now: DateTime<Utc>,
    ) -> Change {
        let (cluster, addon) = (&mca.metadata.namespace, &mca.metadata.name);
        let identity = addon_identity::identity(addon, cluster);
        let mut updated = mca.clone();
        let mut change = Change::default();
        if bound_password(mca) != Some(hash) {
            tracing::info!(%cluster, %addon, %identity, "add-on MQTT identity bound");
            updated.metadata.annotations.insert(
                addon_identity::PASSWORD_SHA256_ANNOTATION.to_owned(),
                hash.to_owned(),
            );
        }
        let serves = certificate_of(mca).is_some_and(|c| c.serves(public_key, now));
        if !public_key.is_empty()
            && !serves
            && let Some(policy) = self.certificate_policy()
        {
            match policy
                .issuer
                .issue(&identity, public_key, policy.validity, now)
            {
                Ok(cert) => {
                    tracing::info!(%identity, serial = %cert.serial, not_after = %cert.not_after, "issued the add-on identity's certificate");
                    // The one it replaces stays valid until it ends (revoked with the identity).
                    let mut previous: Vec<_> = previous_certificates(mca)
                        .into_iter()
                        .filter(|p| p.not_after > now)
                        .collect();
                    if let Some(old) = issued_certificate(mca).filter(|o| o.not_after > now) {
                        previous.push(crate::registration::certificates::RevokedCertificate {
                            serial: old.serial,
                            revoked_at: now,
                            not_after: old.not_after,
                        });
                    }
                    match serde_json::to_string(&previous) {
                        Ok(json) if !previous.is_empty() => {
                            updated
                                .metadata
                                .annotations
                                .insert(PREVIOUS_CERTIFICATES_ANNOTATION.to_owned(), json);
                        }
                        _ => {
                            updated
                                .metadata
                                .annotations
                                .remove(PREVIOUS_CERTIFICATES_ANNOTATION);
                        }
                    }
                    // Kept with the other certificates issued outside cluster records: revoked
                    // (on the cluster CA's list) once no cluster add-on holds it any more.
                    let mut issued: Vec<_> = self
                        .removed_revoked()
                        .iter()
                        .filter(|(_, r)| r.not_after > now)
                        .cloned()
                        .collect();
                    issued.push((
                        identity.clone(),
                        crate::registration::certificates::RevokedCertificate {
                            serial: cert.serial.clone(),
                            revoked_at: cert.not_before,
                            not_after: cert.not_after,
                        },
                    ));
                    change.records.push(Record::RemovedRevoked(issued));
                    if let Ok(json) = serde_json::to_string(&cert) {
                        updated
                            .metadata
                            .annotations
                            .insert(CERTIFICATE_ANNOTATION.to_owned(), json);
                    }
                }
                Err(e) => {
                    tracing::error!(%identity, error = %e, "cannot issue the add-on identity's certificate")
                }
            }
        }
        if updated != *mca {
            change
                .records
                .push(Record::Object(Box::new(StoredObject::ClusterAddOn(
                    Box::new(updated),
                ))));
        }
        change
    }
}

/// Annotation of a ClusterManagementAddOn: how its agents' MQTT identities are approved,
/// `Automatic` (the default) or `Manual` (`ocm-edge addon approve`).
pub const APPROVAL_ANNOTATION: &str = "edge.open-cluster-management.io/registration-approval";

/// Annotations of a ManagedClusterAddOn (the hub's): the password hash and key its cluster's
/// agent asked for, waiting for an operator's approval.
pub const PENDING_SHA256_ANNOTATION: &str =
    "edge.open-cluster-management.io/mqtt-password-sha256-requested";
/// See [`PENDING_SHA256_ANNOTATION`].
pub const PENDING_KEY_ANNOTATION: &str =
    "edge.open-cluster-management.io/mqtt-public-key-requested";

/// How an add-on's identities are approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approval {
    Automatic,
    Manual,
}

/// The approval of `addon` (an unknown value is refused at apply, read as Automatic here).
pub(crate) fn approval(addon: &ClusterManagementAddOn) -> Approval {
    match addon
        .metadata
        .annotations
        .get(APPROVAL_ANNOTATION)
        .map(String::as_str)
    {
        Some("Manual") => Approval::Manual,
        _ => Approval::Automatic,
    }
}

impl HubCore {
    /// `cluster`'s add-ons without their identities (bound hash, certificate, pending request):
    /// for a cluster denied, or accepted again (maybe with a new key).
    pub(crate) fn unbind_cluster_addons(&self, cluster: &str) -> Vec<Record> {
        self.objects()
            .in_namespace(ObjectKind::ManagedClusterAddOn, cluster)
            .filter_map(|o| o.as_cluster_addon())
            .filter_map(unbound)
            .map(|m| Record::Object(Box::new(StoredObject::ClusterAddOn(Box::new(m)))))
            .collect()
    }
}

/// `mca` without its identity, if it has one.
fn unbound(mca: &ManagedClusterAddOn) -> Option<ManagedClusterAddOn> {
    let mut m = mca.clone();
    m.metadata.annotations.retain(|k, _| {
        ![
            addon_identity::PASSWORD_SHA256_ANNOTATION,
            CERTIFICATE_ANNOTATION,
            PREVIOUS_CERTIFICATES_ANNOTATION,
            PENDING_SHA256_ANNOTATION,
            PENDING_KEY_ANNOTATION,
        ]
        .contains(&k.as_str())
    });
    (m != *mca).then_some(m)
}

/// An edge agent's request to bind an add-on identity ([`HubCore::addon_registration`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AddOnRegistrationRequest<'a> {
    pub cluster: &'a str,
    pub addon: &'a str,
    pub password_sha256: &'a str,
    /// Empty: no certificate asked for.
    pub public_key: &'a str,
    /// The registration's nonce the agent derived them for (the ManagedClusterAddOn's uid).
    pub nonce: &'a str,
}

/// Annotation of a ManagedClusterAddOn: the client certificate the hub issued to its MQTT
/// identity (JSON of [`ClusterCertificate`](crate::registration::certificates::ClusterCertificate)).
pub const CERTIFICATE_ANNOTATION: &str = "edge.open-cluster-management.io/mqtt-certificate";

/// Annotation of a ManagedClusterAddOn (the hub's): the certificates its identity was renewed
/// from (serials and ends), held until they end, revoked with the identity.
pub const PREVIOUS_CERTIFICATES_ANNOTATION: &str =
    "edge.open-cluster-management.io/mqtt-previous-certificates";

/// The certificate the hub issued to `mca`'s MQTT identity, as it keeps it.
fn issued_certificate(
    mca: &ManagedClusterAddOn,
) -> Option<crate::registration::certificates::ClusterCertificate> {
    serde_json::from_str(mca.metadata.annotations.get(CERTIFICATE_ANNOTATION)?).ok()
}

/// The certificate the hub issued to `mca`'s MQTT identity, as its work carries it.
pub(crate) fn certificate_of(
    mca: &ManagedClusterAddOn,
) -> Option<addon_identity::IssuedCertificate> {
    let cert = issued_certificate(mca)?;
    Some(addon_identity::IssuedCertificate {
        pem: cert.pem,
        key: cert.agent_key,
        not_before: cert.not_before,
        not_after: cert.not_after,
    })
}

/// The serials of the certificates `mca`'s MQTT identity holds: its current one, and those it
/// was renewed from until they end (an add-on may still use one until it reads its Secret again).
pub(crate) fn held_serials(mca: &ManagedClusterAddOn) -> Vec<String> {
    issued_certificate(mca)
        .map(|c| c.serial)
        .into_iter()
        .chain(previous_certificates(mca).into_iter().map(|p| p.serial))
        .collect()
}

/// The certificates `mca`'s identity was renewed from, not yet ended.
fn previous_certificates(
    mca: &ManagedClusterAddOn,
) -> Vec<crate::registration::certificates::RevokedCertificate> {
    mca.metadata
        .annotations
        .get(PREVIOUS_CERTIFICATES_ANNOTATION)
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}

/// One cluster's add-on, resolved: its template and config, ready to render.
struct Resolved<'a> {
    template: &'a AddOnTemplate,
    config: Option<&'a AddOnDeploymentConfig>,
    install_namespace: String,
    references: Vec<ConfigReference>,
}

impl HubCore {
    fn addon(&self, name: &str) -> Option<&ClusterManagementAddOn> {
        match self.objects().get(&ObjectKey::new(
            ObjectKind::ClusterManagementAddOn,
            "",
            name,
        )) {
            Some(StoredObject::AddOn(a)) => Some(a),
            _ => None,
        }
    }

    fn addon_template(&self, name: &str) -> Option<&AddOnTemplate> {
        match self
            .objects()
            .get(&ObjectKey::new(ObjectKind::AddOnTemplate, "", name))
        {
            Some(StoredObject::AddOnTemplate(t)) => Some(t),
            _ => None,
        }
    }

    fn addon_config(&self, namespace: &str, name: &str) -> Option<&AddOnDeploymentConfig> {
        match self.objects().get(&ObjectKey::new(
            ObjectKind::AddOnDeploymentConfig,
            namespace,
            name,
        )) {
            Some(StoredObject::AddOnConfig(c)) => Some(c),
            _ => None,
        }
    }

    /// Every cluster's add-ons.
    pub fn cluster_addons(&self) -> impl Iterator<Item = &ManagedClusterAddOn> {
        self.objects()
            .of_kind(ObjectKind::ManagedClusterAddOn)
            .filter_map(|o| o.as_cluster_addon())
    }

    /// Every add-on.
    pub fn addons(&self) -> impl Iterator<Item = &ClusterManagementAddOn> {
        self.objects()
            .of_kind(ObjectKind::ClusterManagementAddOn)
            .filter_map(|o| o.as_addon())
    }

    /// The clusters placement `namespace/name` decided on, in decision order (none when it does
    /// not exist).
    pub(crate) fn placement_clusters(&self, namespace: &str, name: &str) -> Vec<String> {
        self.placement_decisions(namespace, name)
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.cluster)
            .collect()
    }

    /// Whether a cluster's add-on may be disabled by hand: not one its add-on's placements
    /// installed (the next pass would install it again).
    ///
    /// # Errors
    /// [`ObjectError::Invalid`] saying which placement to change.
    pub fn check_disable(&self, mca: &ManagedClusterAddOn) -> Result<(), ObjectError> {
        if !mca
            .metadata
            .annotations
            .contains_key(INSTALLED_BY_PLACEMENT_ANNOTATION)
        {
            return Ok(());
        }
        let placements = self
            .addon(&mca.metadata.name)
            .map(|a| {
                a.spec
                    .install_strategy
                    .placements
                    .iter()
                    .map(|p| format!("{}/{}", p.namespace, p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        Err(ObjectError::Invalid(
            ObjectKey::new(
                ObjectKind::ManagedClusterAddOn,
                mca.metadata.namespace.clone(),
                mca.metadata.name.clone(),
            ),
            format!(
                "it was installed by the add-on's placements ({placements}), which would install \
                 it again: change a placement so that it no longer selects the cluster, or the \
                 add-on's installStrategy"
            ),
        ))
    }

    /// Whether the template or config `key` is used by no add-on (deleting it would leave
    /// them unconfigured, and their hooks unable to run).
    ///
    /// # Errors
    /// [`ObjectError::Invalid`] naming the add-ons that use it.
    pub fn check_config_unused(&self, key: &ObjectKey) -> Result<(), ObjectError> {
        let uses = config_matcher(key);
        let mut users: BTreeSet<String> = self.addons_using(key).into_iter().collect();
        users.extend(
            self.cluster_addons()
                .filter(|m| m.spec.configs.iter().any(&uses))
                .map(|m| format!("{}/{}", m.metadata.namespace, m.metadata.name)),
        );
        if users.is_empty() {
            return Ok(());
        }
        Err(ObjectError::Invalid(
            key.clone(),
            format!(
                "it is in use by {}: remove it from their configs first",
                users.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ))
    }

    /// The add-ons whose default or placement configs name the template or config `key` (they
    /// reach every cluster they install on).
    pub fn addons_using(&self, key: &ObjectKey) -> Vec<String> {
        let uses = config_matcher(key);
        self.addons()
            .filter(|a| {
                a.spec.default_configs.iter().any(&uses)
                    || a.spec
                        .install_strategy
                        .placements
                        .iter()
                        .any(|p| p.configs.iter().any(&uses))
            })
            .map(|a| a.metadata.name.clone())
            .collect()
    }

    /// The clusters the placements of `addons`' install strategies select.
    fn placed(&self, addons: &[ClusterManagementAddOn]) -> Placed {
        let mut placed = Placed::new();
        for p in addons
            .iter()
            .flat_map(|a| a.spec.install_strategy.placements.iter())
        {
            placed
                .entry((p.namespace.clone(), p.name.clone()))
                .or_insert_with(|| {
                    self.placement_clusters(&p.namespace, &p.name)
                        .into_iter()
                        .collect()
                });
        }
        placed
    }

    /// Checks an add-on object before it is applied (see the module).
    ///
    /// # Errors
    /// [`ObjectError::Invalid`] saying what is wrong and how to fix it.
    pub fn check_addon_object(&self, object: &StoredObject) -> Result<(), ObjectError> {
        let invalid = |message: String| Err(ObjectError::Invalid(object.key(), message));
        match object {
            StoredObject::AddOn(a) => {
                let mode = a.metadata.annotations.get(health::HEALTH_CHECK_ANNOTATION);
                if health::Mode::parse(mode.map(String::as_str)).is_none() {
                    return invalid(format!(
                        "annotation {} {:?} is none of {}",
                        health::HEALTH_CHECK_ANNOTATION,
                        mode.map(String::as_str).unwrap_or_default(),
                        health::MODES
                    ));
                }
                if let Some(v) = a.metadata.annotations.get(APPROVAL_ANNOTATION)
                    && v != "Automatic"
                    && v != "Manual"
                {
                    return invalid(format!(
                        "annotation {APPROVAL_ANNOTATION} {v:?} is neither Automatic nor Manual"
                    ));
                }
                let strategy = &a.spec.install_strategy;
                if strategy.type_ != INSTALL_MANUAL && strategy.type_ != INSTALL_PLACEMENTS {
                    return invalid(format!(
                        "installStrategy.type {:?} is neither {INSTALL_MANUAL} nor {INSTALL_PLACEMENTS}",
                        strategy.type_
                    ));
                }
                if strategy.type_ == INSTALL_PLACEMENTS && strategy.placements.is_empty() {
                    return invalid(
                        "installStrategy Placements names no placement (add installStrategy.placements)"
                            .into(),
                    );
                }
                for p in &strategy.placements {
                    if p.rollout_strategy.failure_strategy.is_some() {
                        return invalid(format!(
                            "placement {}/{}'s rolloutStrategy: failureStrategy is for \
                             ManifestWorkReplicaSets (an add-on's rollout stops on failures; \
                             remove it)",
                            p.namespace, p.name
                        ));
                    }
                    if let Err(e) = rollout_clusters(&p.rollout_strategy, &[], &[], Utc::now()) {
                        return invalid(format!(
                            "placement {}/{}'s rolloutStrategy: {e}",
                            p.namespace, p.name
                        ));
                    }
                }
                let mut layers = vec![a.spec.default_configs.as_slice()];
                for p in &strategy.placements {
                    layers.push(p.configs.as_slice());
                }
                for config in layers.iter().flat_map(|l| l.iter()) {
                    self.check_config(config).or_else(invalid)?;
                }
                // Each set of configs a cluster may end up with must give the template's
                // variables.
                for (placement, configs) in config_sets(a) {
                    self.check_variables(&configs)
                        .map_err(|e| match placement {
                            Some(p) => format!("for the clusters of placement {p}: {e}"),
                            None => e,
                        })
                        .or_else(invalid)?;
                }
                Ok(())
            }
            StoredObject::ClusterAddOn(mca) => {
                let cluster = &mca.metadata.namespace;
                if self.cluster(cluster).is_none() {
                    return invalid(format!(
                        "its namespace {cluster:?} is no cluster the hub knows: a \
                         ManagedClusterAddOn lives in its cluster's namespace (`ocm-edge cluster list`)"
                    ));
                }
                let Some(addon) = self.addon(&mca.metadata.name) else {
                    return invalid(format!(
                        "there is no add-on {:?}: apply its ClusterManagementAddOn first \
                         (`ocm-edge addon list` shows the add-ons)",
                        mca.metadata.name
                    ));
                };
                for config in &mca.spec.configs {
                    self.check_config(config).or_else(invalid)?;
                }
                let configs = resolve(&[&mca.spec.configs, &addon.spec.default_configs]);
                self.check_variables(&configs).or_else(invalid)
            }
            StoredObject::AddOnTemplate(t) => {
                let name = &t.spec.addon_name;
                if ocm_edge_schemas::validate::validate_cluster_name(name).is_err() {
                    return invalid(format!(
                        "spec.addonName {name:?} is not a DNS label ([a-z0-9-], at most 63 \
                         characters, a letter or digit at each end)"
                    ));
                }
                for (i, m) in t.spec.agent_spec.workload.manifests.iter().enumerate() {
                    if m.kind().is_none() || m.api_version().is_none() {
                        return invalid(format!(
                            "manifest {i} of spec.agentSpec has no kind or apiVersion"
                        ));
                    }
                }
                // Its manifest configs go to every agent that installs the add-on, as a work's:
                // checked the same way (CEL, JSONPaths, JSON Pointers, no jq).
                ocm_edge_schemas::validate::validate_manifest_configs(
                    &t.spec.agent_spec.manifest_configs,
                )
                .map_err(|e| format!("spec.agentSpec: {e}"))
                .or_else(invalid)?;
                // The add-ons already using it must still render.
                for addon in self.addons().filter(|a| {
                    a.spec
                        .default_configs
                        .iter()
                        .any(|c| c.is(ADDON_TEMPLATES) && c.name == t.metadata.name)
                }) {
                    let configs = resolve(&[&addon.spec.default_configs]);
                    let given = self.given_variables(&configs);
                    let missing: Vec<String> = render::variables_in(&t.spec.agent_spec)
                        .into_iter()
                        .filter(|v| !given.contains(v))
                        .collect();
                    if !missing.is_empty() {
                        return invalid(format!(
                            "add-on {:?} uses this template and gives no {}",
                            addon.metadata.name,
                            missing.join(", ")
                        ));
                    }
                }
                Ok(())
            }
            StoredObject::AddOnConfig(c) => {
                for r in &c.spec.resource_requirements {
                    r.validate()
                        .map_err(|e| format!("resourceRequirements: {e}"))
                        .or_else(invalid)?;
                }
                for v in &c.spec.customized_variables {
                    if !render::is_variable_name(&v.name) {
                        return invalid(format!(
                            "customizedVariables: {:?} is no variable name (a letter or _, then \
                             letters, digits or _)",
                            v.name
                        ));
                    }
                }
                // The add-ons (and clusters' add-ons) already using it must still render.
                let uses = |configs: &BTreeMap<(String, String), AddOnConfig>| {
                    configs.values().any(|r| {
                        r.is(ADDON_DEPLOYMENT_CONFIGS)
                            && r.namespace == c.metadata.namespace
                            && r.name == c.metadata.name
                    })
                };
                for a in self.addons() {
                    for (placement, configs) in config_sets(a) {
                        if uses(&configs)
                            && let Err(e) = self.check_variables_with(&configs, Some(c))
                        {
                            let whose = match placement {
                                Some(p) => format!(
                                    "add-on {:?} (the clusters of placement {p})",
                                    a.metadata.name
                                ),
                                None => format!("add-on {:?}", a.metadata.name),
                            };
                            return invalid(format!("{whose} uses this config, and then {e}"));
                        }
                    }
                }
                for mca in self.cluster_addons() {
                    let Some(a) = self.addon(&mca.metadata.name) else {
                        continue;
                    };
                    let configs = resolve(&[&mca.spec.configs, &a.spec.default_configs]);
                    if !mca.spec.configs.is_empty()
                        && uses(&configs)
                        && let Err(e) = self.check_variables_with(&configs, Some(c))
                    {
                        return invalid(format!(
                            "add-on {:?} on cluster {:?} uses this config, and then {e}",
                            mca.metadata.name, mca.metadata.namespace
                        ));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether `config` names an object the hub holds.
    fn check_config(&self, config: &AddOnConfig) -> Result<(), String> {
        let exists = if config.is(ADDON_TEMPLATES) {
            self.addon_template(&config.name).is_some()
        } else if config.is(ADDON_DEPLOYMENT_CONFIGS) {
            self.addon_config(&config.namespace, &config.name).is_some()
        } else {
            return Err(format!(
                "config {}/{} of group {:?}: ocm-edge knows the {ADDON_GROUP} configs \
                 {ADDON_TEMPLATES} and {ADDON_DEPLOYMENT_CONFIGS}",
                config.resource, config.name, config.group
            ));
        };
        if exists {
            return Ok(());
        }
        let at = if config.namespace.is_empty() {
            config.name.clone()
        } else {
            format!("{}/{}", config.namespace, config.name)
        };
        Err(format!(
            "its config {} {at} does not exist: apply it first (`ocm-edge apply -f` takes \
             templates and configs before the add-ons that use them)",
            config.resource
        ))
    }

    /// The variables `configs` give (the built-in ones and their AddOnDeploymentConfig's).
    fn given_variables(
        &self,
        configs: &BTreeMap<(String, String), AddOnConfig>,
    ) -> BTreeSet<String> {
        self.given_variables_with(configs, None)
    }

    /// [`Self::given_variables`], with `applied` standing for the stored config of its name.
    fn given_variables_with(
        &self,
        configs: &BTreeMap<(String, String), AddOnConfig>,
        applied: Option<&AddOnDeploymentConfig>,
    ) -> BTreeSet<String> {
        let mut given: BTreeSet<String> =
            render::BUILT_IN.iter().map(|v| (*v).to_owned()).collect();
        if let Some(c) = configs
            .values()
            .find(|c| c.is(ADDON_DEPLOYMENT_CONFIGS))
            .and_then(|c| match applied {
                Some(a) if a.metadata.namespace == c.namespace && a.metadata.name == c.name => {
                    Some(a)
                }
                _ => self.addon_config(&c.namespace, &c.name),
            })
        {
            given.extend(c.spec.customized_variables.iter().map(|v| v.name.clone()));
        }
        given
    }

    /// Whether the template of `configs` (if any) gets every variable it uses.
    fn check_variables(
        &self,
        configs: &BTreeMap<(String, String), AddOnConfig>,
    ) -> Result<(), String> {
        self.check_variables_with(configs, None)
    }

    /// [`Self::check_variables`], with `applied` standing for the stored config of its name.
    fn check_variables_with(
        &self,
        configs: &BTreeMap<(String, String), AddOnConfig>,
        applied: Option<&AddOnDeploymentConfig>,
    ) -> Result<(), String> {
        let Some(template) = configs
            .values()
            .find(|c| c.is(ADDON_TEMPLATES))
            .and_then(|c| self.addon_template(&c.name))
        else {
            return Ok(());
        };
        let given = self.given_variables_with(configs, applied);
        let missing: Vec<String> = render::variables_in(&template.spec.agent_spec)
            .into_iter()
            .filter(|v| !given.contains(v))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(format!(
            "template {:?} uses {} that its configs do not give (built in: {}; add them to an \
             AddOnDeploymentConfig's customizedVariables)",
            template.metadata.name,
            missing
                .iter()
                .map(|v| format!("{{{{{v}}}}}"))
                .collect::<Vec<_>>()
                .join(", "),
            render::BUILT_IN.join(", ")
        ))
    }

    /// Installs, renders and reports add-ons (called with the fleet's reconcile): all of them
    /// when what they are rendered from changed (`stale`), else only the conditions of the
    /// add-ons of the `dirty` clusters (their works' statuses or availability changed).
    /// Returns the change and, from the rollouts, when to look at every add-on again.
    pub(crate) fn reconcile_addons(
        &self,
        stale: bool,
        dirty: &BTreeSet<String>,
        now: DateTime<Utc>,
    ) -> (Change, Option<DateTime<Utc>>) {
        let mut change = Change::default();
        if stale {
            if self.addons().next().is_none() && self.cluster_addons().next().is_none() {
                return (change, None);
            }
            let addons: Vec<ClusterManagementAddOn> = self.addons().cloned().collect();
            let placed = self.placed(&addons);
            change.extend(self.install_by_placement(&placed, now));
            // Those the install strategy just removed (or started removing) are not written
            // again.
            let removed: BTreeSet<ObjectKey> = change
                .records
                .iter()
                .filter_map(|r| match r {
                    Record::ForgetObject(key) => Some(key.clone()),
                    Record::Object(o) if o.kind() == ObjectKind::ManagedClusterAddOn => {
                        Some(o.key())
                    }
                    _ => None,
                })
                .collect();
            let (gate, requeue) = self.rollout_gate(&placed, now);
            for mca in self.cluster_addons() {
                let object_key = ObjectKey::new(
                    ObjectKind::ManagedClusterAddOn,
                    mca.metadata.namespace.clone(),
                    mca.metadata.name.clone(),
                );
                if removed.contains(&object_key) {
                    continue;
                }
                let key = (mca.metadata.namespace.clone(), mca.metadata.name.clone());
                let may_write = gate.get(&key).copied().unwrap_or(true);
                change.extend(self.reconcile_cluster_addon(mca, may_write, &placed, now));
            }
            // Each placement's progression, from the clusters' add-ons as this pass leaves them.
            let written: BTreeMap<(String, String), &ManagedClusterAddOn> = change
                .records
                .iter()
                .filter_map(|r| match r {
                    Record::Object(o) => o.as_cluster_addon(),
                    _ => None,
                })
                .map(|m| ((m.metadata.namespace.clone(), m.metadata.name.clone()), m))
                .collect();
            let mut progressions = Vec::new();
            for addon in self.addons() {
                if let Some(updated) = self.install_progressions(addon, &written, now) {
                    progressions.push(Record::Object(Box::new(StoredObject::AddOn(Box::new(
                        updated,
                    )))));
                }
            }
            change.records.extend(progressions);
            // A Lease add-on goes unavailable when its Lease goes stale: look again then.
            let stale_leases = self
                .cluster_addons()
                .filter(|m| {
                    self.addon(&m.metadata.name)
                        .is_some_and(|a| health_mode(a) == health::Mode::Lease)
                })
                .filter_map(|m| {
                    let w = self.work(&WorkKey::new(
                        m.metadata.namespace.clone(),
                        work_name(&m.metadata.name),
                    ))?;
                    health::lease_deadline(&w.spec, w.status.as_ref().map(|s| &s.resource_status))
                })
                .filter(|deadline| *deadline > now)
                .min();
            let hook_deadlines = self
                .cluster_addons()
                .filter_map(|m| m.metadata.deletion_timestamp)
                .map(|t| t.as_datetime() + HOOK_TIMEOUT)
                .filter(|t| *t > now)
                .min();
            let requeue = [requeue, stale_leases, hook_deadlines]
                .into_iter()
                .flatten()
                .min();
            return (change, requeue);
        }
        for cluster in dirty {
            for mca in self
                .objects()
                .in_namespace(ObjectKind::ManagedClusterAddOn, cluster)
                .filter_map(|o| o.as_cluster_addon())
            {
                if mca.metadata.deletion_timestamp.is_some() {
                    // Its hooks' work reported: it may be done.
                    change.extend(self.finish_removal(mca, now));
                    continue;
                }
                let mut status = mca.status.clone();
                let work_key = WorkKey::new(cluster.clone(), work_name(&mca.metadata.name));
                let mode = self
                    .addon(&mca.metadata.name)
                    .map_or(health::Mode::Work, health_mode);
                self.work_conditions(
                    &mut status.conditions,
                    cluster,
                    &work_key,
                    None,
                    mode,
                    time(now),
                );
                // A cluster taking the current configs learns from its work how it went (one
                // waiting for the rollout, or to remove an old work, is the full pass's).
                let taking = status.conditions.iter().any(|c| {
                    c.type_ == CONDITION_PROGRESSING
                        && matches!(c.reason.as_str(), "Progressing" | "Failed" | "Completed")
                });
                if taking
                    && self.cluster(cluster).is_some_and(|c| c.is_schedulable())
                    && self.work(&work_key).is_some_and(|w| w.deleting.is_none())
                    && let Some(c) = self.carried_progressing(&work_key)
                {
                    if c.reason == "Completed" {
                        // Applied: its configs are the applied ones now.
                        for r in &mut status.config_references {
                            r.last_applied_config = r.desired_config.clone();
                        }
                    }
                    set_condition(&mut status.conditions, c, time(now));
                }
                if status != mca.status {
                    let mut updated = mca.clone();
                    updated.status = status;
                    change
                        .records
                        .push(Record::Object(Box::new(StoredObject::ClusterAddOn(
                            Box::new(updated),
                        ))));
                }
            }
        }
        (change, None)
    }

    /// The Placements install strategy: a ManagedClusterAddOn on every selected cluster that
    /// is accepted and not being removed, and those it created removed where no longer selected.
    fn install_by_placement(&self, placed: &Placed, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
        for addon in self.addons() {
            let strategy = &addon.spec.install_strategy;
            if strategy.type_ != INSTALL_PLACEMENTS {
                continue;
            }
            for p in &strategy.placements {
                let selected = placed.get(&(p.namespace.clone(), p.name.clone()));
                for cluster in selected.into_iter().flatten() {
                    if self.cluster(cluster).is_some_and(|c| c.is_schedulable()) {
                        wanted.insert((cluster.clone(), addon.metadata.name.clone()));
                    }
                }
            }
        }
        for (cluster, addon) in &wanted {
            let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, cluster, addon);
            if self.objects().get(&key).is_some() {
                continue;
            }
            let mut metadata = ObjectMeta::namespaced(cluster.clone(), addon.clone());
            metadata.annotations.insert(
                INSTALLED_BY_PLACEMENT_ANNOTATION.to_owned(),
                "true".to_owned(),
            );
            metadata.uid = uuid::Uuid::new_v4().to_string();
            metadata.creation_timestamp = Some(time(now));
            metadata.generation = 1;
            let mca = ManagedClusterAddOn {
                metadata,
                ..ManagedClusterAddOn::default()
            };
            change
                .records
                .push(Record::Object(Box::new(StoredObject::ClusterAddOn(
                    Box::new(mca),
                ))));
        }
        for mca in self.cluster_addons() {
            let placed = mca
                .metadata
                .annotations
                .contains_key(INSTALLED_BY_PLACEMENT_ANNOTATION);
            let still =
                wanted.contains(&(mca.metadata.namespace.clone(), mca.metadata.name.clone()));
            if placed && !still {
                change.extend(self.disable_addon(mca, now));
            }
        }
        change
    }

    /// Removes a cluster's add-on and the work of its agent.
    ///
    /// A template with pre-delete hooks runs them first: they go to the cluster as the work
    /// `addon-<name>-pre-delete`, the cluster's add-on is marked deleting, and
    /// [`HubCore::finish_removal`] removes everything once they finished. A cluster that cannot
    /// run them (unreachable, being removed) skips them.
    pub(crate) fn disable_addon(&self, mca: &ManagedClusterAddOn, now: DateTime<Utc>) -> Change {
        let cluster = &mca.metadata.namespace;
        if mca.metadata.deletion_timestamp.is_some() {
            // Its hooks are running.
            return Change::default();
        }
        let main = WorkKey::new(cluster.clone(), work_name(&mca.metadata.name));
        let can_run = self.cluster(cluster).is_some_and(|c| c.is_schedulable())
            && self.reachable(cluster)
            && self.work(&main).is_some_and(|w| w.deleting.is_none());
        let hooks = self
            .addon(&mca.metadata.name)
            .and_then(|a| {
                self.desired(a, mca, &self.placed(std::slice::from_ref(a)))
                    .ok()
                    .map(|(resolved, _, hooks)| (resolved, hooks))
            })
            .filter(|(_, hooks)| !hooks.is_empty() && can_run);
        if let Some((resolved, hooks)) = hooks {
            let mut spec = ManifestWorkSpec::default();
            spec.workload.manifests = hooks;
            render::prepare_cluster(&mut spec, &resolved.install_namespace);
            health::ask_well_known(&mut spec, |kind| kind == "Job" || kind == "Pod");
            let input = WorkInput {
                name: pre_delete_work_name(&mca.metadata.name),
                labels: [(LABEL_ADDON_NAME.to_owned(), mca.metadata.name.clone())].into(),
                annotations: Default::default(),
                spec: Arc::new(spec),
            };
            if let Ok((write, _)) =
                self.write_works(&input, std::slice::from_ref(cluster), true, now)
            {
                let mut deleting = mca.clone();
                deleting.metadata.deletion_timestamp = Some(time(now));
                set_condition(
                    &mut deleting.status.conditions,
                    Condition::new(
                        CONDITION_HOOK_COMPLETED,
                        ConditionStatus::False,
                        "HookManifestIsNotCompleted",
                        "The pre-delete hooks run before the add-on is removed (at most 10 minutes)",
                    ),
                    time(now),
                );
                let mut change = write;
                change
                    .records
                    .push(Record::Object(Box::new(StoredObject::ClusterAddOn(
                        Box::new(deleting),
                    ))));
                return change;
            }
        }
        self.remove_cluster_addon(mca, now)
    }

    /// A cluster's add-on being deleted: removed once its pre-delete hooks finished, or at once
    /// when its cluster can no longer run them.
    fn finish_removal(&self, mca: &ManagedClusterAddOn, now: DateTime<Utc>) -> Change {
        let cluster = &mca.metadata.namespace;
        let hook = self.work(&WorkKey::new(
            cluster.clone(),
            pre_delete_work_name(&mca.metadata.name),
        ));
        let done = hook.is_none_or(|w| {
            health::hooks_done(&w.spec, w.status.as_ref().map(|s| &s.resource_status))
        });
        let stuck = !self.cluster(cluster).is_some_and(|c| c.is_schedulable());
        let timed_out = mca
            .metadata
            .deletion_timestamp
            .is_some_and(|t| now > t.as_datetime() + HOOK_TIMEOUT);
        if timed_out && !done {
            tracing::warn!(%cluster, addon = %mca.metadata.name, "the add-on's pre-delete hooks did not finish in time; removing it anyway");
        }
        if done || stuck || timed_out {
            tracing::info!(%cluster, addon = %mca.metadata.name, done, "removing the cluster's add-on");
            return self.remove_cluster_addon(mca, now);
        }
        Change::default()
    }

    /// Forgets a cluster's add-on and deletes its works.
    fn remove_cluster_addon(&self, mca: &ManagedClusterAddOn, now: DateTime<Utc>) -> Change {
        let cluster = &mca.metadata.namespace;
        let mut change = Change {
            records: vec![Record::ForgetObject(ObjectKey::new(
                ObjectKind::ManagedClusterAddOn,
                cluster.clone(),
                mca.metadata.name.clone(),
            ))],
            outbound: vec![],
        };
        for name in [
            work_name(&mca.metadata.name),
            pre_delete_work_name(&mca.metadata.name),
        ] {
            let key = WorkKey::new(cluster.clone(), name);
            if self.work(&key).is_some_and(|w| w.deleting.is_none())
                && let Ok(delete) = self.delete_work(&key, now)
            {
                change.extend(delete);
            }
        }
        change
    }

    /// Resolves one cluster's add-on: its template, config and install namespace.
    fn resolve_cluster_addon<'a>(
        &'a self,
        addon: &'a ClusterManagementAddOn,
        mca: &'a ManagedClusterAddOn,
        placed: &Placed,
    ) -> Result<Resolved<'a>, String> {
        let cluster = &mca.metadata.namespace;
        let placement_configs: &[AddOnConfig] =
            owning_placement(addon, cluster, placed).map_or(&[], |p| p.configs.as_slice());
        let configs = resolve(&[
            &mca.spec.configs,
            placement_configs,
            &addon.spec.default_configs,
        ]);
        let mut references = Vec::new();
        let mut template = None;
        let mut config = None;
        for c in configs.values() {
            self.check_config(c)?;
            let (generation, hash) = if c.is(ADDON_TEMPLATES) {
                let t = self.addon_template(&c.name).ok_or("template gone")?;
                template = Some(t);
                (t.metadata.generation, spec_hash(&t.spec))
            } else {
                let d = self
                    .addon_config(&c.namespace, &c.name)
                    .ok_or("config gone")?;
                config = Some(d);
                (d.metadata.generation, spec_hash(&d.spec))
            };
            let desired = ConfigSpecHash {
                namespace: c.namespace.clone(),
                name: c.name.clone(),
                spec_hash: hash,
            };
            references.push(ConfigReference {
                group: c.group.clone(),
                resource: c.resource.clone(),
                last_observed_generation: generation,
                desired_config: Some(desired.clone()),
                last_applied_config: Some(desired),
            });
        }
        let Some(template) = template else {
            return Err(format!(
                "add-on {:?} has no AddOnTemplate among its configs: ocm-edge installs template \
                 add-ons (give one in the ClusterManagementAddOn's defaultConfigs)",
                addon.metadata.name
            ));
        };
        let install_namespace = config
            .map(|c| c.spec.agent_install_namespace.clone())
            .filter(|n| !n.is_empty())
            .or_else(|| {
                mca.metadata
                    .annotations
                    .get(INSTALL_NAMESPACE_ANNOTATION)
                    .cloned()
            })
            .unwrap_or_else(|| DEFAULT_INSTALL_NAMESPACE.to_owned());
        Ok(Resolved {
            template,
            config,
            install_namespace,
            references,
        })
    }

    /// One cluster's add-on as it should be now: resolved, rendered and prepared for the
    /// cluster.
    fn desired<'a>(
        &'a self,
        addon: &'a ClusterManagementAddOn,
        mca: &'a ManagedClusterAddOn,
        placed: &Placed,
    ) -> Result<(Resolved<'a>, ManifestWorkSpec, Vec<Manifest>), String> {
        let cluster = &mca.metadata.namespace;
        let resolved = self.resolve_cluster_addon(addon, mca, placed)?;
        let config = resolved.config.map(|c| &c.spec);
        let vars = render::variables(cluster, &resolved.install_namespace, config);
        let mut spec = render::render(&resolved.template.spec.agent_spec, &vars, config)?;
        // OCM's decorators: its preset values as environment variables, and objects moved into
        // the install namespace a config sets.
        let configured = config
            .map(|c| c.agent_install_namespace.as_str())
            .filter(|n| !n.is_empty());
        let mut env = Vec::new();
        if !resolved.template.spec.registration.is_empty() {
            env.push((
                render::HUB_KUBECONFIG.to_owned(),
                render::HUB_KUBECONFIG_PATH.to_owned(),
            ));
        }
        env.push((render::CLUSTER_NAME.to_owned(), cluster.clone()));
        if let Some(ns) = configured {
            env.push((render::INSTALL_NAMESPACE.to_owned(), ns.to_owned()));
        }
        render::decorate(&mut spec, &env, configured);
        let hooks = render::split_pre_delete(&mut spec);
        render::prepare_cluster(&mut spec, &resolved.install_namespace);
        health::ask_feedback(
            &mut spec,
            health_mode(addon),
            &addon.metadata.name,
            &resolved.install_namespace,
        );
        Ok((resolved, spec, hooks))
    }

    /// Which clusters the rollouts of the Placements add-ons let take their new agent now
    /// (`(cluster, add-on)`: true), by each placement's `rolloutStrategy` over its decision
    /// groups, as ManifestWorkReplicaSets roll out; and when to look again. Clusters of no
    /// placement strategy are not in it (they take a change at once).
    fn rollout_gate(
        &self,
        placed: &Placed,
        now: DateTime<Utc>,
    ) -> (RolloutGate, Option<DateTime<Utc>>) {
        let mut gate = RolloutGate::new();
        let mut requeue: Option<DateTime<Utc>> = None;
        for addon in self.addons() {
            if addon.spec.install_strategy.type_ != INSTALL_PLACEMENTS {
                continue;
            }
            let name = &addon.metadata.name;
            for p in &addon.spec.install_strategy.placements {
                let decided = self
                    .placement_decisions(&p.namespace, &p.name)
                    .unwrap_or_default();
                let mut existing = Vec::new();
                for d in &decided {
                    let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, &d.cluster, name);
                    let Some(mca) = self.objects().get(&key).and_then(|o| o.as_cluster_addon())
                    else {
                        continue;
                    };
                    let Some(work) = self.work(&WorkKey::new(d.cluster.clone(), work_name(name)))
                    else {
                        continue;
                    };
                    let current = self
                        .desired(addon, mca, placed)
                        .is_ok_and(|(_, spec, _)| *work.spec == spec);
                    let cluster_work = ClusterWork {
                        template: if current {
                            TemplateState::Current {
                                sent_at: sent_at(mca).unwrap_or(work.created.as_datetime()),
                            }
                        } else {
                            TemplateState::Outdated
                        },
                        generation: work.resource_version,
                        conditions: work
                            .status
                            .as_ref()
                            .map(|s| s.conditions.clone())
                            .unwrap_or_default(),
                        reachable: self.reachable(&d.cluster),
                        deleting: work.deleting.is_some(),
                    };
                    if let Some((status, since)) = work_rollout_status(&cluster_work) {
                        existing.push(ClusterRolloutStatus {
                            cluster: d.cluster.clone(),
                            group: d.group.clone(),
                            status,
                            last_transition_time: since,
                            recheck_time: None,
                        });
                    }
                }
                let to_apply: BTreeSet<String> = match rollout_clusters(
                    &p.rollout_strategy,
                    &decided,
                    &existing,
                    now,
                ) {
                    Ok(result) => {
                        if let Some(t) = result.recheck_at {
                            requeue = Some(requeue.map_or(t, |r| r.min(t)));
                        }
                        result
                            .clusters_to_rollout
                            .into_iter()
                            .filter(|c| c.status == RolloutStatus::ToApply)
                            .map(|c| c.cluster)
                            .collect()
                    }
                    Err(e) => {
                        tracing::warn!(addon = %name, placement = %p.name, error = %e, "add-on rollout strategy cannot be used; nothing rolled out there");
                        BTreeSet::new()
                    }
                };
                for d in decided {
                    // A cluster several placements select follows the last one (OCM's rule).
                    if owning_placement(addon, &d.cluster, placed)
                        .is_some_and(|o| o.namespace == p.namespace && o.name == p.name)
                    {
                        let may = to_apply.contains(&d.cluster);
                        gate.insert((d.cluster, name.clone()), may);
                    }
                }
            }
        }
        (gate, requeue)
    }

    /// Renders and delivers one cluster's add-on (when `may_write`: its rollout lets it take a
    /// change now) and writes its status from its work.
    fn reconcile_cluster_addon(
        &self,
        mca: &ManagedClusterAddOn,
        may_write: bool,
        placed: &Placed,
        now: DateTime<Utc>,
    ) -> Change {
        if mca.metadata.deletion_timestamp.is_some() {
            return self.finish_removal(mca, now);
        }
        let cluster = &mca.metadata.namespace;
        let Some(addon) = self.addon(&mca.metadata.name) else {
            // Its add-on was deleted: it goes, with its work.
            return self.disable_addon(mca, now);
        };
        let mut change = Change::default();
        let mut updated = mca.clone();
        let status = &mut updated.status;
        status.add_on_meta = addon.spec.add_on_meta.clone();
        let at = time(now);
        let work_key = WorkKey::new(cluster.clone(), work_name(&mca.metadata.name));
        let mut sent_spec: Option<Arc<ManifestWorkSpec>> = None;
        let mut registration = None;
        let mut rendered = false;
        match self.desired(addon, mca, placed) {
            Err(why) => {
                set_condition(
                    &mut status.conditions,
                    Condition::new(
                        CONDITION_CONFIGURED,
                        ConditionStatus::False,
                        "ConfigurationsNotConfigured",
                        &why,
                    ),
                    at,
                );
                // OCM says why on Progressing.
                set_condition(
                    &mut status.conditions,
                    Condition::new(
                        CONDITION_PROGRESSING,
                        ConditionStatus::False,
                        "ConfigurationUnsupported",
                        &why,
                    ),
                    at,
                );
            }
            Ok((resolved, spec, _)) => {
                rendered = true;
                status.namespace = resolved.install_namespace.clone();
                status.related_objects = vec![ObjectReference {
                    group: "work.open-cluster-management.io".into(),
                    resource: "manifestworks".into(),
                    namespace: cluster.clone(),
                    name: work_key.name.clone(),
                }];
                let mut annotations = BTreeMap::new();
                registration = (!resolved.template.spec.registration.is_empty()).then(|| {
                    addon_identity::Registration {
                        addon: mca.metadata.name.clone(),
                        cluster: cluster.clone(),
                        namespace: resolved.install_namespace.clone(),
                        // New at every enable: so is the identity's password.
                        nonce: mca.metadata.uid.clone(),
                        approved_sha256: bound_password(mca).map(str::to_owned),
                        certificate: certificate_of(mca),
                    }
                });
                if let Some(r) = &registration
                    && let Ok(json) = serde_json::to_string(r)
                {
                    annotations.insert(addon_identity::REGISTRATION_ANNOTATION.to_owned(), json);
                }
                let input = WorkInput {
                    name: work_key.name.clone(),
                    labels: [(LABEL_ADDON_NAME.to_owned(), mca.metadata.name.clone())].into(),
                    annotations,
                    spec: Arc::new(spec),
                };
                let current = self.work(&work_key);
                let same = current.is_some_and(|w| {
                    w.deleting.is_none()
                        && *w.spec == *input.spec
                        && w.labels == input.labels
                        && w.annotations == input.annotations
                });
                let mut carried = same;
                let mut sent_now = false;
                let spec = Arc::clone(&input.spec);
                // The registration changed (the identity bound or certified): no rollout, the
                // cluster gets it on the work it runs, whatever its rollout's gate says.
                let spec_same =
                    current.is_some_and(|w| *w.spec == *input.spec && w.labels == input.labels);
                let registration_changed = current.is_some_and(|w| {
                    w.deleting.is_none()
                        && w.annotations.get(addon_identity::REGISTRATION_ANNOTATION)
                            != input
                                .annotations
                                .get(addon_identity::REGISTRATION_ANNOTATION)
                });
                if let Some(w) =
                    current.filter(|_| !same && registration_changed && (spec_same || !may_write))
                    && self.cluster(cluster).is_some_and(|c| c.is_schedulable())
                    && let Ok((write, _)) = self.write_works(
                        &WorkInput {
                            name: input.name.clone(),
                            labels: w.labels.clone(),
                            annotations: input.annotations.clone(),
                            spec: Arc::clone(&w.spec),
                        },
                        std::slice::from_ref(cluster),
                        true,
                        now,
                    )
                {
                    change.extend(write);
                    carried = spec_same;
                } else if !same
                    && may_write
                    && self.cluster(cluster).is_some_and(|c| c.is_schedulable())
                    && current.is_none_or(|w| w.deleting.is_none())
                    && let Ok((write, _)) =
                        self.write_works(&input, std::slice::from_ref(cluster), true, now)
                {
                    change.extend(write);
                    carried = true;
                    sent_now = true;
                    sent_spec = Some(spec);
                    // When this cluster's rollout of the new agent started.
                    updated
                        .metadata
                        .annotations
                        .insert(CONFIG_SENT_AT_ANNOTATION.to_owned(), now.to_rfc3339());
                }
                let status = &mut updated.status;
                // The desired configs; the applied ones (as OCM) only once the cluster applied
                // the work that carries them.
                let applied_now = carried && !sent_now && self.work_succeeded(&work_key);
                let previous = std::mem::take(&mut status.config_references);
                status.config_references = resolved
                    .references
                    .into_iter()
                    .map(|mut r| {
                        if !applied_now {
                            r.last_applied_config = previous
                                .iter()
                                .find(|p| p.group == r.group && p.resource == r.resource)
                                .and_then(|p| p.last_applied_config.clone());
                        }
                        r
                    })
                    .collect();
                let schedulable = self.cluster(cluster).is_some_and(|c| c.is_schedulable());
                let old_going = self.work(&work_key).is_some_and(|w| w.deleting.is_some());
                let waiting = if !carried && !schedulable {
                    Some((
                        "Progressing",
                        "The cluster takes no work (not accepted, or being removed)",
                    ))
                } else if !carried && old_going {
                    Some((
                        "Progressing",
                        "Waiting for the cluster to remove the add-on's previous work",
                    ))
                } else if !carried {
                    Some((
                        "WaitingForCanary",
                        "Waiting for the rollout to reach this cluster",
                    ))
                } else {
                    None
                };
                let condition = match waiting {
                    Some((reason, message)) => Condition::new(
                        CONDITION_PROGRESSING,
                        ConditionStatus::True,
                        reason,
                        message,
                    ),
                    None if sent_now => sent_progressing(),
                    None => self
                        .carried_progressing(&work_key)
                        .unwrap_or_else(sent_progressing),
                };
                set_condition(&mut status.conditions, condition, at);
                // As OCM: configured once the rollout brought the cluster its current configs.
                let configured = if carried {
                    Condition::new(
                        CONDITION_CONFIGURED,
                        ConditionStatus::True,
                        "ConfigurationsConfigured",
                        "Configurations configured",
                    )
                } else {
                    Condition::new(
                        CONDITION_CONFIGURED,
                        ConditionStatus::False,
                        "ConfigurationsNotConfigured",
                        "Configurations updated and not configured yet",
                    )
                };
                set_condition(&mut status.conditions, configured, at);
            }
        }
        updated.status.health_check.mode = health::Mode::ocm_mode(health_mode(addon)).to_owned();
        let pending = mca
            .metadata
            .annotations
            .contains_key(PENDING_SHA256_ANNOTATION);
        registration_status(&mut updated.status, registration.as_ref(), pending, at);
        if rendered
            && registration.is_none()
            && let Some(m) = unbound(&updated)
        {
            // Its template registers no more: its identity goes.
            updated.metadata.annotations = m.metadata.annotations;
        }
        self.work_conditions(
            &mut updated.status.conditions,
            cluster,
            &work_key,
            sent_spec.as_deref(),
            health_mode(addon),
            at,
        );
        if updated != *mca {
            change
                .records
                .push(Record::Object(Box::new(StoredObject::ClusterAddOn(
                    Box::new(updated),
                ))));
        }
        change
    }

    /// `addon` with each placement's `installProgressions` as the clusters' add-ons (those
    /// `written` by this pass, else the stored ones) say, or `None` when they did not change:
    /// the desired configs, the last applied (every selected cluster carries them) and last
    /// known good (every selected cluster completed them), and Progressing.
    fn install_progressions(
        &self,
        addon: &ClusterManagementAddOn,
        written: &BTreeMap<(String, String), &ManagedClusterAddOn>,
        now: DateTime<Utc>,
    ) -> Option<ClusterManagementAddOn> {
        let strategy = &addon.spec.install_strategy;
        let name = &addon.metadata.name;
        let mut updated = addon.clone();
        // As OCM: the default configs with the hashes of their current specs.
        updated.status.default_config_references = resolve(&[&addon.spec.default_configs])
            .values()
            .map(|c| DefaultConfigReference {
                group: c.group.clone(),
                resource: c.resource.clone(),
                desired_config: self.config_hash(c),
            })
            .collect();
        let old = std::mem::take(&mut updated.status.install_progressions);
        let placements = if strategy.type_ == INSTALL_PLACEMENTS {
            strategy.placements.as_slice()
        } else {
            &[]
        };
        for p in placements {
            let mut progression = old
                .iter()
                .find(|o| o.namespace == p.namespace && o.name == p.name)
                .cloned()
                .unwrap_or_else(|| InstallProgression {
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                    ..InstallProgression::default()
                });
            let configs = resolve(&[&p.configs, &addon.spec.default_configs]);
            let clusters: Vec<&ManagedClusterAddOn> = self
                .placement_clusters(&p.namespace, &p.name)
                .into_iter()
                .filter_map(|c| {
                    let key = (c, name.clone());
                    written.get(&key).copied().or_else(|| {
                        self.objects()
                            .get(&ObjectKey::new(
                                ObjectKind::ManagedClusterAddOn,
                                &key.0,
                                name,
                            ))
                            .and_then(|o| o.as_cluster_addon())
                    })
                })
                .collect();
            let completed = clusters
                .iter()
                .filter(|m| {
                    m.status
                        .conditions
                        .iter()
                        .any(|c| c.type_ == CONDITION_PROGRESSING && c.reason == "Completed")
                })
                .count();
            let mut references = Vec::new();
            for c in configs.values() {
                let desired = self.config_hash(c);
                let carried_by_all = clusters.iter().all(|m| {
                    m.status.config_references.iter().any(|r| {
                        r.group == c.group
                            && r.resource == c.resource
                            && r.last_applied_config == desired
                    })
                });
                let before = progression
                    .config_references
                    .iter()
                    .find(|r| r.group == c.group && r.resource == c.resource);
                references.push(InstallConfigReference {
                    group: c.group.clone(),
                    resource: c.resource.clone(),
                    desired_config: desired.clone(),
                    last_applied_config: if carried_by_all {
                        desired.clone()
                    } else {
                        before.and_then(|b| b.last_applied_config.clone())
                    },
                    last_known_good_config: if carried_by_all && completed == clusters.len() {
                        desired
                    } else {
                        before.and_then(|b| b.last_known_good_config.clone())
                    },
                });
            }
            progression.config_references = references;
            let (status, reason) = if completed == clusters.len() {
                (ConditionStatus::False, "Completed")
            } else {
                (ConditionStatus::True, "Progressing")
            };
            set_condition(
                &mut progression.conditions,
                Condition::new(
                    CONDITION_PROGRESSING,
                    status,
                    reason,
                    format!("{completed}/{} completed with no errors", clusters.len()),
                ),
                time(now),
            );
            updated.status.install_progressions.push(progression);
        }
        (updated != *addon).then_some(updated)
    }

    /// Progressing of a cluster that carries the add-on's current work, from that work's status:
    /// Completed once applied and available, Failed when its agent could not apply it; `None`
    /// while it has not said.
    fn carried_progressing(&self, work_key: &WorkKey) -> Option<Condition> {
        if self.work_succeeded(work_key) {
            return Some(Condition::new(
                CONDITION_PROGRESSING,
                ConditionStatus::False,
                "Completed",
                "Completed",
            ));
        }
        self.work_failed(work_key).map(|why| {
            Condition::new(
                CONDITION_PROGRESSING,
                ConditionStatus::False,
                "Failed",
                format!("The cluster failed to apply the add-on: {why}"),
            )
        })
    }

    /// The message of the work's Applied=False for its current version (its agent could not
    /// apply it), if so.
    fn work_failed(&self, key: &WorkKey) -> Option<String> {
        let w = self.work(key)?;
        w.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| {
                c.type_ == WORK_APPLIED
                    && !c.is_true()
                    && c.observed_generation >= w.resource_version
            })
            .map(|c| c.message.clone())
    }

    /// `config` by name with the hash of its current spec (`None`: the hub does not hold it).
    fn config_hash(&self, config: &AddOnConfig) -> Option<ConfigSpecHash> {
        let hash = if config.is(ADDON_TEMPLATES) {
            self.addon_template(&config.name)
                .map(|t| spec_hash(&t.spec))
        } else {
            self.addon_config(&config.namespace, &config.name)
                .map(|d| spec_hash(&d.spec))
        }?;
        Some(ConfigSpecHash {
            namespace: config.namespace.clone(),
            name: config.name.clone(),
            spec_hash: hash,
        })
    }

    /// Whether the add-on's work is applied and available for its current generation.
    fn work_succeeded(&self, key: &WorkKey) -> bool {
        self.work(key).is_some_and(|w| {
            let conditions = w
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default();
            [WORK_APPLIED, WORK_AVAILABLE].iter().all(|t| {
                conditions.iter().any(|c| {
                    c.type_ == *t && c.is_true() && c.observed_generation >= w.resource_version
                })
            })
        })
    }

    /// ManifestApplied and Available from the add-on's work; Unknown while the cluster is
    /// unreachable.
    ///
    /// `sent`: the spec this pass just sent, whose status has not come yet.
    fn work_conditions(
        &self,
        conditions: &mut Vec<Condition>,
        cluster: &str,
        work_key: &WorkKey,
        sent: Option<&ManifestWorkSpec>,
        mode: health::Mode,
        at: ocm_edge_schemas::api::meta::Time,
    ) {
        let work = self.work(work_key);
        let (spec, status) = match sent {
            Some(spec) => (Some(spec), None),
            None => (
                work.map(|w| w.spec.as_ref()),
                work.and_then(|w| w.status.as_ref()),
            ),
        };
        let work_conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let of = |type_: &str| work_conditions.iter().find(|c| c.type_ == type_);
        // As OCM's deploy controller: from the work's Applied, left as it was until the work
        // reports one.
        let applied = of(WORK_APPLIED).map(|c| {
            if c.is_true() {
                (
                    ConditionStatus::True,
                    "AddonManifestApplied",
                    "manifests of addon are applied successfully".to_owned(),
                )
            } else {
                (
                    ConditionStatus::False,
                    "AddonManifestAppliedFailed",
                    format!("failed to apply the manifests of addon: {}", c.message),
                )
            }
        });
        if let Some((status, reason, message)) = applied {
            set_condition(
                conditions,
                Condition::new(CONDITION_MANIFEST_APPLIED, status, reason, &message),
                at,
            );
        }
        let available = if !self.reachable(cluster) {
            (
                ConditionStatus::Unknown,
                "ClusterUnreachable",
                "The cluster is unreachable".to_owned(),
            )
        } else if let Some(probed) = spec.and_then(|spec| {
            health::probe(
                mode,
                spec,
                status.map(|s| &s.resource_status),
                at.as_datetime(),
            )
        }) {
            probed
        } else {
            match of(WORK_AVAILABLE) {
                Some(c) if c.is_true() => (
                    ConditionStatus::True,
                    "WorkApplied",
                    "The add-on's resources are available".to_owned(),
                ),
                Some(c) => (ConditionStatus::False, "WorkNotApplied", c.message.clone()),
                None => (
                    ConditionStatus::False,
                    "WorkNotFound",
                    "The add-on's work has no status yet".to_owned(),
                ),
            }
        };
        set_condition(
            conditions,
            Condition::new(CONDITION_AVAILABLE, available.0, available.1, &available.2),
            at,
        );
    }
}

#[cfg(test)]
mod tests;
