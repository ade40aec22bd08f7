//! The hub's keys given from outside its data directory (`ocm-edge hub --pki-from DIR`, a
//! Kubernetes Secret mounted read-only): the CA agents pin and the key of join tokens, copied
//! into `DATA_DIR/pki` at start where it has none, so the hub and the commands run beside it
//! (`token create`, `user create`, `cluster bootstrap`) read them where they always do.
//!
//! The data directory keeps the keys the fleet trusts: a seed that differs from what it holds is
//! refused, never copied over it (a new CA would cut every agent off), and nothing is written
//! then.

use std::path::{Path, PathBuf};

use super::{CA_CERT, CA_KEY, PkiError, create_private_dir, write_file};
use crate::registration::join_token::TOKEN_KEY_FILE;

/// Copies the hub's CA (`ca.pem` with `ca-key.pem`, both or neither) and the join-token key
/// (`join-token-key`) from `from` into `pki` where `pki` lacks them; returns the files copied.
///
/// # Errors
/// [`PkiError::HalfCa`] when `from` holds one CA file of two; [`PkiError::SeedDiffers`] when
/// `pki` already holds another file of the same name; [`PkiError::Io`] for a file that cannot be
/// read or written. Nothing is written when an error is returned.
pub fn seed(pki: &Path, from: &Path) -> Result<Vec<&'static str>, PkiError> {
    let given = |name: &str| from.join(name).is_file();
    let ca = match (given(CA_CERT), given(CA_KEY)) {
        (true, true) => true,
        (false, false) => false,
        (cert, _) => {
            let (present, missing) = if cert {
                (CA_CERT, CA_KEY)
            } else {
                (CA_KEY, CA_CERT)
            };
            return Err(PkiError::HalfCa {
                present: from.join(present),
                missing: from.join(missing),
            });
        }
    };
    // The key before its certificate, as the hub writes a CA it creates: a certificate without
    // its key would stop the next start.
    let names: Vec<&'static str> = [(CA_KEY, ca), (CA_CERT, ca), (TOKEN_KEY_FILE, true)]
        .into_iter()
        .filter(|(name, wanted)| *wanted && given(name))
        .map(|(name, _)| name)
        .collect();
    // Every file is checked before any is written.
    let mut copies = Vec::new();
    for name in names {
        let text = read(&from.join(name))?;
        let target = pki.join(name);
        if target.exists() {
            if read(&target)?.trim() != text.trim() {
                return Err(PkiError::SeedDiffers {
                    target,
                    seed: from.join(name),
                });
            }
        } else {
            copies.push((name, target, text));
        }
    }
    if !copies.is_empty() {
        create_private_dir(pki)?;
    }
    let mut copied = Vec::new();
    for (name, target, text) in copies {
        write_file(&target, &text, name != CA_CERT)?;
        copied.push(name);
    }
    Ok(copied)
}

fn read(path: &PathBuf) -> Result<String, PkiError> {
    std::fs::read_to_string(path).map_err(|e| PkiError::Io {
        path: path.clone(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::HubPki;
    use crate::registration::join_token::JoinTokens;

    fn now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-28T10:00:00Z".parse().unwrap()
    }

    /// A data directory with a hub's CA and token key, as a Secret would hold them.
    fn keys() -> (tempfile::TempDir, HubPki) {
        let dir = tempfile::tempdir().unwrap();
        let pki = HubPki::load_or_create(&dir.path().join("pki"), now()).unwrap();
        JoinTokens::load_or_create(dir.path()).unwrap();
        (dir, pki)
    }

    #[test]
    fn a_seeded_data_directory_has_the_given_ca_and_token_key_and_makes_no_other() {
        let (given, given_pki) = keys();
        let data = tempfile::tempdir().unwrap();
        let pki = data.path().join("pki");
        let copied = seed(&pki, &given.path().join("pki")).unwrap();
        assert_eq!(copied, [CA_KEY, CA_CERT, TOKEN_KEY_FILE]);
        let loaded = HubPki::load_or_create(&pki, now()).unwrap();
        assert_eq!(loaded.pin(), given_pki.pin(), "the hub uses the given CA");
        // A token made with the given key is one this data directory's key takes.
        let token = JoinTokens::load_or_create(given.path())
            .unwrap()
            .create(chrono::Duration::hours(1), now())
            .unwrap();
        assert!(
            JoinTokens::load_or_create(data.path())
                .unwrap()
                .check(&token.token, now())
                .is_ok()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |n: &str| std::fs::metadata(pki.join(n)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(CA_KEY), 0o600);
            assert_eq!(mode(TOKEN_KEY_FILE), 0o600);
        }
        // Seeding again (every start) finds the same files and copies nothing.
        assert!(seed(&pki, &given.path().join("pki")).unwrap().is_empty());
    }

    #[test]
    fn a_seed_differing_from_the_data_directorys_ca_is_refused_and_nothing_is_written() {
        let (given, _) = keys();
        let (data, data_pki) = keys();
        std::fs::remove_file(data.path().join("pki").join(TOKEN_KEY_FILE)).unwrap();
        let e = seed(&data.path().join("pki"), &given.path().join("pki")).unwrap_err();
        assert!(matches!(e, PkiError::SeedDiffers { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("ca-key.pem") && text.contains("agents"),
            "{text}"
        );
        assert!(
            !data.path().join("pki").join(TOKEN_KEY_FILE).exists(),
            "no file is copied when one is refused"
        );
        let still = HubPki::load_or_create(&data.path().join("pki"), now()).unwrap();
        assert_eq!(still.pin(), data_pki.pin());
    }

    #[test]
    fn half_a_ca_in_the_seed_is_refused_and_a_token_key_alone_is_taken() {
        let (given, _) = keys();
        let from = given.path().join("pki");
        std::fs::remove_file(from.join(CA_KEY)).unwrap();
        let data = tempfile::tempdir().unwrap();
        let e = seed(&data.path().join("pki"), &from).unwrap_err();
        assert!(matches!(e, PkiError::HalfCa { .. }), "{e}");
        assert!(!data.path().join("pki").exists());
        std::fs::remove_file(from.join(CA_CERT)).unwrap();
        assert_eq!(
            seed(&data.path().join("pki"), &from).unwrap(),
            [TOKEN_KEY_FILE]
        );
    }
}
