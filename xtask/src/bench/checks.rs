//! The checks of each side's output, so neither side can win by writing garbage: PDFs
//! pass `qpdf --check` with the expected pages and rotations, sampled pages read the same
//! as the other side's and look (and read) like the source, PNGs are whole and of the
//! expected sizes.
//!
//! What this module must not do: time anything, or change an output it checks.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, bail, ensure};

use crate::cmd::Cmd;

use super::compare::{Bench, COMPARE_DPI, Comparison, Expect, Kind, Produces, Source};
use super::report::size_text;

impl Bench {
    /// Checks one side's output against what the comparison expects (and, for Paperchain,
    /// against the reference side's checked output), says what it checked, and returns the
    /// size of the files.
    pub(super) fn check(
        &self,
        name: &str,
        output: &Produces,
        case: &Comparison,
        reference: Option<&Produces>,
    ) -> Result<u64, String> {
        let checked = match case.kind {
            Kind::Pdf => self.check_pdfs(output, case, reference),
            Kind::Png => self.check_pngs(output, &case.expect, reference),
            Kind::Images => self.check_images(output, &case.expect, reference),
        };
        match checked {
            Ok((checked, bytes)) => {
                eprintln!("  {name} output checked: {checked}; {}", size_text(bytes));
                Ok(bytes)
            }
            Err(e) => {
                eprintln!("  {name} output rejected: {e:#}");
                Err(format!("output rejected: {e:#}"))
            }
        }
    }

    /// Every PDF passes `qpdf --check` with the expected page count, the rotations are as
    /// expected, sampled pages read the same as `reference`'s, and look (and read) like the
    /// source's.
    fn check_pdfs(
        &self,
        output: &Produces,
        case: &Comparison,
        reference: Option<&Produces>,
    ) -> anyhow::Result<(String, u64)> {
        let expect = &case.expect;
        let pdfs = output.files(&self.python, Kind::Pdf)?;
        ensure!(pdfs.len() == expect.files, "{} PDFs, expected {}", pdfs.len(), expect.files);
        for_each_parallel(&pdfs, |pdf| {
            let report = Cmd::new("qpdf").args(["--check", "--show-npages"]).arg(pdf).quiet().read()?;
            let pages = report.lines().last().and_then(|l| l.trim().parse::<u32>().ok());
            ensure!(
                pages == Some(expect.pages_each),
                "{}: {pages:?} pages, expected {}",
                pdf.display(),
                expect.pages_each
            );
            Ok(())
        })?;
        let mut checked = format!("PDFs: {}, each passes qpdf --check with {} pages", pdfs.len(), expect.pages_each);
        if let Some(expected) = &expect.rotations {
            let rotations = rotations(&pdfs[0], expect.pages_each)?;
            if let Some(page) = (0..expected.len()).find(|&i| rotations.get(i) != expected.get(i)) {
                let found = rotations.get(page).map_or("none".into(), u32::to_string);
                bail!("page {} has /Rotate {found}, expected {}", page + 1, expected[page]);
            }
            checked += ", every page's /Rotate as expected";
        }
        if let Some(reference) = reference.filter(|_| !expect.text_samples.is_empty()) {
            let reference = reference.files(&self.python, Kind::Pdf)?;
            for &(file, page) in &expect.text_samples {
                let (ours, theirs) = (text_of(&pdfs[file], page)?, text_of(&reference[file], page)?);
                ensure!(
                    ours == theirs,
                    "{} page {page}: the text differs from {}'s output",
                    pdfs[file].display(),
                    case.tool
                );
            }
            checked += &format!(", text of {} sampled pages as in {}'s output", expect.text_samples.len(), case.tool);
        }
        if let Some(word) = expect.absent_text {
            for_each_parallel(&pdfs, |pdf| {
                // -layout: lines as drawn, so a word hyphenated across two lines is not joined
                // back (not every redactor finds those; see the edits bench's note).
                let text = Cmd::new("pdftotext").arg("-layout").arg(pdf).arg("-").quiet().read()?.to_lowercase();
                let hits = text.matches(&word.to_lowercase()).count();
                ensure!(hits == 0, "{}: pdftotext still reads \"{word}\" {hits} times", pdf.display());
                Ok(())
            })?;
            checked += &format!(", pdftotext finds no \"{word}\" in any case");
        }
        if let Some(source) = &case.source {
            let worst = looks_like_source(&pdfs, source)?;
            checked += &format!(
                ", pages {:?} look like the input's at {COMPARE_DPI} dpi (mean gray difference at most {worst:.2}){}",
                source.pages,
                if source.same_text { " and read the same" } else { "" }
            );
        }
        Ok((checked, total_bytes(&pdfs)))
    }

    /// One whole PNG a page (chunk checksums, image data that inflates to its rows), each
    /// the size of `reference`'s image of the same page give or take a pixel of rounding.
    fn check_pngs(
        &self,
        output: &Produces,
        expect: &Expect,
        reference: Option<&Produces>,
    ) -> anyhow::Result<(String, u64)> {
        let pngs = output.files(&self.python, Kind::Png)?;
        ensure!(pngs.len() == expect.files, "{} PNGs, expected one a page: {}", pngs.len(), expect.files);
        let sizes = self.png_sizes(&pngs)?;
        let mut checked = format!("PNGs: {}, one a page, each complete", pngs.len());
        if let Some(reference) = reference {
            let theirs = self.png_sizes(&reference.files(&self.python, Kind::Png)?)?;
            let near = |a: u32, b: u32| a.abs_diff(b) <= 1;
            if let Some(page) = (0..sizes.len())
                .find(|&i| !theirs.get(i).is_some_and(|&(w, h)| near(sizes[i].0, w) && near(sizes[i].1, h)))
            {
                bail!(
                    "page {}: {}x{} pixels, the other tool's is {:?}",
                    page + 1,
                    sizes[page].0,
                    sizes[page].1,
                    theirs.get(page)
                );
            }
            checked += ", each the other tool's size (±1 px)";
        }
        Ok((checked, total_bytes(&pngs)))
    }

    /// At most `expect.files` images and at least one, each read whole by Pillow where it
    /// reads the format; each JPEG byte for byte one of `reference`'s (passed through, not
    /// re-encoded, as pdfimages -all writes them).
    fn check_images(
        &self,
        output: &Produces,
        expect: &Expect,
        reference: Option<&Produces>,
    ) -> anyhow::Result<(String, u64)> {
        let images = output.files(&self.python, Kind::Images)?;
        ensure!(
            (1..=expect.files).contains(&images.len()),
            "{} images, expected 1 to {} (one an image object)",
            images.len(),
            expect.files
        );
        Cmd::new(&self.python).args(["-c", CHECK_IMAGES]).args(&images).quiet().read()?;
        let mut checked = format!("images: {}, each read whole", images.len());
        if let Some(reference) = reference {
            let is_jpeg = |path: &PathBuf| {
                path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg"))
            };
            let theirs: std::collections::HashSet<Vec<u8>> = reference
                .files(&self.python, Kind::Images)?
                .iter()
                .filter(|path| is_jpeg(path))
                .map(std::fs::read)
                .collect::<Result<_, _>>()?;
            let jpegs: Vec<&PathBuf> = images.iter().filter(|path| is_jpeg(path)).collect();
            for jpeg in &jpegs {
                ensure!(
                    theirs.contains(&std::fs::read(jpeg)?),
                    "{}: no JPEG of the other tool's is the same bytes",
                    jpeg.display()
                );
            }
            checked += &format!(", its {} JPEGs each byte for byte one of the other tool's", jpegs.len());
        }
        Ok((checked, total_bytes(&images)))
    }

    /// The width and height of each PNG, after checking it is whole.
    fn png_sizes(&self, pngs: &[PathBuf]) -> anyhow::Result<Vec<(u32, u32)>> {
        let report = Cmd::new(&self.python).args(["-c", CHECK_PNGS]).args(pngs).quiet().read()?;
        let sizes: Vec<(u32, u32)> = report
            .lines()
            .filter_map(|line| {
                let (w, h) = line.split_once(' ')?;
                Some((w.parse().ok()?, h.parse().ok()?))
            })
            .collect();
        ensure!(sizes.len() == pngs.len(), "the PNG check reported {} sizes for {} files", sizes.len(), pngs.len());
        Ok(sizes)
    }
}

/// The size of `files` together.
fn total_bytes(files: &[PathBuf]) -> u64 {
    files.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
}

/// Checks each PNG named in argv and prints its `width height`; a broken one is an error.
/// In Python, whose zlib inflates the image data, so xtask needs no image crate; it does not
/// unfilter the rows (a PNG of the right size that inflates whole is taken as an image).
const CHECK_PNGS: &str = r#"
import struct, sys, zlib
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
def check(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        return 'not a PNG'
    pos, header, idat = 8, None, []
    while True:
        if pos + 12 > len(data):
            return 'cut short: no IEND chunk'
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body, crc = data[pos + 8:pos + 8 + length], data[pos + 8 + length:pos + 12 + length]
        if len(crc) < 4 or zlib.crc32(kind + body) != int.from_bytes(crc, 'big'):
            return f'bad {kind!r} chunk at byte {pos}'
        pos += 12 + length
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
    if header is None:
        return 'no IHDR chunk'
    width, height, depth, color, _, _, interlace = header
    rows = zlib.decompress(b''.join(idat))
    row = (width * CHANNELS.get(color, 0) * depth + 7) // 8 + 1
    if interlace == 0 and len(rows) != row * height:
        return f'{len(rows)} bytes of image data, {row * height} expected for {width}x{height}'
    print(width, height)
failed = False
for path in sys.argv[1:]:
    try:
        error = check(path)
    except Exception as e:
        error = str(e)
    if error:
        print(f'{path}: {error}', file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
"#;

/// Opens each image named in argv with Pillow and decodes it whole; formats Pillow does not
/// read (pdfimages' JBIG2 and CCITT streams) are skipped. A broken one is an error.
const CHECK_IMAGES: &str = r#"
import sys
from PIL import Image
failed = False
for path in sys.argv[1:]:
    if path.lower().endswith(('.jb2e', '.ccitt')):
        continue
    try:
        with Image.open(path) as image:
            image.load()
    except Exception as e:
        print(f'{path}: {e}', file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
"#;

/// Compares the sampled pages of each PDF with the source's, rendered by pdftoppm; returns
/// the largest mean difference found.
fn looks_like_source(pdfs: &[PathBuf], source: &Source) -> anyhow::Result<f64> {
    let mut worst = 0.0f64;
    for pdf in pdfs {
        let differences = std::sync::Mutex::new(Vec::new());
        for_each_parallel(&source.pages, |&page| {
            let (ours, theirs) = (render_gray(pdf, page)?, render_gray(&source.pdf, page)?);
            let (ours, theirs) = (
                parse_pgm(&ours).context("pdftoppm wrote no PGM for the output")?,
                parse_pgm(&theirs).context("pdftoppm wrote no PGM for the input")?,
            );
            ensure!(
                (ours.0, ours.1) == (theirs.0, theirs.1),
                "page {page} is {}x{} pixels at {COMPARE_DPI} dpi, the input's {}x{}: another page size",
                ours.0,
                ours.1,
                theirs.0,
                theirs.1
            );
            let difference = mean_difference(ours.2, theirs.2);
            ensure!(
                difference <= source.max_difference,
                "page {page} looks different from the input's: mean gray difference {difference:.2}, at most {} allowed",
                source.max_difference
            );
            if source.same_text {
                ensure!(
                    text_of(pdf, page)? == text_of(&source.pdf, page)?,
                    "page {page}: the text differs from the input's"
                );
            }
            differences.lock().map_err(|_| anyhow::anyhow!("a check thread panicked"))?.push(difference);
            Ok(())
        })?;
        let differences = differences.into_inner().map_err(|_| anyhow::anyhow!("a check thread panicked"))?;
        worst = differences.into_iter().fold(worst, f64::max);
    }
    Ok(worst)
}

/// One page as an 8-bit gray PGM, as pdftoppm renders it.
fn render_gray(pdf: &Path, page: u32) -> anyhow::Result<Vec<u8>> {
    let page = page.to_string();
    let output =
        Cmd::new("pdftoppm").args(["-r", COMPARE_DPI, "-gray", "-f", &page, "-l", &page]).arg(pdf).quiet().output()?;
    ensure!(
        output.status.success(),
        "pdftoppm could not render page {page} of {}: {}",
        pdf.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(output.stdout)
}

/// The width, height and pixels of a binary 8-bit PGM (`P5`), as pdftoppm -gray writes it.
fn parse_pgm(bytes: &[u8]) -> Option<(u32, u32, &[u8])> {
    let mut rest = bytes.strip_prefix(b"P5")?;
    let mut fields = [0u32; 3];
    for field in &mut fields {
        rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
        let end = rest.iter().position(|b| !b.is_ascii_digit())?;
        *field = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
        rest = &rest[end..];
    }
    let [width, height, max] = fields;
    // One whitespace byte ends the header.
    let pixels = rest.get(1..)?;
    (max == 255 && pixels.len() as u64 == u64::from(width) * u64::from(height)).then_some((width, height, pixels))
}

/// The mean absolute difference of two equally long runs of gray levels.
fn mean_difference(a: &[u8], b: &[u8]) -> f64 {
    let total: u64 = a.iter().zip(b).map(|(&x, &y)| u64::from(x.abs_diff(y))).sum();
    total as f64 / a.len().max(1) as f64
}

pub(super) fn files_in(dir: &Path, kind: Kind) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if kind.matches(&path) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The /Rotate of each page, as poppler's `pdfinfo` reads it.
pub(super) fn rotations(pdf: &Path, pages: u32) -> anyhow::Result<Vec<u32>> {
    let info = Cmd::new("pdfinfo").args(["-f", "1", "-l", &pages.to_string()]).arg(pdf).quiet().read()?;
    Ok(parse_rotations(&info))
}

/// Reads the `Page    1 rot:  90` lines of `pdfinfo -f -l`.
fn parse_rotations(info: &str) -> Vec<u32> {
    info.lines()
        .filter(|line| line.starts_with("Page ") && line.contains(" rot:"))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect()
}

fn text_of(pdf: &Path, page: u32) -> anyhow::Result<String> {
    let page = page.to_string();
    Cmd::new("pdftotext").args(["-f", &page, "-l", &page]).arg(pdf).arg("-").quiet().read()
}

/// Runs `check` on every item, on as many threads as there are cores; the first error wins.
fn for_each_parallel<T: Sync>(items: &[T], check: impl Fn(&T) -> anyhow::Result<()> + Sync) -> anyhow::Result<()> {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(items.len().max(1));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if let Err(e) = check(item) {
                            // Stops the other workers at their next item.
                            next.store(items.len(), Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().unwrap_or_else(|_| bail!("a check thread panicked")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pdfinfo_rotations() {
        let info = "Title: x\nPage    1 rot:  90\nPage    2 size: 595 x 842 pts\nPage    2 rot:  270\n";
        assert_eq!(parse_rotations(info), [90, 270]);
    }

    #[test]
    fn reads_pdftoppm_gray_pgms() {
        let pgm = b"P5\n3 2\n255\n\x00\x10\x20\x30\x40\xff";
        assert_eq!(parse_pgm(pgm), Some((3, 2, &pgm[11..])));
        // Cut short, or 16-bit: not something to compare byte by byte.
        assert_eq!(parse_pgm(&pgm[..15]), None);
        assert_eq!(parse_pgm(b"P5 1 1 65535\n\x00\x00"), None);
        assert_eq!(parse_pgm(b"P6\n1 1\n255\n\x00\x00\x00"), None);
        assert_eq!(mean_difference(&[0, 10, 255], &[4, 10, 251]), 8.0 / 3.0);
    }
}
