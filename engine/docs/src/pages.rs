//! Page selections: `"1-3,5,8-"`, `"last"`, `"2-last"`, `"all"`; 1-based.
//!
//! A range written backwards (`"5-3"`) runs backwards. Resolving against a document
//! checks every page against its page count and names the first that is out of range.
//! What the parser takes is exactly what [`PATTERN`] (the published schemas' pattern)
//! matches: spaces and tabs around items, page numbers of 1 to 9 digits without a sign or
//! a leading zero, `last` (or `z`) and `all` in any case.

use crate::error::EngineError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    Page(u32),
    Last,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Single(Bound),
    /// `start`..=`end`; `end` None means "to the last page".
    Range(Bound, Option<Bound>),
}

/// One page of a selection: a number from 1, `last` or `z`.
macro_rules! page_bound {
    () => {
        r"(?:[1-9][0-9]{0,8}|[Ll][Aa][Ss][Tt]|[Zz])"
    };
}

/// One item of a selection: a page, a range open at its end, or a range from the first page.
macro_rules! page_item {
    () => {
        concat!(r"(?:", page_bound!(), r"(?:[ \t]*-[ \t]*", page_bound!(), r"?)?|-[ \t]*", page_bound!(), r")")
    };
}

/// The grammar as a JSON Schema (ECMA 262) pattern, on every `pages` field of the request
/// schemas: a client that matches it never gets `invalid_pages`.
pub const PATTERN: &str =
    concat!(r"^[ \t]*(?:[Aa][Ll][Ll]|", page_item!(), r"(?:[ \t]*,[ \t]*", page_item!(), r")*)[ \t]*$");

/// Spaces and tabs, the only blanks a selection may have around its items.
fn blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// A parsed page selection, not yet tied to a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageSelection {
    parts: Vec<Part>,
    text: String,
}

impl PageSelection {
    /// Every page.
    pub fn all() -> PageSelection {
        PageSelection { parts: vec![Part::Range(Bound::Page(1), None)], text: "all".into() }
    }

    /// Parses `text`; errors name `field`.
    pub fn parse(text: &str, field: &str) -> Result<PageSelection, EngineError> {
        let bad = |why: String| EngineError::invalid_with("invalid_pages", field, format!("{field}: {why}"));
        let trimmed = text.trim_matches(blank);
        if trimmed.is_empty() {
            return Err(bad("the page selection is empty".into()));
        }
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(PageSelection::all());
        }
        let mut parts = Vec::new();
        for piece in trimmed.split(',') {
            let piece = piece.trim_matches(blank);
            if piece.is_empty() {
                return Err(bad(format!("`{trimmed}` has an empty item between commas")));
            }
            let part = match piece.split_once('-') {
                None => Part::Single(parse_bound(piece).map_err(&bad)?),
                Some((start, end)) => {
                    let (start, end) = (start.trim_matches(blank), end.trim_matches(blank));
                    if start.is_empty() && end.is_empty() {
                        return Err(bad("`-` needs a page on at least one side".into()));
                    }
                    let start = if start.is_empty() { Bound::Page(1) } else { parse_bound(start).map_err(&bad)? };
                    let end = if end.is_empty() { None } else { Some(parse_bound(end).map_err(&bad)?) };
                    Part::Range(start, end)
                }
            };
            parts.push(part);
        }
        Ok(PageSelection { parts, text: trimmed.to_string() })
    }

    /// Parses an optional selection, `None` meaning every page.
    pub fn parse_or_all(text: Option<&str>, field: &str) -> Result<PageSelection, EngineError> {
        match text {
            Some(text) => PageSelection::parse(text, field),
            None => Ok(PageSelection::all()),
        }
    }

    /// The pages selected, 1-based, in the order written (repeats kept), checked
    /// against `page_count`; at most `max_len` of them (a selection can repeat ranges,
    /// so its length is bounded here, before anything is built from it). Errors name `field`.
    pub fn resolve(&self, page_count: u32, max_len: u32, field: &str) -> Result<Vec<u32>, EngineError> {
        let mut pages: Vec<u32> = Vec::new();
        for (start, end) in self.spans(page_count, field)? {
            let len = start.abs_diff(end) as usize + 1;
            if pages.len() + len > max_len as usize {
                return Err(EngineError::too_large(
                    "too_many_pages",
                    Some(field.to_string()),
                    format!("{field}: the selection names more than {max_len} pages"),
                ));
            }
            if start <= end {
                pages.extend(start..=end);
            } else {
                pages.extend((end..=start).rev());
            }
        }
        Ok(pages)
    }

    /// The distinct pages selected, ascending: for routes where order and repeats do not
    /// matter. Costs the number of items plus the page count, however the ranges repeat.
    pub fn resolve_set(&self, page_count: u32, field: &str) -> Result<Vec<u32>, EngineError> {
        // A difference array: +1 where a span starts, -1 after it ends.
        let mut marks = vec![0i64; page_count as usize + 2];
        for (start, end) in self.spans(page_count, field)? {
            let (low, high) = if start <= end { (start, end) } else { (end, start) };
            marks[low as usize] += 1;
            marks[high as usize + 1] -= 1;
        }
        let mut depth = 0;
        let mut pages = Vec::new();
        for page in 1..=page_count {
            depth += marks[page as usize];
            if depth > 0 {
                pages.push(page);
            }
        }
        Ok(pages)
    }

    /// Each item as an inclusive span of pages (start may be after end), checked.
    fn spans(&self, page_count: u32, field: &str) -> Result<Vec<(u32, u32)>, EngineError> {
        let check = |page: u32| {
            if page == 0 || page > page_count {
                Err(EngineError::invalid_with(
                    "page_out_of_range",
                    field,
                    format!(
                        "{field}: page {page} is out of range; the document has {page_count} page{}",
                        if page_count == 1 { "" } else { "s" }
                    ),
                ))
            } else {
                Ok(page)
            }
        };
        let value = |b: Bound| match b {
            Bound::Page(n) => n,
            Bound::Last => page_count,
        };
        self.parts
            .iter()
            .map(|part| match *part {
                Part::Single(b) => check(value(b)).map(|p| (p, p)),
                Part::Range(start, end) => Ok((check(value(start))?, check(end.map(value).unwrap_or(page_count))?)),
            })
            .collect()
    }

    /// The selection as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn parse_bound(text: &str) -> Result<Bound, String> {
    if text.eq_ignore_ascii_case("last") || text.eq_ignore_ascii_case("z") {
        return Ok(Bound::Last);
    }
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(0) if digits => Err("pages are numbered from 1; `0` is not a page".into()),
        Ok(_) if digits && text.starts_with('0') => Err(format!("`{text}`: write page numbers without leading zeros")),
        Ok(n) if digits && text.len() <= 9 => Ok(Bound::Page(n)),
        _ if digits => Err(format!("`{text}`: no document has that many pages")),
        _ => Err(format!("`{text}` is not a page number (use numbers, ranges like `2-5`, `8-`, or `last`)")),
    }
}

/// `pages` (ascending) written as a selection (`"1-3,5,8-9"`): short however many pages.
pub fn ranges(pages: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pages.len() {
        let start = pages[i];
        while i + 1 < pages.len() && pages[i + 1] == pages[i] + 1 {
            i += 1;
        }
        out.push(if pages[i] == start { start.to_string() } else { format!("{start}-{}", pages[i]) });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_lists_are_written_as_ranges() {
        assert_eq!(ranges(&[1, 2, 3, 5, 8, 9]), "1-3,5,8-9");
        assert_eq!(ranges(&[4]), "4");
        assert_eq!(ranges(&[]), "");
    }

    fn pages(text: &str, count: u32) -> Vec<u32> {
        PageSelection::parse(text, "/pages").unwrap().resolve(count, 5_000, "/pages").unwrap()
    }

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!(pages("1-3,5,8-", 10), vec![1, 2, 3, 5, 8, 9, 10]);
        assert_eq!(pages("last", 7), vec![7]);
        assert_eq!(pages("2-last", 4), vec![2, 3, 4]);
        assert_eq!(pages("all", 3), vec![1, 2, 3]);
        assert_eq!(pages(" 3 , 1 ", 3), vec![3, 1]);
        assert_eq!(pages("-2", 5), vec![1, 2]);
        assert_eq!(pages("3-1", 5), vec![3, 2, 1]);
        assert_eq!(pages("2,2", 5), vec![2, 2]);
        assert_eq!(PageSelection::all().resolve(2, 5_000, "/p").unwrap(), vec![1, 2]);
    }

    #[test]
    fn refuses_malformed_selections() {
        for bad in [
            "",
            " ",
            "0",
            "a",
            "1,,2",
            "1-x",
            "1.5",
            "-",
            "1--2",
            "first",
            "+2",
            "02",
            "1234567890",
            "\u{2003}1",
            "1\n",
        ] {
            let err = PageSelection::parse(bad, "/pages").and_then(|s| s.resolve(10, 5_000, "/pages"));
            let err = err.expect_err(bad);
            assert_eq!(err.field.as_deref(), Some("/pages"), "{bad}");
            assert!(err.code == "invalid_pages", "{bad}: {}", err.code);
        }
    }

    #[test]
    fn the_published_pattern_accepts_exactly_what_the_parser_accepts() {
        let validator = crate::patterns::validator(PATTERN);
        let pieces =
            ["1", "9", "10", "0", "01", "+1", "999999999", "1000000000", "last", "LaSt", "z", "Z", "all", "ALL"];
        let glue = ["", "-", " - ", "\t-", ",", " , ", ",,", "--", " ", "\u{a0}", "\n", "x", "."];
        let mut tried = 0;
        for a in pieces {
            for g in glue {
                for b in pieces.iter().chain([&""]) {
                    for text in
                        [format!("{a}{g}{b}"), format!(" {g}{a}{g}{b} "), format!("{g}{b}"), format!("{a},{b}{g}")]
                    {
                        let parsed = PageSelection::parse(&text, "/pages").is_ok();
                        assert_eq!(validator.is_valid(&serde_json::json!(text)), parsed, "{text:?}");
                        tried += 1;
                    }
                }
            }
        }
        assert!(tried > 2_000);
    }

    #[test]
    fn out_of_range_names_the_page_and_the_count() {
        let err =
            PageSelection::parse("2,12", "/files/1/pages").unwrap().resolve(10, 5_000, "/files/1/pages").unwrap_err();
        assert_eq!(err.code, "page_out_of_range");
        assert_eq!(err.field.as_deref(), Some("/files/1/pages"));
        assert!(err.message.contains("page 12") && err.message.contains("10 pages"), "{}", err.message);
        let err = PageSelection::parse("5-", "/p").unwrap().resolve(3, 5_000, "/p").unwrap_err();
        assert!(err.message.contains("page 5"));
    }

    #[test]
    fn repeated_ranges_cannot_blow_up() {
        let many = vec!["1-last"; 200_000].join(",");
        let selection = PageSelection::parse(&many, "/pages").unwrap();
        let err = selection.resolve(5_000, 5_000, "/pages").unwrap_err();
        assert_eq!(err.code, "too_many_pages");
        assert_eq!(err.field.as_deref(), Some("/pages"));
        // As a set it costs items + pages, and is every page once.
        assert_eq!(selection.resolve_set(5_000, "/pages").unwrap().len(), 5_000);
        assert_eq!(PageSelection::parse("5-3,1,4", "/p").unwrap().resolve_set(6, "/p").unwrap(), vec![1, 3, 4, 5]);
        assert_eq!(PageSelection::parse("2,2,2", "/p").unwrap().resolve(3, 3, "/p").unwrap(), vec![2, 2, 2]);
        assert!(PageSelection::parse("2,2,2,2", "/p").unwrap().resolve(3, 3, "/p").is_err());
    }
}
