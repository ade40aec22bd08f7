//! The redb store on a real file: what the agent remembers across restarts.

use ocm_edge_agent::store::{DesiredBundle, Store};
use ocm_edge_agent::work::outbox::{Envelope, StatusRecord};
use ocm_edge_agent::work::resource::ResourceRef;
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::ObjectMeta;
use ocm_edge_schemas::api::work::{Manifest, ManifestBundle, ManifestWorkStatus};
use serde_json::json;

fn desired(id: &str, version: i64) -> DesiredBundle {
    DesiredBundle {
        resource_id: id.into(),
        resource_version: version,
        source: "maestro".into(),
        metadata: Some(ObjectMeta::named("w")),
        generation: version,
        bundle: ManifestBundle {
            manifests: vec![Manifest(
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}),
            )],
            ..ManifestBundle::default()
        },
        deleting: false,
        decided_at: None,
        waiting: None,
    }
}

#[test]
fn bundles_inventory_outbox_and_registration_survive_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cm = ResourceRef::from_manifest(&desired("r1", 1).bundle.manifests[0], 0).unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.put_desired(&desired("r1", 1)).unwrap();
        store.put_desired(&desired("r1", 2)).unwrap();
        store.put_desired(&desired("r2", 5)).unwrap();
        store
            .put_inventory("r1", std::slice::from_ref(&cm))
            .unwrap();
        let record = StatusRecord {
            envelope: Envelope {
                resource_version: 2,
                source: "maestro".into(),
                metadata: None,
            },
            status: ManifestWorkStatus::default(),
            hash: "h".into(),
            pending: true,
            confirmed: false,
            deleted: false,
        };
        store.put_status("r1", Some(&record)).unwrap();
        let mut view = ManagedCluster::new("edge-1");
        view.spec.hub_accepts_client = true;
        store.put_registration(&view).unwrap();
        assert_eq!(store.next_connection_seq().unwrap(), 1);
        assert_eq!(store.next_connection_seq().unwrap(), 2);
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.desired("r1").unwrap().unwrap(), desired("r1", 2));
    assert_eq!(store.all_desired().unwrap().len(), 2);
    assert_eq!(store.inventory("r1").unwrap(), vec![cm]);
    assert!(store.inventory("r2").unwrap().is_empty());
    let status = store.all_status().unwrap();
    assert_eq!(status[0].0, "r1");
    assert_eq!(status[0].1.envelope.resource_version, 2);
    assert!(
        store
            .registration()
            .unwrap()
            .unwrap()
            .spec
            .hub_accepts_client
    );
    assert_eq!(store.connection_seq().unwrap(), 2);
    assert_eq!(
        store.next_connection_seq().unwrap(),
        3,
        "sequence numbers never repeat across restarts"
    );
}

#[test]
fn forgetting_a_bundle_removes_it_and_its_inventory_and_keeps_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.put_desired(&desired("r1", 1)).unwrap();
    store.put_inventory("r1", &[]).unwrap();
    store.put_status("r1", None).unwrap();
    let tombstone = ocm_edge_agent::store::Tombstone {
        resource_version: 1,
        decided_at: chrono::DateTime::from_timestamp(1_800_000_000, 0),
    };
    store.forget("r1", &tombstone).unwrap();
    assert!(store.desired("r1").unwrap().is_none());
    assert!(store.all_desired().unwrap().is_empty());
    // What is left of it survives a restart: a replay of its old spec is still recognised.
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.tombstone("r1").unwrap(), Some(tombstone));
}

#[test]
fn a_second_agent_on_the_same_data_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Store::open(dir.path()).unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("redb"), "{err}");
}

#[test]
fn held_bundles_and_outbox_records_keep_the_metadata_as_json_text_as_earlier_agents_stored_it() {
    // The form agents already deployed wrote: the spec's `metadata` extension as a JSON string.
    let stored = json!({
        "resource_id": "r1", "resource_version": 1, "source": "maestro",
        "metadata_json": r#"{"name":"w","namespace":"edge-1","generation":1}"#,
        "generation": 1, "bundle": {"manifests": []}, "deleting": false
    });
    let bundle: DesiredBundle = serde_json::from_value(stored.clone()).unwrap();
    let meta = bundle.metadata.as_ref().unwrap();
    assert_eq!((meta.name.as_str(), meta.generation), ("w", 1));
    assert_eq!(serde_json::to_value(&bundle).unwrap(), stored);

    let bare: Envelope =
        serde_json::from_value(json!({"resource_version": 2, "source": "s", "metadata_json": ""}))
            .unwrap();
    assert_eq!(bare.metadata, None);
    assert_eq!(serde_json::to_value(&bare).unwrap()["metadata_json"], "");

    let garbled = json!({"resource_version": 2, "source": "s", "metadata_json": "{not json"});
    let err = serde_json::from_value::<Envelope>(garbled).unwrap_err();
    assert!(
        err.to_string().contains("metadata is not ObjectMeta JSON"),
        "{err}"
    );
}
