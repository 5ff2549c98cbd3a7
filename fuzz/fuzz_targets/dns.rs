//! Reads arbitrary bytes as a name server's answer to an SRV question (the
//! id taken from the input, so that the fuzzer gets past the id check).
//! Properties: never a panic; whatever is read is bounded by the message
//! (each record costs at least 11 bytes) and every name read is an
//! absolute name of at most 255 bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_net::dns::{Question, RecordType, parse_response};

fuzz_target!(|data: &[u8]| {
    let q = Question::new("_vigil._udp.vigil.example.", RecordType::Srv).unwrap();
    let id = data.get(..2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let Ok(answer) = parse_response(data, id, &q) else { return };
    let records = answer.srv.len() + answer.addrs.len() + answer.extra.values().map(Vec::len).sum::<usize>();
    assert!(records * 11 <= data.len(), "{records} records from {} bytes", data.len());
    for name in answer.srv.iter().map(|t| &t.target).chain(answer.extra.keys()) {
        assert!(name.ends_with('.') && name.len() <= 255, "{name:?}");
    }
});
