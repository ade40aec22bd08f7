//! Large works in chunks: an agent that offers a chunk size gets a large spec as a head and
//! chunks, stores them, checks the digest and applies the work; an agent that offers none gets
//! whole messages, as maestro's agents do. On the embedded broker and on Mosquitto.

use ocm_edge_tests::fleet::{Fleet, FleetOptions, has_true_condition};
use ocm_edge_tests::manifests::large_work;
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};

async fn large_works_cross_in_chunks(mut fleet: Fleet) {
    fleet
        .agent("chunked")
        .configure(|c| c.chunk_bytes = Some(4096))
        .start()
        .await;
    fleet
        .agent("whole")
        .configure(|c| c.chunk_bytes = None)
        .start()
        .await;
    fleet.accept_all(&["chunked", "whole"]).await;

    fleet
        .write_work(large_work(&["chunked", "whole"], 120, "v1", false))
        .await;
    for c in ["chunked", "whole"] {
        let w = fleet
            .wait_work(c, "big", "version 1 applied", |w| {
                w.status_version == Some(1) && has_true_condition(&w.conditions, "Applied")
            })
            .await
            .unwrap();
        assert_eq!(w.version, 1);
        let blob = fleet
            .sim(c)
            .get("ConfigMap", "big", "payload")
            .and_then(|o| {
                o.pointer("/data/blob")
                    .and_then(|b| b.as_str())
                    .map(str::len)
            })
            .expect("the ConfigMap is on the cluster");
        assert!(blob > 100 * 1024, "{c}: {blob} bytes of data");
    }
    let chunked = fleet.counters("chunked");
    assert!(
        chunked.chunks_received >= 30,
        "120 KiB in 4 KiB chunks: {chunked:?}"
    );
    assert_eq!(chunked.transfers_completed, 1, "{chunked:?}");
    assert_eq!(chunked.transfers_refused, 0, "{chunked:?}");
    let whole = fleet.counters("whole");
    assert_eq!(whole.chunks_received, 0, "{whole:?}");

    // An update crosses the same way; the old transfer leaves nothing behind.
    fleet
        .write_work(large_work(&["chunked"], 120, "v2", true))
        .await;
    fleet
        .wait_work("chunked", "big", "version 2 applied", |w| {
            w.status_version == Some(2) && has_true_condition(&w.conditions, "Applied")
        })
        .await
        .unwrap();
    let blob = fleet
        .sim("chunked")
        .get("ConfigMap", "big", "payload")
        .and_then(|o| {
            o.pointer("/data/blob")
                .and_then(|b| b.as_str())
                .map(str::to_owned)
        })
        .unwrap();
    assert!(blob.starts_with("v2-"), "the cluster has version 2");
    assert_eq!(fleet.counters("chunked").transfers_completed, 2);
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_large_work_reaches_a_chunking_agent_in_chunks_and_a_maestro_style_agent_whole() {
    large_works_cross_in_chunks(Fleet::start().await).await;
}

#[tokio::test]
async fn a_large_work_crosses_mosquitto_in_chunks() {
    let Some(program) = require_mosquitto("a_large_work_crosses_mosquitto_in_chunks") else {
        return;
    };
    let broker = Mosquitto::start(&program).expect("mosquitto starts");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    large_works_cross_in_chunks(fleet).await;
}
