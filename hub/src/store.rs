//! The hub's redb file (`<data_dir>/hub.redb`): clusters, works (spec, version, status, status hash,
//! last sequenceid), counters and the placement objects (cluster sets, bindings, placements,
//! decisions, scores, replica sets), as JSON values. The core's [`Record`]s are written in one
//! transaction per batch; [`Store::load`] gives them back after a restart.
//!
//! # Guarantees
//! A batch is written atomically and durably before [`Store::write`] returns. A batch written
//! with [`Store::write_deferred`] is atomic but reaches the disk only with the next durable write
//! or [`Store::flush`] (one fsync for many batches; a crash loses those batches, all of them or
//! none of one). The database file is closed when the [`Store`] is dropped, so another store can
//! open the same directory.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use crate::core::objects::{ObjectKey, StoredObject};
use crate::core::{ClusterRecord, Counters, Record, WorkKey, WorkRecord};
use crate::registration::certificates::RevokedCertificate;

const CLUSTERS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("clusters");
const WORKS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("works");
const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");
/// Cluster sets, bindings, placements, decisions, scores, replica sets: key `Kind/namespace/name`.
const OBJECTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("objects");
const COUNTERS_KEY: &str = "counters";
/// The last `ce-time` stamped into a spec event (RFC 3339, in JSON).
const SPEC_CLOCK_KEY: &str = "spec-clock";
/// Meta key of the removed clusters' revoked certificates ([`Record::RemovedRevoked`]).
const REMOVED_REVOKED_KEY: &str = "removed-revoked";

/// File name of the hub's database inside the data directory.
pub const DB_FILE: &str = "hub.redb";
/// redb's page cache. Its default (1 GiB) let a long-running hub grow with every round of
/// writes; the hub keeps its whole state in memory and reads the file only at start, so a small
/// cache costs nothing.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory cannot be created. Not retryable without operator action.
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// redb failed (IO, corruption, or the file is open in another process).
    #[error("hub database {path}: {source}")]
    Db { path: PathBuf, source: redb::Error },
    /// A stored value does not decode (written by an incompatible version).
    #[error("hub database {path}: record {key:?} does not decode: {source}")]
    Decode {
        path: PathBuf,
        key: String,
        source: serde_json::Error,
    },
}

/// The open database.
#[derive(Debug)]
pub struct Store {
    db: Database,
    path: PathBuf,
}

/// What a restart reloads.
#[derive(Debug, Default)]
pub struct Loaded {
    pub clusters: Vec<ClusterRecord>,
    pub works: Vec<WorkRecord>,
    pub counters: Counters,
    pub objects: Vec<StoredObject>,
    /// The last time stamped into a spec event ([`crate::work::spec_clock`]).
    pub spec_clock: Option<DateTime<Utc>>,
    /// The revoked certificates of removed clusters ([`Record::RemovedRevoked`]).
    pub removed_revoked: Vec<(String, RevokedCertificate)>,
}

fn object_key(key: &ObjectKey) -> String {
    format!("{}/{}/{}", key.kind, key.namespace, key.name)
}

fn work_key(key: &WorkKey) -> String {
    format!("{}/{}", key.cluster, key.name)
}

impl Store {
    /// Opens (or creates) `<data_dir>/hub.redb`.
    ///
    /// # Errors
    /// [`StoreError`] when the directory or file cannot be created or opened.
    pub fn open(data_dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
            path: data_dir.to_owned(),
            source,
        })?;
        let path = data_dir.join(DB_FILE);
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| StoreError::Db {
                path: path.clone(),
                source: e.into(),
            })?;
        let store = Store { db, path };
        // Create the tables so a fresh file reads as empty.
        store.write(&[])?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db_err(&self, e: impl Into<redb::Error>) -> StoreError {
        StoreError::Db {
            path: self.path.clone(),
            source: e.into(),
        }
    }

    /// Writes `records` in one transaction, durably (with every deferred write before it).
    ///
    /// # Errors
    /// [`StoreError::Db`]; nothing is written then.
    pub fn write(&self, records: &[Record]) -> Result<(), StoreError> {
        self.write_with(records, Durability::Immediate)
    }

    /// Writes `records` in one transaction without waiting for the disk: the next
    /// [`Store::write`] or [`Store::flush`] makes it durable. For what a crash may lose because
    /// its senders give it again (agents' statuses, resent on the status resync a restarted hub
    /// asks for).
    ///
    /// # Errors
    /// [`StoreError::Db`]; nothing is written then.
    pub fn write_deferred(&self, records: &[Record]) -> Result<(), StoreError> {
        self.write_with(records, Durability::None)
    }

    /// Makes every deferred write durable (one fsync).
    ///
    /// # Errors
    /// [`StoreError::Db`].
    pub fn flush(&self) -> Result<(), StoreError> {
        self.write_with(&[], Durability::Immediate)
    }

    fn write_with(&self, records: &[Record], durability: Durability) -> Result<(), StoreError> {
        let mut txn = self.db.begin_write().map_err(|e| self.db_err(e))?;
        txn.set_durability(durability).map_err(|e| self.db_err(e))?;
        {
            let mut clusters = txn.open_table(CLUSTERS).map_err(|e| self.db_err(e))?;
            let mut works = txn.open_table(WORKS).map_err(|e| self.db_err(e))?;
            let mut meta = txn.open_table(META).map_err(|e| self.db_err(e))?;
            let mut objects = txn.open_table(OBJECTS).map_err(|e| self.db_err(e))?;
            for r in records {
                match r {
                    Record::Cluster(c) => {
                        let v = to_json(c.as_ref());
                        clusters
                            .insert(c.name.as_str(), v.as_slice())
                            .map_err(|e| self.db_err(e))?;
                    }
                    Record::Work(w) => {
                        let v = to_json(w.as_ref());
                        works
                            .insert(work_key(&w.key).as_str(), v.as_slice())
                            .map_err(|e| self.db_err(e))?;
                    }
                    Record::ForgetWork(key) => {
                        works
                            .remove(work_key(key).as_str())
                            .map_err(|e| self.db_err(e))?;
                    }
                    Record::ForgetCluster(name) => {
                        clusters.remove(name.as_str()).map_err(|e| self.db_err(e))?;
                    }
                    Record::RemovedRevoked(list) => {
                        let v = to_json(list);
                        meta.insert(REMOVED_REVOKED_KEY, v.as_slice())
                            .map_err(|e| self.db_err(e))?;
                    }
                    // In memory only (see its docs).
                    Record::UnknownPresence(..) => {}
                    Record::Object(o) => {
                        let v = to_json(o.as_ref());
                        objects
                            .insert(object_key(&o.key()).as_str(), v.as_slice())
                            .map_err(|e| self.db_err(e))?;
                    }
                    Record::ForgetObject(key) => {
                        objects
                            .remove(object_key(key).as_str())
                            .map_err(|e| self.db_err(e))?;
                    }
                    // Each is a full snapshot: only the batch's last one is written, below.
                    Record::Counters(_) => {}
                    Record::SpecClock(t) => {
                        let v = to_json(t);
                        meta.insert(SPEC_CLOCK_KEY, v.as_slice())
                            .map_err(|e| self.db_err(e))?;
                    }
                }
            }
            let last_counters = records.iter().rev().find_map(|r| match r {
                Record::Counters(c) => Some(c),
                _ => None,
            });
            if let Some(c) = last_counters {
                let v = to_json(c);
                meta.insert(COUNTERS_KEY, v.as_slice())
                    .map_err(|e| self.db_err(e))?;
            }
        }
        txn.commit().map_err(|e| self.db_err(e))
    }

    /// Reads everything back.
    ///
    /// # Errors
    /// [`StoreError::Db`] on IO errors, [`StoreError::Decode`] for a value this version cannot read.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let txn = self.db.begin_read().map_err(|e| self.db_err(e))?;
        let mut loaded = Loaded::default();
        let clusters = txn.open_table(CLUSTERS).map_err(|e| self.db_err(e))?;
        for entry in clusters.iter().map_err(|e| self.db_err(e))? {
            let (k, v) = entry.map_err(|e| self.db_err(e))?;
            loaded.clusters.push(self.decode(k.value(), v.value())?);
        }
        let works = txn.open_table(WORKS).map_err(|e| self.db_err(e))?;
        for entry in works.iter().map_err(|e| self.db_err(e))? {
            let (k, v) = entry.map_err(|e| self.db_err(e))?;
            loaded.works.push(self.decode(k.value(), v.value())?);
        }
        let objects = txn.open_table(OBJECTS).map_err(|e| self.db_err(e))?;
        for entry in objects.iter().map_err(|e| self.db_err(e))? {
            let (k, v) = entry.map_err(|e| self.db_err(e))?;
            loaded.objects.push(self.decode(k.value(), v.value())?);
        }
        let meta = txn.open_table(META).map_err(|e| self.db_err(e))?;
        if let Some(v) = meta.get(COUNTERS_KEY).map_err(|e| self.db_err(e))? {
            loaded.counters = self.decode(COUNTERS_KEY, v.value())?;
        }
        if let Some(v) = meta.get(SPEC_CLOCK_KEY).map_err(|e| self.db_err(e))? {
            loaded.spec_clock = Some(self.decode(SPEC_CLOCK_KEY, v.value())?);
        }
        if let Some(v) = meta.get(REMOVED_REVOKED_KEY).map_err(|e| self.db_err(e))? {
            loaded.removed_revoked = self.decode(REMOVED_REVOKED_KEY, v.value())?;
        }
        Ok(loaded)
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, key: &str, v: &[u8]) -> Result<T, StoreError> {
        serde_json::from_slice(v).map_err(|source| StoreError::Decode {
            path: self.path.clone(),
            key: key.to_owned(),
            source,
        })
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    // Records are plain data (strings, maps, numbers): serialising them cannot fail.
    serde_json::to_vec(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use crate::core::{HubCore, Outbound, WorkKey};

    fn persist(
        store: &Store,
        core: &mut HubCore,
        plan: impl FnOnce(&HubCore) -> crate::core::Change,
    ) {
        let change = plan(core);
        store.write(&change.records).unwrap();
        core.apply(&change.records);
    }

    /// Records of every cluster and work `core` holds.
    fn everything(core: &HubCore) -> Vec<Record> {
        core.clusters()
            .map(|c| Record::Cluster(Box::new(c.clone())))
            .chain(core.works().map(|w| Record::Work(Box::new(w.clone()))))
            .collect()
    }

    /// Set in the child process of the crash test: the store directory it writes to.
    const CRASH_DIR_ENV: &str = "OCM_EDGE_TEST_STORE_CRASH_DIR";
    const CRASH_TEST: &str =
        "store::tests::a_flush_makes_deferred_writes_survive_a_crash_and_unflushed_ones_go_whole";

    #[test]
    fn a_flush_makes_deferred_writes_survive_a_crash_and_unflushed_ones_go_whole() {
        if let Some(dir) = std::env::var_os(CRASH_DIR_ENV) {
            // The child: writes, then dies without running a destructor (no close, no flush).
            let store = Store::open(Path::new(&dir)).unwrap();
            let core = core();
            let join_of = |name: &str, at: i64| core.handle_agent(join(name), t(at)).records;
            store.write(&join_of("durable", 0)).unwrap();
            store.write_deferred(&join_of("flushed", 1)).unwrap();
            store.flush().unwrap();
            store.write_deferred(&join_of("unflushed", 2)).unwrap();
            std::process::abort();
        }
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([CRASH_TEST, "--exact", "--test-threads=1"])
            .env(CRASH_DIR_ENV, dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "the child aborts: {status:?}");
        let loaded = Store::open(dir.path()).unwrap().load().unwrap();
        let names: Vec<&str> = loaded.clusters.iter().map(|c| c.name.as_str()).collect();
        // The write after the last flush is gone as a whole; the file opens as of that flush.
        assert_eq!(names, ["durable", "flushed"]);
    }

    #[test]
    fn a_fresh_store_loads_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("nested/data")).unwrap();
        let loaded = store.load().unwrap();
        assert!(loaded.clusters.is_empty() && loaded.works.is_empty());
        assert_eq!(loaded.counters, Counters::default());
    }

    #[test]
    fn a_reopened_hub_stamps_specs_after_the_last_one_even_with_its_clock_an_hour_behind() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = core();
        let sent = {
            let store = Store::open(dir.path()).unwrap();
            persist(&store, &mut core, |c| c.handle_agent(join("a"), t(0)));
            persist(&store, &mut core, |c| c.accept("a", t(1)).unwrap());
            let (c, _) = core
                .write_works(&work_input("web", 1), &clusters(&["a"]), false, t(7200))
                .unwrap();
            let sent = match &c.outbound[..] {
                [Outbound::Spec(spec)] => spec.header.time.unwrap(),
                other => panic!("one spec: {other:?}"),
            };
            let mut records = c.records.clone();
            records.push(Record::SpecClock(core.spec_clock().unwrap()));
            store.write(&records).unwrap();
            sent
        };
        let loaded = Store::open(dir.path()).unwrap().load().unwrap();
        assert_eq!(loaded.spec_clock, Some(sent));
        let reloaded = HubCore::restore(
            cfg(),
            loaded.clusters,
            loaded.works,
            loaded.counters,
            loaded.spec_clock,
        );
        let work = reloaded.works().next().unwrap().clone();
        let resent = reloaded.spec_event(&work, None, t(3600));
        assert!(
            resent.header.time.unwrap() > sent,
            "{:?} after {sent}",
            resent.header.time
        );
    }

    #[test]
    fn clusters_works_statuses_and_counters_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut core = core();
        {
            let store = Store::open(dir.path()).unwrap();
            persist(&store, &mut core, |c| c.handle_agent(join("a"), t(0)));
            persist(&store, &mut core, |c| c.accept("a", t(1)).unwrap());
            let (c, _) = core
                .write_works(&work_input("web", 1), &clusters(&["a"]), false, t(2))
                .unwrap();
            persist(&store, &mut core, |_| c);
            let (c, _) = core
                .write_works(&work_input("db", 1), &clusters(&["a"]), false, t(2))
                .unwrap();
            persist(&store, &mut core, |_| c);
            let id = core
                .work(&WorkKey::new("a", "web"))
                .unwrap()
                .resource_id
                .clone();
            persist(&store, &mut core, |c| {
                c.handle_agent(status_input("a", &id, 1, "42", applied()), t(3))
            });
            persist(&store, &mut core, |c| c.handle_agent(lease("ghost"), t(4)));
            persist(&store, &mut core, |c| {
                c.delete_work(&WorkKey::new("a", "db"), t(5)).unwrap()
            });
        }
        let store = Store::open(dir.path()).unwrap();
        let loaded = store.load().unwrap();
        let reloaded = HubCore::restore(
            cfg(),
            loaded.clusters,
            loaded.works,
            loaded.counters,
            loaded.spec_clock,
        );
        assert_eq!(reloaded.cluster("a"), core.cluster("a"));
        for name in ["web", "db"] {
            let key = WorkKey::new("a", name);
            assert_eq!(reloaded.work(&key), core.work(&key), "{name}");
        }
        let web = reloaded.work(&WorkKey::new("a", "web")).unwrap();
        assert_eq!(web.last_sequence_id.as_deref(), Some("42"));
        assert!(web.status_hash.is_some());
        assert!(
            reloaded
                .work(&WorkKey::new("a", "db"))
                .unwrap()
                .deleting
                .is_some()
        );
        assert_eq!(reloaded.counters(), core.counters());
        assert_eq!(
            reloaded
                .work_by_resource_id(&web.resource_id)
                .map(|w| &w.key),
            Some(&web.key)
        );
    }

    #[test]
    fn placement_objects_and_availability_taints_survive_a_reopen() {
        use crate::core::objects::{ObjectKey, ObjectKind, StoredObject};
        let dir = tempfile::tempdir().unwrap();
        let mut core = core();
        let set: ocm_edge_schemas::api::cluster::ManagedClusterSet =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "edge"}})).unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            persist(&store, &mut core, |c| c.handle_agent(join("a"), t(0)));
            persist(&store, &mut core, |c| c.accept("a", t(1)).unwrap());
            persist(&store, &mut core, |c| {
                c.apply_object(StoredObject::ClusterSet(Box::new(set)), t(2))
                    .unwrap()
                    .0
            });
            persist(&store, &mut core, |c| {
                let key = ObjectKey::new(ObjectKind::ManagedClusterSet, "", "edge");
                let mut change = crate::core::Change::default();
                if let Some(o) = c.objects().get(&key) {
                    change.records.push(Record::Object(Box::new(o.clone())));
                }
                change
            });
        }
        let loaded = Store::open(dir.path()).unwrap().load().unwrap();
        assert_eq!(loaded.objects.len(), 1);
        assert_eq!(loaded.objects[0].key().name, "edge");
        let a = loaded.clusters.iter().find(|c| c.name == "a").unwrap();
        let taint = &a.taints[0];
        assert_eq!(taint.key, ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE);
        assert_eq!(taint.time_added.unwrap().as_datetime(), t(1));
        assert!(a.availability.is_some());
    }

    #[test]
    fn a_forgotten_work_stays_forgotten_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let mut core = core_with_work("a", "web");
            store.write(&everything(&core)).unwrap();
            persist(&store, &mut core, |_| crate::core::Change {
                records: vec![Record::ForgetWork(WorkKey::new("a", "web"))],
                outbound: vec![],
            });
        }
        let loaded = Store::open(dir.path()).unwrap().load().unwrap();
        assert_eq!(loaded.clusters.len(), 1);
        assert!(loaded.works.is_empty());
    }

    #[test]
    fn a_removed_cluster_stays_forgotten_and_its_revoked_certificates_kept_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let revoked = RevokedCertificate {
            serial: "0a".into(),
            revoked_at: t(1),
            not_after: t(100),
        };
        {
            let store = Store::open(dir.path()).unwrap();
            let mut core = core_with_work("a", "web");
            store.write(&everything(&core)).unwrap();
            persist(&store, &mut core, |core| {
                let mut change = core.remove_cluster("a", true, t(1)).unwrap();
                change
                    .records
                    .push(Record::RemovedRevoked(vec![("a".into(), revoked.clone())]));
                change
            });
        }
        let loaded = Store::open(dir.path()).unwrap().load().unwrap();
        assert!(loaded.clusters.is_empty());
        assert!(loaded.works.is_empty());
        assert_eq!(loaded.removed_revoked, [("a".to_owned(), revoked)]);
    }
}
