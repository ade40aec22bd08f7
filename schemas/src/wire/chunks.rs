//! Large messages in chunks: how a work of hundreds of KiB crosses a slow, lossy link (a 2G modem
//! at 64 kbit/s) and survives the link dropping half-way. An ocm-edge extension to the binding,
//! used only with an agent that offers it, so maestro and OCM agents never see a chunk.
//!
//! # Negotiation
//! An ocm-edge agent's birth (presence online, the first message of every connection) and its
//! `spec.resync_request` carry two extension attributes (Go peers keep unknown extensions and
//! ignore them):
//! - `ocmedgechunkbytes`: the largest chunk payload the agent takes, e.g. `16384`. The hub splits
//!   a message to that agent whose payload is larger.
//! - `ocmedgeheldchunks`: the chunks of unfinished transfers the agent holds, as
//!   `<digest>:<ranges>` joined by `;`, ranges like `0-11,14`. The hub does not send those again.
//!
//! # On the wire
//! A split message becomes a *head* and its *chunks*, in that order, on the message's own topic:
//! - the head is the original message with an empty payload, content type
//!   [`HEAD_CONTENT_TYPE`], the original content type in the user property
//!   [`CONTENT_TYPE_PROPERTY`], and [`HEAD_PROPERTY`] = `<digest> <count> <total>`;
//! - chunk `i` (`0..count`) has content type [`CHUNK_CONTENT_TYPE`], [`CHUNK_PROPERTY`] =
//!   `<digest> <i> <count>`, and bytes `i x size .. (i+1) x size` of the payload.
//!
//! `digest` is the SHA-256 of the whole payload, lowercase hex: the payload of a work's spec is
//! the same bytes whenever the same version is sent (the CloudEvent attributes, which change per
//! send, travel on the head), so a resent transfer names the same chunks and the agent keeps what
//! it has. The receiver checks sizes and the digest before it uses the assembled message.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use cloudevents::Event;
use cloudevents::event::ExtensionValue;
use sha2::{Digest, Sha256};

use super::mqtt::MqttMessage;

/// User property of a head: `<digest> <count> <total bytes>`.
pub const HEAD_PROPERTY: &str = "ocm-edge-chunked";
/// User property of a chunk: `<digest> <index> <count>`.
pub const CHUNK_PROPERTY: &str = "ocm-edge-chunk";
/// User property of a head: the assembled message's content type.
pub const CONTENT_TYPE_PROPERTY: &str = "ocm-edge-content-type";
/// Content type of a head (so that nobody reads it as the event itself).
pub const HEAD_CONTENT_TYPE: &str = "application/vnd.ocm-edge.chunked-head";
/// Content type of a chunk.
pub const CHUNK_CONTENT_TYPE: &str = "application/vnd.ocm-edge.chunk";
/// Extension of a spec resync request: the largest chunk payload the agent takes.
pub const CHUNK_BYTES_EXTENSION: &str = "ocmedgechunkbytes";
/// Extension of a spec resync request: the chunks of unfinished transfers the agent holds.
pub const HELD_CHUNKS_EXTENSION: &str = "ocmedgeheldchunks";
/// Smallest chunk size an offer may ask for.
pub const MIN_CHUNK_BYTES: u32 = 1024;
/// Most chunks one message may be split into (a 1 MiB payload in 1 KiB chunks fits).
pub const MAX_CHUNKS: u32 = 1024;
/// Most unfinished transfers an offer may list (the rest are ignored).
pub const MAX_OFFERED_TRANSFERS: usize = 64;

/// Why a head, a chunk, an offer or an assembly is refused. Not retryable: the sender is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// A property or extension that does not parse.
    #[error("{what} {value:?} is malformed: {reason}")]
    Malformed {
        /// Which property or extension.
        what: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// The assembled bytes are not what the head announced.
    #[error(
        "transfer {digest}: the assembled payload is {got} bytes with digest {got_digest}, the head announced {total} bytes"
    )]
    Mismatch {
        /// Announced digest.
        digest: String,
        /// Announced size.
        total: u32,
        /// Assembled size.
        got: usize,
        /// Digest of what was assembled.
        got_digest: String,
    },
}

fn malformed(what: &'static str, value: &str, reason: impl Into<String>) -> ChunkError {
    ChunkError::Malformed {
        what,
        value: value.to_owned(),
        reason: reason.into(),
    }
}

/// The SHA-256 of a payload, lowercase hex.
pub fn digest(payload: &[u8]) -> String {
    hex::encode(Sha256::digest(payload))
}

fn check_digest(what: &'static str, value: &str, d: &str) -> Result<(), ChunkError> {
    if d.len() == 64
        && d.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(())
    } else {
        Err(malformed(
            what,
            value,
            "the digest is not 64 lowercase hex digits",
        ))
    }
}

/// What a head announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// SHA-256 of the whole payload.
    pub digest: String,
    /// Number of chunks.
    pub count: u32,
    /// Payload bytes in total.
    pub total: u32,
}

/// What a chunk says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkInfo {
    /// The transfer's digest.
    pub digest: String,
    /// This chunk's index, `0..count`.
    pub index: u32,
    /// Number of chunks.
    pub count: u32,
}

/// A received message: whole, a head, or a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// An ordinary message.
    Whole,
    /// The head of a split message.
    Head(Head),
    /// One chunk of a split message.
    Chunk(ChunkInfo),
}

fn numbers<const N: usize>(
    what: &'static str,
    value: &str,
) -> Result<(String, [u32; N]), ChunkError> {
    let mut parts = value.split(' ');
    let digest = parts.next().unwrap_or_default().to_owned();
    check_digest(what, value, &digest)?;
    let mut out = [0u32; N];
    for slot in &mut out {
        let part = parts
            .next()
            .ok_or_else(|| malformed(what, value, format!("expected {} numbers", N)))?;
        *slot = part
            .parse()
            .map_err(|e| malformed(what, value, format!("{part:?} is not a number ({e})")))?;
    }
    if parts.next().is_some() {
        return Err(malformed(what, value, "too many fields"));
    }
    Ok((digest, out))
}

/// Whether a message is whole, a head or a chunk, with what it announces checked for sense
/// (counts within [`MAX_CHUNKS`], an index below its count, chunks not larger than their total).
///
/// # Errors
/// [`ChunkError::Malformed`] for a property that does not parse or makes no sense.
pub fn classify(msg: &MqttMessage) -> Result<Piece, ChunkError> {
    if let Some(value) = msg.user_property(HEAD_PROPERTY) {
        let (digest, [count, total]) = numbers(HEAD_PROPERTY, value)?;
        if count == 0 || count > MAX_CHUNKS {
            return Err(malformed(
                HEAD_PROPERTY,
                value,
                format!("{count} chunks is outside 1..={MAX_CHUNKS}"),
            ));
        }
        if total < count {
            return Err(malformed(HEAD_PROPERTY, value, "fewer bytes than chunks"));
        }
        return Ok(Piece::Head(Head {
            digest,
            count,
            total,
        }));
    }
    if let Some(value) = msg.user_property(CHUNK_PROPERTY) {
        let (digest, [index, count]) = numbers(CHUNK_PROPERTY, value)?;
        if count == 0 || count > MAX_CHUNKS || index >= count {
            return Err(malformed(
                CHUNK_PROPERTY,
                value,
                format!("index {index} of {count} chunks (at most {MAX_CHUNKS})"),
            ));
        }
        return Ok(Piece::Chunk(ChunkInfo {
            digest,
            index,
            count,
        }));
    }
    Ok(Piece::Whole)
}

/// Splits `msg` into a head and chunks of at most `chunk_bytes` bytes, leaving out the chunks in
/// `held` (the receiver has them). A payload that fits in one chunk is returned as it is.
/// `chunk_bytes` is raised so that no payload needs more than [`MAX_CHUNKS`] chunks.
pub fn split(msg: MqttMessage, chunk_bytes: u32, held: &BTreeSet<u32>) -> Vec<MqttMessage> {
    let total = msg.payload.len();
    let min_size = total.div_ceil(MAX_CHUNKS as usize);
    let size = (chunk_bytes.max(MIN_CHUNK_BYTES) as usize).max(min_size);
    if total <= size {
        return vec![msg];
    }
    let count = total.div_ceil(size);
    let digest = digest(&msg.payload);
    let mut out = Vec::with_capacity(count + 1 - held.len().min(count));
    let mut head = MqttMessage {
        topic: msg.topic.clone(),
        payload: Vec::new(),
        content_type: Some(HEAD_CONTENT_TYPE.to_owned()),
        user_properties: msg.user_properties.clone(),
    };
    if let Some(ct) = &msg.content_type {
        head.user_properties
            .push((CONTENT_TYPE_PROPERTY.to_owned(), ct.clone()));
    }
    head.user_properties.push((
        HEAD_PROPERTY.to_owned(),
        format!("{digest} {count} {total}"),
    ));
    out.push(head);
    for (index, bytes) in msg.payload.chunks(size).enumerate() {
        let index = index as u32;
        if held.contains(&index) {
            continue;
        }
        out.push(MqttMessage {
            topic: msg.topic.clone(),
            payload: bytes.to_vec(),
            content_type: Some(CHUNK_CONTENT_TYPE.to_owned()),
            user_properties: vec![(
                CHUNK_PROPERTY.to_owned(),
                format!("{digest} {index} {count}"),
            )],
        });
    }
    out
}

/// The message a head stands for, without its payload (topic, original content type and
/// properties), and the payload's SHA-256 the head announces: enough to check the sender's
/// signature ([`super::signature::signed_bytes_with_digest`]) before storing anything.
///
/// # Errors
/// [`ChunkError::Malformed`] when `head` is not a head.
pub fn head_message(head: &MqttMessage) -> Result<(MqttMessage, [u8; 32]), ChunkError> {
    let Piece::Head(announced) = classify(head)? else {
        return Err(malformed(HEAD_PROPERTY, "", "not the head of a transfer"));
    };
    let mut digest = [0u8; 32];
    hex::decode_to_slice(&announced.digest, &mut digest)
        .map_err(|e| malformed(HEAD_PROPERTY, &announced.digest, e.to_string()))?;
    Ok((
        MqttMessage {
            topic: head.topic.clone(),
            payload: Vec::new(),
            content_type: head.user_property(CONTENT_TYPE_PROPERTY).map(str::to_owned),
            user_properties: head
                .user_properties
                .iter()
                .filter(|(k, _)| k != HEAD_PROPERTY && k != CONTENT_TYPE_PROPERTY)
                .cloned()
                .collect(),
        },
        digest,
    ))
}

/// The message a head and its chunks (in index order) stand for: the head's topic and
/// properties, its original content type, and the chunks' bytes, checked against the head's size
/// and digest.
///
/// # Errors
/// [`ChunkError::Malformed`] when `head` is not a head; [`ChunkError::Mismatch`] when the bytes
/// are not what it announced.
pub fn assemble(
    head: &MqttMessage,
    chunks: impl IntoIterator<Item = Vec<u8>>,
) -> Result<MqttMessage, ChunkError> {
    let Piece::Head(announced) = classify(head)? else {
        return Err(malformed(HEAD_PROPERTY, "", "not the head of a transfer"));
    };
    let mut payload = Vec::with_capacity(announced.total as usize);
    for c in chunks {
        payload.extend_from_slice(&c);
        if payload.len() > announced.total as usize {
            break;
        }
    }
    let got_digest = digest(&payload);
    if payload.len() != announced.total as usize || got_digest != announced.digest {
        return Err(ChunkError::Mismatch {
            digest: announced.digest,
            total: announced.total,
            got: payload.len(),
            got_digest,
        });
    }
    let content_type = head.user_property(CONTENT_TYPE_PROPERTY).map(str::to_owned);
    let user_properties = head
        .user_properties
        .iter()
        .filter(|(k, _)| k != HEAD_PROPERTY && k != CONTENT_TYPE_PROPERTY)
        .cloned()
        .collect();
    Ok(MqttMessage {
        topic: head.topic.clone(),
        payload,
        content_type,
        user_properties,
    })
}

/// What an agent offers in its spec resync request: chunked transfers, and the chunks it holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransferOffer {
    /// The largest chunk payload the agent takes.
    pub chunk_bytes: u32,
    /// Chunk indexes held, per transfer digest.
    pub held: BTreeMap<String, BTreeSet<u32>>,
}

impl TransferOffer {
    /// Writes the offer as extension attributes of `event`.
    pub fn set_on(&self, event: &mut Event) {
        event.set_extension(CHUNK_BYTES_EXTENSION, self.chunk_bytes.to_string());
        if !self.held.is_empty() {
            event.set_extension(HELD_CHUNKS_EXTENSION, format_held(&self.held));
        }
    }

    /// Reads an offer from `event`'s extensions; `None` when it makes none (a maestro or OCM
    /// agent).
    ///
    /// # Errors
    /// [`ChunkError::Malformed`] for an offer that does not parse or asks for chunks smaller than
    /// [`MIN_CHUNK_BYTES`].
    pub fn from_event(event: &Event) -> Result<Option<TransferOffer>, ChunkError> {
        let text = |name: &'static str| -> Result<Option<String>, ChunkError> {
            match event.extension(name) {
                None => Ok(None),
                Some(ExtensionValue::String(s)) => Ok(Some(s.clone())),
                Some(ExtensionValue::Integer(i)) => Ok(Some(i.to_string())),
                Some(ExtensionValue::Boolean(b)) => {
                    Err(malformed(name, &b.to_string(), "not a string"))
                }
            }
        };
        let Some(bytes) = text(CHUNK_BYTES_EXTENSION)? else {
            return Ok(None);
        };
        let chunk_bytes: u32 = bytes
            .parse()
            .map_err(|e| malformed(CHUNK_BYTES_EXTENSION, &bytes, format!("not a number ({e})")))?;
        if chunk_bytes < MIN_CHUNK_BYTES {
            return Err(malformed(
                CHUNK_BYTES_EXTENSION,
                &bytes,
                format!("chunks smaller than {MIN_CHUNK_BYTES} bytes are refused"),
            ));
        }
        let held = match text(HELD_CHUNKS_EXTENSION)? {
            Some(h) => parse_held(&h)?,
            None => BTreeMap::new(),
        };
        Ok(Some(TransferOffer { chunk_bytes, held }))
    }
}

/// `digest:0-3,5;digest:0` for held chunks.
pub fn format_held(held: &BTreeMap<String, BTreeSet<u32>>) -> String {
    let mut out = String::new();
    for (digest, indexes) in held.iter().take(MAX_OFFERED_TRANSFERS) {
        if !out.is_empty() {
            out.push(';');
        }
        out.push_str(digest);
        out.push(':');
        let mut first = true;
        let mut iter = indexes.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !first {
                out.push(',');
            }
            first = false;
            if start == end {
                let _ = write!(out, "{start}");
            } else {
                let _ = write!(out, "{start}-{end}");
            }
        }
    }
    out
}

/// Parses what [`format_held`] writes.
///
/// # Errors
/// [`ChunkError::Malformed`] for anything else, or indexes beyond [`MAX_CHUNKS`].
pub fn parse_held(value: &str) -> Result<BTreeMap<String, BTreeSet<u32>>, ChunkError> {
    let bad = |reason: String| malformed(HELD_CHUNKS_EXTENSION, value, reason);
    let mut held = BTreeMap::new();
    for transfer in value.split(';').filter(|t| !t.is_empty()) {
        if held.len() >= MAX_OFFERED_TRANSFERS {
            break;
        }
        let (digest, ranges) = transfer
            .split_once(':')
            .ok_or_else(|| bad(format!("{transfer:?} has no ':'")))?;
        check_digest(HELD_CHUNKS_EXTENSION, value, digest)?;
        let mut indexes = BTreeSet::new();
        for range in ranges.split(',').filter(|r| !r.is_empty()) {
            let number = |s: &str| {
                s.parse::<u32>()
                    .ok()
                    .filter(|n| *n < MAX_CHUNKS)
                    .ok_or_else(|| bad(format!("{s:?} is not a chunk index below {MAX_CHUNKS}")))
            };
            let (a, b) = match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(range)?;
                    (n, n)
                }
            };
            if a > b {
                return Err(bad(format!("range {range:?} runs backwards")));
            }
            indexes.extend(a..=b);
        }
        held.insert(digest.to_owned(), indexes);
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize) -> MqttMessage {
        MqttMessage {
            topic: "sources/s/consumers/c/sourceevents".into(),
            payload: (0..len).map(|i| (i % 251) as u8).collect(),
            content_type: Some("application/json".into()),
            user_properties: vec![
                ("ce-specversion".into(), "1.0".into()),
                ("ce-id".into(), "1".into()),
            ],
        }
    }

    fn chunks_of(pieces: &[MqttMessage]) -> Vec<(u32, Vec<u8>)> {
        pieces
            .iter()
            .filter_map(|m| match classify(m).unwrap() {
                Piece::Chunk(c) => Some((c.index, m.payload.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_split_message_assembles_to_the_original() {
        let msg = message(10_000);
        let pieces = split(msg.clone(), 4096, &BTreeSet::new());
        assert_eq!(pieces.len(), 4, "a head and three chunks");
        let Piece::Head(head) = classify(&pieces[0]).unwrap() else {
            panic!("the head comes first")
        };
        assert_eq!((head.count, head.total), (3, 10_000));
        assert_eq!(head.digest, digest(&msg.payload));
        assert!(pieces[0].payload.is_empty());
        assert!(pieces[1..].iter().all(|p| p.payload.len() <= 4096));
        let whole = assemble(&pieces[0], chunks_of(&pieces).into_iter().map(|(_, b)| b)).unwrap();
        assert_eq!(whole, msg);
    }

    #[test]
    fn a_small_message_is_not_split() {
        let msg = message(4096);
        assert_eq!(split(msg.clone(), 4096, &BTreeSet::new()), vec![msg]);
    }

    #[test]
    fn held_chunks_are_not_sent_again() {
        let msg = message(10_000);
        let held = BTreeSet::from([0, 2]);
        let pieces = split(msg, 4096, &held);
        let sent: Vec<u32> = chunks_of(&pieces).into_iter().map(|(i, _)| i).collect();
        assert_eq!(sent, vec![1]);
    }

    #[test]
    fn a_wrong_or_missing_chunk_is_refused() {
        let msg = message(10_000);
        let pieces = split(msg, 4096, &BTreeSet::new());
        let mut chunks: Vec<Vec<u8>> = chunks_of(&pieces).into_iter().map(|(_, b)| b).collect();
        let missing = assemble(&pieces[0], chunks[..2].to_vec()).unwrap_err();
        assert!(
            matches!(missing, ChunkError::Mismatch { got: 8192, .. }),
            "{missing}"
        );
        chunks[1][0] ^= 1;
        let corrupt = assemble(&pieces[0], chunks).unwrap_err();
        assert!(corrupt.to_string().contains("digest"), "{corrupt}");
    }

    #[test]
    fn nonsense_heads_and_chunks_are_malformed() {
        let d = "a".repeat(64);
        for (name, value) in [
            (CHUNK_PROPERTY, format!("{d} 3 3")),
            (CHUNK_PROPERTY, format!("{d} 0 0")),
            (CHUNK_PROPERTY, "xyz 0 1".to_owned()),
            (HEAD_PROPERTY, format!("{d} 5000 10000000")),
            (HEAD_PROPERTY, format!("{d} 4 2")),
            (HEAD_PROPERTY, format!("{d} 4")),
            (HEAD_PROPERTY, format!("{d} 4 x")),
        ] {
            let mut m = message(1);
            m.user_properties.push((name.to_owned(), value.clone()));
            assert!(classify(&m).is_err(), "{name}={value}");
        }
    }

    #[test]
    fn no_payload_needs_more_than_max_chunks() {
        let msg = message(2 * 1024 * 1024);
        let pieces = split(msg, MIN_CHUNK_BYTES, &BTreeSet::new());
        assert!(pieces.len() as u32 <= MAX_CHUNKS + 1, "{}", pieces.len());
        assert!(matches!(classify(&pieces[0]).unwrap(), Piece::Head(_)));
    }

    #[test]
    fn held_chunks_round_trip_as_ranges() {
        let d1 = "0".repeat(64);
        let d2 = "f".repeat(64);
        let held = BTreeMap::from([
            (d1.clone(), BTreeSet::from([0, 1, 2, 3, 5, 7, 8])),
            (d2.clone(), BTreeSet::from([9])),
        ]);
        let text = format_held(&held);
        assert_eq!(text, format!("{d1}:0-3,5,7-8;{d2}:9"));
        assert_eq!(parse_held(&text).unwrap(), held);
        for bad in [
            "nodigest:1".to_owned(),
            format!("{d1}:3-1"),
            format!("{d1}:x"),
            format!("{d1}:5000"),
            d1.clone(),
        ] {
            assert!(parse_held(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_offer_travels_as_extensions_and_maestro_events_make_none() {
        let mut e = Event::default();
        assert_eq!(TransferOffer::from_event(&e).unwrap(), None);
        let offer = TransferOffer {
            chunk_bytes: 16384,
            held: BTreeMap::from([("1".repeat(64), BTreeSet::from([0, 1]))]),
        };
        offer.set_on(&mut e);
        assert_eq!(TransferOffer::from_event(&e).unwrap(), Some(offer));
        e.set_extension(CHUNK_BYTES_EXTENSION, "12");
        assert!(TransferOffer::from_event(&e).is_err());
    }
}
