//! Admin API server inside the hub.
