//! The wire protocol.
