//! Admin API client used by the CLI.
