//! ocm-edge hub (stub until issue 3).
