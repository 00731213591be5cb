//! The `edits` group: the document routes people pick a PDF tool for, each on the same
//! 100-page document against the nearest open tool that does the same job:
//!
//! - redaction and sanitizing against PyMuPDF (`apply_redactions`, `scrub`);
//! - images out against poppler's `pdfimages -all`;
//! - blank pages removed, and a split at blank pages, against Ghostscript's ink coverage
//!   (`-sDEVICE=inkcov`) with qpdf cutting the pages it leaves;
//! - comparison of words against pdftotext with `git diff --word-diff`, and of looks
//!   against `comparepdf --compare=appearance`;
//! - booklet against qpdf reordering the pages and Ghostscript putting two on a sheet;
//! - poster against `mutool poster`;
//! - e-invoice against the Factur-X library's `generate_from_file`.
//!
//! The document is cut with qpdf from the corpus script the `pages` group cuts its inputs
//! from (117 pages: text, 19 JPEG figures with soft masks, 500 links, 35 bookmarks). The
//! other inputs are made from it: the same with a blank page after every tenth, and a
//! revision whose page 95 is replaced by page 96.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};
use paperchain_testkit::invoice::en16931_invoice;

use super::{Comparison, Expect, Kind, Produces, Side};
use crate::cmd::Cmd;

/// The corpus document the input is cut from, as in `pages.rs`.
const SOURCE: &str = "pdf/sample-files/GeoTopo-komprimiert.pdf";
/// Pages of the document.
const PAGES: u32 = 100;
/// A blank page follows every this many pages of the document (not the last).
const BLANK_EVERY: u32 = 10;
/// The word redacted: 171 times in the script, in running text and captions.
const REDACTED: &str = "Abbildung";
/// The page of the revision replaced by the next one.
const CHANGED_PAGE: u32 = 95;
/// The share of the page (a fraction, summed over the four inks) at or under which
/// Ghostscript's side takes a page as blank: Paperchain's default threshold, 0.1%.
const INK_BLANK: &str = "0.001";

/// Redacts every occurrence of a word, as PyMuPDF's documentation shows: a redaction
/// annotation on each hit, then `apply_redactions` (text, images and drawings under it).
const PYMUPDF_REDACT: &str = r#"
import sys, pymupdf
source, output, word = sys.argv[1:4]
doc = pymupdf.open(source)
for page in doc:
    for rect in page.search_for(word):
        page.add_redact_annot(rect, fill=(0, 0, 0))
    page.apply_redactions()
doc.save(output, garbage=3, deflate=True)
"#;

/// Removes what Paperchain's sanitize removes with `links: true`: JavaScript and actions,
/// embedded and attached files, links, the document information and XMP; not the other
/// cleanings `scrub` can do (page contents, hidden text, form fields, thumbnails).
const PYMUPDF_SANITIZE: &str = r#"
import sys, pymupdf
doc = pymupdf.open(sys.argv[1])
doc.scrub(attached_files=True, embedded_files=True, javascript=True, metadata=True, xml_metadata=True,
          remove_links=True, clean_pages=False, hidden_text=False, redactions=False, reset_fields=False,
          reset_responses=False, thumbnails=False)
doc.save(sys.argv[2], garbage=3, deflate=True)
"#;

/// Prints, one a line, the page ranges (qpdf's syntax) of the runs of pages that are not
/// blank, read from `gs -sDEVICE=inkcov` on standard input; with `-v keep=1`, one line of
/// every page that is not blank.
const INK_RUNS: &str = r#"
{ n++; if ($1 + $2 + $3 + $4 > blank) { if (!start) start = n; last = n; kept = kept (kept ? "," : "") n }
  else if (start) { runs[++r] = start "-" last; start = 0 } }
END { if (start) runs[++r] = start "-" last
      if (keep) print kept; else for (i = 1; i <= r; i++) print runs[i] }
"#;

/// `sh -c` scripts: $1 the input, $2 the output (a PDF, or a folder of parts).
const GS_REMOVE_BLANK: &str = r#"set -e
keep=$(gs -q -dSAFER -o - -sDEVICE=inkcov "$1" | awk -v blank="$3" -v keep=1 "$4")
qpdf "$1" --pages . "$keep" -- "$2""#;
const GS_SPLIT_AT_BLANK: &str = r#"set -e
gs -q -dSAFER -o - -sDEVICE=inkcov "$1" | awk -v blank="$3" "$4" > "$2/ranges.txt"
n=0
while read -r range; do
  n=$((n + 1)); qpdf "$1" --pages . "$range" -- "$2/part-$(printf %02d "$n").pdf"
done < "$2/ranges.txt"
rm "$2/ranges.txt""#;
/// Booklet order for $3 pages (a multiple of four), then two pages a landscape A4 sheet.
const QPDF_GS_BOOKLET: &str = r#"set -e
n=$3; order=""
for s in $(seq 0 $((n / 4 - 1))); do
  order="$order,$((n - 2 * s)),$((2 * s + 1)),$((2 * s + 2)),$((n - 2 * s - 1))"
done
qpdf "$1" --pages . "${order#,}" -- "$2.ordered.pdf"
gs -q -dSAFER -sDEVICE=pdfwrite -dDEVICEWIDTHPOINTS=842 -dDEVICEHEIGHTPOINTS=595 -dFIXEDMEDIA \
  -sNupControl=2x1 -o "$2" "$2.ordered.pdf"
rm "$2.ordered.pdf""#;
/// The words of both PDFs as pdftotext reads them, compared by `git diff --word-diff`
/// (which exits 1 when they differ): $1 original, $2 revision, $3 the diff.
const WORD_DIFF: &str = r#"set -e
pdftotext "$1" "$3.original.txt"; pdftotext "$2" "$3.revised.txt"
status=0; git diff --no-index --word-diff=porcelain "$3.original.txt" "$3.revised.txt" > "$3" || status=$?
rm "$3.original.txt" "$3.revised.txt"
test "$status" -eq 1"#;
/// comparepdf exits 10 when the pages look different (0 the same, 15 other page counts).
const APPEARANCE_DIFF: &str = r#"status=0; comparepdf --compare=appearance --verbose=1 "$1" "$2" > "$3" || status=$?
test "$status" -eq 10"#;

/// The Factur-X library's command-line generator: the XML attached to the PDF with the
/// Factur-X XMP; the PDF itself is not made PDF/A.
const FACTURX: &str = r#"
import sys, facturx
facturx.generate_from_file(sys.argv[1], sys.argv[2], output_pdf_file=sys.argv[3], check_xsd=True)
"#;

pub(super) fn cases(paperchain: &Path, python: &Path, corpus: &Path, dir: &Path) -> anyhow::Result<Vec<Comparison>> {
    let source = corpus.join(SOURCE);
    ensure!(source.is_file(), "{} is missing from the corpus", source.display());
    let inputs = dir.join("inputs");
    let sides = ["paperchain", "pymupdf", "pdfimages", "gs", "diff", "mutool", "facturx"];
    for folder in std::iter::once(inputs.clone()).chain(sides.iter().map(|side| dir.join(side))) {
        std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    }
    let out = |side: &str, name: &str| dir.join(side).join(name);
    let inputs = Inputs::make(&source, &inputs)?;
    let document = inputs.document.as_path();
    let pdf = |pages: u32| Expect {
        files: 1,
        pages_each: pages,
        rotations: None,
        text_samples: Vec::new(),
        absent_text: None,
    };
    let ours = |operation: &str, input: Option<&'static str>, files: &[(String, &Path)], output: Produces| {
        Side::paperchain(paperchain, operation, input, files, output)
    };
    let python_side = |script: &str, args: Vec<OsString>, output: Produces| {
        let mut all: Vec<OsString> = vec!["-c".into(), script.into()];
        all.extend(args);
        Side { program: python.to_path_buf(), args: all, stdin: None, output }
    };
    let sh = |script: &str, args: Vec<OsString>, output: Produces| {
        let mut all: Vec<OsString> = vec!["-c".into(), script.into(), "sh".into()];
        all.extend(args);
        Side { program: "sh".into(), args: all, stdin: None, output }
    };
    let mut cases = Vec::new();

    let theirs = out("pymupdf", "redacted.pdf");
    cases.push(Comparison {
        table: "redaction and sanitizing",
        tool: "PyMuPDF",
        operation: format!("redact a word: {PAGES} pages, 171 hits"),
        paperchain: ours(
            "redact_pdf",
            Some(r#"{"text":["Abbildung"]}"#),
            &[("file".into(), document)],
            Produces::Pdf(out("paperchain", "redacted.pdf")),
        ),
        reference: python_side(
            PYMUPDF_REDACT,
            vec![document.into(), theirs.clone().into(), REDACTED.into()],
            Produces::Pdf(theirs),
        ),
        kind: Kind::Pdf,
        expect: Expect { absent_text: Some(REDACTED), ..pdf(PAGES) },
        source: None,
        note: Some(
            "Not the same work: PyMuPDF removes the glyphs under each hit from the page's content and keeps the \
             rest as it is; Paperchain rebuilds each page with a hit from its rendering at 200 dpi (a JPEG), so \
             nothing under a box survives in any form, and puts the page's other words back as invisible text \
             (most of its time is that JPEG encoding). Both find the word case-blind; Paperchain also looks in the \
             document information, XMP and bookmarks, and finds it hyphenated across two lines (\"Abbil-\" \
             \"dung\", twice), which PyMuPDF leaves; the check reads line by line (pdftotext -layout), so that does \
             not reject PyMuPDF's output.",
        ),
    });
    let theirs = out("pymupdf", "sanitized.pdf");
    cases.push(Comparison {
        table: "redaction and sanitizing",
        tool: "PyMuPDF",
        operation: format!("sanitize: {PAGES} pages, 500 links"),
        paperchain: ours(
            "sanitize_pdf",
            Some(r#"{"links":true}"#),
            &[("file".into(), document)],
            Produces::Pdf(out("paperchain", "sanitized.pdf")),
        ),
        reference: python_side(PYMUPDF_SANITIZE, vec![document.into(), theirs.clone().into()], Produces::Pdf(theirs)),
        kind: Kind::Pdf,
        expect: Expect { text_samples: vec![(0, 1), (0, PAGES / 2), (0, PAGES)], ..pdf(PAGES) },
        source: None,
        note: None,
    });

    let theirs = out("pdfimages", "images");
    cases.push(Comparison {
        table: "images out",
        tool: "pdfimages",
        operation: format!("extract images: {PAGES} pages, {} images and masks drawn", inputs.image_objects),
        paperchain: ours(
            "extract_pdf_images",
            None,
            &[("file".into(), document)],
            Produces::Zip(out("paperchain", "images.zip")),
        ),
        reference: Side {
            program: "pdfimages".into(),
            args: vec!["-all".into(), document.into(), theirs.join("image").into()],
            stdin: None,
            output: Produces::Folder(theirs),
        },
        kind: Kind::Images,
        expect: Expect { files: inputs.image_objects, ..pdf(0) },
        source: None,
        note: Some(
            "pdfimages writes every image object and every soft mask as a file of its own; Paperchain writes each \
             distinct image once, with its mask, and `images.json` listing where each is drawn. JPEGs are passed \
             through unchanged by both.",
        ),
    });

    let with_blanks = inputs.with_blanks.as_path();
    let ink_args = |output: &Path| vec![with_blanks.into(), output.into(), INK_BLANK.into(), INK_RUNS.into()];
    let theirs = out("gs", "without-blanks.pdf");
    cases.push(Comparison {
        table: "blank pages",
        tool: "gs + qpdf",
        operation: format!("remove blank pages: {} pages, {} blank", inputs.with_blanks_pages, inputs.blanks),
        paperchain: ours(
            "remove_blank_pdf_pages",
            None,
            &[("file".into(), with_blanks)],
            Produces::Pdf(out("paperchain", "without-blanks.pdf")),
        ),
        reference: sh(GS_REMOVE_BLANK, ink_args(&theirs), Produces::Pdf(theirs)),
        kind: Kind::Pdf,
        expect: Expect { text_samples: vec![(0, 1), (0, BLANK_EVERY + 1), (0, PAGES)], ..pdf(PAGES) },
        source: None,
        note: Some(
            "Ghostscript measures each page's ink (inkcov renders every page at 72 dpi) and qpdf keeps the pages \
             over 0.1%; Paperchain renders at 50 dpi only the pages without text, tolerates scan noise, and keeps \
             links and bookmarks of the pages kept.",
        ),
    });
    let theirs = out("gs", "parts");
    cases.push(Comparison {
        table: "blank pages",
        tool: "gs + qpdf",
        operation: format!("split at blank pages: {} pages, {} parts", inputs.with_blanks_pages, inputs.blanks + 1),
        paperchain: ours(
            "split_pdf_by_content",
            Some(r#"{"at":"blank_pages"}"#),
            &[("file".into(), with_blanks)],
            Produces::Zip(out("paperchain", "parts.zip")),
        ),
        reference: sh(GS_SPLIT_AT_BLANK, ink_args(&theirs), Produces::Folder(theirs)),
        kind: Kind::Pdf,
        expect: Expect {
            files: inputs.blanks as usize + 1,
            text_samples: vec![(0, 1), (inputs.blanks as usize, BLANK_EVERY)],
            ..pdf(BLANK_EVERY)
        },
        source: None,
        note: None,
    });

    let revision = inputs.revision.as_path();
    let pair = [("original".to_string(), document), ("revised".to_string(), revision)];
    let theirs = out("diff", "words.diff");
    cases.push(Comparison {
        table: "compare",
        tool: "pdftotext + git diff",
        operation: format!("compare words: {PAGES} pages, page {CHANGED_PAGE} replaced"),
        paperchain: ours(
            "compare_pdfs",
            Some(r#"{"visual":false}"#),
            &pair,
            Produces::Json(
                out("paperchain", "words.json"),
                vec![("/identical", false.into()), ("/original_pages", PAGES.into()), ("/revised_pages", PAGES.into())],
            ),
        ),
        reference: sh(
            WORD_DIFF,
            vec![document.into(), revision.into(), theirs.clone().into()],
            Produces::Text(theirs, vec!["\n-", "\n+"]),
        ),
        kind: Kind::Pdf,
        expect: pdf(PAGES),
        source: None,
        note: Some(
            "git diff compares the two texts line by line, then words within changed lines; Paperchain compares the \
             words of the whole documents and answers each change with its page and place.",
        ),
    });
    let theirs = out("diff", "appearance.txt");
    cases.push(Comparison {
        table: "compare",
        tool: "comparepdf",
        operation: format!("compare looks: {PAGES} pages, page {CHANGED_PAGE} replaced"),
        paperchain: ours(
            "compare_pdfs",
            None,
            &pair,
            Produces::Json(
                out("paperchain", "looks.json"),
                vec![("/identical", false.into()), ("/visual/99/page", PAGES.into())],
            ),
        ),
        reference: sh(
            APPEARANCE_DIFF,
            vec![document.into(), revision.into(), theirs.clone().into()],
            Produces::Text(theirs, vec!["look different"]),
        ),
        kind: Kind::Pdf,
        expect: pdf(PAGES),
        source: None,
        note: Some(
            "comparepdf renders page after page and stops at the first that looks different (page 95), answering \
             only that they differ; Paperchain compares every page's words and looks and lists each change.",
        ),
    });

    let theirs = out("gs", "booklet.pdf");
    cases.push(Comparison {
        table: "booklet",
        tool: "qpdf + gs",
        operation: format!("booklet: {PAGES} pages on A4 sheets"),
        paperchain: ours(
            "make_pdf_booklet",
            Some(r#"{"sheet":"A4"}"#),
            &[("file".into(), document)],
            Produces::Pdf(out("paperchain", "booklet.pdf")),
        ),
        reference: sh(
            QPDF_GS_BOOKLET,
            vec![document.into(), theirs.clone().into(), PAGES.to_string().into()],
            Produces::Pdf(theirs),
        ),
        kind: Kind::Pdf,
        expect: pdf(PAGES / 2),
        source: None,
        note: Some(
            "qpdf puts the pages in booklet order, Ghostscript two on each landscape sheet (re-encoding every page, \
             dropping links); Paperchain does both in one pass and draws each page as a form, unchanged.",
        ),
    });

    let theirs = out("mutool", "poster.pdf");
    cases.push(Comparison {
        table: "poster",
        tool: "mutool",
        operation: format!("poster: {PAGES} pages, 2 x 2 tiles each"),
        paperchain: ours(
            "make_pdf_poster",
            Some(r#"{"scale":2,"tile":"A4"}"#),
            &[("file".into(), document)],
            Produces::Pdf(out("paperchain", "poster.pdf")),
        ),
        reference: Side {
            program: "mutool".into(),
            args: vec![
                "poster".into(),
                "-x".into(),
                "2".into(),
                "-y".into(),
                "2".into(),
                document.into(),
                theirs.clone().into(),
            ],
            stdin: None,
            output: Produces::Pdf(theirs),
        },
        kind: Kind::Pdf,
        expect: pdf(PAGES * 4),
        source: None,
        note: Some(
            "mutool cuts each page into four quarter-size pages; Paperchain enlarges each page twice onto four A4 \
             tiles (the same four pieces, at the size to print them).",
        ),
    });

    let theirs = out("facturx", "invoice.pdf");
    cases.push(Comparison {
        table: "e-invoice",
        tool: "factur-x",
        operation: format!("e-invoice: {PAGES} pages and an EN 16931 XML"),
        paperchain: ours(
            "make_e_invoice",
            None,
            &[("file".to_string(), document), ("invoice".to_string(), inputs.invoice.as_path())],
            Produces::Pdf(out("paperchain", "invoice.pdf")),
        ),
        reference: python_side(
            FACTURX,
            vec![document.into(), inputs.invoice.clone().into(), theirs.clone().into()],
            Produces::Pdf(theirs),
        ),
        kind: Kind::Pdf,
        expect: Expect { text_samples: vec![(0, 1), (0, PAGES)], ..pdf(PAGES) },
        source: None,
        note: Some(
            "Both check the XML against the profile and attach it with the Factur-X XMP; Paperchain also makes the \
             PDF a PDF/A-3b (fonts embedded, colours described, an sRGB output intent), which the library leaves \
             to the caller.",
        ),
    });
    Ok(cases)
}

/// The inputs made from the corpus document.
struct Inputs {
    document: PathBuf,
    /// The document with a blank page after every `BLANK_EVERY` pages.
    with_blanks: PathBuf,
    with_blanks_pages: u32,
    blanks: u32,
    /// The document with page `CHANGED_PAGE` replaced by the next.
    revision: PathBuf,
    /// An EN 16931 invoice XML.
    invoice: PathBuf,
    /// Images and soft masks drawn on the document's pages, once a drawing: what pdfimages
    /// writes a file for, and the most Paperchain may write.
    image_objects: usize,
}

impl Inputs {
    fn make(source: &Path, dir: &Path) -> anyhow::Result<Inputs> {
        let document = dir.join("document.pdf");
        println!("bench: cutting {PAGES} pages of {} into {}", source.display(), document.display());
        qpdf_pages(&[(source, format!("1-{PAGES}"))], &document)?;
        let pages = super::pdf_pages(&document)?;
        ensure!(pages == PAGES, "{} has {pages} pages, expected {PAGES}", document.display());

        let blank = dir.join("blank.pdf");
        Cmd::new("gs")
            .args(["-q", "-dSAFER", "-sDEVICE=pdfwrite", "-dDEVICEWIDTHPOINTS=595", "-dDEVICEHEIGHTPOINTS=842"])
            .args(["-dFIXEDMEDIA", "-o"])
            .arg(&blank)
            .args(["-c", "showpage"])
            .run()?;
        let with_blanks = dir.join("with-blanks.pdf");
        let mut pieces = Vec::new();
        for first in (1..=PAGES).step_by(BLANK_EVERY as usize) {
            let last = (first + BLANK_EVERY - 1).min(PAGES);
            pieces.push((document.as_path(), format!("{first}-{last}")));
            if last < PAGES {
                pieces.push((blank.as_path(), "1".to_string()));
            }
        }
        let blanks = (PAGES - 1) / BLANK_EVERY;
        qpdf_pages(&pieces, &with_blanks)?;

        let revision = dir.join("revision.pdf");
        let next = CHANGED_PAGE + 1;
        qpdf_pages(&[(document.as_path(), format!("1-{},{next},{next}-{PAGES}", CHANGED_PAGE - 1))], &revision)?;

        let invoice = dir.join("factur-x.xml");
        std::fs::write(&invoice, en16931_invoice()).context("writing the invoice XML")?;

        let list = Cmd::new("pdfimages").arg("-list").arg(&document).quiet().read()?;
        // One line a drawing of an image or a mask.
        let drawn = list.lines().skip(2).filter(|line| !line.trim().is_empty()).count();
        ensure!(drawn > 0, "{} draws no image", document.display());
        Ok(Inputs {
            document,
            with_blanks,
            with_blanks_pages: PAGES + blanks,
            blanks,
            revision,
            invoice,
            image_objects: drawn,
        })
    }
}

/// `qpdf --empty --pages FILE RANGE … -- OUTPUT`; the corpus script's slightly-off
/// linearization hints are a warning, not a reason to stop.
fn qpdf_pages(pieces: &[(&Path, String)], output: &Path) -> anyhow::Result<()> {
    let mut cmd = Cmd::new("qpdf").args(["--warning-exit-0", "--empty", "--pages"]);
    for (file, range) in pieces {
        cmd = cmd.arg(file).arg(range);
    }
    cmd.arg("--").arg(output).run()
}
