//! OCM API types.
