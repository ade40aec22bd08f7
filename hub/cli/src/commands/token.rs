//! `ocm-edge token create | revoke`: join tokens, which the hub's embedded broker wants from a
//! cluster it has not accepted yet ([`ocm_edge_hub::registration::join_token`]).
//!
//! Like `ocm-edge user create`, they run on the hub's machine, against the hub's data directory
//! (the token key never leaves it); a running hub takes a new token at once and sees a
//! revocation at the next login that uses the token.

use chrono::Utc;
use clap::{Args, Subcommand};

use crate::CliError;
use ocm_edge_hub::pki::HubPki;
use ocm_edge_hub::registration::join_token::{self, JoinTokens};

/// Token commands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a join token for agents of clusters the hub has not accepted yet
    /// (`ocm-edge-agent --token`). Run it on the hub's machine.
    Create(CreateArgs),
    /// Revoke a join token by its id (the second part of oet1.ID.EXPIRES.MAC): no cluster joins
    /// with it any more. Clusters already accepted are not affected.
    Revoke(RevokeArgs),
}

/// `token create` options.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// How long the token lets clusters ask to join (e.g. 30m, 24h, 7d; at most 30 days).
    #[arg(long, default_value = "24h", value_parser = parse_ttl, value_name = "DURATION")]
    pub ttl: chrono::Duration,
    #[command(flatten)]
    pub data: crate::DataDirArg,
}

/// `token revoke` options.
#[derive(Debug, Clone, Args)]
pub struct RevokeArgs {
    /// The token's id (8 hex digits).
    pub id: String,
    #[command(flatten)]
    pub data: crate::DataDirArg,
}

/// A join token's lifetime: a number and a unit (m, h, d), 1 minute to 30 days.
pub(crate) fn parse_ttl(text: &str) -> Result<chrono::Duration, String> {
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let n: i64 = number
        .parse()
        .map_err(|_| format!("{text:?}: use a number and a unit, e.g. 30m, 24h or 7d"))?;
    let ttl = match unit {
        "m" => chrono::Duration::minutes(n),
        "h" => chrono::Duration::hours(n),
        "d" => chrono::Duration::days(n),
        _ => return Err(format!("{text:?}: the unit is m, h or d (e.g. 24h)")),
    };
    if ttl <= chrono::Duration::zero() || ttl > chrono::Duration::days(30) {
        return Err(format!("{text:?}: a token lives 1 minute to 30 days"));
    }
    Ok(ttl)
}

/// Runs a token command; returns what to print.
///
/// # Errors
/// [`CliError::Hub`] when the hub's data directory has no CA (no hub ever started there) or a
/// file cannot be read or written; [`CliError::Usage`] for an id that is no token id.
pub fn run(cmd: TokenCommand) -> Result<String, CliError> {
    match cmd {
        TokenCommand::Create(args) => {
            let data_dir = &args.data.data_dir;
            // The CA proves this is a hub's data directory, and its pin goes with the token.
            let pki = HubPki::load_existing(&data_dir.join("pki"))
                .map_err(|e| CliError::Hub(e.to_string()))?;
            let tokens =
                JoinTokens::load_or_create(data_dir).map_err(|e| CliError::Hub(e.to_string()))?;
            let token = tokens
                .create(args.ttl, Utc::now())
                .map_err(|e| CliError::Hub(e.to_string()))?;
            Ok(format!(
                "join token {id} (valid until {until}; revoke it with `ocm-edge token revoke {id}`):\n\
                 {token}\n\
                 on each edge cluster: ocm-edge-agent --cluster-name NAME --broker mqtts://HUB:8883 \
                 --broker-ca-pin {pin} --token {token}\n\
                 (or OCM_EDGE_JOIN_TOKEN from a Secret; then `ocm-edge cluster accept NAME` here)\n",
                id = token.id,
                until = token.expires.format("%Y-%m-%d %H:%M UTC"),
                token = token.token,
                pin = pki.pin(),
            ))
        }
        TokenCommand::Revoke(args) => {
            join_token::revoke(&args.data.data_dir, &args.id)
                .map_err(|e| CliError::Usage(e.to_string()))?;
            Ok(format!(
                "revoked join token {id}: no cluster logs in with it any more (the hub drops \
                 the sessions of clusters not yet accepted that got in with it within 30 s; \
                 clusters already accepted keep working)\n",
                id = args.id
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ttl_is_a_number_and_a_unit_within_30_days() {
        assert_eq!(parse_ttl("24h"), Ok(chrono::Duration::hours(24)));
        assert_eq!(parse_ttl("30m"), Ok(chrono::Duration::minutes(30)));
        assert_eq!(parse_ttl("7d"), Ok(chrono::Duration::days(7)));
        for bad in ["", "24", "h", "0h", "-1h", "31d", "2w", "1.5h"] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
    }
}
