//! The `pages` group: merge (of different files, and of one file given ten times), split
//! and rotate, Paperchain against the qpdf CLI; four pages a sheet against Ghostscript's
//! `-sNupControl` ([`layouts`]).
//!
//! The inputs are cut with qpdf from a real corpus document (a 117-page thesis with
//! images), cycling through its pages, so both sides work on real content.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};

use super::{Case, Comparison, Expect, Kind, Produces, Side, rotations};
use crate::cmd::Cmd;

/// The corpus document the inputs are cut from.
const SOURCE: &str = "pdf/sample-files/GeoTopo-komprimiert.pdf";
/// Merge input: this many files of `PART_PAGES` pages each.
const MERGE_FILES: usize = 20;
const PART_PAGES: u32 = 50;
/// How many times the self-merge takes the source.
const SELF_COPIES: usize = 10;
/// The split and rotate input is the first this-many parts merged (500 pages, no objects
/// shared between its pages' sources).
const BIG_PARTS: usize = 10;

pub(super) fn cases(paperchain: &Path, corpus: &Path, dir: &Path) -> anyhow::Result<Vec<Case>> {
    let source = corpus.join(SOURCE);
    ensure!(source.is_file(), "{} is missing from the corpus", source.display());
    let source_pages = page_count(&source)?;
    let inputs = dir.join("inputs");
    for folder in [&inputs, &dir.join("paperchain"), &dir.join("qpdf")] {
        std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    }
    println!("bench: cutting inputs from {} ({source_pages} pages) into {}", source.display(), inputs.display());
    let parts: Vec<PathBuf> = (0..MERGE_FILES).map(|i| inputs.join(format!("part-{i:02}.pdf"))).collect();
    for (i, part) in (0u32..).zip(&parts) {
        let first = (i * PART_PAGES) % source_pages + 1;
        // The source's linearization hints are slightly off: a warning, not a reason to stop.
        Cmd::new("qpdf")
            .args(["--warning-exit-0", "--empty", "--pages"])
            .arg(&source)
            .arg(page_cycle(source_pages, first, PART_PAGES))
            .arg("--")
            .arg(part)
            .run()?;
    }
    let big = inputs.join("big.pdf");
    Cmd::new("qpdf").args(["--empty", "--pages"]).args(&parts[..BIG_PARTS]).arg("--").arg(&big).run()?;
    let big_pages = page_count(&big)?;
    let merged_pages = PART_PAGES * MERGE_FILES as u32;
    let turned: Vec<u32> = rotations(&big, big_pages)?.into_iter().map(|r| (r + 90) % 360).collect();
    let out = |side: &str, name: &str| dir.join(side).join(name);
    let paperchain = |operation: &str, input: Option<&'static str>, files: Vec<(String, &Path)>, output: Produces| {
        Side::paperchain(paperchain, operation, input, &files, output)
    };
    let qpdf = |args: Vec<OsString>, output: Produces| Side { program: "qpdf".into(), args, stdin: None, output };

    let qpdf_merged = out("qpdf", "merged.pdf");
    let merge = Case {
        operation: "merge: 20 files, 1,000 pages",
        paperchain: paperchain(
            "merge_pdf_files",
            None,
            parts.iter().enumerate().map(|(i, part)| (format!("files/{i}/file"), part.as_path())).collect(),
            Produces::Pdf(out("paperchain", "merged.pdf")),
        ),
        qpdf: qpdf(
            [os("--empty"), os("--pages")]
                .into_iter()
                .chain(parts.iter().map(OsString::from))
                .chain([os("--"), qpdf_merged.clone().into()])
                .collect(),
            Produces::Pdf(qpdf_merged),
        ),
        expect: Expect {
            files: 1,
            pages_each: merged_pages,
            rotations: None,
            // Either side of the first seam, and the last page: the files went in in order.
            text_samples: [1, PART_PAGES, PART_PAGES + 1, merged_pages].map(|p| (0, p)).to_vec(),
            absent_text: None,
        },
        note: Some(
            "`paperchain call` takes its files base64-encoded inside the JSON input, as the HTTP API does; \
             that decoding is part of its time.",
        ),
    };
    // One file given ten times: qpdf carries its fonts and images once; so must we.
    let qpdf_self = out("qpdf", "merged-self.pdf");
    let self_pages = source_pages * SELF_COPIES as u32;
    let merge_self = Case {
        operation: "merge: one 117-page file 10 times",
        paperchain: paperchain(
            "merge_pdf_files",
            None,
            (0..SELF_COPIES).map(|i| (format!("files/{i}/file"), source.as_path())).collect(),
            Produces::Pdf(out("paperchain", "merged-self.pdf")),
        ),
        qpdf: qpdf(
            [os("--warning-exit-0"), os("--empty"), os("--pages")]
                .into_iter()
                .chain(std::iter::repeat_n(OsString::from(&source), SELF_COPIES))
                .chain([os("--"), qpdf_self.clone().into()])
                .collect(),
            Produces::Pdf(qpdf_self),
        ),
        expect: Expect {
            files: 1,
            pages_each: self_pages,
            rotations: None,
            text_samples: [1, source_pages, source_pages + 1, self_pages].map(|p| (0, p)).to_vec(),
            absent_text: None,
        },
        note: Some("The same file ten times: identical fonts, images and content are stored once on both sides."),
    };
    let split = Case {
        operation: "split: every page of 500",
        paperchain: paperchain(
            "split_pdf",
            Some(r#"{"every":1}"#),
            vec![("file".into(), &big)],
            Produces::Zip(out("paperchain", "parts.zip")),
        ),
        qpdf: qpdf(
            vec![os("--split-pages"), big.clone().into(), out("qpdf", "split/page-%d.pdf").into()],
            Produces::Folder(out("qpdf", "split")),
        ),
        expect: Expect {
            files: big_pages as usize,
            pages_each: 1,
            rotations: None,
            text_samples: [0, big_pages as usize / 2, big_pages as usize - 1].map(|f| (f, 1)).to_vec(),
            absent_text: None,
        },
        note: Some("qpdf writes 500 separate PDF files; Paperchain writes the same 500 PDFs into one ZIP."),
    };
    let qpdf_rotated = out("qpdf", "rotated.pdf");
    let rotate = Case {
        operation: "rotate: 500 pages by 90",
        paperchain: paperchain(
            "rotate_pdf_pages",
            Some(r#"{"degrees":90}"#),
            vec![("file".into(), &big)],
            Produces::Pdf(out("paperchain", "rotated.pdf")),
        ),
        qpdf: qpdf(
            vec![big.clone().into(), os("--rotate=+90"), os("--"), qpdf_rotated.clone().into()],
            Produces::Pdf(qpdf_rotated),
        ),
        expect: Expect {
            files: 1,
            pages_each: big_pages,
            rotations: Some(turned),
            text_samples: [1, big_pages / 2, big_pages].map(|p| (0, p)).to_vec(),
            absent_text: None,
        },
        note: None,
    };
    Ok(vec![merge, merge_self, split, rotate])
}

/// Four pages a sheet of the 500-page input `pages::cases` cut, against Ghostscript
/// (`-sNupControl=2x2` on A4 sheets, 10.0 and later); and PDF/A-2b of the corpus's
/// 117-page GeoTopo script (CMYK text, 500 links), against Ghostscript's `-dPDFA=2`.
pub(super) fn layouts(paperchain: &Path, corpus: &Path, dir: &Path) -> anyhow::Result<Vec<Comparison>> {
    let big = dir.join("inputs/big.pdf");
    ensure!(big.is_file(), "{} is cut by the pages cases first", big.display());
    let big_pages = page_count(&big)?;
    std::fs::create_dir_all(dir.join("gs")).context("creating the gs folder")?;
    let (ours, theirs) = (dir.join("paperchain/n-up.pdf"), dir.join("gs/n-up.pdf"));
    let n_up = Comparison {
        table: "layouts",
        tool: "gs",
        operation: format!("n-up: {big_pages} pages, 4 a sheet"),
        paperchain: Side::paperchain(
            paperchain,
            "n_up_pdf_pages",
            Some(r#"{"per_sheet":4,"sheet":"A4"}"#),
            &[("file".into(), &big)],
            Produces::Pdf(ours),
        ),
        reference: Side {
            program: "gs".into(),
            args: vec![
                os("-q"),
                os("-dSAFER"),
                os("-sDEVICE=pdfwrite"),
                os("-sPAPERSIZE=a4"),
                os("-dFIXEDMEDIA"),
                os("-sNupControl=2x2"),
                os("-o"),
                theirs.clone().into(),
                big.into(),
            ],
            stdin: None,
            output: Produces::Pdf(theirs),
        },
        kind: Kind::Pdf,
        expect: Expect {
            files: 1,
            pages_each: big_pages.div_ceil(4),
            rotations: None,
            text_samples: Vec::new(),
            absent_text: None,
        },
        source: None,
        note: Some(
            "Ghostscript rewrites every page (fonts and images re-encoded) and drops links and bookmarks; Paperchain \
             draws each page as a form, keeping its content as it is, and carries links and bookmarks.",
        ),
    };
    let script = corpus.join("pdf/sample-files/GeoTopo-komprimiert.pdf");
    let script_pages = page_count(&script)?;
    let (ours, theirs) = (dir.join("paperchain/pdfa.pdf"), dir.join("gs/pdfa.pdf"));
    let pdfa = Comparison {
        table: "layouts",
        tool: "gs",
        operation: format!("PDF/A-2b: {script_pages} pages"),
        paperchain: Side::paperchain(
            paperchain,
            "convert_pdf_to_pdfa",
            Some(r#"{"level":"2b"}"#),
            &[("file".into(), &script)],
            Produces::Pdf(ours),
        ),
        reference: Side {
            program: "gs".into(),
            args: vec![
                os("-q"),
                os("-dSAFER"),
                os("-dPDFA=2"),
                os("-dPDFACompatibilityPolicy=1"),
                os("-sColorConversionStrategy=RGB"),
                os("-sDEVICE=pdfwrite"),
                os("-o"),
                theirs.clone().into(),
                script.into(),
            ],
            stdin: None,
            output: Produces::Pdf(theirs),
        },
        kind: Kind::Pdf,
        expect: Expect {
            files: 1,
            pages_each: script_pages,
            rotations: None,
            text_samples: Vec::new(),
            absent_text: None,
        },
        source: None,
        note: Some(
            "Ghostscript re-encodes every page and converts the colours to RGB, and drops the link annotations \
             (\"not permitted in PDF/A\"); Paperchain keeps the content, describes the CMYK with a profile, and \
             keeps the links with empty appearances.",
        ),
    };
    Ok(vec![n_up, pdfa])
}

fn os(text: impl Into<OsString>) -> OsString {
    text.into()
}

fn page_count(pdf: &Path) -> anyhow::Result<u32> {
    let count = Cmd::new("qpdf").arg("--show-npages").arg(pdf).quiet().read()?;
    count.trim().parse().with_context(|| format!("qpdf --show-npages {}: not a number: {count}", pdf.display()))
}

/// A qpdf page range for `count` pages from `first`, wrapping to page 1 after the last:
/// (117, 101, 50) is `101-117,1-33`.
fn page_cycle(pages: u32, first: u32, count: u32) -> String {
    let mut ranges = Vec::new();
    let (mut start, mut left) = (first, count);
    while left > 0 && pages > 0 {
        let end = pages.min(start + left - 1);
        ranges.push(format!("{start}-{end}"));
        left -= end - start + 1;
        start = 1;
    }
    ranges.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_cycles_wrap_around() {
        assert_eq!(page_cycle(117, 1, 50), "1-50");
        assert_eq!(page_cycle(117, 101, 50), "101-117,1-33");
        assert_eq!(page_cycle(117, 1, 500), "1-117,1-117,1-117,1-117,1-32");
        assert_eq!(page_cycle(3, 3, 2), "3-3,1-1");
    }
}
