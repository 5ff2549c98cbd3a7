//! Opens arbitrary bytes as a received packet, in every mode, and checks
//! what must hold of whatever opens.
//!
//! The input's first byte picks what the fuzzer sends: raw bytes, or a
//! genuine sealed packet (of the rest of the input) that the fuzzer then
//! alters at a position and with a mask taken from the input. Properties:
//! never a panic; an altered sealed packet never opens; a genuine one opens
//! once to exactly what was sealed and then is a replay; every refusal is
//! counted.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_membership::keyring::Keyring;
use vigil_membership::seal::{OpenError, Seal, SealMode as Mode};

const MAX: usize = 1400;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else { return };
    let mut receivers = [
        Seal::plaintext(7),
        Seal::new(7, Mode::Staged, Some(Keyring::new([1; 32])), 2).unwrap(),
        Seal::new(7, Mode::Sealed, Some(Keyring::new([1; 32])), 3).unwrap(),
    ];
    if choice & 1 == 0 {
        for r in &mut receivers {
            let before = r.stats();
            let opened = r.open(rest, MAX).is_ok();
            let after = r.stats();
            let refused = after.rejected.iter().sum::<u64>() - before.rejected.iter().sum::<u64>();
            assert_eq!(refused, u64::from(!opened), "every refusal is counted, once");
        }
        return;
    }
    // A genuine sealed packet, possibly altered.
    let Some((&pos, rest)) = rest.split_first() else { return };
    let Some((&mask, plain)) = rest.split_first() else { return };
    let mut sender = Seal::new(7, Mode::Sealed, Some(Keyring::new([1; 32])), 1).unwrap();
    let mut packet = sender.seal(plain);
    let altered = mask != 0 && !packet.is_empty();
    if altered {
        let i = usize::from(pos) % packet.len();
        packet[i] ^= mask;
    }
    let r = &mut receivers[2];
    match r.open(&packet, usize::MAX) {
        Ok(p) => {
            assert!(!altered, "an altered packet opened");
            assert_eq!(&*p, plain, "a genuine packet opened to something else");
            assert_eq!(r.open(&packet, usize::MAX).unwrap_err(), OpenError::Replayed);
        }
        Err(e) => assert!(altered, "a genuine packet was refused: {e}"),
    }
});
