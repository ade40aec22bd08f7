//! Admin API request and response messages.
