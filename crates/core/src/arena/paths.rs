//! Names of the results tree: `<project>/Arena/<battle slug>/<contestant dir>/`.

use super::error::ArenaError;
use super::lane::BattleType;

/// The longest slug [`sanitize_slug`] returns, in bytes (= ASCII chars).
pub const MAX_SLUG_LEN: usize = 64;

const MS_PER_DAY: i64 = 86_400_000;

/// A file-system- and URL-safe slug of `s`.
///
/// ASCII letters are lowercased, ASCII digits kept, and every run of other
/// characters (punctuation, whitespace, any non-ASCII character) becomes one
/// `-`; leading and trailing `-` are dropped and the result is cut to
/// [`MAX_SLUG_LEN`] characters without leaving a trailing `-`. The output
/// always matches `^[a-z0-9]+(-[a-z0-9]+)*$` or is empty (for input with no
/// ASCII letter or digit). Non-ASCII letters are separators rather than
/// transliterated, so the rule stays the same in every binding.
pub fn sanitize_slug(s: &str) -> String {
    let mut slug = String::with_capacity(s.len().min(MAX_SLUG_LEN));
    let mut pending_dash = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if pending_dash && !slug.is_empty() {
                if slug.len() + 1 >= MAX_SLUG_LEN {
                    break;
                }
                slug.push('-');
            }
            pending_dash = false;
            if slug.len() >= MAX_SLUG_LEN {
                break;
            }
            slug.push(c.to_ascii_lowercase());
        } else {
            pending_dash = true;
        }
    }
    slug
}

/// The folder name of a battle: `YYYY-MM-DD-<type>-<8 hex>`.
///
/// The date is the UTC calendar date of `created_at_unix_ms` (milliseconds
/// since 1970-01-01T00:00:00Z; negative values are before 1970). The hex part
/// is the first 8 hex digits of `battle_id` with `-` removed, lowercased —
/// a UUID in any case works.
///
/// Errors: `InvalidInput` when the id has fewer than 8 leading hex digits
/// (after dropping dashes), or the date falls outside years 0000–9999.
pub fn battle_slug(
    battle_id: &str,
    battle_type: BattleType,
    created_at_unix_ms: i64,
) -> Result<String, ArenaError> {
    let hex: String = battle_id.chars().filter(|c| *c != '-').take(8).collect();
    if hex.len() != 8 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(ArenaError::InvalidInput(format!(
            "battle id {battle_id:?} must start with 8 hex digits (dashes ignored)"
        )));
    }
    let (year, month, day) = civil_from_days(created_at_unix_ms.div_euclid(MS_PER_DAY));
    if !(0..=9999).contains(&year) {
        return Err(ArenaError::InvalidInput(format!(
            "created_at {created_at_unix_ms} ms is in year {year}, outside 0000-9999"
        )));
    }
    Ok(format!(
        "{year:04}-{month:02}-{day:02}-{}-{}",
        battle_type.as_str(),
        hex.to_ascii_lowercase()
    ))
}

/// The folder name of a contestant: [`sanitize_slug`] of
/// `"<identity>-<model>"`, so `("Claude Code", "openai/gpt-4o")` becomes
/// `claude-code-openai-gpt-4o`. The 64-character cap applies to the whole
/// name.
///
/// Distinct contestants can map to the same folder (`a-b`/`c` and `a`/`b-c`);
/// callers that allow such pairs in one battle must disambiguate.
///
/// Errors: `InvalidInput` when neither part has an ASCII letter or digit
/// (an empty folder name would put the results in the battle's own folder).
pub fn contestant_dir(identity: &str, model: &str) -> Result<String, ArenaError> {
    let slug = sanitize_slug(&format!("{identity}-{model}"));
    if slug.is_empty() {
        return Err(ArenaError::InvalidInput(format!(
            "contestant {identity:?}/{model:?} has no ASCII letter or digit to name its folder"
        )));
    }
    Ok(slug)
}

/// Proleptic Gregorian (year, month, day) of a count of days since
/// 1970-01-01 — Howard Hinnant's `civil_from_days`, exact for every `i64`
/// input that a millisecond timestamp can produce. Hand-written because it is
/// ten lines against a date-time dependency for one call.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
