//! One EXT blob: the first byte is the code, the rest the blob. Parsing must return a value
//! or an error, never panic; a value must write back (as many bytes as it says) to a blob
//! that parses to the same value. Values are compared, not bytes: a writer may normalize.
#![no_main]

use amber_format::ext::{ExtBlob, ExtCode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&code, blob)) = data.split_first() else {
        return;
    };
    let Some(code) = ExtCode::from_code(u64::from(code)) else {
        return;
    };
    let Ok(parsed) = ExtBlob::parse(code, blob) else {
        return;
    };
    assert_eq!(parsed.code(), code);
    let mut written = Vec::new();
    parsed.write(&mut written);
    assert_eq!(written.len(), parsed.encoded_len(), "{parsed:?}");
    let again = ExtBlob::parse(code, &written).expect("a written blob parses");
    assert_eq!(again, parsed, "write changed the value");
});
