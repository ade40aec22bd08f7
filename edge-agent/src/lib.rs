//! ocm-edge edge agent (stub until issue 3).
