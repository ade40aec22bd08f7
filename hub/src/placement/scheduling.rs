//! Scheduling in the core: runs the pure scheduler ([`crate::placement::schedule`]) for every
//! Placement over the accepted clusters (as the hub views them: labels, claims, resources and the
//! availability taints), the cluster sets, bindings, decisions and add-on scores the hub holds, and
//! turns the outcome into records: PlacementDecisions written or forgotten, the placement's
//! status, explanation and requeue time. Nothing is written when nothing changed, so running it
//! after every batch is cheap in records (and skipped entirely when there is no Placement).

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::placement::PlacementDecision;

use crate::core::objects::{ObjectKey, ObjectKind, PlacementRecord, StoredObject};
use crate::core::{Change, HubCore, Record};
use crate::placement::{SchedulingInput, schedule, should_schedule};
use crate::registration::hub_view;

impl HubCore {
    /// The accepted clusters not being removed, as ManagedClusters (what placements choose from).
    pub fn managed_clusters(&self) -> Vec<ManagedCluster> {
        self.clusters()
            .filter(|c| c.is_schedulable())
            .map(hub_view)
            .collect()
    }

    /// Schedules every Placement at `now`; returns the records that change something.
    pub fn reconcile_placements(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        let placements: Vec<&PlacementRecord> = self.objects().placements().collect();
        if placements.is_empty() {
            return change;
        }
        let clusters = self.managed_clusters();
        let sets = self.objects().cluster_sets();
        let bindings = self.objects().bindings();
        let decisions = self.objects().decisions();
        let scores = self.objects().scores();
        for record in placements {
            let placement = &record.placement;
            if !should_schedule(placement) {
                continue;
            }
            let outcome = schedule(
                &SchedulingInput {
                    placement,
                    clusters: &clusters,
                    cluster_sets: &sets,
                    bindings: &bindings,
                    decisions: &decisions,
                    scores: &scores,
                },
                now,
            );
            for d in outcome.stale_decisions(placement, &decisions) {
                change.records.push(Record::ForgetObject(decision_key(d)));
            }
            for d in &outcome.decisions {
                let key = decision_key(d);
                let same = matches!(
                    self.objects().get(&key),
                    Some(StoredObject::Decision(old)) if same_decision(old, d)
                );
                if !same {
                    change
                        .records
                        .push(Record::Object(Box::new(StoredObject::Decision(Box::new(
                            d.clone(),
                        )))));
                }
            }
            let updated = PlacementRecord {
                placement: {
                    let mut p = placement.clone();
                    p.status = outcome.status.clone();
                    p
                },
                explanation: Some(outcome.explanation.clone()),
                requeue_at: outcome.requeue_at,
            };
            if &updated != record {
                change
                    .records
                    .push(Record::Object(Box::new(StoredObject::Placement(Box::new(
                        updated,
                    )))));
            }
        }
        change
    }

    /// The earliest time a Placement must be scheduled again.
    pub fn placements_requeue_at(&self) -> Option<DateTime<Utc>> {
        self.objects()
            .placements()
            .filter_map(|p| p.requeue_at)
            .min()
    }
}

fn decision_key(d: &PlacementDecision) -> ObjectKey {
    ObjectKey::new(
        ObjectKind::PlacementDecision,
        d.metadata.namespace.clone(),
        d.metadata.name.clone(),
    )
}

/// Same decisions and labels (the scheduler does not stamp times into decisions, but be safe
/// about metadata it may leave empty).
fn same_decision(a: &PlacementDecision, b: &PlacementDecision) -> bool {
    a.status == b.status
        && a.metadata.labels == b.metadata.labels
        && a.metadata.owner_references == b.metadata.owner_references
}
