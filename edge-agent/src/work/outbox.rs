//! The status outbox: the latest status per bundle, kept until the hub has it. Pure.
//!
//! rumqttc drops in-flight messages when the broker forgets a session, so delivery is made
//! at-least-once here: a status is pending until published; every reconnect makes unconfirmed
//! statuses pending again; a hub status resync that shows the same hash confirms one. Only the
//! latest status per bundle is kept (a newer one replaces an unsent older one).

use std::collections::{BTreeMap, BTreeSet};

use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::work::ManifestWorkStatus;
use ocm_edge_schemas::wire::resync::StatusHash;
use ocm_edge_schemas::wire::status_hash::status_hash;
use serde::{Deserialize, Serialize};

/// What a status event carries besides the status: taken from the spec it reflects.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Envelope {
    /// The spec version this status reflects.
    pub resource_version: i64,
    /// The spec's ce-source (sent back as `originalsource`).
    pub source: String,
    /// The spec's `metadata` extension, echoed.
    #[serde(rename = "metadata_json", with = "metadata_as_json_text")]
    pub metadata: Option<ObjectMeta>,
}

/// A spec's `metadata` as the agent's store has always kept it: its JSON text, `""` when the spec
/// had none. Records written by agents already deployed read back unchanged; text that is not an
/// ObjectMeta is an error (the store reports the record as corrupt), never a silent `None`.
pub mod metadata_as_json_text {
    use ocm_edge_schemas::api::meta::ObjectMeta;
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `None` as `""`, an ObjectMeta as its compact JSON.
    ///
    /// # Errors
    /// When the ObjectMeta cannot be serialized.
    pub fn serialize<S: Serializer>(meta: &Option<ObjectMeta>, s: S) -> Result<S::Ok, S::Error> {
        match meta {
            None => s.serialize_str(""),
            Some(m) => s.serialize_str(&serde_json::to_string(m).map_err(S::Error::custom)?),
        }
    }

    /// Reads `""` as `None`, anything else as ObjectMeta JSON.
    ///
    /// # Errors
    /// When the text is neither empty nor an ObjectMeta.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ObjectMeta>, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| D::Error::custom(format!("metadata is not ObjectMeta JSON: {e}")))
    }
}

/// The latest status of one bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusRecord {
    pub envelope: Envelope,
    pub status: ManifestWorkStatus,
    /// `status_hash(status)`, as Go peers compute it.
    pub hash: String,
    /// Not yet published on the current connection.
    pub pending: bool,
    /// The hub showed this hash in a status resync.
    pub confirmed: bool,
    /// The bundle was deleted; the record is forgotten once published.
    pub deleted: bool,
}

/// Latest status per resource id, and which ones still have to be published.
#[derive(Debug, Clone, Default)]
pub struct Outbox {
    records: BTreeMap<String, StatusRecord>,
    dirty: BTreeSet<String>,
}

impl Outbox {
    /// Rebuilds the outbox from stored records.
    pub fn from_records(records: impl IntoIterator<Item = (String, StatusRecord)>) -> Self {
        Outbox {
            records: records.into_iter().collect(),
            dirty: BTreeSet::new(),
        }
    }

    /// Records the latest status of `resource_id`. Returns whether it differs from the held one
    /// (then it is pending); an identical status changes nothing.
    pub fn record(
        &mut self,
        resource_id: &str,
        envelope: Envelope,
        status: ManifestWorkStatus,
        deleted: bool,
    ) -> bool {
        let hash = status_hash(&status);
        if let Some(old) = self.records.get(resource_id)
            && old.hash == hash
            && old.envelope == envelope
            && old.deleted == deleted
        {
            return false;
        }
        self.records.insert(
            resource_id.to_owned(),
            StatusRecord {
                envelope,
                status,
                hash,
                pending: true,
                confirmed: false,
                deleted,
            },
        );
        self.dirty.insert(resource_id.to_owned());
        true
    }

    /// Resource ids whose status is waiting to be published, in id order.
    pub fn pending(&self) -> Vec<(String, StatusRecord)> {
        self.records
            .iter()
            .filter(|(_, r)| r.pending)
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    }

    /// The status of `resource_id` was handed to the broker. A deleted bundle's record is forgotten.
    pub fn mark_sent(&mut self, resource_id: &str) {
        let forget = match self.records.get_mut(resource_id) {
            Some(r) => {
                r.pending = false;
                r.deleted
            }
            None => return,
        };
        if forget {
            self.records.remove(resource_id);
        }
        self.dirty.insert(resource_id.to_owned());
    }

    /// A new connection: everything the hub has not confirmed is sent again.
    pub fn on_reconnect(&mut self) {
        for (k, r) in &mut self.records {
            if !r.confirmed && !r.pending {
                r.pending = true;
                self.dirty.insert(k.clone());
            }
        }
    }

    /// The hub's status resync: an empty list asks for everything; otherwise each listed status
    /// with the same hash is confirmed and each with a different hash is sent again (as sdk-go's
    /// agent does, unlisted ones are left alone: the hub batches its list).
    pub fn on_status_resync(&mut self, hub: &[StatusHash]) {
        if hub.is_empty() {
            for (k, r) in &mut self.records {
                r.pending = true;
                r.confirmed = false;
                self.dirty.insert(k.clone());
            }
            return;
        }
        for h in hub {
            if let Some(r) = self.records.get_mut(&h.resource_id) {
                if r.hash == h.status_hash {
                    r.confirmed = true;
                    r.pending = false;
                } else {
                    r.confirmed = false;
                    r.pending = true;
                }
                self.dirty.insert(h.resource_id.clone());
            }
        }
    }

    /// The held record of `resource_id`.
    pub fn get(&self, resource_id: &str) -> Option<&StatusRecord> {
        self.records.get(resource_id)
    }

    /// Forgets `resource_id`.
    pub fn remove(&mut self, resource_id: &str) {
        if self.records.remove(resource_id).is_some() {
            self.dirty.insert(resource_id.to_owned());
        }
    }

    /// Ids changed since the last call, with their record (`None` = removed), for the store.
    pub fn take_dirty(&mut self) -> Vec<(String, Option<StatusRecord>)> {
        std::mem::take(&mut self.dirty)
            .into_iter()
            .map(|k| {
                let r = self.records.get(&k).cloned();
                (k, r)
            })
            .collect()
    }

    /// Number of held records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}
