//! PDF dates (ISO 32000-1, 7.9.4): `D:YYYYMMDDHHmmSSOHH'mm'`, read leniently and written
//! in UTC.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A PDF date (`D:YYYYMMDDHHmmSSOHH'mm'`) as RFC 3339, or the text unchanged when it
/// is not a valid date.
pub fn pdf_date_to_rfc3339(text: &str) -> String {
    parse_pdf_date(text).and_then(|d| d.format(&Rfc3339).ok()).unwrap_or_else(|| text.to_string())
}

/// Parses a PDF date; every part after the year is optional (ISO 32000-1, 7.9.4), and a
/// missing offset means UTC.
pub fn parse_pdf_date(text: &str) -> Option<OffsetDateTime> {
    let s = text.trim();
    let s = s.strip_prefix("D:").unwrap_or(s).as_bytes();
    let mut pos = 0;
    let digits = |count: usize, pos: &mut usize| -> Option<u32> {
        let part = s.get(*pos..*pos + count)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *pos += count;
        part.iter().try_fold(0u32, |n, d| n.checked_mul(10)?.checked_add(u32::from(d - b'0')))
    };
    let year = digits(4, &mut pos)?;
    let mut fields = [1u32, 1, 0, 0, 0];
    for field in fields.iter_mut() {
        match digits(2, &mut pos) {
            Some(v) => *field = v,
            None => break,
        }
    }
    let [month, day, hour, minute, second] = fields;
    let (mut off_h, mut off_m, mut sign) = (0i32, 0i32, 1i32);
    match s.get(pos) {
        None => {}
        Some(b'Z') => pos = s.len(),
        Some(c @ (b'+' | b'-')) => {
            sign = if *c == b'-' { -1 } else { 1 };
            pos += 1;
            off_h = digits(2, &mut pos)? as i32;
            if s.get(pos) == Some(&b'\'') {
                pos += 1;
            }
            if let Some(m) = digits(2, &mut pos) {
                off_m = m as i32;
            }
            if s.get(pos) == Some(&b'\'') {
                pos += 1;
            }
        }
        Some(_) => return None,
    }
    if pos != s.len() {
        return None;
    }
    let month = time::Month::try_from(u8::try_from(month).ok()?).ok()?;
    let date = time::Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?).ok()?;
    let clock =
        time::Time::from_hms(u8::try_from(hour).ok()?, u8::try_from(minute).ok()?, u8::try_from(second).ok()?).ok()?;
    let offset =
        time::UtcOffset::from_hms(i8::try_from(sign * off_h).ok()?, i8::try_from(sign * off_m).ok()?, 0).ok()?;
    Some(time::PrimitiveDateTime::new(date, clock).assume_offset(offset))
}

/// A UTC time as a PDF date: `D:YYYYMMDDHHmmSS+00'00'`.
pub fn pdf_date(at: OffsetDateTime) -> String {
    pdf_date_utc(at, "+00'00'")
}

/// A time as a PDF date in UTC: `D:YYYYMMDDHHmmSS`, then `zone`, UTC as written (`+00'00'`
/// or `Z`).
pub fn pdf_date_utc(at: OffsetDateTime, zone: &str) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "D:{:04}{:02}{:02}{:02}{:02}{:02}{zone}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// The current time, to the second, in UTC.
pub fn now() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(0).unwrap_or(now)
}
