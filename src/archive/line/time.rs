//! The archive's times: Unix microseconds as RFC 3339 UTC with exactly six fractional digits
//! (`2026-11-26T03:00:00.123456Z`), over the whole of `i64`, and back (that spelling only).
//! Pure.

use std::io::Write as _;

const US_PER_DAY: i64 = 86_400_000_000;

pub(super) fn time(out: &mut Vec<u8>, us: i64) {
    out.push(b'"');
    push_time(out, us);
    out.push(b'"');
}

/// Unix microseconds as `YYYY-MM-DDTHH:MM:SS.ffffffZ`, over the whole of `i64` (the proleptic
/// Gregorian calendar; years past 9999 as `+YYYYY`, before year 0 as `-YYYY`).
pub(super) fn push_time(out: &mut Vec<u8>, us: i64) {
    let (days, tod) = (us.div_euclid(US_PER_DAY), us.rem_euclid(US_PER_DAY));
    let (y, m, d) = civil_from_days(days);
    let (h, mi) = (tod / 3_600_000_000, tod / 60_000_000 % 60);
    let (s, f) = (tod / 1_000_000 % 60, tod % 1_000_000);
    // Writing into a Vec cannot fail.
    let _ = match y {
        0..=9999 => write!(out, "{y:04}"),
        10000.. => write!(out, "+{y}"),
        _ => write!(out, "-{:04}", -y),
    };
    let _ = write!(out, "-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:06}Z");
}

/// What [`push_time`] writes, read back; only that spelling (so a day past its month's end, a
/// second fraction of other length or an offset other than `Z` are refused).
pub(super) fn parse_time(s: &str) -> Option<i64> {
    const TAIL: usize = "-MM-DDTHH:MM:SS.ffffffZ".len();
    let b = s.as_bytes();
    if !s.is_ascii() || b.len() < TAIL + 4 {
        return None;
    }
    let (year, t) = b.split_at(b.len() - TAIL);
    let num = |x: &[u8]| -> Option<i64> {
        let ok = !x.is_empty() && x.len() <= 9 && x.iter().all(u8::is_ascii_digit);
        ok.then(|| x.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let y = match year[0] {
        b'+' => num(&year[1..])?,
        b'-' => -num(&year[1..])?,
        _ => num(year)?,
    };
    let seps = [
        (0, b'-'),
        (3, b'-'),
        (6, b'T'),
        (9, b':'),
        (12, b':'),
        (15, b'.'),
    ];
    if t[TAIL - 1] != b'Z' || seps.iter().any(|&(i, c)| t[i] != c) {
        return None;
    }
    let (m, d) = (num(&t[1..3])?, num(&t[4..6])?);
    let (h, mi, sec, f) = (
        num(&t[7..9])?,
        num(&t[10..12])?,
        num(&t[13..15])?,
        num(&t[16..22])?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let tod = ((h * 60 + mi) * 60 + sec) * 1_000_000 + f;
    let us = i128::from(days_from_civil(y, m, d)) * i128::from(US_PER_DAY) + i128::from(tod);
    let us = i64::try_from(us).ok()?;
    let mut again = Vec::with_capacity(b.len());
    push_time(&mut again, us);
    (again == b).then_some(us)
}

/// The civil date of a day count from 1970-01-01 (H. Hinnant's algorithm, exact for any `i64`
/// day count that `i64` microseconds reach).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The day count from 1970-01-01 of a civil date (the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
