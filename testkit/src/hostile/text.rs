//! Hostile text inputs: HTML, CSV and JSON that are cheap to send and costly to read.

use super::*;

/// The depth of [`html_nesting_bomb`].
pub(super) const HTML_DEPTH: u64 = 1_000_000;
/// The fields of [`csv_wide`].
pub(super) const CSV_FIELDS: u64 = 5_000_000;
/// The length of the field of [`csv_long_field`].
pub(super) const CSV_FIELD_LEN: u64 = 15 * MIB;
/// The keys of [`json_many_keys`] (2,000,000 keys of four characters would pass 16 MiB).
pub(super) const JSON_KEYS: usize = 1_000_000;

/// Claims: an HTML table of 1,000 rows.
/// Really: each row's one cell spans 1,000,000 columns (browsers clamp this to 1,000) and
/// 65,534 rows (the most HTML allows), a grid of 10⁹ columns × 66 million rows for a naive
/// table model. File about 54 kB.
pub fn html_colspan_bomb() -> Vec<u8> {
    materialize(&[
        once(b"<!DOCTYPE html><html><head><title>colspan</title></head><body><table>\n"),
        repeat(b"<tr><td colspan=\"1000000\" rowspan=\"65534\">x</td></tr>\n", 1_000),
        once(b"</table></body></html>\n"),
    ])
}

/// Claims: an HTML page with a line of text.
/// Really: the text sits in 1,000,000 nested `<div>` elements. File about 11 MB.
pub fn html_nesting_bomb() -> Vec<u8> {
    materialize(&[
        once(b"<!DOCTYPE html><html><head><title>nesting</title></head><body>"),
        repeat(b"<div>", HTML_DEPTH),
        once(b"deep"),
        repeat(b"</div>", HTML_DEPTH),
        once(b"</body></html>\n"),
    ])
}

/// Claims: a CSV file.
/// Really: one row of 5,000,000 fields ("1,1,1,…"). File 10 MB.
pub fn csv_wide() -> Vec<u8> {
    materialize(&[repeat(b"1,", CSV_FIELDS - 1), once(b"1\n")])
}

/// Claims: a CSV file with a header and one row.
/// Really: the row's second field is one quoted field of 15 MiB (text with commas). File 15 MiB
/// and a few bytes.
pub fn csv_long_field() -> Vec<u8> {
    let text = b"All work and no play, makes Jack a dull boy. ";
    let whole = CSV_FIELD_LEN / text.len() as u64;
    let rest = (CSV_FIELD_LEN % text.len() as u64) as usize;
    materialize(&[once(b"id,text\n1,\""), repeat(text, whole), once(&text[..rest]), once(b"\"\n")])
}

/// Claims: a JSON request body, an object with one key.
/// Really: the key's value is an array nested 1,000,000 deep. 2 MB.
pub fn json_nesting_bomb() -> Vec<u8> {
    materialize(&[once(b"{\"a\":"), repeat(b"[", NESTING_DEPTH), repeat(b"]", NESTING_DEPTH), once(b"}")])
}

/// Claims: a JSON request body, an object.
/// Really: the object has 1,000,000 distinct keys of four characters, each with the value 0.
/// 9 MB.
pub fn json_many_keys() -> Vec<u8> {
    const KEY_CHARS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = Vec::with_capacity(JSON_KEYS * 9 + 1);
    out.push(b'{');
    for i in 0..JSON_KEYS {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        for place in [62 * 62 * 62, 62 * 62, 62, 1] {
            out.push(KEY_CHARS[i / place % 62]);
        }
        out.extend_from_slice(b"\":0");
    }
    out.push(b'}');
    out
}
