//! `ocm-edge demo`.
