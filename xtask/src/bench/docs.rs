//! The `docs` group: compression against qpdf (lossless) and Ghostscript (lossy), and PDF to
//! PNG against pdftoppm, on the corpus's largest PDFs.
//!
//! The inputs are picked, not named: the largest readable, unencrypted PDFs under the
//! corpus's `pdf/` folder, those with images first, since images are where compressors
//! differ and what makes rendering slow. The picks are printed with their sizes.

use std::cmp::Reverse;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};

use super::{Comparison, Expect, Kind, Produces, Side, Source, size_text};
use crate::cmd::Cmd;

/// How many corpus PDFs the group runs on.
const INPUTS: usize = 5;
/// How many pages of each compressed PDF are compared with the input's, spread evenly.
const COMPARED_PAGES: u32 = 8;
/// Resolution of the to-images case: the route's default, and pdftoppm's `-r`.
const DPI: &str = "150";

/// A corpus PDF the cases run on.
struct Input {
    path: PathBuf,
    /// Its path under the corpus, to print.
    name: String,
    bytes: u64,
    pages: u32,
    images: usize,
}

pub(super) fn cases(paperchain: &Path, corpus: &Path, dir: &Path) -> anyhow::Result<Vec<Comparison>> {
    let inputs = pick_inputs(corpus)?;
    println!("bench: docs inputs, the {} largest readable unencrypted corpus PDFs with images first:", inputs.len());
    for input in &inputs {
        println!("  {}: {}, {}, {} images", input.name, size_text(input.bytes), pages(input.pages), input.images);
    }
    for side in ["paperchain", "qpdf", "gs", "pdftoppm"] {
        let folder = dir.join(side);
        std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    }
    let out = |side: &str, name: String| dir.join(side).join(name);
    let paperchain = |operation: &str, input: &'static str, pdf: &Path, output: Produces| {
        Side::paperchain(paperchain, operation, Some(input), &[("file".into(), pdf)], output)
    };
    let one_pdf = |input: &Input| Expect {
        files: 1,
        pages_each: input.pages,
        rotations: None,
        text_samples: Vec::new(),
        absent_text: None,
    };
    let source = |input: &Input, max_difference: f64, same_text: bool| {
        Some(Source { pdf: input.path.clone(), pages: spread(input.pages, COMPARED_PAGES), max_difference, same_text })
    };
    let label =
        |input: &Input| format!("{} ({}, {})", file_name(&input.path), pages(input.pages), size_text(input.bytes));

    let mut cases = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let (paperchain_out, qpdf_out) =
            (out("paperchain", format!("lossless-{i}.pdf")), out("qpdf", format!("{i}.pdf")));
        cases.push(Comparison {
            table: "compress lossless",
            tool: "qpdf",
            operation: label(input),
            paperchain: paperchain(
                "compress_pdf",
                r#"{"mode":"lossless"}"#,
                &input.path,
                Produces::Pdf(paperchain_out),
            ),
            reference: Side {
                program: "qpdf".into(),
                // A corpus file's own flaws (GeoTopo's linearization hints) are warnings,
                // exit 3 without the flag; qpdf still writes the whole file.
                args: vec![
                    os("--warning-exit-0"),
                    os("--object-streams=generate"),
                    os("--recompress-flate"),
                    os("--compression-level=9"),
                    input.path.clone().into(),
                    qpdf_out.clone().into(),
                ],
                stdin: None,
                output: Produces::Pdf(qpdf_out),
            },
            kind: Kind::Pdf,
            expect: one_pdf(input),
            // Lossless: the pages render the same and keep their text.
            source: source(input, 0.5, true),
            note: Some(
                "qpdf recompresses every Flate stream at level 9 and packs objects into object streams. \
                 `paperchain call` takes its file base64-encoded inside the JSON input, as the HTTP API does; \
                 that decoding is part of its time.",
            ),
        });
    }
    for (i, input) in inputs.iter().enumerate() {
        let (paperchain_out, gs_out) =
            (out("paperchain", format!("recommended-{i}.pdf")), out("gs", format!("{i}.pdf")));
        cases.push(Comparison {
            table: "compress recommended",
            tool: "gs",
            operation: label(input),
            paperchain: paperchain(
                "compress_pdf",
                r#"{"mode":"recommended"}"#,
                &input.path,
                Produces::Pdf(paperchain_out),
            ),
            reference: Side {
                program: "gs".into(),
                args: ["-sDEVICE=pdfwrite", "-dPDFSETTINGS=/ebook", "-dNOPAUSE", "-dBATCH", "-dQUIET"]
                    .into_iter()
                    .map(os)
                    .chain([os(format!("-sOutputFile={}", gs_out.display())), input.path.clone().into()])
                    .collect(),
                stdin: None,
                output: Produces::Pdf(gs_out),
            },
            kind: Kind::Pdf,
            expect: one_pdf(input),
            // Lossy: images may be downsampled and re-encoded, which at the compared
            // resolution moves gray levels by far less than a missing paragraph does.
            source: source(input, 2.0, false),
            note: Some(
                "Ghostscript's /ebook rewrites the whole PDF: fonts re-embedded as subsets, images downsampled \
                 to 150 dpi and re-encoded as JPEG. Both outputs must look like the input; only lossless keeps \
                 the text extraction exactly.",
            ),
        });
    }
    for (i, input) in inputs.iter().enumerate() {
        let (zip, folder) = (out("paperchain", format!("images-{i}.zip")), out("pdftoppm", i.to_string()));
        cases.push(Comparison {
            table: "to-images PNG 150 dpi",
            tool: "pdftoppm",
            operation: label(input),
            paperchain: paperchain(
                "convert_pdf_to_images",
                r#"{"format":"png","dpi":150}"#,
                &input.path,
                Produces::Zip(zip),
            ),
            reference: Side {
                program: "pdftoppm".into(),
                args: vec![os("-r"), os(DPI), os("-png"), input.path.clone().into(), folder.join("page").into()],
                stdin: None,
                output: Produces::Folder(folder),
            },
            kind: Kind::Png,
            expect: Expect {
                files: input.pages as usize,
                pages_each: 1,
                rotations: None,
                text_samples: Vec::new(),
                absent_text: None,
            },
            source: None,
            note: Some(
                "Paperchain renders with pdfium and answers one ZIP of the PNGs (stored, not deflated again); \
                 pdftoppm renders with poppler's Splash and writes one PNG file a page. Sizes are the PNGs'.",
            ),
        });
    }
    Ok(cases)
}

/// The `INPUTS` largest usable PDFs of the corpus: those with images if there are enough,
/// then the largest without; largest first.
fn pick_inputs(corpus: &Path) -> anyhow::Result<Vec<Input>> {
    let root = corpus.join("pdf");
    let mut files = Vec::new();
    find_pdfs(&root, &mut files)?;
    files.sort_by_key(|(path, bytes)| (Reverse(*bytes), path.clone()));
    let (mut with_images, mut without) = (Vec::new(), Vec::new());
    // Largest first, so only the files down to the last pick are opened.
    for (path, bytes) in files {
        if with_images.len() == INPUTS {
            break;
        }
        let Some((pages, images)) = usable(&path) else { continue };
        let name = path.strip_prefix(corpus).unwrap_or(&path).display().to_string();
        let input = Input { path, name, bytes, pages, images };
        if images > 0 {
            with_images.push(input);
        } else {
            without.push(input);
        }
    }
    let missing = INPUTS - with_images.len();
    let mut picked: Vec<Input> = with_images.into_iter().chain(without.into_iter().take(missing)).collect();
    picked.sort_by_key(|input| Reverse(input.bytes));
    ensure!(!picked.is_empty(), "no readable, unencrypted PDF under {}", root.display());
    Ok(picked)
}

fn find_pdfs(dir: &Path, found: &mut Vec<(PathBuf, u64)>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let meta = entry.metadata()?;
        if meta.is_dir() {
            find_pdfs(&path, found)?;
        } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            found.push((path, meta.len()));
        }
    }
    Ok(())
}

/// Pages and images of a PDF every tool here can be fair to; `None` for an encrypted file
/// (Ghostscript and pdftoppm would need its password) or a broken one. `qpdf --check`
/// warnings pass: GeoTopo, the corpus's largest real document, has wrong linearization
/// hints and nothing else wrong.
fn usable(pdf: &Path) -> Option<(u32, usize)> {
    let status = |cmd: Cmd| cmd.quiet().output().ok().and_then(|o| o.status.code());
    // --is-encrypted exits 2 for "not encrypted", 0 for encrypted.
    if status(Cmd::new("qpdf").arg("--is-encrypted").arg(pdf)) != Some(2) {
        return None;
    }
    if !matches!(status(Cmd::new("qpdf").arg("--check").arg(pdf)), Some(0 | 3)) {
        return None;
    }
    let pages = Cmd::new("qpdf").args(["--warning-exit-0", "--show-npages"]).arg(pdf).quiet().read().ok()?;
    // A file rebuilt from a broken xref can come out with no pages (unreadablemetadata.pdf).
    let pages: u32 = pages.trim().parse().ok().filter(|&p| p > 0)?;
    let list = Cmd::new("pdfimages").arg("-list").arg(pdf).quiet().read().ok()?;
    // Two header lines, then one line an image.
    Some((pages, list.lines().count().saturating_sub(2)))
}

/// `count` pages (two at least, fewer if there are not as many) from 1 to `pages`, spread
/// evenly, first and last included.
fn spread(pages: u32, count: u32) -> Vec<u32> {
    if pages <= count {
        return (1..=pages).collect();
    }
    let steps = u64::from(count.max(2) - 1);
    let mut picked: Vec<u32> = (0..=steps).map(|i| 1 + (i * u64::from(pages - 1) / steps) as u32).collect();
    picked.dedup();
    picked
}

fn pages(count: u32) -> String {
    if count == 1 { "1 page".into() } else { format!("{count} pages") }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn os(text: impl Into<OsString>) -> OsString {
    text.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_pages_evenly_with_both_ends() {
        assert_eq!(spread(3, 8), [1, 2, 3]);
        assert_eq!(spread(8, 8), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(spread(117, 8), [1, 17, 34, 50, 67, 83, 100, 117]);
        assert_eq!(spread(10, 2), [1, 10]);
        assert_eq!(spread(10, 1), [1, 10]);
    }
}
