//! Reads arbitrary bytes as a key operation's request or answer (the body
//! of a sealed stream frame). Properties: never a panic; whatever decodes
//! encodes back to exactly the same bytes (one encoding per message).

#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_net::control::Control;

fuzz_target!(|data: &[u8]| {
    if let Some(m) = Control::decode(data) {
        assert_eq!(m.encode(), data, "{m:?}");
    }
});
