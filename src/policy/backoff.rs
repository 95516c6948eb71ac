//! How long to wait before a retry, and what a server's `Retry-After` asks for.
//!
//! Why jitter: clients that failed together and wait the same exponential
//! delay come back together, and the synchronized wave knocks the recovering
//! server over again. Spreading each wait at random (full jitter by default)
//! turns the waves into a trickle. The randomness is passed in, so the engine
//! uses a crypto source and tests use fixed values.
//!
//! A `Backoff` lives for one call: decorrelated jitter remembers the previous
//! delay of that call.

use std::ops::RangeInclusive;

use super::option_table::MAX_DURATION_MS;
use super::retry::{Jitter, RetryConfig};

#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    base: f64,
    max: f64,
    jitter: Jitter,
    /// Previous delay (decorrelated jitter); the base before the first retry.
    prev: f64,
}

impl Backoff {
    /// Delays are clamped to `0..=2^31-1` ms (NaN counts as 0), so even an
    /// unvalidated configuration yields finite, non-negative waits.
    pub fn new(base_delay_ms: f64, max_delay_ms: f64, jitter: Jitter) -> Self {
        let base = clean(base_delay_ms);
        Self {
            base,
            max: clean(max_delay_ms),
            jitter,
            prev: base,
        }
    }

    pub fn from_config(cfg: &RetryConfig) -> Self {
        Self::new(cfg.base_delay_ms, cfg.max_delay_ms, cfg.jitter)
    }

    /// Delay before retry `n` (1 = first retry; 0 is taken as 1); never
    /// negative, NaN or above `max_delay_ms`. `rand01` outside `[0, 1)`
    /// (or NaN) is taken as 0.
    pub fn delay(&mut self, n: u32, rand01: f64) -> f64 {
        let r = if (0.0..1.0).contains(&rand01) {
            rand01
        } else {
            0.0
        };
        // 2^2000 is already infinite; the cap only keeps the exponent an i32.
        let exponent = n.saturating_sub(1).min(2000) as i32;
        let d = if self.base > 0.0 {
            (self.base * 2f64.powi(exponent)).min(self.max)
        } else {
            0.0
        };
        match self.jitter {
            Jitter::Full => r * d,
            Jitter::Equal => d / 2.0 + r * d / 2.0,
            Jitter::None => d,
            Jitter::Decorrelated => {
                let (a, b) = (self.base, self.prev * 3.0);
                let (lo, hi) = (a.min(b), a.max(b));
                self.prev = (lo + r * (hi - lo)).min(self.max);
                self.prev
            }
        }
    }
}

fn clean(ms: f64) -> f64 {
    if ms.is_nan() {
        0.0
    } else {
        ms.clamp(0.0, MAX_DURATION_MS)
    }
}

/// A delta-seconds value this large already exceeds any `maxRetryAfterMs`;
/// longer digit strings saturate here instead of overflowing.
const MAX_RETRY_AFTER_SECONDS: f64 = 1e12;

/// `Retry-After` header value -> wait in ms (>= 0): delta-seconds (a
/// non-negative integer) or an HTTP-date (IMF-fixdate, RFC 850 or asctime)
/// compared with `now_epoch_ms`; a date in the past gives 0. Anything else
/// (fractions, negatives, garbage, a non-finite `now`) is `None`.
pub fn parse_retry_after(value: &str, now_epoch_ms: f64) -> Option<f64> {
    let v = value.trim_matches([' ', '\t']);
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        let seconds = v.bytes().fold(0.0, |acc, b| {
            (acc * 10.0 + f64::from(b - b'0')).min(MAX_RETRY_AFTER_SECONDS)
        });
        return Some(seconds * 1000.0);
    }
    if !now_epoch_ms.is_finite() {
        return None;
    }
    http_date_ms(v, now_epoch_ms).map(|at| (at - now_epoch_ms).max(0.0))
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const FIFTY_YEARS_MS: f64 = 50.0 * 365.25 * 86_400_000.0;

/// RFC 9110 section 5.6.7 HTTP-date -> epoch ms. The weekday must be a valid
/// name but is not checked against the date.
fn http_date_ms(s: &str, now_epoch_ms: f64) -> Option<f64> {
    let words: Vec<&str> = s.split_ascii_whitespace().collect();
    match words.as_slice() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        [day, d, mon, y, time, "GMT"] => {
            DAYS.contains(&day.strip_suffix(',')?).then_some(())?;
            date_ms(number(y, 4..=4)?, month(mon)?, number(d, 1..=2)?, time)
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        [day, date, time, "GMT"] => {
            LONG_DAYS.contains(&day.strip_suffix(',')?).then_some(())?;
            let mut parts = date.split('-');
            let (d, mon, yy) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() {
                return None;
            }
            let (d, mon, yy) = (number(d, 1..=2)?, month(mon)?, number(yy, 2..=2)?);
            // A two-digit year more than 50 years ahead is in the past century.
            let ms = date_ms(2000 + yy, mon, d, time)?;
            if ms > now_epoch_ms + FIFTY_YEARS_MS {
                date_ms(1900 + yy, mon, d, time)
            } else {
                Some(ms)
            }
        }
        // asctime: Sun Nov  6 08:49:37 1994
        [day, mon, d, time, y] => {
            DAYS.contains(day).then_some(())?;
            date_ms(number(y, 4..=4)?, month(mon)?, number(d, 1..=2)?, time)
        }
        _ => None,
    }
}

/// ASCII digits only, as many as `len` allows.
fn number(s: &str, len: RangeInclusive<usize>) -> Option<u32> {
    if len.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn month(s: &str) -> Option<u32> {
    let i = MONTHS.iter().position(|m| *m == s)?;
    u32::try_from(i + 1).ok()
}

/// "HH:MM:SS" -> seconds into the day (a leap second 60 is accepted).
fn clock(s: &str) -> Option<u32> {
    let mut parts = s.split(':');
    let mut field = |max: u32| number(parts.next()?, 2..=2).filter(|v| *v <= max);
    let (h, m, sec) = (field(23)?, field(59)?, field(60)?);
    parts.next().is_none().then_some(h * 3600 + m * 60 + sec)
}

fn date_ms(year: u32, month: u32, day: u32, time: &str) -> Option<f64> {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day == 0 || day > month_days {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + i64::from(clock(time)?);
    Some(seconds as f64 * 1000.0)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// algorithm, for years 0..=9999).
fn days_from_civil(year: u32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// Native only: proptest is a native dev-dependency, and `wasm-pack test`
// builds every test target for wasm32.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const JITTERS: [Jitter; 4] = [
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::None,
    ];

    #[test]
    fn exponential_cap_without_jitter() {
        let mut b = Backoff::new(200.0, 8000.0, Jitter::None);
        let delays: Vec<f64> = (1..=8).map(|n| b.delay(n, 0.5)).collect();
        assert_eq!(
            delays,
            [200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0, 8000.0, 8000.0]
        );
        assert_eq!(b.delay(0, 0.5), 200.0);
        assert_eq!(b.delay(u32::MAX, 0.5), 8000.0);
    }

    #[test]
    fn full_jitter_is_uniform_0_to_d() {
        let mut b = Backoff::new(200.0, 8000.0, Jitter::Full);
        assert_eq!(b.delay(3, 0.0), 0.0);
        assert_eq!(b.delay(3, 0.5), 400.0);
        assert!(b.delay(3, 0.999_999) < 800.0);
    }

    #[test]
    fn equal_jitter_is_half_plus_uniform_half() {
        let mut b = Backoff::new(200.0, 8000.0, Jitter::Equal);
        assert_eq!(b.delay(3, 0.0), 400.0);
        assert_eq!(b.delay(3, 0.5), 600.0);
        assert_eq!(b.delay(10, 0.0), 4000.0);
    }

    #[test]
    fn decorrelated_grows_from_previous_delay() {
        let mut b = Backoff::new(100.0, 1000.0, Jitter::Decorrelated);
        // uniform(base, 3 * base), then uniform(base, 3 * previous), capped.
        assert_eq!(b.delay(1, 0.5), 200.0);
        assert_eq!(b.delay(2, 0.5), 350.0);
        assert_eq!(b.delay(3, 0.0), 100.0);
        assert!((b.delay(4, 0.999) - 299.8).abs() < 1e-9);
        assert!((b.delay(5, 0.999) - 898.6006).abs() < 1e-9);
        assert_eq!(b.delay(6, 0.999), 1000.0);
    }

    #[test]
    fn decorrelated_with_max_below_base() {
        let mut b = Backoff::new(500.0, 100.0, Jitter::Decorrelated);
        assert_eq!(b.delay(1, 0.5), 100.0);
        // previous 100 < base: uniform over [300, 500].
        assert_eq!(b.delay(2, 0.0), 100.0);
    }

    #[test]
    fn odd_inputs_stay_in_range() {
        for j in JITTERS {
            let mut b = Backoff::new(f64::NAN, f64::INFINITY, j);
            assert_eq!(b.delay(5, 0.5), 0.0);
            let mut b = Backoff::new(0.0, 100.0, j);
            assert_eq!(b.delay(u32::MAX, 0.5), 0.0);
            let mut b = Backoff::new(100.0, -5.0, j);
            assert_eq!(b.delay(1, 0.5), 0.0);
            let mut b = Backoff::new(100.0, 1000.0, j);
            for r in [f64::NAN, -1.0, 1.0, f64::INFINITY] {
                let d = b.delay(2, r);
                assert!((0.0..=1000.0).contains(&d));
            }
        }
    }

    #[test]
    fn from_config_uses_retry_settings() {
        let cfg = RetryConfig {
            base_delay_ms: 50.0,
            max_delay_ms: 75.0,
            jitter: Jitter::None,
            ..RetryConfig::default()
        };
        let mut b = Backoff::from_config(&cfg);
        assert_eq!((b.delay(1, 0.0), b.delay(2, 0.0)), (50.0, 75.0));
    }

    proptest! {
        #[test]
        fn delay_is_finite_and_within_max(
            base in 0.0..=MAX_DURATION_MS,
            max in 0.0..=MAX_DURATION_MS,
            j in 0..4usize,
            steps in prop::collection::vec((any::<u32>(), 0.0..1.0f64), 1..20),
        ) {
            let mut b = Backoff::new(base, max, JITTERS[j]);
            for (n, r) in steps {
                let d = b.delay(n, r);
                prop_assert!(d.is_finite() && (0.0..=max).contains(&d), "{d}");
            }
        }

        #[test]
        fn delay_is_finite_for_any_input(
            base in any::<f64>(),
            max in any::<f64>(),
            j in 0..4usize,
            steps in prop::collection::vec((any::<u32>(), any::<f64>()), 1..20),
        ) {
            let mut b = Backoff::new(base, max, JITTERS[j]);
            for (n, r) in steps {
                let d = b.delay(n, r);
                prop_assert!(d.is_finite() && d >= 0.0);
                if max >= 0.0 {
                    prop_assert!(d <= max);
                }
            }
        }

        #[test]
        fn retry_after_never_panics(s in ".{0,40}", now in any::<f64>()) {
            if let Some(ms) = parse_retry_after(&s, now) {
                prop_assert!(ms >= 0.0 && ms.is_finite());
            }
        }
    }

    /// 1994-11-06T08:49:37Z
    const RFC_EXAMPLE_MS: f64 = 784_111_777_000.0;

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after("0", 0.0), Some(0.0));
        assert_eq!(parse_retry_after("120", 0.0), Some(120_000.0));
        assert_eq!(parse_retry_after(" 7\t", f64::NAN), Some(7000.0));
        assert_eq!(parse_retry_after("007", 0.0), Some(7000.0));
        let huge = "9".repeat(500);
        assert_eq!(parse_retry_after(&huge, 0.0), Some(1e15));
    }

    #[test]
    fn retry_after_rejects_garbage() {
        for v in [
            "", " ", "-1", "1.5", "+3", "1e3", "soon", "3 s", "0x10", "١٢",
        ] {
            assert_eq!(parse_retry_after(v, 0.0), None, "{v:?}");
        }
    }

    #[test]
    fn retry_after_http_dates() {
        let now = RFC_EXAMPLE_MS - 5000.0;
        for v in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_retry_after(v, now), Some(5000.0), "{v}");
        }
    }

    #[test]
    fn retry_after_date_in_past_is_zero() {
        let v = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(parse_retry_after(v, RFC_EXAMPLE_MS + 1.0), Some(0.0));
        assert_eq!(parse_retry_after(v, f64::INFINITY), None);
    }

    #[test]
    fn epoch_and_leap_days() {
        assert_eq!(
            http_date_ms("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
            Some(0.0)
        );
        assert_eq!(
            http_date_ms("Thu, 29 Feb 2024 00:00:01 GMT", 0.0),
            Some(1_709_164_801_000.0)
        );
        assert_eq!(http_date_ms("Thu, 29 Feb 2023 00:00:00 GMT", 0.0), None);
        assert!(http_date_ms("Tue, 29 Feb 2000 00:00:00 GMT", 0.0).is_some());
        assert_eq!(http_date_ms("Thu, 29 Feb 1900 00:00:00 GMT", 0.0), None);
        assert_eq!(
            http_date_ms("Fri, 31 Dec 9999 23:59:60 GMT", 0.0),
            Some(253_402_300_800_000.0)
        );
    }

    #[test]
    fn rfc850_two_digit_years() {
        let now_2024 = 1_704_067_200_000.0;
        let y =
            |v: &str| http_date_ms(v, now_2024).map(|ms| (ms / 86_400_000.0 / 365.2425) + 1970.0);
        assert!((y("Monday, 01-Jan-70 00:00:00 GMT").unwrap() - 2070.0).abs() < 0.01);
        assert!((y("Monday, 01-Jan-80 00:00:00 GMT").unwrap() - 1980.0).abs() < 0.01);
    }

    #[test]
    fn malformed_dates() {
        for v in [
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 32 Oct 1994 08:49:37 GMT",
            "Sun, 00 Oct 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 006 Nov 1994 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sunday, 06-Nov-94-1 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 94",
            "Xyz Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_retry_after(v, 0.0), None, "{v}");
        }
    }
}
