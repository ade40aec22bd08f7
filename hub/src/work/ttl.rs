//! `deleteOption.ttlSecondsAfterFinished`, as OCM's ManifestWorkGarbageCollection controller:
//! a work whose status is `Complete=True` (its condition rules said so, on the agent) is
//! deleted `ttlSecondsAfterFinished` after the condition's lastTransitionTime, at once when the
//! TTL is zero or less. The deletion is the ordinary handshake (`delete_work`). Pure: `now` is an
//! argument, and the hub task wakes at [`HubCore::finished_works_requeue_at`].

use chrono::{DateTime, Duration, Utc};
use ocm_edge_schemas::api::meta::{ConditionStatus, find_condition};
use ocm_edge_schemas::api::work::WORK_COMPLETE;

use crate::core::{Change, HubCore, WorkRecord};

/// When `work` is to be deleted for its TTL: `None` without a TTL, while it is not Complete,
/// once it is being deleted, or when the TTL ends past the end of time (`i64::MAX` seconds is
/// a valid TTL: it never ends).
pub fn ttl_deadline(work: &WorkRecord) -> Option<DateTime<Utc>> {
    if work.deleting.is_some() {
        return None;
    }
    let ttl = work
        .spec
        .delete_option
        .as_ref()?
        .ttl_seconds_after_finished?;
    let complete = find_condition(&work.status.as_ref()?.conditions, WORK_COMPLETE)?;
    if complete.status != ConditionStatus::True {
        return None;
    }
    let since = complete.last_transition_time?.as_datetime();
    since.checked_add_signed(Duration::try_seconds(ttl.max(0))?)
}

impl HubCore {
    /// Deletes every work whose TTL after finishing has run out by `now`.
    pub fn expire_finished_works(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        for work in self.works() {
            if ttl_deadline(work).is_some_and(|d| d <= now) {
                tracing::info!(
                    cluster = %work.key.cluster,
                    work = %work.key.name,
                    "deleting a completed work after its ttlSecondsAfterFinished"
                );
                if let Ok(deleted) = self.delete_work(&work.key, now) {
                    change.extend(deleted);
                }
            }
        }
        change
    }

    /// The earliest TTL deadline of a completed work, when there is one.
    pub fn finished_works_requeue_at(&self) -> Option<DateTime<Utc>> {
        self.works().filter_map(ttl_deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ocm_edge_schemas::api::meta::{Condition, Time};
    use ocm_edge_schemas::api::work::{DeleteOption, ManifestWorkStatus};
    use ocm_edge_schemas::wire::event_type::Action;

    use super::*;
    use crate::core::WorkKey;
    use crate::core::testkit::*;

    fn core_with_ttl_work(ttl: i64) -> (HubCore, String) {
        let mut core = accepted_core(&["a"]);
        let mut input = work_input("job", 1);
        Arc::make_mut(&mut input.spec).delete_option = Some(DeleteOption {
            ttl_seconds_after_finished: Some(ttl),
            ..DeleteOption::default()
        });
        let (c, _) = core
            .write_works(&input, &clusters(&["a"]), false, t(0))
            .unwrap();
        core.apply(&c.records);
        let id = core
            .work(&WorkKey::new("a", "job"))
            .unwrap()
            .resource_id
            .clone();
        (core, id)
    }

    fn complete_since(secs: i64, status: ConditionStatus) -> ManifestWorkStatus {
        let mut s = applied();
        let mut c = Condition::new("Complete", status, "ConditionRulesAggregated", "");
        c.last_transition_time = Some(Time::new(t(secs)));
        s.conditions.push(c);
        s
    }

    #[test]
    fn a_completed_work_is_deleted_once_its_ttl_after_finishing_has_run_out() {
        let (mut core, id) = core_with_ttl_work(60);
        let key = WorkKey::new("a", "job");
        // Applied but not complete: nothing to wait for.
        step(&mut core, status_input("a", &id, 1, "1", applied()), 5);
        assert_eq!(core.finished_works_requeue_at(), None);

        step(
            &mut core,
            status_input("a", &id, 1, "2", complete_since(10, ConditionStatus::True)),
            11,
        );
        assert_eq!(core.finished_works_requeue_at(), Some(t(70)));
        assert_eq!(core.fleet_requeue_at(), Some(t(70)));
        assert!(core.expire_finished_works(t(69)).is_empty());

        let change = core.expire_finished_works(t(70));
        let sent = specs(&change);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].action, Action::DeleteRequest);
        core.apply(&change.records);
        assert!(core.work(&key).unwrap().deleting.is_some());
        // Being deleted, it is no longer waited for nor deleted again.
        assert_eq!(core.finished_works_requeue_at(), None);
        assert!(core.expire_finished_works(t(80)).is_empty());
    }

    #[test]
    fn a_work_not_complete_or_without_a_ttl_is_kept() {
        let (mut core, id) = core_with_ttl_work(0);
        step(
            &mut core,
            status_input("a", &id, 1, "1", complete_since(10, ConditionStatus::False)),
            11,
        );
        assert!(core.expire_finished_works(t(10_000)).is_empty());

        let mut plain = core_with_work("a", "web");
        let id = plain
            .work(&WorkKey::new("a", "web"))
            .unwrap()
            .resource_id
            .clone();
        step(
            &mut plain,
            status_input("a", &id, 1, "1", complete_since(10, ConditionStatus::True)),
            11,
        );
        assert!(plain.expire_finished_works(t(10_000)).is_empty());
        assert_eq!(plain.finished_works_requeue_at(), None);
    }

    /// A TTL past the end of time (a scoped operator may write any int64) never ends: the work
    /// is kept and the hub's fleet pass neither panics nor wakes up for it.
    #[test]
    fn a_ttl_past_the_end_of_time_keeps_the_work() {
        for ttl in [i64::MAX, 9_300_000_000_000_000, 8_300_000_000_000] {
            let (mut core, id) = core_with_ttl_work(ttl);
            step(
                &mut core,
                status_input("a", &id, 1, "1", complete_since(10, ConditionStatus::True)),
                11,
            );
            assert_eq!(core.finished_works_requeue_at(), None, "{ttl}");
            assert_eq!(core.fleet_requeue_at(), None, "{ttl}");
            assert!(core.expire_finished_works(t(10_000)).is_empty(), "{ttl}");
        }
    }

    #[test]
    fn a_zero_ttl_deletes_the_work_as_soon_as_it_is_complete() {
        let (mut core, id) = core_with_ttl_work(0);
        step(
            &mut core,
            status_input("a", &id, 1, "1", complete_since(10, ConditionStatus::True)),
            11,
        );
        let change = core.expire_finished_works(t(11));
        assert_eq!(specs(&change)[0].action, Action::DeleteRequest);
    }
}
