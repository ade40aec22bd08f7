//! The command-line references in the docs book (`docs/reference/cli.md` for `ocm-edge`,
//! `docs/reference/agent.md` for `ocm-edge-agent`), generated from the clap definitions so they
//! cannot drift: each binary's crate has a `reference` test that checks its page, and
//! `OCM_EDGE_BLESS=1` rewrites it (then review the diff).

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap_markdown_generator::{
    MarkdownOptions, ParameterInfo, SummaryEntryStyle, SummaryOptions, SummaryValueStyle,
    generate_markdown_for_command_with_options,
};
use ocm_edge_schemas::contracts::{self, BLESS_ENV, ContractFile};

/// The `docs/` directory of the repository.
pub fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs")
}

/// The reference page of the command line `C`: `intro` (a paragraph of Markdown), then every
/// command with its options, their defaults, environment variables and possible values, as clap
/// knows them. A global option is listed once, with the command that defines it.
///
/// clap-markdown-generator renders the commands; this function only chooses one line per option.
/// (clap-markdown 0.1, tried side by side on the same definitions, leaves environment variables
/// out, and every agent flag has one.)
pub fn markdown<C: clap::CommandFactory>(title: &str, intro: &str) -> String {
    let mut command = C::command();
    command.build();
    let root = command.get_name().to_owned();
    let globals: BTreeSet<String> = command
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().to_string())
        .collect();
    let entry = SummaryEntryStyle::custom(move |p: &ParameterInfo| {
        let at_root = p.anchor == slug(&format!("{root}-{}", p.name));
        if globals.contains(&p.name) && !at_root {
            return String::new();
        }
        option_line(p)
    });
    let options = MarkdownOptions {
        include_toc: true,
        skip_parameter_details: true,
        include_usage: false,
        summary: SummaryOptions {
            enabled: true,
            value_style: SummaryValueStyle::NamesAndValues,
            include_description: true,
            entry,
        },
        ..MarkdownOptions::default()
    };
    let generated = generate_markdown_for_command_with_options(command, options);
    let body = without_empty_sections(&generated);
    // The generator's title line, then ours: the title, the generated-file note, the intro.
    let body = body.split_once('\n').map_or("", |(_, rest)| rest);
    format!(
        "# {title}\n\n<!-- Generated from the clap definitions by the `reference` tests: do not edit. -->\n\n{intro}\n{}\n",
        body.trim_end()
    )
}

/// One option: its flags and value, what it does, its default, environment variable and values.
fn option_line(p: &ParameterInfo) -> String {
    let mut line = format!("- `{}`", p.display);
    if let Some(description) = &p.description {
        let text: Vec<&str> = description.split_whitespace().collect();
        line.push_str(&format!(": {}", text.join(" ")));
    }
    let mut facts = Vec::new();
    if p.required {
        facts.push("required".to_owned());
    }
    // A switch (no value) has clap's `false` default and `true`/`false` values: nothing to say.
    if p.takes_value && !p.default_values.is_empty() {
        facts.push(format!("default `{}`", p.default_values.join(",")));
    }
    if let Some(env) = &p.env {
        facts.push(format!("env `{env}`"));
    }
    if p.takes_value && !p.possible_values.is_empty() {
        facts.push(format!("one of `{}`", p.possible_values.join("`, `")));
    }
    if !facts.is_empty() {
        line.push_str(&format!(" ({})", facts.join("; ")));
    }
    line
}

/// The anchor slug the generator makes of a command path and option id.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// `markdown` without the "Parameters" headings left with no option under them (a command
/// whose only options are the global ones).
fn without_empty_sections(markdown: &str) -> String {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut kept = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let is_parameters =
            line.starts_with('#') && line.trim_start_matches('#').trim() == "Parameters";
        let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
        if is_parameters && next.is_none_or(|l| !l.starts_with("- `")) {
            continue;
        }
        kept.push(*line);
    }
    let mut text = kept.join("\n");
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text
}

/// Checks that `docs/<path>` holds exactly `contents`, or rewrites it when `OCM_EDGE_BLESS` is
/// set.
///
/// # Panics
/// When it differs (the message names the file and `regenerate`, the command that rewrites it).
pub fn check_page(path: &str, contents: String, regenerate: &str) {
    let root = docs_dir();
    let files = [ContractFile {
        path: path.to_owned(),
        contents,
    }];
    if std::env::var_os(BLESS_ENV).is_some() {
        let changed = contracts::bless(&root, &files, None).expect("the page is written");
        eprintln!("{BLESS_ENV}: rewrote {changed:?}");
    }
    let problems = contracts::check(&root, &files, None, regenerate);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
