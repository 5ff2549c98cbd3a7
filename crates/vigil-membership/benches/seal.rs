//! The seal beside the ciphers it was chosen from, in one run: sealing and
//! opening a 40-byte datagram (a ping's size) with vigil's envelope, both
//! versions, and with each candidate AEAD bare (no envelope, no replay
//! window, no allocation: the floor each cipher sets).
//!
//! Run: `cargo bench -p vigil-membership --bench seal`.
//!
//! Candidates: RustCrypto's `aes-gcm` (AES-NI and carry-less
//! multiplication, detected at run time), `chacha20poly1305` (its
//! ChaCha20-Poly1305 and XChaCha20-Poly1305), and `ring`'s AES-256-GCM and
//! ChaCha20-Poly1305 (assembly, the reference: memberlist seals with
//! AES-GCM). The envelope rows include the header, the associated data,
//! the replay window and, for `open`, the plaintext's allocation.

#![allow(missing_docs)]

use std::hint::black_box;

use aes_gcm::aead::{AeadInOut, KeyInit};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use vigil_membership::keyring::Keyring;
use vigil_membership::seal::{Envelope, OVERHEAD, Seal, SealMode};

const KEY: [u8; 32] = [0x5c; 32];
const AAD: [u8; 35] = [0x11; 35];

fn bench(c: &mut Criterion) {
    let msg = [0x42u8; 40];
    let mut g = c.benchmark_group("seal-40B");
    g.throughput(Throughput::Elements(1));
    for envelope in [Envelope::Aes256Gcm, Envelope::XChaCha20Poly1305] {
        let v = envelope.version();
        let mut sender = Seal::new(7, SealMode::Sealed, Some(Keyring::new(KEY)), 1).unwrap().with_envelope(envelope);
        let mut receiver = Seal::new(7, SealMode::Sealed, Some(Keyring::new(KEY)), 2).unwrap();
        let mut buf = Vec::with_capacity(1400 + OVERHEAD);
        g.bench_function(format!("envelope {v} seal"), |b| {
            b.iter(|| {
                sender.seal_into(black_box(&msg), &mut buf);
                black_box(buf.len())
            })
        });
        g.bench_function(format!("envelope {v} open"), |b| {
            b.iter_batched(
                || sender.seal(&msg),
                |sealed| black_box(receiver.open(&sealed, 1400).unwrap().len()),
                BatchSize::SmallInput,
            )
        });
    }
    fn rustcrypto<A: AeadInOut + KeyInit>(
        g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
        name: &str,
        msg: &[u8; 40],
    ) {
        let cipher = A::new_from_slice(&KEY).unwrap();
        let nonce = aes_gcm::aead::Nonce::<A>::default();
        g.bench_function(format!("{name} seal"), |b| {
            b.iter(|| {
                let mut buf = *msg;
                let tag = cipher.encrypt_inout_detached(&nonce, &AAD, (&mut buf[..]).into()).unwrap();
                black_box((buf, tag))
            })
        });
        let mut sealed = *msg;
        let tag = cipher.encrypt_inout_detached(&nonce, &AAD, (&mut sealed[..]).into()).unwrap();
        g.bench_function(format!("{name} open"), |b| {
            b.iter(|| {
                let mut buf = sealed;
                cipher.decrypt_inout_detached(&nonce, &AAD, (&mut buf[..]).into(), &tag).unwrap();
                black_box(buf)
            })
        });
    }
    rustcrypto::<aes_gcm::Aes256Gcm>(&mut g, "aes-gcm AES-256-GCM", &msg);
    rustcrypto::<chacha20poly1305::ChaCha20Poly1305>(&mut g, "chacha20poly1305 ChaCha20-Poly1305", &msg);
    rustcrypto::<chacha20poly1305::XChaCha20Poly1305>(&mut g, "chacha20poly1305 XChaCha20-Poly1305", &msg);
    for (name, alg) in
        [("ring AES-256-GCM", &ring::aead::AES_256_GCM), ("ring ChaCha20-Poly1305", &ring::aead::CHACHA20_POLY1305)]
    {
        let key = ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(alg, &KEY).unwrap());
        let nonce = || ring::aead::Nonce::assume_unique_for_key([0; 12]);
        g.bench_function(format!("{name} seal"), |b| {
            b.iter(|| {
                let mut buf = msg;
                let tag = key.seal_in_place_separate_tag(nonce(), ring::aead::Aad::from(&AAD), &mut buf).unwrap();
                black_box((buf, tag))
            })
        });
        let mut sealed = [0u8; 56];
        sealed[..40].copy_from_slice(&msg);
        let tag = key.seal_in_place_separate_tag(nonce(), ring::aead::Aad::from(&AAD), &mut sealed[..40]).unwrap();
        sealed[40..].copy_from_slice(tag.as_ref());
        g.bench_function(format!("{name} open"), |b| {
            b.iter(|| {
                let mut buf = sealed;
                black_box(key.open_in_place(nonce(), ring::aead::Aad::from(&AAD), &mut buf[..]).unwrap().len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
