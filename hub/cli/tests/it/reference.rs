//! `docs/reference/cli.md` is exactly what the `ocm-edge` command line generates (clap), so the
//! docs cannot drift from the binary; `OCM_EDGE_BLESS=1` rewrites it.

use ocm_edge_cli::Cli;
use ocm_edge_tests::reference::{check_page, markdown};

const INTRO: &str = "Every command reaches the hub through the broker (MQTT 5 \
request/response), so `ocm-edge` needs only the broker's address. The options of `ocm-edge` \
itself, listed first, are global: every command takes them. Every error exits non-zero with `error: ...` saying what is wrong, where, and \
how to fix it; a refused command changes nothing. See [security](../security.md) for \
credentials and roles.";

#[test]
fn the_cli_reference_in_the_docs_is_what_the_command_line_generates() {
    let page = markdown::<Cli>("CLI reference: `ocm-edge`", INTRO);
    check_page(
        "reference/cli.md",
        page,
        "OCM_EDGE_BLESS=1 cargo test -p ocm-edge-cli --test it reference",
    );
}
