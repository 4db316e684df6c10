//! Durations as people write them (`500ms`, `30s`, `5m`, `2h`, `1d`, or a number of seconds):
//! one type for flags, environment, the TOML file and `--help`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A duration that parses from and prints as `30s`, `5m`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub const fn secs(s: u64) -> Dur {
        Dur(Duration::from_secs(s))
    }

    pub const fn millis(ms: u64) -> Dur {
        Dur(Duration::from_millis(ms))
    }

    pub const fn get(self) -> Duration {
        self.0
    }

    /// As a chrono duration (saturating).
    pub fn chrono(self) -> chrono::Duration {
        chrono::Duration::from_std(self.0).unwrap_or(chrono::Duration::MAX)
    }
}

impl From<Duration> for Dur {
    fn from(d: Duration) -> Dur {
        Dur(d)
    }
}

impl From<Dur> for Duration {
    fn from(d: Dur) -> Duration {
        d.0
    }
}

/// `500ms`, `30s`, `5m`, `2h`, `1d`, or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 500ms, 30s, 5m, 2h, 1d)"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        other => return Err(format!("unknown unit `{other}` in `{s}` (ms, s, m, h, d)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is out of range"))
}

impl FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Dur, String> {
        parse_duration(s).map(Dur)
    }
}

impl fmt::Display for Dur {
    /// The largest whole unit: `50ms`, `30s`, `15m`, `2h`, `1d`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        for (unit, size) in [("d", 86_400_000u128), ("h", 3_600_000), ("m", 60_000)] {
            if ms >= size && ms % size == 0 {
                return write!(f, "{}{unit}", ms / size);
            }
        }
        if ms % 1000 == 0 {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl serde::Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"30s\", \"5m\" or a number of seconds")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Dur, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dur, E> {
                Ok(Dur::secs(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dur, E> {
                u64::try_from(v)
                    .map(Dur::secs)
                    .map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Dur, E> {
                Duration::try_from_secs_f64(v)
                    .map(Dur)
                    .map_err(|_| E::custom("duration out of range"))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
        for (d, s) in [
            (Dur::millis(50), "50ms"),
            (Dur::secs(30), "30s"),
            (Dur::secs(900), "15m"),
            (Dur::secs(7200), "2h"),
            (Dur::secs(86_400), "1d"),
            (Dur::millis(1500), "1500ms"),
        ] {
            assert_eq!(d.to_string(), s);
            assert_eq!(s.parse::<Dur>(), Ok(d));
        }
    }
}
