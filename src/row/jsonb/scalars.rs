//! Scalars as jsonb reads and prints them: strings per json_lex_string (jsonapi.c) and
//! escape_json (json.c), numbers per numeric.c.
//!
//! Numbers: `set_var_from_str` keeps every digit written, with a display scale
//! (`dscale`) of the digits after the point minus the exponent, at least 0: `1.50`
//! stays `1.50`, `1e3` is `1000`, `1.0E7` is `10000000`, `1e-3` is `0.001`, `100e-2`
//! is `1.00`. An exponent of ±1,073,741,823 (INT_MAX/2) or more is refused at once;
//! `make_result` then refuses a `dscale` over 16,383 (NUMERIC_DSCALE_MAX) and a
//! base-10000 weight of the first non-zero digit over 32,767 (so from 10^131072 on).
//! Zero has weight 0 and no sign: `-0` is `0`, `-0.0` is `0.0`, `0e999999` is `0`, but
//! `0e-16384` fails. `get_str_from_var` prints no exponent: the integer digits (or
//! `0`), then `dscale` digits after a point.

use super::Refusal;

const EXPONENT_LIMIT: i64 = (i32::MAX / 2) as i64;
const DSCALE_MAX: i64 = 0x3FFF;
const WEIGHT_MAX: i64 = i16::MAX as i64;

/// The end of the number token starting at `start` (PostgreSQL's `json_lex_number`),
/// or `None` if it is malformed, trailing letters, digits or `_` included; and whether
/// numeric could refuse it (it has an exponent, or is long enough to overflow).
pub(super) fn scan_number(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let digits = |mut i: usize| {
        while digit(i) {
            i += 1;
        }
        i
    };
    let mut i = start + usize::from(b.get(start) == Some(&b'-'));
    i = match b.get(i) {
        Some(b'0') => i + 1,
        Some(b'1'..=b'9') => digits(i),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        if !digit(i + 1) {
            return None;
        }
        i = digits(i + 1);
    }
    let exponent = matches!(b.get(i), Some(b'e' | b'E'));
    if exponent {
        i += 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if !digit(i) {
            return None;
        }
        i = digits(i);
    }
    match b.get(i) {
        Some(&c) if super::word_byte(c) => None,
        _ => Some((i, exponent || i - start > DSCALE_MAX as usize)),
    }
}

/// Checks a well-formed number token against numeric's range and, given `out`,
/// appends its `numeric_out` text.
pub(super) fn convert_number(tok: &[u8], out: Option<&mut String>) -> Result<(), Refusal> {
    let (negative, tok) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, tok),
    };
    let (mantissa, exponent) = match tok.iter().position(|&c| c == b'e' || c == b'E') {
        Some(p) => (&tok[..p], parse_exponent(&tok[p + 1..])),
        None => (tok, 0),
    };
    if exponent.abs() >= EXPONENT_LIMIT {
        return Err(Refusal::NumberOutOfRange);
    }
    let (int, frac) = match mantissa.iter().position(|&c| c == b'.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, &[][..]),
    };
    let (int_len, frac_len) = (int.len() as i64, frac.len() as i64);
    let dscale = (frac_len - exponent).max(0);
    // Decimal exponent of the first non-zero digit, if any.
    let lead = int
        .iter()
        .chain(frac)
        .position(|&c| c != b'0')
        .map(|k| int_len - 1 - k as i64 + exponent);
    if dscale > DSCALE_MAX || lead.is_some_and(|e| e.div_euclid(4) > WEIGHT_MAX) {
        return Err(Refusal::NumberOutOfRange);
    }
    let Some(out) = out else {
        return Ok(());
    };
    // The digit for 10^p: digits are numbered from the first written one, whose
    // power is int_len - 1 + exponent.
    let digit = |p: i64| {
        let k = int_len - 1 + exponent - p;
        let d = if k < int_len {
            usize::try_from(k).ok().and_then(|k| int.get(k))
        } else {
            usize::try_from(k - int_len).ok().and_then(|k| frac.get(k))
        };
        char::from(d.copied().unwrap_or(b'0'))
    };
    match lead {
        Some(e) if e >= 0 => {
            if negative {
                out.push('-');
            }
            out.extend((0..=e).rev().map(digit));
        }
        Some(_) if negative => out.push_str("-0"),
        _ => out.push('0'),
    }
    if dscale > 0 {
        out.push('.');
        out.extend((1..=dscale).map(|p| digit(-p)));
    }
    Ok(())
}

/// The exponent's digits as strtol reads them, saturating past the limit.
fn parse_exponent(e: &[u8]) -> i64 {
    let (sign, digits) = match e.split_first() {
        Some((b'-', rest)) => (-1, rest),
        Some((b'+', rest)) => (1, rest),
        _ => (1, e),
    };
    let magnitude = digits.iter().fold(0i64, |acc, &c| {
        (acc * 10 + i64::from(c.wrapping_sub(b'0'))).min(EXPONENT_LIMIT)
    });
    sign * magnitude
}

/// Scans the string whose opening quote is just before `i`, checking its escapes in
/// PostgreSQL's order and, given `out`, appending its decoded text. Returns the index
/// after the closing quote.
pub(super) fn scan_string(
    src: &str,
    mut i: usize,
    mut out: Option<&mut String>,
) -> Result<usize, Refusal> {
    let b = src.as_bytes();
    let mut high: Option<u32> = None;
    loop {
        let k = find_special(b, i);
        if k > i {
            if high.is_some() {
                return Err(Refusal::LoneSurrogate);
            }
            if let Some(out) = out.as_deref_mut() {
                out.push_str(src.get(i..k).ok_or(Refusal::InvalidJson)?);
            }
        }
        i = k + 1;
        let escape = match b.get(k) {
            Some(b'"') if high.is_none() => return Ok(i),
            Some(b'"') => return Err(Refusal::LoneSurrogate),
            Some(b'\\') => b.get(i).copied(),
            _ => return Err(Refusal::InvalidJson), // a control character, or no closing quote
        };
        i += 1;
        let ch = match escape {
            Some(b'u') => {
                let hex = b.get(i..i + 4).ok_or(Refusal::InvalidJson)?;
                i += 4;
                let mut ch = 0;
                for &h in hex {
                    ch = ch * 16 + char::from(h).to_digit(16).ok_or(Refusal::InvalidJson)?;
                }
                match (ch, high) {
                    (0xD800..=0xDBFF, None) => {
                        high = Some(ch);
                        continue;
                    }
                    (0xDC00..=0xDFFF, Some(h)) => {
                        high = None;
                        0x10000 + ((h - 0xD800) << 10) + (ch - 0xDC00)
                    }
                    (0xD800..=0xDFFF, _) | (_, Some(_)) => return Err(Refusal::LoneSurrogate),
                    (0, None) => return Err(Refusal::NulCharacter),
                    (ch, None) => ch,
                }
            }
            None => return Err(Refusal::InvalidJson),
            _ if high.is_some() => return Err(Refusal::LoneSurrogate),
            Some(c @ (b'"' | b'\\' | b'/')) => u32::from(c),
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => 0x0A,
            Some(b'r') => 0x0D,
            Some(b't') => 0x09,
            _ => return Err(Refusal::InvalidJson),
        };
        if let Some(out) = out.as_deref_mut() {
            out.push(char::from_u32(ch).ok_or(Refusal::InvalidJson)?);
        }
    }
}

/// The index of the first `"`, `\` or control character at or after `i`, or
/// `b.len()`; eight bytes at a time.
fn find_special(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    while let Some(word) = b.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            break;
        };
        let x = u64::from_le_bytes(word);
        // A byte's top bit is set where it is zero after the XOR (or below 0x20);
        // bytes past the first match may be flagged falsely, never bytes before it.
        let zero = |v: u64| v.wrapping_sub(ONES) & !v;
        let hits = (zero(x ^ (ONES * 0x22))
            | zero(x ^ (ONES * 0x5C))
            | (x.wrapping_sub(ONES * 0x20) & !x))
            & (ONES * 0x80);
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b
        .get(i)
        .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
    {
        i += 1;
    }
    i
}

/// PostgreSQL's `escape_json`: named escapes for the usual six, `\u00XX` (lower-case
/// hex) for other control characters, everything else (DEL, non-ASCII) as it is.
pub(super) fn escape_json(out: &mut String, s: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, c) in s.bytes().enumerate() {
        let named = match c {
            0x08 => "\\b",
            0x0C => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0..=0x1F => "",
            _ => continue,
        };
        out.push_str(s.get(plain..i).unwrap_or_default());
        plain = i + 1;
        if named.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 15)]));
        } else {
            out.push_str(named);
        }
    }
    out.push_str(s.get(plain..).unwrap_or_default());
    out.push('"');
}
