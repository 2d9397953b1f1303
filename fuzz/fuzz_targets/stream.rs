//! Any bytes as a stream, whole and fed in chunks: both must give the same frames and
//! payloads and end with the same error (kind, offset, message), never panic; and a valid
//! stream's payloads, framed again, must give back its bytes. The chunk size and whether the
//! end marker is required follow from the input's length, so that the seeds (the stream
//! vectors) stay streams.
#![no_main]

use amber_format::stream::{self, FeedError, Frame, Gatherer, ReadOptions, StreamError};
use libfuzzer_sys::fuzz_target;

fn key(err: &Option<StreamError>) -> Option<(&'static str, usize, u64)> {
    err.as_ref()
        .map(|e| (e.error.kind.name(), e.error.offset, e.message_index))
}

fuzz_target!(|data: &[u8]| {
    let options = ReadOptions {
        require_end: data.len() % 3 != 0,
        // Small enough that the limit is met, large enough for real frames.
        max_message: 1 << 12,
    };
    let step = 1 + data.len() % 13;

    let mut whole: Vec<(Frame, Vec<u8>)> = Vec::new();
    let mut whole_error = None;
    for item in stream::payloads(data, options) {
        match item {
            Ok((frame, payload)) => whole.push((frame, payload.to_vec())),
            Err(err) => whole_error = Some(err),
        }
    }

    let mut fed: Vec<(Frame, Vec<u8>)> = Vec::new();
    let mut fed_error = None;
    let mut gatherer = Gatherer::new(options);
    for chunk in data.chunks(step) {
        let result = gatherer.feed(chunk, |frame, payload, _| {
            fed.push((*frame, payload.to_vec()));
            Ok::<(), ()>(())
        });
        if let Err(FeedError::Stream(err)) = result {
            fed_error = Some(err);
            break;
        }
    }
    if fed_error.is_none() {
        fed_error = gatherer.close().err();
    }
    assert_eq!(whole, fed, "whole and chunked reads found different frames");
    assert_eq!(
        key(&whole_error),
        key(&fed_error),
        "whole and chunked reads failed apart"
    );

    if whole_error.is_none() {
        let mut again = stream::MAGIC.to_vec();
        for (_, payload) in &whole {
            stream::write_frame(&mut again, payload);
        }
        if again != data {
            again.push(stream::END_MARKER);
            assert_eq!(again, data, "a valid stream framed again differs");
        }
    }
});
