//! ocm-edge integration test harness (stub until issue 3).
