//! Visual regression tests for the routes that change how a page looks: watermark,
//! page numbers, crop and resize.
//!
//! Each case runs `paperchain call` on a corpus file, renders page 1 of the output
//! with poppler's `pdftoppm` (24 dpi, grayscale, crop box) and compares it with a
//! reference image committed under `tests/visual/`. `habibi-rotated.pdf` is in every
//! case because its page 1 carries `/Rotate 90`.
//!
//! Same poppler version: renders are bit-identical. The references are tied to the
//! poppler/FreeType rasteriser loosely at best: a different anti-aliasing of dense text
//! can exceed the tile check, in which case regenerate and re-inspect them.
//!
//! To (re)create the references, run with `PAPERCHAIN_UPDATE_REFERENCES=1` and look at
//! the images before committing them.

use std::path::{Path, PathBuf};
use std::process::Command;

use paperchain_testkit::corpus::corpus;
use serde_json::{Value, json};

/// Largest accepted mean absolute difference per pixel, in grey levels (of 255): catches
/// page-wide changes (a wrong scale or crop offset). A default watermark is faint (its
/// pixels differ by at most ~38 levels) and page numbers are tiny, so moving either
/// changes the page mean by only 0.03-0.23; [`MAX_TILE_DIFF`] is what catches those.
const MAX_MEAN_DIFF: f64 = 2.0;
/// Side of the square tiles of the local check, in pixels (1/3 inch at 24 dpi).
const TILE: usize = 8;
/// Largest accepted mean absolute difference inside any one tile. A moved watermark or
/// page number puts 11-13 levels into some tile; a same-version re-render gives 0.
const MAX_TILE_DIFF: f64 = 6.0;
/// A pixel "really" differs when it is off by more than this many grey levels.
const PIXEL_THRESHOLD: u8 = 64;
/// Largest accepted share of pixels that really differ.
const MAX_DIFFERING_SHARE: f64 = 0.01;

/// The corpus files each route runs on.
const FILES: &[&str] = &["pdf/sample-files/pdflatex-4-pages.pdf", "pdf/sample-files/habibi-rotated.pdf"];

fn references() -> PathBuf {
    paperchain_testkit::workspace_root().join("cli/tests/visual")
}

fn updating() -> bool {
    std::env::var("PAPERCHAIN_UPDATE_REFERENCES").is_ok_and(|v| v == "1")
}

/// An 8-bit grayscale image.
#[derive(Debug, PartialEq)]
struct Gray {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

/// Skips whitespace and `#` comments, then reads one decimal number of a PGM header.
fn header_number(bytes: &[u8], at: &mut usize) -> Result<usize, String> {
    loop {
        match bytes.get(*at) {
            Some(b) if b.is_ascii_whitespace() => *at += 1,
            Some(b'#') => {
                while bytes.get(*at).is_some_and(|&b| b != b'\n') {
                    *at += 1;
                }
            }
            _ => break,
        }
    }
    let start = *at;
    while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
        *at += 1;
    }
    std::str::from_utf8(&bytes[start..*at])
        .unwrap()
        .parse()
        .map_err(|_| format!("bad PGM header number at byte {start}"))
}

/// Parses a binary PGM (`P5`, maxval 255).
fn parse_pgm(bytes: &[u8]) -> Result<Gray, String> {
    if !bytes.starts_with(b"P5") {
        return Err("not a binary PGM (no P5 magic)".into());
    }
    let mut at = 2;
    let width = header_number(bytes, &mut at)?;
    let height = header_number(bytes, &mut at)?;
    let maxval = header_number(bytes, &mut at)?;
    if maxval != 255 {
        return Err(format!("PGM maxval {maxval}, expected 255"));
    }
    // Exactly one whitespace byte separates the header from the raster.
    at += 1;
    let pixels = bytes.get(at..).unwrap_or_default().to_vec();
    if pixels.len() != width * height {
        return Err(format!("PGM {width}x{height} holds {} raster bytes, expected {}", pixels.len(), width * height));
    }
    Ok(Gray { width, height, pixels })
}

/// Runs `operation` on `file`, renders page 1 of the output and returns it as PGM bytes.
fn render_case(operation: &str, input: &Value, file: &str) -> Vec<u8> {
    let work = tempfile::tempdir().unwrap();
    let input_path = work.path().join("input.json");
    std::fs::write(&input_path, serde_json::to_vec(input).unwrap()).unwrap();
    let out_pdf = work.path().join("out.pdf");
    let call = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["call", operation, "--input"])
        .arg(&input_path)
        .arg("--file")
        .arg(format!("file={}", corpus().join(file).display()))
        .arg("--out")
        .arg(&out_pdf)
        .arg("--force")
        .output()
        .unwrap();
    assert!(
        call.status.success(),
        "{operation} on {file} exited {:?}: {}{}",
        call.status.code(),
        String::from_utf8_lossy(&call.stdout),
        String::from_utf8_lossy(&call.stderr)
    );
    let prefix = work.path().join("page");
    let render = Command::new("pdftoppm")
        .args(["-r", "24", "-gray", "-f", "1", "-l", "1", "-singlefile", "-cropbox"])
        .arg(&out_pdf)
        .arg(&prefix)
        .output()
        .expect("pdftoppm (poppler-utils) is installed (cargo xtask setup)");
    assert!(render.status.success(), "pdftoppm on {operation} of {file}: {}", String::from_utf8_lossy(&render.stderr));
    std::fs::read(prefix.with_extension("pgm")).unwrap()
}

/// How far an image is from its reference.
#[derive(Debug)]
struct Difference {
    mean: f64,
    differing_share: f64,
    /// Largest mean difference of a `TILE`-pixel square, and that square's top-left pixel.
    worst_tile: f64,
    worst_at: (usize, usize),
}

/// Compares two images; an error when their sizes differ.
fn difference(actual: &Gray, reference: &Gray) -> Result<Difference, String> {
    if (actual.width, actual.height) != (reference.width, reference.height) {
        return Err(format!(
            "size {}x{} differs from the reference's {}x{}",
            actual.width, actual.height, reference.width, reference.height
        ));
    }
    let mut total = 0u64;
    let mut differing = 0usize;
    for (&a, &r) in actual.pixels.iter().zip(&reference.pixels) {
        let d = a.abs_diff(r);
        total += u64::from(d);
        if d > PIXEL_THRESHOLD {
            differing += 1;
        }
    }
    let (mut worst_tile, mut worst_at) = (0.0, (0, 0));
    for ty in (0..actual.height).step_by(TILE) {
        for tx in (0..actual.width).step_by(TILE) {
            let (mut sum, mut count) = (0u64, 0u64);
            for y in ty..(ty + TILE).min(actual.height) {
                for x in tx..(tx + TILE).min(actual.width) {
                    let i = y * actual.width + x;
                    sum += u64::from(actual.pixels[i].abs_diff(reference.pixels[i]));
                    count += 1;
                }
            }
            let tile = sum as f64 / count as f64;
            if tile > worst_tile {
                (worst_tile, worst_at) = (tile, (tx, ty));
            }
        }
    }
    let n = actual.pixels.len().max(1) as f64;
    Ok(Difference { mean: total as f64 / n, differing_share: differing as f64 / n, worst_tile, worst_at })
}

/// File name of a case's reference: route, corpus file stem.
fn reference_name(route: &str, file: &str) -> String {
    let stem = Path::new(file).file_stem().unwrap().to_string_lossy();
    format!("{route}--{stem}.pgm")
}

/// Runs `operation` with `input` on every corpus file of [`FILES`] and checks each
/// rendering against `tests/visual/<route>--<file>.pgm`; panics naming every failing case.
fn check_route(route: &str, operation: &str, input: Value) {
    let mut failures = Vec::new();
    for file in FILES {
        let case = format!("{operation} {input} on {file}");
        let rendered = render_case(operation, &input, file);
        let actual = parse_pgm(&rendered).unwrap_or_else(|e| panic!("{case}: pdftoppm output: {e}"));
        let path = references().join(reference_name(route, file));
        if updating() {
            std::fs::create_dir_all(references()).unwrap();
            std::fs::write(&path, &rendered).unwrap();
            println!("{case}: wrote reference {} ({}x{})", path.display(), actual.width, actual.height);
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            failures.push(format!(
                "{case}: reference {} is missing; create it with \
                 `PAPERCHAIN_UPDATE_REFERENCES=1 cargo test -p paperchain --test cli visual::`, then look at it before committing",
                path.display()
            ));
            continue;
        };
        let reference = parse_pgm(&bytes).unwrap_or_else(|e| panic!("{case}: reference {}: {e}", path.display()));
        match difference(&actual, &reference) {
            Err(e) => failures.push(format!("{case}: {e}")),
            Ok(d)
                if d.mean > MAX_MEAN_DIFF
                    || d.differing_share > MAX_DIFFERING_SHARE
                    || d.worst_tile > MAX_TILE_DIFF =>
            {
                failures.push(format!(
                    "{case}: mean difference {:.3} (max {MAX_MEAN_DIFF}), {:.3}% of pixels off by more than \
                     {PIXEL_THRESHOLD} (max {:.1}%), worst {TILE}x{TILE} tile {:.2} at {:?} (max {MAX_TILE_DIFF}), \
                     against {}",
                    d.mean,
                    d.differing_share * 100.0,
                    MAX_DIFFERING_SHARE * 100.0,
                    d.worst_tile,
                    d.worst_at,
                    path.display()
                ))
            }
            Ok(d) => println!(
                "{case}: mean difference {:.3}, {:.3}% differing, worst tile {:.2}",
                d.mean,
                d.differing_share * 100.0,
                d.worst_tile
            ),
        }
    }
    assert!(failures.is_empty(), "visual differences:\n{}", failures.join("\n"));
}

#[test]
fn watermark() {
    check_route("watermark", "add_watermark_to_pdf", json!({ "text": "DRAFT" }));
}

#[test]
fn page_numbers() {
    check_route("page-numbers", "add_pdf_page_numbers", json!({}));
}

#[test]
fn crop() {
    check_route(
        "crop",
        "crop_pdf_pages",
        json!({ "margins": { "top": 10, "left": 10, "right": 10, "bottom": 10 }, "unit": "percent" }),
    );
}

#[test]
fn resize() {
    check_route("resize", "resize_pdf_pages", json!({ "size": "A4", "mode": "fit" }));
}

#[test]
fn pgm_parser_reads_header_comments_and_raster() {
    let image = parse_pgm(b"P5\n# made by hand\n3 2\n255\n\x00\x01\x02\x03\x04\xff").unwrap();
    assert_eq!(image, Gray { width: 3, height: 2, pixels: vec![0, 1, 2, 3, 4, 255] });
    assert!(parse_pgm(b"P5\n3 2\n255\n\x00").is_err());
    assert!(parse_pgm(b"P6\n1 1\n255\n\x00\x00\x00").is_err());
}
