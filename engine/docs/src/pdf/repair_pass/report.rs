//! The pass's report: its lines listed without repeats and within bounds, qpdf's words made
//! safe to show, and qpdf's warnings worded as the fixes they stand for.

use std::collections::HashSet;

use super::qpdf_handle::Warning;

/// Most fixes (and notes) the report lists one by one; the rest are counted.
const MAX_LISTED: usize = 50;

/// Most characters of listed lines: the report may travel as an HTTP header, which proxies
/// often cap at a few kilobytes.
const MAX_LISTED_CHARS: usize = 3_000;

/// Most distinct lines remembered to count repeats once.
const MAX_REMEMBERED: usize = 10_000;

/// "1 byte", "12 bytes".
pub(super) fn bytes(n: usize) -> String {
    if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") }
}

/// qpdf's words made safe to show: no file name (the input is in memory), printable ASCII only,
/// bounded.
pub(super) fn plain(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix("memory").map(|t| t.trim_start_matches(':').trim_start()).unwrap_or(text);
    let mut out: String =
        text.chars().take(160).map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '?' }).collect();
    if text.chars().count() > 160 {
        out.push_str("...");
    }
    out
}

/// Lines of the report (fixes, notes), in order, without repeats; the first [`MAX_LISTED`]
/// kept, the others counted (a hostile file may have millions).
#[derive(Default)]
pub(super) struct Entries {
    list: Vec<String>,
    seen: HashSet<String>,
    /// Distinct lines past the list.
    more: usize,
    /// Lines past [`MAX_REMEMBERED`], not counted.
    overflow: bool,
}

impl Entries {
    pub(super) fn push(&mut self, line: String) {
        if self.list.len() < MAX_LISTED {
            if self.seen.insert(line.clone()) {
                self.list.push(line);
            }
        } else if self.seen.len() >= MAX_REMEMBERED {
            self.overflow = true;
        } else if self.seen.insert(line) {
            self.more += 1;
        }
    }

    /// The lines of `parts`, in order, as many as fit [`MAX_LISTED`] and
    /// [`MAX_LISTED_CHARS`] (the later parts first: they say more), and a count of the others.
    pub(super) fn listed(parts: &[&Entries]) -> Vec<String> {
        let mut keep: Vec<usize> = vec![0; parts.len()];
        let (mut lines, mut chars) = (0, 0);
        for (i, part) in parts.iter().enumerate().rev() {
            for line in &part.list {
                if lines == MAX_LISTED || chars + line.len() > MAX_LISTED_CHARS {
                    break;
                }
                lines += 1;
                chars += line.len();
                keep[i] += 1;
            }
        }
        let mut out = Vec::new();
        let (mut more, mut overflow) = (0, false);
        for (part, &n) in parts.iter().zip(&keep) {
            out.extend(part.list.iter().take(n).cloned());
            more += part.more + part.list.len() - n;
            overflow |= part.overflow;
        }
        if overflow {
            out.push(format!("and more than {more} more"));
        } else if more > 0 {
            out.push(format!("and {more} more"));
        }
        out
    }
}

/// A warning qpdf gave while reading, as a fix for the report (`None` for those another one
/// already says).
pub(super) fn recovery_fix(w: &Warning) -> Option<String> {
    let detail = w.detail.trim();
    let at = w.location.as_deref().map(|l| format!("{l}: ")).unwrap_or_default();
    // Said by "rebuilt the cross-reference table", or by the warning that follows.
    const QUIET: [&str; 7] = [
        "file is damaged",
        "xref not found",
        "can't find startxref",
        "loop detected following xref tables",
        "attempting to recover stream length",
        "stream dictionary lacks /Length key",
        "/Length key in stream dictionary is not an integer",
    ];
    if QUIET.iter().any(|q| detail.starts_with(q)) {
        return None;
    }
    let says = |phrase: &str| detail.contains(phrase);
    let fix = if says("reconstruct cross-reference table") {
        "rebuilt the cross-reference table".to_string()
    } else if says("recovered stream length") {
        format!("{at}recovered the true length of its stream")
    } else if says("unable to recover stream data") {
        format!("{at}its stream data could not be found; it is now empty")
    } else if detail == "expected endobj" || detail == "expected endstream" {
        format!("{at}read past a missing '{}'", &detail["expected ".len()..])
    } else if says("not found in file after regenerating cross reference table") {
        let id: String = detail.trim_start_matches("object ").chars().take_while(char::is_ascii_digit).collect();
        format!("object {id}: missing from the file; what referred to it now refers to nothing")
    } else if says("unable to find trailer dictionary") {
        "the trailer could not be read; rebuilt it".to_string()
    } else if says("can't find PDF header") {
        "the %PDF- header was missing or damaged".to_string()
    } else if says("MediaBox is undefined") {
        "a page had no /MediaBox; gave it the US Letter size".to_string()
    } else if says("Resources is missing or invalid") {
        "a page's /Resources was missing or invalid; repaired it".to_string()
    } else {
        format!("{at}worked around: {}", plain(detail))
    };
    Some(fix)
}

/// Why qpdf could not decode a stream, from its warning.
pub(super) fn stream_problem(detail: &str) -> String {
    let detail = detail.trim();
    // "error decoding stream data for object 5 0: LZWDecoder: bad code received"
    let detail = match detail.strip_prefix("error decoding stream data for object ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, why)| why),
        None => detail,
    };
    if detail.contains("input stream is complete but output may still be valid") {
        return "its compressed data ends early".to_string();
    }
    plain(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_lists_a_bounded_number_of_lines() {
        let (mut read, mut fixes) = (Entries::default(), Entries::default());
        for i in 0..5_000 {
            read.push(format!("object {i}: worked around: something qpdf said"));
            read.push(format!("object {i}: worked around: something qpdf said"));
        }
        fixes.push("page 1: its content did not parse cleanly".to_string());
        let listed = Entries::listed(&[&read, &fixes]);
        assert!(listed.len() <= MAX_LISTED + 1);
        assert!(listed.iter().map(String::len).sum::<usize>() < MAX_LISTED_CHARS + 40);
        // This pass's own fixes come first when not all fit; repeats count once.
        assert_eq!(listed[listed.len() - 2], "page 1: its content did not parse cleanly");
        assert_eq!(listed.last().unwrap(), &format!("and {} more", 5_000 - (listed.len() - 2)));
        assert_eq!(Entries::listed(&[&Entries::default()]), Vec::<String>::new());
        // Past what is remembered, lines are no longer counted.
        for i in 0..20_000 {
            read.push(format!("object {i}: something else"));
        }
        let listed = Entries::listed(&[&read]);
        assert!(listed.last().unwrap().starts_with("and more than "), "{listed:?}");
    }
}
