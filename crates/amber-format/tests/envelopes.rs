//! The envelope vectors (spec/vectors/envelopes.json) against `seal`, `open`, `inspect`,
//! `verify` and the body decoder; the Python tests read the same file.

use std::path::PathBuf;

use amber_format::envelope::{self, EnvelopeInfo, SealOptions, SigningKey};
use amber_format::model::Graph;
use amber_format::{DecodeError, Limits, OpenOptions};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/envelopes.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("vector file is JSON");
    doc["vectors"].as_array().expect("a vectors array").clone()
}

fn unhex(text: &str) -> Vec<u8> {
    let digits: String = text.split_whitespace().collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex digits"))
        .collect()
}

fn bytes_of(v: &Value, field: &str) -> Vec<u8> {
    unhex(
        v[field]
            .as_str()
            .unwrap_or_else(|| panic!("{field} is a hex string")),
    )
}

/// The vector's keys; a key marked `derived_id` is made without an id and must get the one
/// the vector gives.
fn keys(v: &Value) -> Result<Vec<SigningKey>, String> {
    let mut out = Vec::new();
    for key in v["keys"].as_array().expect("a keys array") {
        let secret = bytes_of(key, "secret");
        let id = bytes_of(key, "id");
        let made = if key["derived_id"].as_bool() == Some(true) {
            SigningKey::new(&secret, None)
        } else {
            SigningKey::new(&secret, Some(&id))
        }
        .map_err(|e| e.to_string())?;
        if made.id() != id {
            return Err(format!("key id {:02x?}, vector says {id:02x?}", made.id()));
        }
        out.push(made);
    }
    Ok(out)
}

fn option(v: &Value, name: &str) -> Option<u64> {
    v["options"][name].as_u64()
}

/// Opens and decodes like a decoder with the vector's keys and options.
fn open_and_decode(v: &Value, data: &[u8], keys: &[SigningKey]) -> Result<Graph, DecodeError> {
    let limits = Limits {
        max_alloc: option(v, "max_alloc"),
        ..Limits::default()
    };
    let options = OpenOptions {
        keys,
        max_age: option(v, "max_age"),
        now: option(v, "now").unwrap_or(0),
        max_decompressed: option(v, "max_decompressed"),
        alloc_budget: limits.alloc_budget(data.len()),
    };
    let opened = envelope::open(data, &options)?;
    Graph::decode_opened(&opened, limits.max_depth)
}

fn info_of(v: &Value) -> EnvelopeInfo {
    let info = &v["info"];
    EnvelopeInfo {
        signed: info["signed"].as_bool().expect("signed"),
        key_id: info["key_id"].as_str().map(unhex),
        timestamp: info["timestamp"].as_u64(),
        compression: info["compression"]
            .as_str()
            .map(|name| envelope::Algorithm::from_name(name).expect("an algorithm name")),
        compressed_size: info["compressed_size"].as_u64().map(|n| n as usize),
        size: info["size"].as_u64().expect("size"),
    }
}

#[test]
fn envelope_vectors() {
    let vectors = vectors();
    assert!(vectors.len() > 40, "too few envelope vectors");
    let mut failures = Vec::new();
    let mut sealed = 0;
    for v in &vectors {
        let name = v["name"].as_str().unwrap_or("?");
        let data = bytes_of(v, "hex");
        let keys = match keys(v) {
            Ok(keys) => keys,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if let Some(kind) = v["error"].as_str() {
            let offset = v["offset"].as_u64().expect("offset") as usize;
            match open_and_decode(v, &data, &keys) {
                Ok(_) => failures.push(format!("{name}: decoded, expected {kind}")),
                Err(e) if e.kind.name() == kind && e.offset == offset => {}
                Err(e) => failures.push(format!(
                    "{name}: got {} at {} ({}), expected {kind} at {offset}",
                    e.kind.name(),
                    e.offset,
                    e.detail
                )),
            }
            continue;
        }
        let payload = bytes_of(v, "payload");
        let expected = Graph::decode(&payload, &Limits::default()).expect("plain payload decodes");
        match open_and_decode(v, &data, &keys) {
            Ok(graph) => {
                if let Err(diff) = expected.same_as(&graph) {
                    failures.push(format!("{name}: decodes differently: {diff}"));
                }
            }
            Err(e) => failures.push(format!("{name}: open failed: {e}")),
        }
        let want = info_of(v);
        match envelope::inspect(&data) {
            Ok(info) if info == want => {}
            other => failures.push(format!("{name}: inspect gave {other:?}, want {want:?}")),
        }
        if !keys.is_empty() {
            let now = option(v, "now").unwrap_or(0);
            match envelope::verify(&data, &keys, option(v, "max_age"), now) {
                Ok(info) if info == want => {}
                other => failures.push(format!("{name}: verify gave {other:?}, want {want:?}")),
            }
        }
        if let Some(seal) = v.get("seal") {
            sealed += 1;
            let options = SealOptions {
                key: keys.first(),
                timestamp: seal["timestamp"].as_u64(),
                compression: None,
            };
            match envelope::seal(&payload, &options) {
                Ok(bytes) if bytes == data => {}
                other => failures.push(format!("{name}: seal gave {other:02x?}")),
            }
        }
    }
    assert!(sealed >= 3, "too few sealing vectors");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every envelope error kind has a vector, and every vector's kind exists.
#[test]
fn envelope_vectors_cover_the_envelope_error_kinds() {
    let kinds: Vec<String> = vectors()
        .iter()
        .filter_map(|v| v["error"].as_str().map(str::to_owned))
        .collect();
    for kind in [
        "signature_required",
        "key_required",
        "unknown_key",
        "bad_signature",
        "expired",
        "timestamp_in_future",
        "timestamp_required",
        "bad_envelope",
        "unknown_compression",
        "bad_compression",
        "size_mismatch",
        "decompressed_too_large",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no vector for {kind}");
    }
    for kind in &kinds {
        assert!(
            amber_format::ErrorKind::ALL
                .iter()
                .any(|k| k.name() == kind.as_str()),
            "unknown kind {kind}"
        );
    }
}
