//! The `ocm-edge` command line.
