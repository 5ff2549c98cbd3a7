//! Decodes arbitrary bytes as a stream message.
//!
//! Besides "never panics", checks two properties of whatever decodes: it
//! re-encodes, and the encoding is canonical (the same bytes come back and
//! decode to the same packet).

#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_membership::wire::{self, MAX_STREAM};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = wire::decode(data, MAX_STREAM) else {
        return;
    };
    let bytes = match wire::encode(&packet, MAX_STREAM) {
        Ok(bytes) => bytes,
        Err(err) => panic!("a decoded packet failed to re-encode: {err}: {packet:?}"),
    };
    assert_eq!(bytes.len(), wire::encoded_len(&packet), "encoded_len is not exact");
    assert_eq!(bytes, data, "the encoding is not canonical");
    assert_eq!(wire::decode(&bytes, MAX_STREAM), Ok(packet), "re-decoding gave another packet");
});
