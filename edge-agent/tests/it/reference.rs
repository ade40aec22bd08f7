//! `docs/reference/agent.md` is exactly what the agent's flags generate (clap), so the docs
//! cannot drift from the binary; `OCM_EDGE_BLESS=1` rewrites it.

use ocm_edge_agent::flags::Cli;
use ocm_edge_tests::reference::{check_page, markdown};

const INTRO: &str = "Every flag of `ocm-edge-agent` can also be set with the environment \
variable shown beside it (`OCM_EDGE_...`). See [the agent on k3s](../guides/k3s-agent.md) \
for a deployment and [configuration](configuration.md) for its data directory.";

#[test]
fn the_agent_flag_reference_in_the_docs_is_what_the_flags_generate() {
    let page = markdown::<Cli>("Agent flags: `ocm-edge-agent`", INTRO);
    check_page(
        "reference/agent.md",
        page,
        "OCM_EDGE_BLESS=1 cargo test -p ocm-edge-agent --test it reference",
    );
}
