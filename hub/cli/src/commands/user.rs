//! `ocm-edge user create | list | revoke`: credentials for the admin API, signed by the hub's CA.
//!
//! They run on the hub's machine, against the hub's data directory (the CA key never leaves it),
//! like `kubeadm kubeconfig user`; the file `create` writes is handed to the user, whose CLI signs
//! every request with it. Each credential issued is recorded (`DATA_DIR/issued-credentials`) and
//! a revoked one is refused by the running hub at its next request
//! ([`ocm_edge_hub::admin::users`]).

use std::path::{Path, PathBuf};

use chrono::Utc;
use clap::{Args, Subcommand};

use crate::CliError;
use ocm_edge_hub::admin::users;
use ocm_edge_hub::pki::HubPki;
use ocm_edge_schemas::admin::{CredentialScope, Role};

/// User commands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a credential (client certificate and key) for a user with a role, signed by the
    /// hub's CA, optionally limited to namespaces and cluster sets (--namespace, --clusterset).
    /// Run it on the hub's machine.
    Create(CreateArgs),
    /// List the credentials issued on this hub's machine (user, role, serial, expiry, revoked).
    List(crate::DataDirArg),
    /// Revoke every credential of a user (or one, by --serial): the hub refuses it from its next
    /// request on. Run it on the hub's machine.
    Revoke(RevokeArgs),
}

/// `user revoke` options.
#[derive(Debug, Clone, Args)]
pub struct RevokeArgs {
    /// The user whose credentials to revoke (all of them).
    #[arg(required_unless_present = "serial", conflicts_with = "serial")]
    pub name: Option<String>,
    /// Revoke only the credential with this serial number (`ocm-edge user list`), e.g. one
    /// issued on another copy of the data directory.
    #[arg(long, value_name = "HEX")]
    pub serial: Option<String>,
    #[command(flatten)]
    pub data: crate::DataDirArg,
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
    /// Limit a viewer or operator to this namespace (repeat for more): it then writes works only
    /// to clusters of the cluster sets bound into its namespaces, placements and replica sets
    /// only there, and sees only those. An admin cannot be limited.
    #[arg(long = "namespace", value_name = "NS")]
    pub namespaces: Vec<String>,
    /// With --namespace: reach only this cluster set among those bound into the namespaces
    /// (repeat for more); also the only sets it may bind there. Without it the credential
    /// binds none.
    #[arg(long = "clusterset", value_name = "SET", requires = "namespaces")]
    pub cluster_sets: Vec<String>,
    /// How long the credential is valid, in days.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650), value_name = "DAYS")]
    pub days: u32,
    /// Where to write the credential (mode 0600) [default: ./NAME-credentials.pem]. An existing
    /// file is not overwritten. `-` prints it on standard output instead (e.g. out of the hub's
    /// pod: `kubectl exec deploy/ocm-edge-hub -- ocm-edge user create ... --out - > FILE`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub data: crate::DataDirArg,
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
    match cmd {
        UserCommand::Create(args) => create(&args),
        UserCommand::List(data) => list(&data.data_dir),
        UserCommand::Revoke(args) => revoke(&args),
    }
}

fn create(args: &CreateArgs) -> Result<String, CliError> {
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
    let to_stdout = out.as_os_str() == "-";
    if !to_stdout && out.exists() {
        return Err(CliError::Usage(format!(
            "{} exists: choose another --out, or remove it first",
            out.display()
        )));
    }
    let scope = if args.namespaces.is_empty() && args.cluster_sets.is_empty() {
        None
    } else {
        Some(
            CredentialScope::new(
                args.role,
                args.namespaces.iter().cloned(),
                args.cluster_sets.iter().cloned(),
            )
            .map_err(|e| CliError::Usage(e.to_string()))?,
        )
    };
    let pki = HubPki::load_existing(&args.data.data_dir.join("pki"))
        .map_err(|e| CliError::Hub(e.to_string()))?;
    let now = Utc::now();
    let validity = chrono::Duration::days(i64::from(args.days));
    let (pem, record) = users::issue_scoped(&pki, name, args.role, scope.as_ref(), validity, now)
        .map_err(|e| CliError::Hub(e.to_string()))?;
    if !to_stdout {
        ocm_edge_hub::pki::write_file(&out, &pem, true)
            .map_err(|e| CliError::Hub(e.to_string()))?;
    }
    users::record_issued(&args.data.data_dir, &record).map_err(|e| CliError::Hub(e.to_string()))?;
    if to_stdout {
        // The file's contents alone on standard output; what it is on standard error.
        eprintln!(
            "the credential of user {name} (role {role}, serial {serial}, valid until {until}): \
             keep it 0600; use it with `ocm-edge --credentials FILE ...` or copy it to \
             ~/.config/ocm-edge/credentials.pem",
            role = args.role,
            serial = record.serial,
            until = (now + validity).format("%Y-%m-%d"),
        );
        return Ok(pem);
    }
    Ok(format!(
        "wrote the credential of user {name} (role {role}{scope}, serial {serial}, valid until {until}) to {path}\n\
         give it to {name}, who uses it with `ocm-edge --credentials {path} ...` or copies it to \
         ~/.config/ocm-edge/credentials.pem\n",
        role = args.role,
        scope = scope.map_or_else(String::new, |s| format!(" of {s}")),
        serial = record.serial,
        until = (now + validity).format("%Y-%m-%d"),
        path = out.display(),
    ))
}

fn list(data_dir: &Path) -> Result<String, CliError> {
    let hub = |e: ocm_edge_hub::pki::PkiError| CliError::Hub(e.to_string());
    let issued = users::issued(data_dir).map_err(hub)?;
    let revoked = users::revoked_serials(data_dir).map_err(hub)?;
    if issued.is_empty() {
        return Ok(format!(
            "no credential was issued on {} (`ocm-edge user create NAME --role ROLE`)\n",
            data_dir.display()
        ));
    }
    let now = Utc::now();
    let mut table =
        crate::output::new_table(["USER", "ROLE", "SCOPE", "SERIAL", "EXPIRES", "STATE"]);
    for c in &issued {
        let state = if revoked.contains(&c.serial) {
            "revoked"
        } else if c.not_after <= now {
            "expired"
        } else {
            "valid"
        };
        table.add_row(vec![
            c.user.clone(),
            c.role.clone(),
            c.scope
                .as_ref()
                .map_or_else(|| "-".to_owned(), ToString::to_string),
            c.serial.clone(),
            c.not_after.format("%Y-%m-%d").to_string(),
            state.to_owned(),
        ]);
    }
    Ok(table.to_string() + "\n")
}

fn revoke(args: &RevokeArgs) -> Result<String, CliError> {
    let what = match (&args.name, &args.serial) {
        (_, Some(serial)) => users::Revoke::Serial(serial),
        (Some(name), None) => users::Revoke::User(name),
        (None, None) => {
            return Err(CliError::Usage(
                "name the user to revoke, or give --serial".to_owned(),
            ));
        }
    };
    let revoked = users::revoke(&args.data.data_dir, &what, Utc::now()).map_err(|e| match e {
        users::RevokeError::Usage(reason) => CliError::Usage(reason),
        users::RevokeError::Io(e) => CliError::Hub(e.to_string()),
    })?;
    let whom = match what {
        users::Revoke::User(name) => format!("user {name}"),
        users::Revoke::Serial(serial) => format!("serial {serial}"),
    };
    if revoked.is_empty() {
        return Ok(format!("every credential of {whom} was already revoked\n"));
    }
    Ok(format!(
        "revoked {n} credential(s) of {whom} ({serials}): the hub refuses them from its next request on\n",
        n = revoked.len(),
        serials = revoked.join(", "),
    ))
}
