//! Rollout settings read as OCM means them.

use std::time::Duration;

use ocm_edge_schemas::api::replicaset::{
    RolloutConfig, RolloutStrategy, RolloutType, parse_go_duration,
};

#[test]
fn go_durations_parse_like_time_parse_duration() {
    assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
    assert_eq!(parse_go_duration("5m"), Some(Duration::from_secs(300)));
    assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
    for bad in ["", "5", "m", "5d", "-5s", "1h x"] {
        assert_eq!(parse_go_duration(bad), None, "{bad:?}");
    }
}

#[test]
fn progress_deadline_none_means_no_deadline() {
    let config = |deadline: Option<&str>| RolloutConfig {
        progress_deadline: deadline.map(str::to_string),
        ..Default::default()
    };
    assert_eq!(config(None).progress_deadline_duration(), Ok(None));
    assert_eq!(config(Some("None")).progress_deadline_duration(), Ok(None));
    assert_eq!(
        config(Some("10m")).progress_deadline_duration(),
        Ok(Some(Duration::from_secs(600)))
    );
    assert_eq!(config(Some("soon")).progress_deadline_duration(), Err(()));
    assert_eq!(
        RolloutConfig::default().min_success_duration(),
        Some(Duration::ZERO)
    );
}

#[test]
fn an_unset_rollout_strategy_means_all_and_is_not_written() {
    let strategy = RolloutStrategy::default();
    assert_eq!(strategy.effective_type(), RolloutType::All);
    assert!(strategy.is_empty());
    let reference = ocm_edge_schemas::api::replicaset::LocalPlacementReference {
        name: "p".into(),
        rollout_strategy: strategy,
    };
    assert_eq!(
        serde_json::to_value(reference).unwrap(),
        serde_json::json!({"name": "p"})
    );
}
