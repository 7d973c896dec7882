//! `Retry-After`: how long a provider asked us to wait.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The delay a `Retry-After` header value asks for, relative to the
/// caller's `now`, or `None` when the value is neither form.
///
/// - **Seconds**: ASCII digits (`"120"`), also with a decimal fraction
///   (`"1.5"`, which some gateways send); surrounding whitespace ignored.
///   No sign, no exponent; a number too large for a `Duration` is `None`.
/// - **HTTP date** (RFC 9110 §5.6.7), all three forms a recipient must
///   accept: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850
///   `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year more than 50 years
///   after `now`'s year is read in the century before), and asctime
///   `Sun Nov  6 08:49:37 1994`. `UTC` is accepted for `GMT`; the weekday
///   must be a weekday name but is not checked against the date. The delay
///   is `date − now`, and zero for a date not after `now`.
///
/// Guarantees: pure (the clock is the caller's `now`); never panics.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(delay) = parse_seconds(value) {
        return Some(delay);
    }
    let secs = parse_http_date(value, now)?;
    let date = if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs.unsigned_abs()))?
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))?
    };
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

fn parse_seconds(value: &str) -> Option<Duration> {
    let (int, frac) = match value.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (value, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    let whole: u64 = int.parse().ok()?;
    let nanos = match frac {
        None => 0,
        Some(f) => {
            // The first nine digits are nanoseconds; the rest is below resolution.
            let nine: String = f.chars().chain(std::iter::repeat('0')).take(9).collect();
            nine.parse::<u32>().ok()?
        }
    };
    Some(Duration::new(whole, nanos))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
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

fn month(s: &str) -> Option<u32> {
    MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(s))
        .map(|i| i as u32 + 1)
}

fn number(s: &str, min_len: usize, max_len: usize) -> Option<i64> {
    if s.len() < min_len || s.len() > max_len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `HH:MM:SS` as seconds of the day (a leap second `60` is read as `59`).
fn time_of_day(s: &str) -> Option<i64> {
    let mut parts = s.split(':');
    let h = number(parts.next()?, 2, 2)?;
    let m = number(parts.next()?, 2, 2)?;
    let sec = number(parts.next()?, 2, 2)?;
    if parts.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(h * 3600 + m * 60 + sec.min(59))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

fn unix(y: i64, m: u32, d: u32, tod: i64) -> Option<i64> {
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400 + tod)
}

fn is_gmt(s: &str) -> bool {
    s.eq_ignore_ascii_case("GMT") || s.eq_ignore_ascii_case("UTC")
}

/// Unix seconds of an HTTP date in any of its three forms.
fn parse_http_date(value: &str, now: SystemTime) -> Option<i64> {
    let fields: Vec<&str> = value.split_ascii_whitespace().collect();
    let weekday = |s: &str, names: &[&str]| names.iter().any(|d| d.eq_ignore_ascii_case(s));
    match fields.as_slice() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        [wd, d, mon, y, t, z] if wd.ends_with(',') => {
            if !weekday(&wd[..wd.len() - 1], &DAYS) || !is_gmt(z) {
                return None;
            }
            let d = number(d, 2, 2)? as u32;
            let y = number(y, 4, 4)?;
            unix(y, month(mon)?, d, time_of_day(t)?)
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        [wd, date, t, z] if wd.ends_with(',') => {
            if !weekday(&wd[..wd.len() - 1], &LONG_DAYS) || !is_gmt(z) {
                return None;
            }
            let mut parts = date.split('-');
            let d = number(parts.next()?, 2, 2)? as u32;
            let mon = month(parts.next()?)?;
            let yy = number(parts.next()?, 2, 2)?;
            if parts.next().is_some() {
                return None;
            }
            let now_year = now
                .duration_since(UNIX_EPOCH)
                .map(|d| 1970 + d.as_secs() as i64 / 31_556_952)
                .unwrap_or(1970);
            let mut y = now_year - now_year.rem_euclid(100) + yy;
            if y > now_year + 50 {
                y -= 100;
            }
            unix(y, mon, d, time_of_day(t)?)
        }
        // asctime: Sun Nov  6 08:49:37 1994
        [wd, mon, d, t, y] => {
            if !weekday(wd, &DAYS) {
                return None;
            }
            let d = number(d, 1, 2)? as u32;
            let y = number(y, 4, 4)?;
            unix(y, month(mon)?, d, time_of_day(t)?)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(
            unix(1994, 11, 6, 8 * 3600 + 49 * 60 + 37),
            Some(784_111_777)
        );
        assert_eq!(unix(2023, 2, 29, 0), None);
        assert!(unix(2024, 2, 29, 0).is_some());
    }
}
