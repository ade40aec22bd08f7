//! Chunked transfers (`ocm_edge_schemas::wire::chunks`): heads and chunks into the store, a
//! whole message out once every chunk is there and the digest matches. The agent enforces its
//! own limits (size, chunk size, number of unfinished transfers) whatever the hub sends.

use chrono::{DateTime, Utc};
use ocm_edge_schemas::validate::MAX_MANIFESTS_BYTES;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::chunks::{self, ChunkInfo, Head, MAX_CHUNKS, TransferOffer};

use crate::registration::trust::TrustError;
use crate::session::Agent;
use crate::store::TransferHead;

/// Largest payload a transfer may announce: the manifests' limit plus room for the bundle's
/// other fields. Anything larger would be refused as a spec anyway; it is refused before a byte
/// of it is stored.
pub const MAX_TRANSFER_BYTES: u32 = 2 * MAX_MANIFESTS_BYTES as u32;
/// Unfinished transfers kept; a new head drops the oldest beyond this.
pub const MAX_UNFINISHED_TRANSFERS: usize = 8;

impl Agent {
    /// What this agent offers in its spec resync request: its chunk size and the chunks it
    /// holds. `None` when chunking is turned off.
    pub(crate) fn transfer_offer(&self) -> Option<TransferOffer> {
        let chunk_bytes = self.cfg.chunk_bytes?;
        let held = match self.store.held_chunks() {
            Ok(h) => h
                .into_iter()
                .map(|(digest, (_, indexes))| (digest, indexes))
                .collect(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read unfinished transfers");
                Default::default()
            }
        };
        Some(TransferOffer { chunk_bytes, held })
    }

    fn refuse_transfer(&self, digest: &str, why: &str) {
        tracing::warn!(
            digest,
            why,
            "chunked transfer refused; nothing of it is kept"
        );
        if let Err(e) = self.store.drop_transfer(digest) {
            tracing::error!(error = %e, "cannot drop a transfer from the store");
        }
        self.bump(|c| c.transfers_refused += 1);
    }

    /// Asks the hub for the rest of an unfinished transfer that has had no new piece for
    /// [`crate::AgentConfig::transfer_stall`] while connected: a spec resync, which lists the
    /// chunks held, so the hub sends only the missing ones.
    pub(crate) fn repair_stalled_transfer(&mut self, t: DateTime<Utc>) {
        let Some(since) = self.last_chunk_at else {
            return;
        };
        let stall = chrono::Duration::from_std(self.cfg.transfer_stall).unwrap_or_default();
        if self.publisher.is_none() || t - since < stall {
            return;
        }
        let unfinished = self.store.held_chunks().map(|h| h.len()).unwrap_or(0);
        if unfinished == 0 {
            self.last_chunk_at = None;
            return;
        }
        tracing::info!(
            unfinished,
            stalled_for = ?(t - since).to_std().unwrap_or_default(),
            "a chunked transfer stalled; asking the hub for the rest"
        );
        self.last_chunk_at = Some(t);
        self.send_spec_resync(t);
    }

    /// Stores a head; returns the whole message when every chunk was already held.
    pub(crate) fn on_transfer_head(
        &mut self,
        msg: &MqttMessage,
        head: Head,
        t: DateTime<Utc>,
    ) -> Option<MqttMessage> {
        // The hub signed the whole message; its head carries everything the signature covers
        // but the payload, whose digest it announces: a forged head is refused before it can
        // touch the store (replace a genuine transfer's head, drop it, or fill the disk).
        let checked = match chunks::head_message(msg) {
            Ok((whole, digest)) => self.trust.check_with_digest(&whole, &digest, t),
            Err(e) => Err(TrustError::Malformed(e.to_string())),
        };
        if let Err(e) = checked {
            tracing::warn!(digest = %head.digest, error = %e, "refused the head of a chunked transfer");
            self.bump(|c| c.refused_signature += 1);
            if let TrustError::UnknownSigner(_) = e {
                self.refused_unknown_signer = true;
            }
            return None;
        }
        if self.cfg.chunk_bytes.is_none() {
            self.refuse_transfer(&head.digest, "this agent does not take chunked transfers");
            return None;
        }
        if head.total > MAX_TRANSFER_BYTES {
            self.refuse_transfer(
                &head.digest,
                &format!(
                    "it announces {} bytes, over this agent's limit of {MAX_TRANSFER_BYTES}",
                    head.total
                ),
            );
            return None;
        }
        let largest = self.largest_chunk(head.total);
        if u64::from(head.count) * u64::from(largest) < u64::from(head.total) {
            self.refuse_transfer(
                &head.digest,
                &format!(
                    "{} chunks of at most {largest} bytes cannot carry {} bytes",
                    head.count, head.total
                ),
            );
            return None;
        }
        let resource_id = msg.user_property("ce-resourceid").unwrap_or_default();
        let version = msg
            .user_property("ce-resourceversion")
            .and_then(|v| v.parse::<i64>().ok());
        if let (Some(version), Ok(Some(held))) = (version, self.store.desired(resource_id))
            && held.resource_version >= version
        {
            // A copy of what the agent already applied (the hub answered a resync that crossed
            // its first send): its chunks are dropped as they come, nothing is stored.
            tracing::debug!(
                work = resource_id,
                version,
                held = held.resource_version,
                "chunked transfer of a version already held ignored"
            );
            let _ = self.store.drop_transfer(&head.digest);
            return None;
        }
        let stored = TransferHead {
            topic: msg.topic.clone(),
            content_type: msg.content_type.clone(),
            user_properties: msg.user_properties.clone(),
            count: head.count,
            total: head.total,
            resource_id: resource_id.to_owned(),
            received_ms: t.timestamp_millis(),
        };
        let held =
            match self
                .store
                .put_transfer_head(&head.digest, &stored, MAX_UNFINISHED_TRANSFERS)
            {
                Ok(dropped) => {
                    for d in dropped {
                        tracing::info!(digest = %d, "dropped the oldest unfinished transfer");
                    }
                    self.store.chunks_held(&head.digest)
                }
                Err(e) => Err(e),
            };
        let held = match held {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "cannot store a transfer head");
                return None;
            }
        };
        tracing::info!(
            work = resource_id,
            bytes = head.total,
            chunks = head.count,
            held,
            "receiving a work in chunks"
        );
        if held >= head.count {
            return self.complete_transfer(&head.digest, &stored);
        }
        self.last_chunk_at = Some(t);
        None
    }

    /// Stores a chunk; returns the whole message when it was the last one missing.
    pub(crate) fn on_chunk(
        &mut self,
        msg: &MqttMessage,
        chunk: ChunkInfo,
        t: DateTime<Utc>,
    ) -> Option<MqttMessage> {
        let head = match self.store.transfer_head(&chunk.digest) {
            Ok(Some(h)) => h,
            Ok(None) => {
                // Its head was refused or dropped, or this chunk is a late duplicate of a
                // finished transfer: nothing to add it to.
                tracing::debug!(digest = %chunk.digest, index = chunk.index, "chunk without a head dropped");
                self.bump(|c| c.chunks_dropped += 1);
                return None;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot read a transfer head");
                return None;
            }
        };
        let largest = self.largest_chunk(head.total);
        if chunk.count != head.count {
            self.refuse_transfer(
                &chunk.digest,
                &format!(
                    "a chunk says {} chunks, its head {}",
                    chunk.count, head.count
                ),
            );
            return None;
        }
        if msg.payload.len() > largest as usize {
            self.refuse_transfer(
                &chunk.digest,
                &format!(
                    "chunk {} is {} bytes, larger than the {largest} this agent asked for",
                    chunk.index,
                    msg.payload.len(),
                ),
            );
            return None;
        }
        self.bump(|c| c.chunks_received += 1);
        let held = match self
            .store
            .put_chunk(&chunk.digest, chunk.index, &msg.payload)
        {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "cannot store a chunk");
                return None;
            }
        };
        tracing::debug!(digest = %chunk.digest, index = chunk.index, held, count = head.count, "chunk stored");
        self.last_chunk_at = Some(t);
        if held >= head.count {
            return self.complete_transfer(&chunk.digest, &head);
        }
        None
    }

    fn complete_transfer(&mut self, digest: &str, head: &TransferHead) -> Option<MqttMessage> {
        let chunks = match self.store.transfer_chunks(digest) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "cannot read a transfer's chunks");
                return None;
            }
        };
        let whole = match chunks::assemble(&head.message(), chunks) {
            Ok(w) => w,
            Err(e) => {
                self.refuse_transfer(digest, &e.to_string());
                return None;
            }
        };
        // This transfer, and any older one of the same work, are done with.
        let mut done = vec![digest.to_owned()];
        if let Ok(all) = self.store.held_chunks() {
            done.extend(
                all.into_iter()
                    .filter(|(d, (rid, _))| d != digest && *rid == head.resource_id)
                    .map(|(d, _)| d),
            );
        }
        for d in done {
            if let Err(e) = self.store.drop_transfer(&d) {
                tracing::error!(error = %e, "cannot drop a finished transfer");
            }
        }
        self.bump(|c| c.transfers_completed += 1);
        tracing::info!(
            work = %head.resource_id,
            bytes = whole.payload.len(),
            chunks = head.count,
            "chunked transfer complete"
        );
        Some(whole)
    }

    /// The largest chunk this agent takes for a payload of `total` bytes: its own chunk size,
    /// or what [`MAX_CHUNKS`] chunks need for that payload.
    fn largest_chunk(&self, total: u32) -> u32 {
        let own = self.cfg.chunk_bytes.unwrap_or(0);
        own.max(total.div_ceil(MAX_CHUNKS))
    }
}
