//! Resync payloads (docs/reference/protocol.md section 6).
//!
//! `spec.resync_request` carries a [`ResourceVersionList`]; `status.resync_request` carries a
//! [`StatusHashList`], batched at most [`MAX_STATUS_HASHES_PER_MESSAGE`] per message as maestro does.

use serde::{Deserialize, Serialize};

/// Maestro's batch size for status hashes; keeps each message well under broker packet limits.
pub const MAX_STATUS_HASHES_PER_MESSAGE: usize = 1000;

/// One bundle the agent holds: `{"resourceID":"...","resourceVersion":N}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResourceVersion {
    #[serde(rename = "resourceID")]
    pub resource_id: String,
    #[serde(rename = "resourceVersion")]
    pub resource_version: i64,
}

/// `{"resourceVersions":[...]}`: "these are the versions I hold".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResourceVersionList {
    // Go encodes a nil slice as null; accept it as empty.
    #[serde(
        rename = "resourceVersions",
        default,
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<ResourceVersion>>")]
    pub resource_versions: Vec<ResourceVersion>,
}

/// One status the hub holds: `{"resourceID":"...","statusHash":"<hex>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatusHash {
    #[serde(rename = "resourceID")]
    pub resource_id: String,
    #[serde(rename = "statusHash")]
    pub status_hash: String,
}

/// `{"statusHashes":[...]}`: "these are the status hashes I hold"; empty means "send everything".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatusHashList {
    #[serde(
        rename = "statusHashes",
        default,
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<StatusHash>>")]
    pub status_hashes: Vec<StatusHash>,
}

impl StatusHashList {
    /// Splits hashes into messages of at most [`MAX_STATUS_HASHES_PER_MESSAGE`]. An empty input gives
    /// one empty list (which asks agents for every status).
    pub fn batches(hashes: Vec<StatusHash>) -> Vec<StatusHashList> {
        if hashes.is_empty() {
            return vec![StatusHashList::default()];
        }
        hashes
            .chunks(MAX_STATUS_HASHES_PER_MESSAGE)
            .map(|c| StatusHashList {
                status_hashes: c.to_vec(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resync_payloads_use_ocm_field_names() {
        let l = ResourceVersionList {
            resource_versions: vec![ResourceVersion {
                resource_id: "r1".into(),
                resource_version: 2,
            }],
        };
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"resourceVersions":[{"resourceID":"r1","resourceVersion":2}]}"#
        );
        let h: StatusHashList =
            serde_json::from_str(r#"{"statusHashes":[{"resourceID":"r1","statusHash":"ab"}]}"#)
                .unwrap();
        assert_eq!(h.status_hashes[0].status_hash, "ab");
        let null: StatusHashList = serde_json::from_str(r#"{"statusHashes":null}"#).unwrap();
        assert!(null.status_hashes.is_empty());
    }

    #[test]
    fn status_hashes_are_batched_by_a_thousand() {
        let hashes: Vec<_> = (0..2500)
            .map(|i| StatusHash {
                resource_id: format!("r{i}"),
                status_hash: "h".into(),
            })
            .collect();
        let b = StatusHashList::batches(hashes);
        assert_eq!(
            b.iter().map(|l| l.status_hashes.len()).collect::<Vec<_>>(),
            vec![1000, 1000, 500]
        );
        assert_eq!(StatusHashList::batches(vec![]).len(), 1);
    }
}
