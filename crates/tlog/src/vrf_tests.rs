//! The VRF's tests: RFC 9381's three ECVRF-EDWARDS25519-SHA512-TAI vectors with every
//! intermediate they print, prove and output agreeing, verify accepting its own proofs, and
//! verify refusing every kind of bad key and proof.

use proptest::prelude::*;

use super::*;

/// One vector of RFC 9381 Appendix B.3 (Examples 16, 17, 18), in hex.
struct Vector {
    sk: &'static str,
    pk: &'static str,
    alpha: &'static [u8],
    /// The secret scalar as RFC 8032 clamps it (before any reduction).
    x: &'static str,
    /// The counter on which try-and-increment succeeded.
    ctr: u8,
    h: &'static str,
    /// SHA-512(prefix ‖ h_string), before the reduction modulo q.
    k: &'static str,
    u: &'static str,
    v: &'static str,
    pi: &'static str,
    beta: &'static str,
}

// Copied from RFC 9381 Appendix B.3 as the test vectors of facebook/akd carry them
// (akd_core/src/ecvrf/tests.rs, commit 0c5ee9e700ba098b2b0e3b4c89c72c8c1516ec14); the scalar k
// of the first two, reduced modulo q, matches the 32-byte k that other copies print.
const VECTORS: [Vector; 3] = [
    // Example 16.
    Vector {
        sk: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        pk: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        alpha: b"",
        x: "307c83864f2833cb427a2ef1c00a013cfdff2768d980c0a3a520f006904de94f",
        ctr: 0,
        h: "91bbed02a99461df1ad4c6564a5f5d829d0b90cfc7903e7a5797bd658abf3318",
        k: "7100f3d9eadb6dc4743b029736ff283f5be494128df128df2817106f345b8594\
            b6d6da2d6fb0b4c0257eb337675d96eab49cf39e66cc2c9547c2bf8b2a6afae4",
        u: "aef27c725be964c6a9bf4c45ca8e35df258c1878b838f37d9975523f09034071",
        v: "5016572f71466c646c119443455d6cb9b952f07d060ec8286d678615d55f954f",
        pi: "8657106690b5526245a92b003bb079ccd1a92130477671f6fc01ad16f26f723f\
             26f8a57ccaed74ee1b190bed1f479d97\
             27d2d0f9b005a6e456a35d4fb0daab1268a1b0db10836d9826a528ca76567805",
        beta: "90cf1df3b703cce59e2a35b925d411164068269d7b2d29f3301c03dd757876ff\
               66b71dda49d2de59d03450451af026798e8f81cd2e333de5cdf4f3e140fdd8ae",
    },
    // Example 17.
    Vector {
        sk: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        pk: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        alpha: b"\x72",
        x: "68bd9ed75882d52815a97585caf4790a7f6c6b3b7f821c5e259a24b02e502e51",
        ctr: 1,
        h: "5b659fc3d4e9263fd9a4ed1d022d75eaacc20df5e09f9ea937502396598dc551",
        k: "42589bbf0c485c3c91c1621bb4bfe04aed7be76ee48f9b00793b2342acb9c167\
            cab856f9f9d4febc311330c20b0a8afd3743d05433e8be8d32522ecdc16cc5ce",
        u: "1dcb0a4821a2c48bf53548228b7f170962988f6d12f5439f31987ef41f034ab3",
        v: "fd03c0bf498c752161bae4719105a074630a2aa5f200ff7b3995f7bfb1513423",
        pi: "f3141cd382dc42909d19ec5110469e4feae18300e94f304590abdced48aed593\
             3bf0864a62558b3ed7f2fea45c92a465\
             301b3bbf5e3e54ddf2d935be3b67926da3ef39226bbc355bdc9850112c8f4b02",
        beta: "eb4440665d3891d668e7e0fcaf587f1b4bd7fbfe99d0eb2211ccec90496310eb\
               5e33821bc613efb94db5e5b54c70a848a0bef4553a41befc57663b56373a5031",
    },
    // Example 18.
    Vector {
        sk: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        pk: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        alpha: b"\xaf\x82",
        x: "909a8b755ed902849023a55b15c23d11ba4d7f4ec5c2f51b1325a181991ea95c",
        ctr: 0,
        h: "bf4339376f5542811de615e3313d2b36f6f53c0acfebb482159711201192576a",
        k: "38b868c335ccda94a088428cbf3ec8bc7955bfaffe1f3bd2aa2c59fc31a0febc\
            59d0e1af3715773ce11b3bbdd7aba8e3505d4b9de6f7e4a96e67e0d6bb6d6c3a",
        u: "2bae73e15a64042fcebf062abe7e432b2eca6744f3e8265bc38e009cd577ecd5",
        v: "88cba1cb0d4f9b649d9a86026b69de076724a93a65c349c988954f0961c5d506",
        pi: "9bc0f79119cc5604bf02d23b4caede71393cedfbb191434dd016d30177ccbf80\
             96bb474e53895c362d8628ee9f9ea3c0\
             e52c7a5c691b6c18c9979866568add7a2d41b00b05081ed0f58ee5e31b3a970e",
        beta: "645427e5d00c62a23fb703732fa5d892940935942101e456ecca7bb217c61c45\
               2118fec1219202a0edcf038bb6373241578be7217ba85a2687f7a0310b2df19f",
    },
];

/// The group order q, little-endian.
const ORDER: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn arr<const N: usize>(s: &str) -> [u8; N] {
    unhex(s).try_into().unwrap()
}

/// The try-and-increment candidate for one counter, before decoding (§5.4.1.1).
fn candidate(pk: &[u8; 32], alpha: &[u8], ctr: u8) -> [u8; 32] {
    let hash = Sha512::new()
        .chain_update([SUITE, 0x01])
        .chain_update(pk)
        .chain_update(alpha)
        .chain_update([ctr, 0x00])
        .finalize();
    hash[..32].try_into().unwrap()
}

#[test]
fn rfc9381_vectors_and_their_intermediates() {
    for (i, t) in VECTORS.iter().enumerate() {
        let key = VrfKey::from_seed(&arr(t.sk));
        let pk: [u8; 32] = arr(t.pk);
        assert_eq!(key.public(), pk, "vector {i}: PK");

        // x: the clamped first half of SHA-512(SK); the key keeps it modulo q.
        let digest = Sha512::digest(arr::<32>(t.sk));
        let clamped = clamp_integer(digest[..32].try_into().unwrap());
        assert_eq!(clamped, arr::<32>(t.x), "vector {i}: x");
        assert_eq!(
            key.x,
            Scalar::from_bytes_mod_order(arr(t.x)),
            "vector {i}: x mod q"
        );
        assert_eq!(key.prefix[..], digest[32..], "vector {i}: nonce prefix");

        // H, found on the vector's counter and not before.
        for ctr in 0..t.ctr {
            assert!(
                decode_point(&candidate(&pk, t.alpha, ctr)).is_none(),
                "vector {i}: ctr {ctr}"
            );
        }
        assert!(
            decode_point(&candidate(&pk, t.alpha, t.ctr)).is_some(),
            "vector {i}: ctr"
        );
        let h = encode_to_curve(&pk, t.alpha).unwrap();
        let h_string = h.compress().to_bytes();
        assert_eq!(h_string, arr::<32>(t.h), "vector {i}: H");

        // k, before and after the reduction; U = k·B, V = k·H.
        let k_string: [u8; 64] = Sha512::new()
            .chain_update(key.prefix)
            .chain_update(h_string)
            .finalize()
            .into();
        assert_eq!(k_string, arr::<64>(t.k), "vector {i}: k");
        let k = key.nonce(&h_string);
        assert_eq!(
            k,
            Scalar::from_bytes_mod_order_wide(&arr(t.k)),
            "vector {i}: k mod q"
        );
        assert_eq!(
            EdwardsPoint::mul_base(&k).compress().to_bytes(),
            arr::<32>(t.u),
            "vector {i}: U"
        );
        assert_eq!(
            (h * k).compress().to_bytes(),
            arr::<32>(t.v),
            "vector {i}: V"
        );

        // pi and beta, from prove, output and verify.
        let (pi, beta) = key.prove(t.alpha);
        assert_eq!(pi, arr::<PROOF_LEN>(t.pi), "vector {i}: pi");
        assert_eq!(beta, arr::<OUTPUT_LEN>(t.beta), "vector {i}: beta");
        assert_eq!(key.output(t.alpha), beta, "vector {i}: output");
        assert_eq!(verify(&pk, t.alpha, &pi), Ok(beta), "vector {i}: verify");
    }
}

#[test]
fn every_changed_byte_of_a_proof_is_refused() {
    // One vector (a verification takes milliseconds unoptimised), one bit in each byte.
    let t = &VECTORS[1];
    let pk: [u8; 32] = arr(t.pk);
    let pi: [u8; PROOF_LEN] = arr(t.pi);
    for byte in 0..PROOF_LEN {
        let mut bad = pi;
        bad[byte] ^= 1 << (byte % 8);
        let err = verify(&pk, t.alpha, &bad).unwrap_err();
        match byte {
            0..=31 => assert!(
                matches!(err, VrfError::Gamma | VrfError::Invalid),
                "{byte}: {err}"
            ),
            32..=47 => assert_eq!(err, VrfError::Invalid, "{byte}"),
            _ => assert!(
                matches!(err, VrfError::Scalar | VrfError::Invalid),
                "{byte}: {err}"
            ),
        }
    }
}

#[test]
fn a_flipped_bit_in_each_part_is_refused() {
    let t = &VECTORS[0];
    let pk: [u8; 32] = arr(t.pk);
    let pi: [u8; PROOF_LEN] = arr(t.pi);
    // Gamma's sign bit: the same y, the other x, a point; c's and s's low bits.
    for (byte, bit) in [(31, 7), (0, 0), (32, 0), (47, 7), (48, 0), (79, 3)] {
        let mut bad = pi;
        bad[byte] ^= 1 << bit;
        assert_eq!(
            verify(&pk, t.alpha, &bad),
            Err(VrfError::Invalid),
            "byte {byte} bit {bit}"
        );
    }
}

#[test]
fn wrong_input_or_key_is_refused() {
    let [a, b, _] = &VECTORS;
    let pi: [u8; PROOF_LEN] = arr(a.pi);
    assert_eq!(verify(&arr(a.pk), b"\x00", &pi), Err(VrfError::Invalid));
    assert_eq!(verify(&arr(a.pk), b.alpha, &pi), Err(VrfError::Invalid));
    assert_eq!(verify(&arr(b.pk), a.alpha, &pi), Err(VrfError::Invalid));
}

#[test]
fn proofs_of_another_length_are_refused() {
    let t = &VECTORS[1];
    let pk: [u8; 32] = arr(t.pk);
    let pi = unhex(t.pi);
    assert_eq!(
        verify(&pk, t.alpha, &pi[..79]),
        Err(VrfError::ProofLength(79))
    );
    assert_eq!(verify(&pk, t.alpha, &[]), Err(VrfError::ProofLength(0)));
    let mut long = pi.clone();
    long.push(0);
    assert_eq!(verify(&pk, t.alpha, &long), Err(VrfError::ProofLength(81)));
}

#[test]
fn s_at_or_above_the_order_is_refused() {
    let t = &VECTORS[2];
    let pk: [u8; 32] = arr(t.pk);
    let pi: [u8; PROOF_LEN] = arr(t.pi);
    // s + q: the same scalar modulo q, so it would verify without the range check.
    let mut s_plus_q = pi;
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(pi[48 + i]) + u16::from(ORDER[i]) + carry;
        s_plus_q[48 + i] = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    assert_eq!(verify(&pk, t.alpha, &s_plus_q), Err(VrfError::Scalar));
    for s in [ORDER, [0xff; 32]] {
        let mut bad = pi;
        bad[48..].copy_from_slice(&s);
        assert_eq!(verify(&pk, t.alpha, &bad), Err(VrfError::Scalar));
    }
}

#[test]
fn bad_public_keys_are_refused() {
    let t = &VECTORS[0];
    let pi: [u8; PROOF_LEN] = arr(t.pi);
    let mut identity = [0u8; 32];
    identity[0] = 1;
    // The point of order 2 (0, −1) and one of order 4 (y = 0).
    let mut order_two = [0xff; 32];
    order_two[0] = 0xec;
    order_two[31] = 0x7f;
    let order_four = [0u8; 32];
    // y = 2 is no point; y = p (ed ff … 7f) is y = 0 written non-canonically; x = 0 with the
    // sign bit set; and a valid key with a small-order component added (not a refusal, below).
    let mut not_a_point = [0u8; 32];
    not_a_point[0] = 2;
    let mut y_is_p = [0xff; 32];
    y_is_p[0] = 0xed;
    y_is_p[31] = 0x7f;
    let mut negative_zero = identity;
    negative_zero[31] |= 0x80;
    for pk in [
        identity,
        order_two,
        order_four,
        not_a_point,
        y_is_p,
        negative_zero,
    ] {
        assert_eq!(
            verify(&pk, t.alpha, &pi),
            Err(VrfError::PublicKey),
            "{pk:02x?}"
        );
    }
    // The same curve point, canonically and not: dalek decodes both, the RFC only one.
    assert!(CompressedEdwardsY(y_is_p).decompress().is_some());
    assert!(CompressedEdwardsY(negative_zero).decompress().is_some());
    assert!(decode_point(&order_four).is_some() && decode_point(&y_is_p).is_none());
}

#[test]
fn non_point_gammas_are_refused() {
    let t = &VECTORS[0];
    let pk: [u8; 32] = arr(t.pk);
    let pi: [u8; PROOF_LEN] = arr(t.pi);
    let mut not_a_point = [0u8; 32];
    not_a_point[0] = 2;
    let mut y_is_p_plus_one = [0xff; 32];
    y_is_p_plus_one[0] = 0xee;
    y_is_p_plus_one[31] = 0x7f;
    let mut negative_zero = [0u8; 32];
    negative_zero[0] = 1;
    negative_zero[31] = 0x80;
    for gamma in [not_a_point, y_is_p_plus_one, negative_zero] {
        let mut bad = pi;
        bad[..32].copy_from_slice(&gamma);
        assert_eq!(
            verify(&pk, t.alpha, &bad),
            Err(VrfError::Gamma),
            "{gamma:02x?}"
        );
    }
}

#[test]
fn debug_shows_the_public_key_only() {
    let key = VrfKey::from_seed(&arr(VECTORS[0].sk));
    let shown = format!("{key:?}");
    assert!(
        shown.contains(VECTORS[0].pk) && shown.contains("redacted"),
        "{shown}"
    );
    assert!(!shown.contains(&VECTORS[0].sk[..16]) && !shown.contains(&VECTORS[0].x[..16]));
}

#[test]
fn errors_say_what_is_wrong() {
    assert_eq!(
        VrfError::ProofLength(3).to_string(),
        "a VRF proof is 80 bytes, not 3"
    );
    assert!(VrfError::PublicKey.to_string().contains("public key"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn prove_output_and_verify_agree(seed in any::<[u8; 32]>(), alpha in prop::collection::vec(any::<u8>(), 0..64)) {
        let key = VrfKey::from_seed(&seed);
        let (pi, beta) = key.prove(&alpha);
        prop_assert_eq!(key.output(&alpha), beta);
        prop_assert_eq!(verify(&key.public(), &alpha, &pi), Ok(beta));
        let mut other = alpha.clone();
        other.push(0);
        prop_assert_eq!(verify(&key.public(), &other, &pi), Err(VrfError::Invalid));
    }
}
