//! The agent's redb file (`<data_dir>/agent.redb`): what the agent must remember across restarts,
//! so it can reconcile while the broker or hub is away.
//!
//! Tables (keys are resource ids unless noted, values are JSON):
//! - `desired`: the bundles held, with version, metadata, source and deleting flag, and, while a
//!   version waits for a maintenance window, the version still on the cluster;
//! - `inventory`: objects applied for each bundle (OCM's AppliedManifestWork);
//! - `outbox`: latest status per bundle and whether the hub has it;
//! - `agent_meta`: connection sequence number, the hub's registration view (keyed by name).
//! - `transfer_heads` (keyed by digest) and `transfer_chunks` (keyed `<digest>/<index>`, raw
//!   bytes): unfinished chunked transfers, kept across reconnects and restarts so a transfer
//!   cut by the link resumes instead of starting again.
//!
//! The simulated cluster keeps its own table in the same file (see `applier::sim`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::work::ManifestBundle;
use ocm_edge_schemas::wire::MqttMessage;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::registration::trust::HubSigner;
use crate::work::outbox::StatusRecord;
use crate::work::resource::ResourceRef;

/// redb's page cache: its default (1 GiB) is more than a small edge box should give an agent;
/// bundles are read one at a time, so a few MiB keep the reconcile loop off the disk.
const CACHE_BYTES: usize = 8 * 1024 * 1024;
const DESIRED: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("desired");
const INVENTORY: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("inventory");
const OUTBOX: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("outbox");
const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("agent_meta");
const TRANSFER_HEADS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("transfer_heads");
const TRANSFER_CHUNKS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("transfer_chunks");
/// Deleted bundles: resource id to [`Tombstone`]. A few dozen bytes per work deleted, at most
/// [`MAX_TOMBSTONES`] of them.
const TOMBSTONES: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("tombstones");
/// Most tombstones kept. Beyond it the oldest tenth goes, and the latest time among them becomes
/// the replay floor ([`Store::replay_floor`]): a spec for a work the agent neither holds nor
/// remembers, sent before it, is a replay too.
pub const MAX_TOMBSTONES: u64 = 10_000;

const KEY_CONNECTION_SEQ: &str = "connection_seq";
const KEY_REGISTRATION: &str = "registration_view";
const KEY_HUB_SIGNER: &str = "hub_signer";
const KEY_REPLAY_FLOOR: &str = "replay_floor";

/// File name of the agent's database inside the data dir.
pub const DB_FILE: &str = "agent.redb";

/// Store errors; all of them mean the local disk or file is unusable (not retryable).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create data dir {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("redb: {0}")]
    Db(#[from] redb::Error),
    #[error("stored value under {key:?} is not valid: {reason}")]
    Corrupt { key: String, reason: String },
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Db(e.into())
            }
        }
    )*};
}
from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// Result alias of this module.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A bundle the agent holds: the parts of a spec event it needs after a restart, plus the
/// `deleting` flag (a stored record with its own bookkeeping, not the wire message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesiredBundle {
    pub resource_id: String,
    pub resource_version: i64,
    /// ce-source of the spec event; copied into `originalsource` of status events.
    pub source: String,
    /// The `metadata` extension as received, echoed on status events.
    #[serde(
        rename = "metadata_json",
        with = "crate::work::outbox::metadata_as_json_text"
    )]
    pub metadata: Option<ObjectMeta>,
    /// metadata.generation, or the resource version when the hub sends none.
    pub generation: i64,
    pub bundle: ManifestBundle,
    /// A delete was received; removal is in progress.
    pub deleting: bool,
    /// `ce-time` of the last spec event acted on for this bundle (signed by the hub): anything
    /// older is a replay ([`crate::work::acceptance::is_replay`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    /// Set while this version (or this delete) waits for a maintenance window or the end of a
    /// hold (`crate::maintenance`): the version stays stored, is reported to the hub, and is
    /// applied when updates may be again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
}

/// A version that waits, and what is on the cluster meanwhile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    /// When the first version that waits arrived (a newer one keeps this time).
    pub since: DateTime<Utc>,
    /// The version applied before, reconciled (drift corrected) while the new one waits;
    /// `None` for a work not applied yet.
    pub on_cluster: Option<Box<DesiredBundle>>,
}

/// What the agent keeps of a deleted bundle, so that a replay of its old spec or delete is
/// refused after the bundle is gone (and after a restart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// The version deleted.
    pub resource_version: i64,
    /// `ce-time` of the delete acted on.
    pub decided_at: Option<DateTime<Utc>>,
}

/// The head of an unfinished chunked transfer: the message it stands for, without its payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferHead {
    pub topic: String,
    pub content_type: Option<String>,
    pub user_properties: Vec<(String, String)>,
    /// Number of chunks.
    pub count: u32,
    /// Payload bytes in total.
    pub total: u32,
    /// `ce-resourceid` of the spec it carries (older transfers of it are dropped).
    pub resource_id: String,
    /// When the head arrived, in Unix milliseconds (the oldest transfer is dropped first).
    pub received_ms: i64,
}

impl TransferHead {
    /// The head as it arrived.
    pub fn message(&self) -> MqttMessage {
        MqttMessage {
            topic: self.topic.clone(),
            payload: Vec::new(),
            content_type: self.content_type.clone(),
            user_properties: self.user_properties.clone(),
        }
    }
}

/// Chunks of `digest` in `table`, counted by key.
fn count_chunks(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    digest: &str,
) -> Result<u32> {
    let (from, to) = chunk_range(digest);
    Ok(table.range(from.as_str()..to.as_str())?.count() as u32)
}

fn chunk_key(digest: &str, index: u32) -> String {
    format!("{digest}/{index:05}")
}

/// Keys `<digest>/...` (`/` sorts just before `0`).
fn chunk_range(digest: &str) -> (String, String) {
    (format!("{digest}/"), format!("{digest}0"))
}

/// The agent's database handle (cheap to clone).
#[derive(Debug, Clone)]
pub struct Store {
    db: Arc<Database>,
}

impl Store {
    /// Opens or creates `<data_dir>/agent.redb` and its tables.
    ///
    /// # Errors
    /// [`StoreError`] when the dir cannot be created or the file is locked or corrupt.
    pub fn open(data_dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.display().to_string(),
            source,
        })?;
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(data_dir.join(DB_FILE))?;
        let store = Store { db: Arc::new(db) };
        let tx = store.db.begin_write()?;
        for t in [
            DESIRED,
            INVENTORY,
            OUTBOX,
            META,
            TRANSFER_HEADS,
            TRANSFER_CHUNKS,
            TOMBSTONES,
        ] {
            tx.open_table(t)?;
        }
        tx.commit()?;
        Ok(store)
    }

    /// A handle that does not keep the file open (for tasks that may outlive the agent).
    pub fn downgrade(&self) -> WeakStore {
        WeakStore {
            db: Arc::downgrade(&self.db),
        }
    }

    /// The underlying database, shared with the simulated cluster.
    pub fn database(&self) -> Arc<Database> {
        self.db.clone()
    }

    fn put<T: Serialize>(
        &self,
        table: TableDefinition<'_, &str, &[u8]>,
        key: &str,
        value: &T,
    ) -> Result<()> {
        let bytes = serde_json::to_vec(value).map_err(|e| StoreError::Corrupt {
            key: key.to_owned(),
            reason: e.to_string(),
        })?;
        let tx = self.db.begin_write()?;
        tx.open_table(table)?.insert(key, bytes.as_slice())?;
        tx.commit()?;
        Ok(())
    }

    fn delete(&self, table: TableDefinition<'_, &str, &[u8]>, key: &str) -> Result<()> {
        let tx = self.db.begin_write()?;
        tx.open_table(table)?.remove(key)?;
        tx.commit()?;
        Ok(())
    }

    fn get<T: DeserializeOwned>(
        &self,
        table: TableDefinition<'_, &str, &[u8]>,
        key: &str,
    ) -> Result<Option<T>> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(table)?;
        match t.get(key)? {
            None => Ok(None),
            Some(v) => decode(key, v.value()).map(Some),
        }
    }

    fn all<T: DeserializeOwned>(
        &self,
        table: TableDefinition<'_, &str, &[u8]>,
    ) -> Result<Vec<(String, T)>> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(table)?;
        let mut out = Vec::new();
        for entry in t.iter()? {
            let (k, v) = entry?;
            let key = k.value().to_owned();
            let value = decode(&key, v.value())?;
            out.push((key, value));
        }
        Ok(out)
    }

    /// Saves (or replaces) a held bundle.
    pub fn put_desired(&self, bundle: &DesiredBundle) -> Result<()> {
        self.put(DESIRED, &bundle.resource_id, bundle)
    }

    /// A held bundle.
    pub fn desired(&self, resource_id: &str) -> Result<Option<DesiredBundle>> {
        self.get(DESIRED, resource_id)
    }

    /// Every held bundle, by resource id.
    pub fn all_desired(&self) -> Result<Vec<DesiredBundle>> {
        Ok(self.all(DESIRED)?.into_iter().map(|(_, v)| v).collect())
    }

    /// How many bundles are held, without decoding them.
    pub fn desired_count(&self) -> Result<u64> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(DESIRED)?.len()?)
    }

    /// Forgets a bundle and its inventory, keeping `tombstone` in their place.
    pub fn forget(&self, resource_id: &str, tombstone: &Tombstone) -> Result<()> {
        self.forget_keeping(resource_id, tombstone, MAX_TOMBSTONES)
    }

    /// [`Store::forget`] keeping at most `max_tombstones`.
    fn forget_keeping(
        &self,
        resource_id: &str,
        tombstone: &Tombstone,
        max_tombstones: u64,
    ) -> Result<()> {
        // One write transaction: one commit, and never a bundle without its inventory.
        let tx = self.db.begin_write()?;
        tx.open_table(DESIRED)?.remove(resource_id)?;
        tx.open_table(INVENTORY)?.remove(resource_id)?;
        let bytes = serde_json::to_vec(tombstone).map_err(|e| StoreError::Corrupt {
            key: resource_id.to_owned(),
            reason: e.to_string(),
        })?;
        {
            let mut tombstones = tx.open_table(TOMBSTONES)?;
            tombstones.insert(resource_id, bytes.as_slice())?;
            if tombstones.len()? > max_tombstones {
                // The oldest tenth goes; the newest time among them is the replay floor.
                let mut held: Vec<(Option<DateTime<Utc>>, String)> = Vec::new();
                for entry in tombstones.iter()? {
                    let (k, v) = entry?;
                    let t: Tombstone = decode(k.value(), v.value())?;
                    held.push((t.decided_at, k.value().to_owned()));
                }
                held.sort();
                let pruned = &held[..held.len() / 10];
                for (_, key) in pruned {
                    tombstones.remove(key.as_str())?;
                }
                if let Some(floor) = pruned.iter().filter_map(|(t, _)| *t).max() {
                    let mut meta = tx.open_table(META)?;
                    let previous: Option<DateTime<Utc>> = match meta.get(KEY_REPLAY_FLOOR)? {
                        Some(v) => decode(KEY_REPLAY_FLOOR, v.value())?,
                        None => None,
                    };
                    let floor = previous.map_or(floor, |p| p.max(floor));
                    let bytes = serde_json::to_vec(&floor).map_err(|e| StoreError::Corrupt {
                        key: KEY_REPLAY_FLOOR.to_owned(),
                        reason: e.to_string(),
                    })?;
                    meta.insert(KEY_REPLAY_FLOOR, bytes.as_slice())?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// What is left of a deleted bundle.
    pub fn tombstone(&self, resource_id: &str) -> Result<Option<Tombstone>> {
        self.get(TOMBSTONES, resource_id)
    }

    /// How many tombstones are kept.
    pub fn tombstone_count(&self) -> Result<u64> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(TOMBSTONES)?.len()?)
    }

    /// The newest `ce-time` among the tombstones dropped to keep [`MAX_TOMBSTONES`]: a spec for
    /// a work the agent neither holds nor remembers that was sent before it is a replay.
    pub fn replay_floor(&self) -> Result<Option<DateTime<Utc>>> {
        self.get(META, KEY_REPLAY_FLOOR)
    }

    /// Objects applied for a bundle.
    pub fn inventory(&self, resource_id: &str) -> Result<Vec<ResourceRef>> {
        Ok(self.get(INVENTORY, resource_id)?.unwrap_or_default())
    }

    /// Replaces the inventory of a bundle.
    pub fn put_inventory(&self, resource_id: &str, applied: &[ResourceRef]) -> Result<()> {
        self.put(INVENTORY, resource_id, &applied)
    }

    /// Every outbox record.
    pub fn all_status(&self) -> Result<Vec<(String, StatusRecord)>> {
        self.all(OUTBOX)
    }

    /// Saves or removes (`None`) an outbox record.
    pub fn put_status(&self, resource_id: &str, record: Option<&StatusRecord>) -> Result<()> {
        match record {
            Some(r) => self.put(OUTBOX, resource_id, r),
            None => self.delete(OUTBOX, resource_id),
        }
    }

    /// Increments and returns the connection sequence number (1 on the first connection).
    pub fn next_connection_seq(&self) -> Result<u64> {
        let tx = self.db.begin_write()?;
        let next = {
            let mut t = tx.open_table(META)?;
            let current = match t.get(KEY_CONNECTION_SEQ)? {
                Some(v) => decode::<u64>(KEY_CONNECTION_SEQ, v.value())?,
                None => 0,
            };
            let next = current + 1;
            let bytes = serde_json::to_vec(&next).unwrap_or_default();
            t.insert(KEY_CONNECTION_SEQ, bytes.as_slice())?;
            next
        };
        tx.commit()?;
        Ok(next)
    }

    /// The last connection sequence number used (0 before any).
    pub fn connection_seq(&self) -> Result<u64> {
        Ok(self.get(META, KEY_CONNECTION_SEQ)?.unwrap_or(0))
    }

    /// Saves the hub's view of this cluster.
    pub fn put_registration(&self, view: &ManagedCluster) -> Result<()> {
        self.put(META, KEY_REGISTRATION, view)
    }

    /// The hub's last view of this cluster.
    pub fn registration(&self) -> Result<Option<ManagedCluster>> {
        self.get(META, KEY_REGISTRATION)
    }

    /// Saves the hub's signing certificate and CA, which the agent trusts from now on.
    pub fn put_hub_signer(&self, signer: &HubSigner) -> Result<()> {
        self.put(META, KEY_HUB_SIGNER, signer)
    }

    /// The hub's signing certificate and CA the agent trusts.
    pub fn hub_signer(&self) -> Result<Option<HubSigner>> {
        self.get(META, KEY_HUB_SIGNER)
    }
}

impl Store {
    /// Saves the head of a transfer (replacing an earlier head of the same digest, whose chunks
    /// stay) and drops the oldest transfers beyond `keep`. Returns the digests dropped.
    pub fn put_transfer_head(
        &self,
        digest: &str,
        head: &TransferHead,
        keep: usize,
    ) -> Result<Vec<String>> {
        self.put(TRANSFER_HEADS, digest, head)?;
        let mut heads: Vec<(String, TransferHead)> = self.all(TRANSFER_HEADS)?;
        if heads.len() <= keep {
            return Ok(Vec::new());
        }
        // The new head first, then the newest: the oldest fall beyond `keep`.
        heads.sort_by_key(|(d, h)| (d != digest, std::cmp::Reverse(h.received_ms)));
        let dropped: Vec<String> = heads.into_iter().skip(keep).map(|(d, _)| d).collect();
        for d in &dropped {
            self.drop_transfer(d)?;
        }
        Ok(dropped)
    }

    /// The head of a transfer.
    pub fn transfer_head(&self, digest: &str) -> Result<Option<TransferHead>> {
        self.get(TRANSFER_HEADS, digest)
    }

    /// Saves one chunk and returns how many chunks of that transfer are held.
    pub fn put_chunk(&self, digest: &str, index: u32, bytes: &[u8]) -> Result<u32> {
        let tx = self.db.begin_write()?;
        let held = {
            let mut t = tx.open_table(TRANSFER_CHUNKS)?;
            t.insert(chunk_key(digest, index).as_str(), bytes)?;
            count_chunks(&t, digest)?
        };
        tx.commit()?;
        Ok(held)
    }

    /// How many chunks of a transfer are held (their keys counted, their bytes not read).
    pub fn chunks_held(&self, digest: &str) -> Result<u32> {
        let tx = self.db.begin_read()?;
        count_chunks(&tx.open_table(TRANSFER_CHUNKS)?, digest)
    }

    /// The chunks of a transfer, in index order.
    pub fn transfer_chunks(&self, digest: &str) -> Result<Vec<Vec<u8>>> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(TRANSFER_CHUNKS)?;
        let (from, to) = chunk_range(digest);
        let mut out = Vec::new();
        for entry in t.range(from.as_str()..to.as_str())? {
            out.push(entry?.1.value().to_vec());
        }
        Ok(out)
    }

    /// Forgets a transfer: its head and its chunks, in one transaction.
    pub fn drop_transfer(&self, digest: &str) -> Result<()> {
        let tx = self.db.begin_write()?;
        tx.open_table(TRANSFER_HEADS)?.remove(digest)?;
        {
            let mut t = tx.open_table(TRANSFER_CHUNKS)?;
            let (from, to) = chunk_range(digest);
            t.retain_in(from.as_str()..to.as_str(), |_, _| false)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every unfinished transfer: the digests of their heads, their resource ids and the chunk
    /// indexes held.
    pub fn held_chunks(&self) -> Result<BTreeMap<String, (String, BTreeSet<u32>)>> {
        let heads: Vec<(String, TransferHead)> = self.all(TRANSFER_HEADS)?;
        let tx = self.db.begin_read()?;
        let t = tx.open_table(TRANSFER_CHUNKS)?;
        let mut out = BTreeMap::new();
        for (digest, head) in heads {
            let (from, to) = chunk_range(&digest);
            let mut indexes = BTreeSet::new();
            for entry in t.range(from.as_str()..to.as_str())? {
                let (k, _) = entry?;
                if let Some(i) = k.value().rsplit('/').next().and_then(|i| i.parse().ok()) {
                    indexes.insert(i);
                }
            }
            out.insert(digest, (head.resource_id, indexes));
        }
        Ok(out)
    }
}

/// A [`Store`] that does not keep the file open.
#[derive(Debug, Clone)]
pub struct WeakStore {
    db: std::sync::Weak<Database>,
}

impl WeakStore {
    /// The store, while the agent still has it open.
    pub fn upgrade(&self) -> Option<Store> {
        self.db.upgrade().map(|db| Store { db })
    }
}

fn decode<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(resource_id: &str, received_ms: i64) -> TransferHead {
        TransferHead {
            topic: "t".into(),
            content_type: None,
            user_properties: vec![],
            count: 3,
            total: 3000,
            resource_id: resource_id.into(),
            received_ms,
        }
    }

    #[test]
    fn tombstones_beyond_the_limit_go_oldest_first_and_leave_a_replay_floor_that_survives_a_reopen()
    {
        let dir = tempfile::tempdir().unwrap();
        let t = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0);
        {
            let store = Store::open(dir.path()).unwrap();
            assert_eq!(store.replay_floor().unwrap(), None);
            for i in 0..=20 {
                let tombstone = Tombstone {
                    resource_version: 1,
                    decided_at: t(i),
                };
                store
                    .forget_keeping(&format!("work-{i:02}"), &tombstone, 20)
                    .unwrap();
            }
            // 21 > 20: the oldest two (a tenth) went.
            assert_eq!(store.tombstone_count().unwrap(), 19);
            assert_eq!(store.tombstone("work-00").unwrap(), None);
            assert_eq!(store.tombstone("work-01").unwrap(), None);
            assert!(store.tombstone("work-02").unwrap().is_some());
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.replay_floor().unwrap(), t(1));
        assert_eq!(
            store.tombstone("work-20").unwrap().unwrap().decided_at,
            t(20)
        );
    }

    #[test]
    fn unfinished_transfers_survive_a_reopen_and_the_oldest_beyond_the_limit_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = ("a".repeat(64), "b".repeat(64), "c".repeat(64));
        {
            let store = Store::open(dir.path()).unwrap();
            store.put_transfer_head(&a, &head("r1", 1), 2).unwrap();
            assert_eq!(store.put_chunk(&a, 0, b"zero").unwrap(), 1);
            assert_eq!(store.put_chunk(&a, 2, b"two").unwrap(), 2);
            // The same chunk again (a resend) is not counted twice.
            assert_eq!(store.put_chunk(&a, 2, b"two").unwrap(), 2);
            store.put_transfer_head(&b, &head("r2", 2), 2).unwrap();
            store.put_chunk(&b, 1, b"one").unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let held = store.held_chunks().unwrap();
        assert_eq!(held[&a], ("r1".to_owned(), BTreeSet::from([0, 2])));
        assert_eq!(held[&b], ("r2".to_owned(), BTreeSet::from([1])));
        assert_eq!(
            store.transfer_chunks(&a).unwrap(),
            vec![b"zero".to_vec(), b"two".to_vec()]
        );
        // A third transfer with room for two drops the oldest, `a`, head and chunks.
        let dropped = store.put_transfer_head(&c, &head("r3", 3), 2).unwrap();
        assert_eq!(dropped, vec![a.clone()]);
        assert!(store.transfer_head(&a).unwrap().is_none());
        assert!(store.transfer_chunks(&a).unwrap().is_empty());
        store.drop_transfer(&b).unwrap();
        assert_eq!(
            store.held_chunks().unwrap().keys().collect::<Vec<_>>(),
            vec![&c]
        );
    }
}
