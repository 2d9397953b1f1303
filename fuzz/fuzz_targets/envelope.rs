//! Any bytes through the envelope with a fixed key list: opening and decoding must return a
//! value or an error, never panic; whatever opens and decodes must seal again (same key,
//! timestamp and algorithm) into bytes that open and decode to the same graph.
#![no_main]

use std::sync::OnceLock;

use amber_format::envelope::{self, Algorithm, Compression, OpenOptions, SealOptions, SigningKey};
use amber_format::model::Graph;
use amber_format::Limits;
use libfuzzer_sys::fuzz_target;

/// The clock: 100 s after the timestamp of the envelope vectors (spec/vectors/envelopes.json).
const NOW: u64 = 1_700_000_100;

/// The keys of the envelope vectors, so that the seeds verify.
fn keys() -> &'static [SigningKey] {
    static KEYS: OnceLock<Vec<SigningKey>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let second: Vec<u8> = (0x40..0x50).collect();
        vec![
            SigningKey::new(b"amber envelope test secret one!!", None).expect("a valid key"),
            SigningKey::new(&second, Some(b"k2")).expect("a valid key"),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_depth: 64,
        max_alloc: None,
    };
    // The last byte picks whether the timestamp is judged.
    let max_age = (data.last().copied().unwrap_or(0) & 1 == 1).then_some(300);
    for keys in [keys(), &[][..]] {
        let options = OpenOptions {
            keys,
            max_age: max_age.filter(|_| !keys.is_empty()),
            now: NOW,
            max_decompressed: None,
            alloc_budget: limits.alloc_budget(data.len()),
        };
        let Ok(opened) = envelope::open(data, &options) else {
            continue;
        };
        let Ok(graph) = Graph::decode_opened(&opened, limits.max_depth) else {
            continue;
        };
        let info = opened.info();
        let key = info
            .key_id
            .as_deref()
            .and_then(|id| keys.iter().find(|k| k.id() == id));
        let compression = info.compression.map(|algorithm| match algorithm {
            Algorithm::Zstd => Compression::Zstd { level: 1 },
            Algorithm::Lz4 => Compression::Lz4,
        });
        let plain = graph.encode(true).expect("a decoded graph encodes");
        let seal_options = SealOptions {
            key,
            timestamp: info.timestamp.filter(|_| key.is_some()),
            compression,
        };
        let sealed = envelope::seal(&plain, &seal_options).expect("a plain payload seals");
        // The graph is already in memory: its second decode may use what it needs.
        let reopen = OpenOptions {
            alloc_budget: u64::MAX,
            ..options
        };
        let reopened = envelope::open(&sealed, &reopen).expect("a sealed payload opens");
        let back = Graph::decode_opened(&reopened, limits.max_depth).expect("it decodes");
        if let Err(difference) = graph.same_as(&back) {
            panic!("sealing again changed the graph: {difference}");
        }
    }
});
