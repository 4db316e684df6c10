//! The RFC 9381 verifiable random function ECVRF-EDWARDS25519-SHA512-TAI (suite 0x03), pure (no
//! I/O, no randomness: proving is deterministic): key expansion from a 32-byte seed, proving
//! (`ECVRF_prove` and `ECVRF_proof_to_hash`), the output alone, and verification with full public
//! key validation (`validate_key` = TRUE).
//!
//! The suite (RFC 9381 §5.5): edwards25519 and SHA-512, points encoded and decoded as RFC 8032
//! §5.1.2 and §5.1.3 say (decoding strict: a non-canonical `y` and a negative zero `x` are not
//! points), scalars little-endian, cofactor 8, `cLen` = 16, the public key as the
//! encode-to-curve salt, try-and-increment encode-to-curve (§5.4.1.1: the first 32 bytes of
//! each hash read as a point encoding, sign bit included, then multiplied by the cofactor),
//! RFC 8032-style nonces (§5.4.2.2). A proof is `Gamma (32) ‖ c (16) ‖ s (32)`, an output 64
//! bytes.

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::{clamp_integer, Scalar};
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

/// The suite string of ECVRF-EDWARDS25519-SHA512-TAI.
pub const SUITE: u8 = 0x03;

/// A proof's length: Gamma (32) ‖ c (16) ‖ s (32).
pub const PROOF_LEN: usize = 80;

/// A VRF output's length (beta).
pub const OUTPUT_LEN: usize = 64;

/// The challenge's length (`cLen`).
const C_LEN: usize = 16;

/// The domain separators (RFC 9381 §5.4.1.1, §5.4.3, §5.2); every hash ends with 0x00.
const ENCODE_TO_CURVE: u8 = 0x01;
const CHALLENGE: u8 = 0x02;
const PROOF_TO_HASH: u8 = 0x03;
const BACK: u8 = 0x00;

/// A VRF secret key: the secret scalar `x` and the nonce prefix, both from the RFC 8032 §5.1.5
/// expansion of a 32-byte seed, and the public key `Y = x·B`. Zeroed when dropped; its `Debug`
/// shows the public key only.
pub struct VrfKey {
    x: Scalar,
    prefix: [u8; 32],
    public: [u8; 32],
}

impl std::fmt::Debug for VrfKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VrfKey(public ")?;
        for b in self.public {
            write!(f, "{b:02x}")?;
        }
        write!(f, ", secret redacted)")
    }
}

impl Drop for VrfKey {
    fn drop(&mut self) {
        self.x.zeroize();
        self.prefix.zeroize();
    }
}

impl VrfKey {
    /// RFC 9381 §5.5 / RFC 8032 §5.1.5 key expansion of a 32-byte secret seed: `x` is the
    /// clamped first half of SHA-512(seed), the nonce prefix its second half.
    pub fn from_seed(seed: &[u8; 32]) -> VrfKey {
        let mut h: [u8; 64] = Sha512::digest(seed).into();
        let mut clamped = [0u8; 32];
        clamped.copy_from_slice(&h[..32]);
        clamped = clamp_integer(clamped);
        // Y = x·B and the proofs' s = k + c·x only need x modulo the group order.
        let x = Scalar::from_bytes_mod_order(clamped);
        let mut prefix = [0u8; 32];
        prefix.copy_from_slice(&h[32..]);
        h.zeroize();
        clamped.zeroize();
        let public = EdwardsPoint::mul_base(&x).compress().to_bytes();
        VrfKey { x, prefix, public }
    }

    /// The public key (32 bytes, RFC 8032 encoding).
    pub fn public(&self) -> [u8; 32] {
        self.public
    }

    /// ECVRF_prove (§5.1) and ECVRF_proof_to_hash (§5.2): (pi, beta).
    ///
    /// # Panics
    ///
    /// When none of the 256 candidates of try-and-increment is a point (each is one with
    /// probability about 1/2, so 2⁻²⁵⁶ for a given input: it has never happened for any input,
    /// and `verify` refuses such an input in the same way).
    pub fn prove(&self, alpha: &[u8]) -> ([u8; PROOF_LEN], [u8; OUTPUT_LEN]) {
        let h = self.encode(alpha);
        let h_string = h.compress().to_bytes();
        let gamma = h * self.x;
        let mut k = self.nonce(&h_string);
        let u = EdwardsPoint::mul_base(&k);
        let v = h * k;
        let gamma_string = gamma.compress().to_bytes();
        let c_string = challenge(
            &self.public,
            &h_string,
            &gamma_string,
            &u.compress().to_bytes(),
            &v.compress().to_bytes(),
        );
        let s = k + challenge_scalar(&c_string) * self.x;
        k.zeroize();
        let mut pi = [0u8; PROOF_LEN];
        pi[..32].copy_from_slice(&gamma_string);
        pi[32..32 + C_LEN].copy_from_slice(&c_string);
        pi[32 + C_LEN..].copy_from_slice(s.as_bytes());
        (pi, proof_to_hash(&gamma))
    }

    /// beta alone, without building the proof (same value as prove's beta; cheaper: one scalar
    /// multiplication).
    ///
    /// # Panics
    ///
    /// As [`VrfKey::prove`] (with probability 2⁻²⁵⁶).
    pub fn output(&self, alpha: &[u8]) -> [u8; OUTPUT_LEN] {
        proof_to_hash(&(self.encode(alpha) * self.x))
    }

    /// H, the input's point under this key (§5.4.1.1).
    fn encode(&self, alpha: &[u8]) -> EdwardsPoint {
        match encode_to_curve(&self.public, alpha) {
            Some(h) => h,
            // 256 SHA-512 outputs in a row, none of them a point: see `prove`'s "Panics".
            None => panic!("ECVRF try-and-increment found no point in 256 candidates"),
        }
    }

    /// ECVRF_nonce_generation_RFC8032 (§5.4.2.2): SHA-512(prefix ‖ h_string) mod q.
    fn nonce(&self, h_string: &[u8; 32]) -> Scalar {
        let mut k_string: [u8; 64] = Sha512::new()
            .chain_update(self.prefix)
            .chain_update(h_string)
            .finalize()
            .into();
        let k = Scalar::from_bytes_mod_order_wide(&k_string);
        k_string.zeroize();
        k
    }
}

/// Why a proof or key is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VrfError {
    /// The public key is not the canonical encoding of a curve point, or is of small order.
    #[error("the VRF public key is not a canonical curve point of large order (RFC 9381 §5.4.5)")]
    PublicKey,
    /// The proof is not 80 bytes long.
    #[error("a VRF proof is {PROOF_LEN} bytes, not {0}")]
    ProofLength(usize),
    /// The proof's Gamma is not the canonical encoding of a curve point.
    #[error("the VRF proof's Gamma is not a canonical curve point")]
    Gamma,
    /// The proof's s is not a canonical scalar (it is not below the group order).
    #[error("the VRF proof's s is not below the group order")]
    Scalar,
    /// The proof is well formed but does not verify for this key and input.
    #[error("the VRF proof does not verify for this public key and input")]
    Invalid,
}

/// ECVRF_verify (§5.3) with full public key validation (§5.4.5, validate_key = TRUE): beta on
/// success.
pub fn verify(public: &[u8; 32], alpha: &[u8], pi: &[u8]) -> Result<[u8; OUTPUT_LEN], VrfError> {
    let y = decode_point(public).ok_or(VrfError::PublicKey)?;
    if y.is_small_order() {
        return Err(VrfError::PublicKey);
    }
    let pi = <&[u8; PROOF_LEN]>::try_from(pi).map_err(|_| VrfError::ProofLength(pi.len()))?;
    // ECVRF_decode_proof (§5.4.4).
    let (mut gamma_string, mut c_string, mut s_string) = ([0u8; 32], [0u8; C_LEN], [0u8; 32]);
    gamma_string.copy_from_slice(&pi[..32]);
    c_string.copy_from_slice(&pi[32..32 + C_LEN]);
    s_string.copy_from_slice(&pi[32 + C_LEN..]);
    let gamma = decode_point(&gamma_string).ok_or(VrfError::Gamma)?;
    let s =
        Option::<Scalar>::from(Scalar::from_canonical_bytes(s_string)).ok_or(VrfError::Scalar)?;
    let h = encode_to_curve(public, alpha).ok_or(VrfError::Invalid)?;
    let minus_c = -challenge_scalar(&c_string);
    // U = s·B − c·Y, V = s·H − c·Gamma (public values only: variable time is fine).
    let u = EdwardsPoint::vartime_double_scalar_mul_basepoint(&minus_c, &y, &s);
    let v = EdwardsPoint::vartime_multiscalar_mul([s, minus_c], [h, gamma]);
    // Y and Gamma decoded strictly, so their given bytes are their point_to_string.
    let expected = challenge(
        public,
        &h.compress().to_bytes(),
        &gamma_string,
        &u.compress().to_bytes(),
        &v.compress().to_bytes(),
    );
    if expected != c_string {
        return Err(VrfError::Invalid);
    }
    Ok(proof_to_hash(&gamma))
}

/// string_to_point: RFC 8032 §5.1.3 decoding, strict. curve25519-dalek's `decompress` reduces a
/// `y` ≥ p and accepts `x` = 0 with the sign bit set; both are refused here first.
fn decode_point(bytes: &[u8; 32]) -> Option<EdwardsPoint> {
    let sign = bytes[31] & 0x80 != 0;
    let mut y = *bytes;
    y[31] &= 0x7f;
    // p = 2²⁵⁵ − 19 is ed ff … ff 7f little-endian: y ≥ p only there and above in byte 0.
    if y[0] >= 0xed && y[1..31].iter().all(|&b| b == 0xff) && y[31] == 0x7f {
        return None;
    }
    // x = 0 only for y = 1 and y = p − 1 (ec ff … ff 7f): its sign bit must be 0.
    let y_is_one = y[0] == 0x01 && y[1..].iter().all(|&b| b == 0);
    let y_is_minus_one = y[0] == 0xec && y[1..31].iter().all(|&b| b == 0xff) && y[31] == 0x7f;
    if sign && (y_is_one || y_is_minus_one) {
        return None;
    }
    CompressedEdwardsY(*bytes).decompress()
}

/// ECVRF_encode_to_curve_try_and_increment (§5.4.1.1) with the public key as the salt; `None`
/// when all 256 counters fail (probability 2⁻²⁵⁶).
fn encode_to_curve(salt: &[u8; 32], alpha: &[u8]) -> Option<EdwardsPoint> {
    (0..=u8::MAX).find_map(|ctr| {
        let hash = Sha512::new()
            .chain_update([SUITE, ENCODE_TO_CURVE])
            .chain_update(salt)
            .chain_update(alpha)
            .chain_update([ctr, BACK])
            .finalize();
        let mut candidate = [0u8; 32];
        candidate.copy_from_slice(&hash[..32]);
        let h = decode_point(&candidate)?.mul_by_cofactor();
        (!h.is_identity()).then_some(h)
    })
}

/// ECVRF_challenge_generation (§5.4.3) of the five encoded points Y, H, Gamma, U, V: the first
/// 16 bytes of the hash.
fn challenge(
    y: &[u8; 32],
    h: &[u8; 32],
    gamma: &[u8; 32],
    u: &[u8; 32],
    v: &[u8; 32],
) -> [u8; C_LEN] {
    let hash = Sha512::new()
        .chain_update([SUITE, CHALLENGE])
        .chain_update(y)
        .chain_update(h)
        .chain_update(gamma)
        .chain_update(u)
        .chain_update(v)
        .chain_update([BACK])
        .finalize();
    let mut c = [0u8; C_LEN];
    c.copy_from_slice(&hash[..C_LEN]);
    c
}

/// The challenge as a scalar (little-endian; below 2¹²⁸, so below the group order).
fn challenge_scalar(c_string: &[u8; C_LEN]) -> Scalar {
    let mut bytes = [0u8; 32];
    bytes[..C_LEN].copy_from_slice(c_string);
    Scalar::from_bytes_mod_order(bytes)
}

/// ECVRF_proof_to_hash's last step (§5.2): SHA-512(suite ‖ 0x03 ‖ point_to_string(8·Gamma) ‖ 0x00).
fn proof_to_hash(gamma: &EdwardsPoint) -> [u8; OUTPUT_LEN] {
    Sha512::new()
        .chain_update([SUITE, PROOF_TO_HASH])
        .chain_update(gamma.mul_by_cofactor().compress().as_bytes())
        .chain_update([BACK])
        .finalize()
        .into()
}

#[cfg(test)]
#[path = "vrf_tests.rs"]
mod tests;
