//! The CLI crate's integration tests, one binary with a module per subject: the real `ocm-edge`
//! binary against a real hub (`cli_commands`, `cli_placement`, `hub_tls`, `demo_runs`), the two
//! halves of admin credentials together (`credentials`), `cluster bootstrap` on a hub's data
//! directory (`bootstrap`), and the generated CLI reference.

mod bootstrap;
mod cli_commands;
mod cli_placement;
mod cli_scoped;
mod credentials;
mod demo_runs;
mod hub_tls;
mod join;
mod reference;
