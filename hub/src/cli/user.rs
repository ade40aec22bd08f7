//! `ocm-edge user create`: signs a credential for the admin API with the hub's CA.
//!
//! It runs on the hub's machine, against the hub's data directory (the CA key never leaves it),
//! like `kubeadm kubeconfig user`; the file it writes is handed to the user, whose CLI signs every
//! request with it.

use std::path::PathBuf;

use chrono::Utc;
use clap::{Args, Subcommand};

use super::CliError;
use crate::admin::messages::Role;
use crate::pki::HubPki;

/// User commands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a credential (client certificate and key) for a user with a role, signed by the
    /// hub's CA. Run it on the hub's machine.
    Create(CreateArgs),
}

/// `user create` options.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The user's name (shown in the hub's log and in refusals).
    pub name: String,
    /// What the user may do: viewer (list, get), operator (also works, placements, cluster
    /// sets, rollouts), admin (also accept and deny clusters).
    #[arg(long, value_parser = parse_role, value_name = "ROLE")]
    pub role: Role,
    /// How long the credential is valid, in days.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650), value_name = "DAYS")]
    pub days: u32,
    /// Where to write the credential (mode 0600) [default: ./NAME-credentials.pem]. An existing
    /// file is not overwritten.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub data: super::DataDirArg,
}

fn parse_role(text: &str) -> Result<Role, String> {
    text.parse()
        .map_err(|e: ocm_edge_schemas::admin::auth::UnknownRole| e.to_string())
}

/// Runs a user command; returns what to print.
///
/// # Errors
/// [`CliError::Usage`] for a name that cannot be a user or an existing output file;
/// [`CliError::Hub`] when the CA cannot be read or the file cannot be written.
pub fn run(cmd: UserCommand) -> Result<String, CliError> {
    let UserCommand::Create(args) = cmd;
    let name = args.name.as_str();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
    {
        return Err(CliError::Usage(format!(
            "user name {name:?}: use 1 to 64 letters, digits, '-', '_', '.' or '@'"
        )));
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{name}-credentials.pem")));
    if out.exists() {
        return Err(CliError::Usage(format!(
            "{} exists: choose another --out, or remove it first",
            out.display()
        )));
    }
    let pki = HubPki::load_existing(&args.data.data_dir.join("pki"))
        .map_err(|e| CliError::Hub(e.to_string()))?;
    let now = Utc::now();
    let validity = chrono::Duration::days(i64::from(args.days));
    let pem = pki
        .issue_user(name, args.role, validity, now)
        .map_err(|e| CliError::Hub(e.to_string()))?;
    crate::pki::write_file(&out, &pem, true).map_err(|e| CliError::Hub(e.to_string()))?;
    Ok(format!(
        "wrote the credential of user {name} (role {role}, valid until {until}) to {path}\n\
         give it to {name}, who uses it with `ocm-edge --credentials {path} ...` or copies it to \
         ~/.config/ocm-edge/credentials.pem\n",
        role = args.role,
        until = (now + validity).format("%Y-%m-%d"),
        path = out.display(),
    ))
}
