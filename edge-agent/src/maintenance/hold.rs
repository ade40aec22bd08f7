//! The local hold: a file in the agent's data dir (`hold`), written by `ocm-edge-agent hold` and
//! removed by `ocm-edge-agent release`, for someone standing at the machine. A file and not the
//! redb store, because the running agent holds the store's only write lock; the agent reads the
//! file at each reconcile (every `--reconcile-seconds`), so a hold or release takes effect within
//! one interval, with or without a broker.
//!
//! A hold file the agent cannot read or parse still holds: whoever wrote it meant to stop
//! updates, and `release` removes it whatever it holds.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// File name of the hold inside the data dir.
pub const HOLD_FILE: &str = "hold";

/// Updates held on site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// When the hold was put.
    pub since: DateTime<Utc>,
    /// Why, as given to `ocm-edge-agent hold --note` (may be empty).
    #[serde(default)]
    pub note: String,
}

/// A hold that cannot be written or removed (the data dir is not writable). Not retryable.
#[derive(Debug, thiserror::Error)]
#[error(
    "hold file {path}: {source}; run the command as the user the agent runs as, with its --data-dir"
)]
pub struct HoldError {
    pub path: String,
    pub source: std::io::Error,
}

/// Path of the hold file in `data_dir`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(HOLD_FILE)
}

/// The hold in force in `data_dir`, if any. `modified` stands for `since` when the file cannot
/// be parsed.
pub fn read(data_dir: &Path) -> Option<Hold> {
    let path = file(data_dir);
    match std::fs::read(&path) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "hold file not understood; updates stay held until `ocm-edge-agent release`");
            let since = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .map(DateTime::<Utc>::from)
                .unwrap_or_default();
            Hold {
                since,
                note: "hold file not understood".to_owned(),
            }
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "hold file unreadable; updates stay held until `ocm-edge-agent release`");
            Some(Hold {
                since: DateTime::<Utc>::default(),
                note: "hold file unreadable".to_owned(),
            })
        }
    }
}

/// Puts a hold in `data_dir` (replacing one in force), written whole or not at all.
///
/// # Errors
/// [`HoldError`] when the file cannot be written.
pub fn put(data_dir: &Path, hold: &Hold) -> Result<(), HoldError> {
    let path = file(data_dir);
    let err = |source| HoldError {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(data_dir).map_err(err)?;
    let tmp = data_dir.join(format!("{HOLD_FILE}.tmp"));
    let json = serde_json::to_vec_pretty(hold).unwrap_or_default();
    std::fs::write(&tmp, json).map_err(err)?;
    std::fs::rename(&tmp, &path).map_err(err)
}

/// Removes the hold in `data_dir`; `Ok(false)` when there was none.
///
/// # Errors
/// [`HoldError`] when the file cannot be removed.
pub fn release(data_dir: &Path) -> Result<bool, HoldError> {
    let path = file(data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(HoldError {
            path: path.display().to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_put_is_read_back_and_release_removes_it_once() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        let hold = Hold {
            since: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            note: "line 3 running".to_owned(),
        };
        put(dir.path(), &hold).unwrap();
        assert_eq!(read(dir.path()), Some(hold));
        assert!(release(dir.path()).unwrap());
        assert!(!release(dir.path()).unwrap());
        assert_eq!(read(dir.path()), None);
    }

    #[test]
    fn a_hold_file_that_is_not_understood_still_holds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(file(dir.path()), "stop").unwrap();
        let hold = read(dir.path()).expect("a garbled hold file lets updates in");
        assert_eq!(hold.note, "hold file not understood");
    }
}
