//! Decompresses arbitrary bytes as a received stream message, and
//! compresses them as one sent. Properties: never a panic; nothing larger
//! than the limit is ever produced (the stated length is checked first);
//! a message that decompresses is exactly as long as it said; and what is
//! compressed decompresses to exactly what was compressed.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_net::compress::{MAGIC, compress, decompress};

const MAX: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    // As received: raw, and behind the compressed magic.
    let framed = [&MAGIC[..], data].concat();
    for body in [data, &framed[..]] {
        if let Ok(out) = decompress(body, MAX) {
            if body.starts_with(&MAGIC) {
                let said = u32::from_be_bytes(body[3..7].try_into().unwrap()) as usize;
                assert_eq!(out.len(), said);
                assert!(out.len() <= MAX);
            } else {
                assert_eq!(&out[..], body, "a bare message is passed on as it is");
            }
        }
    }
    // As sent: whatever is compressed comes back whole.
    if !data.starts_with(&MAGIC) {
        let sent = compress(data);
        assert!(sent.len() <= data.len());
        assert_eq!(&decompress(&sent, data.len()).unwrap()[..], data);
    }
});
