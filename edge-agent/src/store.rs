//! The agent's redb file (`<data_dir>/agent.redb`): what the agent must remember across restarts,
//! so it can reconcile while the broker or hub is away.
//!
//! Tables (keys are resource ids unless noted, values are JSON):
//! - `desired`: the bundles held, with version, metadata, source and deleting flag;
//! - `inventory`: objects applied for each bundle (OCM's AppliedManifestWork);
//! - `outbox`: latest status per bundle and whether the hub has it;
//! - `agent_meta`: connection sequence number, the hub's registration view (keyed by name).
//!
//! The simulated cluster keeps its own table in the same file (see `applier::sim`).

use std::path::Path;
use std::sync::Arc;

use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::work::ManifestBundle;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::core::outbox::StatusRecord;
use crate::core::resource::ResourceRef;

/// redb's page cache: its default (1 GiB) is more than a small edge box should give an agent;
/// bundles are read one at a time, so a few MiB keep the reconcile loop off the disk.
const CACHE_BYTES: usize = 8 * 1024 * 1024;
const DESIRED: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("desired");
const INVENTORY: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("inventory");
const OUTBOX: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("outbox");
const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("agent_meta");

const KEY_CONNECTION_SEQ: &str = "connection_seq";
const KEY_REGISTRATION: &str = "registration_view";

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
        with = "crate::core::outbox::metadata_as_json_text"
    )]
    pub metadata: Option<ObjectMeta>,
    /// metadata.generation, or the resource version when the hub sends none.
    pub generation: i64,
    pub bundle: ManifestBundle,
    /// A delete was received; removal is in progress.
    pub deleting: bool,
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
        for t in [DESIRED, INVENTORY, OUTBOX, META] {
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

    /// Forgets a bundle and its inventory.
    pub fn forget(&self, resource_id: &str) -> Result<()> {
        // One write transaction: one commit, and never a bundle without its inventory.
        let tx = self.db.begin_write()?;
        tx.open_table(DESIRED)?.remove(resource_id)?;
        tx.open_table(INVENTORY)?.remove(resource_id)?;
        tx.commit()?;
        Ok(())
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
