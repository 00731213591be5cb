//! Optical character recognition with Tesseract 5: the process's library, a pool of warm
//! handles (loading a language's models takes longer than reading a page), the checks of a
//! `languages` field, and turning pages upright.

pub mod tesseract;

use std::sync::{Mutex, OnceLock};

use crate::context::Progress;
use crate::error::{EngineError, ErrorKind};
use crate::pdf::pdfium::{self, Glyph, PageLayout};

pub use tesseract::{Api, Image, Orientation, Reading, TextLayer, Word};
use tesseract::{Failure, Tesseract};

/// The Debian packages that provide the engine (named in the 503 of a server without it).
pub const PACKAGES: &str = "tesseract-ocr (and tesseract-ocr-osd, tesseract-ocr-<language>)";

/// Most languages one call may combine: each loads its own models and slows every page.
pub const MAX_LANGUAGES: usize = 5;

/// Longest one page may take to read, in milliseconds.
pub const PAGE_DEADLINE_MS: u32 = 120_000;

/// Orientation detection's confidence from which a page is turned (as OCRmyPDF's
/// `--rotate-pages-threshold`): below it, a sparse page is left as it is.
pub const TURN_CONFIDENCE: f32 = 14.0;

/// Most idle handles kept warm, all languages together (each holds its models: 20 to
/// 100 MB).
const MAX_IDLE: usize = 4;

/// Keeps Tesseract to one thread a page (`OMP_THREAD_LIMIT=1`, unless the environment
/// sets it): its OpenMP threads spin while they wait, so on a busy machine two of them
/// read a page slower than one (4 scanned pages: 51 s with them, 27 s without, on two
/// cores); the routes read pages side by side instead.
///
/// # Safety
/// It changes the environment: call it at the start of `main`, before any thread starts.
pub unsafe fn limit_engine_threads() {
    if std::env::var_os("OMP_THREAD_LIMIT").is_none() {
        // SAFETY: the caller guarantees no other thread exists yet.
        unsafe { std::env::set_var("OMP_THREAD_LIMIT", "1") };
    }
}

/// How many pages one call reads side by side: one a core, at most 4.
pub fn parallel_pages(pages: usize) -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4).min(pages.max(1))
}

/// The process's Tesseract, loaded on first use; a 503 naming the packages when missing.
pub fn library() -> Result<&'static Tesseract, EngineError> {
    static TESSERACT: OnceLock<Result<Tesseract, String>> = OnceLock::new();
    let load = || Tesseract::load(|name| std::env::var_os(name));
    crate::native::load_once(&TESSERACT, load, "libtesseract could not be loaded; OCR routes answer 503", unavailable)
}

/// Checks that Tesseract is there, loading it off the async threads the first time.
pub async fn ensure_library() -> Result<(), EngineError> {
    crate::native::ensure(library).await
}

/// The error of an OCR route when Tesseract cannot be loaded.
pub fn unavailable(why: &str) -> EngineError {
    crate::native::unavailable(format!(
        "the OCR engine (Tesseract 5) is not available on this server ({why}); the operator must install the Debian \
         packages {PACKAGES} (`cargo xtask setup` does) or set {} to the library's path, then restart the server",
        tesseract::TESSERACT_ENV
    ))
}

/// Checks a `languages` field (Tesseract's codes: `eng`, `deu`, `chi_sim`…) against the
/// installed data and answers Tesseract's form (`eng+deu`); `eng` when absent.
pub fn check_languages(languages: Option<&[String]>, field: &str) -> Result<String, EngineError> {
    let Some(list) = languages else { return check_languages(Some(&["eng".to_string()]), field) };
    if list.is_empty() || list.len() > MAX_LANGUAGES {
        return Err(EngineError::invalid(
            field,
            format!(
                "{field}: give 1 to {MAX_LANGUAGES} languages (Tesseract codes such as \"eng\"), not {}",
                list.len()
            ),
        ));
    }
    let installed = library()?.languages();
    let mut seen: Vec<&str> = Vec::with_capacity(list.len());
    for (i, code) in list.iter().enumerate() {
        let at = format!("{field}/{i}");
        let well_formed = (3..=16).contains(&code.len())
            && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            && code.as_bytes()[..3].iter().all(u8::is_ascii_lowercase);
        if !well_formed {
            return Err(EngineError::invalid(
                &at,
                format!(
                    "{at}: {code:?} is not a Tesseract language code (three lowercase letters, as \"eng\" or \"chi_sim\")"
                ),
            ));
        }
        if !installed.iter().any(|l| l == code) {
            return Err(EngineError::invalid_with(
                "unknown_language",
                &at,
                format!(
                    "{at}: the language {code:?} is not installed on this server; installed: {}",
                    installed.join(", ")
                ),
            ));
        }
        if seen.contains(&code.as_str()) {
            return Err(EngineError::invalid(&at, format!("{at}: {code:?} is given twice")));
        }
        seen.push(code);
    }
    Ok(seen.join("+"))
}

/// Idle handles by language string, the most recently used last.
fn idle() -> &'static Mutex<Vec<(String, Api)>> {
    static IDLE: OnceLock<Mutex<Vec<(String, Api)>>> = OnceLock::new();
    IDLE.get_or_init(|| Mutex::new(Vec::new()))
}

/// A handle lent by the pool; it goes back warm when dropped.
pub struct Lent {
    languages: String,
    api: Option<Api>,
}

impl Lent {
    /// The handle.
    pub fn api(&mut self) -> &mut Api {
        self.api.as_mut().expect("a lent handle is there until dropped")
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let Some(mut api) = self.api.take() else { return };
        api.clear();
        let mut idle = idle().lock().unwrap_or_else(|e| e.into_inner());
        idle.push((std::mem::take(&mut self.languages), api));
        if idle.len() > MAX_IDLE {
            // The least recently used handle is freed (outside the lock would be nicer, but
            // freeing is quick next to loading).
            idle.remove(0);
        }
    }
}

/// A handle for `languages` (as [`check_languages`] answers, or `osd`): a warm one when
/// the pool has it, else a new one.
pub fn lend(languages: &str) -> Result<Lent, EngineError> {
    let lib = library()?;
    let warm = {
        let mut idle = idle().lock().unwrap_or_else(|e| e.into_inner());
        idle.iter().rposition(|(l, _)| l == languages).map(|i| idle.remove(i).1)
    };
    let api = match warm {
        Some(api) => api,
        None => lib.open(languages).map_err(|why| unavailable(&why))?,
    };
    Ok(Lent { languages: languages.to_string(), api: Some(api) })
}

/// Whether pages can be turned upright (orientation data installed).
pub fn can_detect_orientation() -> bool {
    library().map(|lib| lib.has_osd()).unwrap_or(false)
}

/// The error of a page Tesseract could not read; `what` names it ("page 3").
pub fn failure(failure: Failure, what: &str) -> EngineError {
    match failure {
        Failure::Deadline => EngineError::new(
            ErrorKind::Timeout,
            "timeout",
            format!("reading {what} took longer than {} seconds", PAGE_DEADLINE_MS / 1000),
        ),
        Failure::Engine(why) => EngineError::internal(format!("OCR of {what} failed: {why}")),
        Failure::Stopped => crate::cancel::check().err().unwrap_or_else(|| EngineError::internal("OCR was stopped")),
    }
}

/// Orientation detection's confidence from which a suggested turn is tried at all: below
/// it the page is read as it is.
pub const TRY_CONFIDENCE: f32 = 1.0;

/// How much higher (mean word confidence, 0 to 100) the turned reading of an unsure page
/// must score to be kept.
const TURN_MARGIN: u32 = 5;

/// Reads `image` with `lent`, upright: when orientation detection is sure the text is
/// turned ([`TURN_CONFIDENCE`]), the image is turned first; when it only suggests it, both
/// ways are read and the better reading is kept. Answers the reading and the clockwise
/// turn applied (0, 90, 180, 270); the results stay in the handle for [`Api::add_to`].
/// `what` names the image in errors ("page 3").
pub fn read_upright(
    lent: &mut Lent,
    image: &Image,
    auto_rotate: bool,
    what: &str,
) -> Result<(Reading, u32), EngineError> {
    let suggested = if auto_rotate && can_detect_orientation() {
        let mut osd = lend("osd")?;
        // Orientation is told from the shapes of letters, which half the resolution still
        // shows at 150 dpi and up, in a quarter of the time.
        let found = match halved(image) {
            Some(small) => {
                let small_image =
                    Image { pixels: &small.0, width: small.1, height: small.2, channels: 1, dpi: image.dpi / 2 };
                osd.api().orientation(&small_image)
            }
            None => osd.api().orientation(image),
        };
        found.filter(|o| o.degrees != 0 && o.confidence >= TRY_CONFIDENCE)
    } else {
        None
    };
    let fail = |f| failure(f, what);
    let Some(found) = suggested else {
        return Ok((lent.api().read(image, PAGE_DEADLINE_MS).map_err(fail)?, 0));
    };
    let turn_by = (360 - found.degrees) % 360;
    let as_is = if found.confidence >= TURN_CONFIDENCE {
        None
    } else {
        Some(lent.api().read(image, PAGE_DEADLINE_MS).map_err(fail)?)
    };
    let (pixels, width, height) = turn(image.pixels, image.width, image.height, image.channels, turn_by);
    let turned_image = Image { pixels: &pixels, width, height, channels: image.channels, dpi: image.dpi };
    let turned = lent.api().read(&turned_image, PAGE_DEADLINE_MS).map_err(fail)?;
    match as_is {
        Some(first) if turned.confidence < first.confidence + TURN_MARGIN => {
            // Read again as it is, so the handle holds the reading that is kept.
            Ok((lent.api().read(image, PAGE_DEADLINE_MS).map_err(fail)?, 0))
        }
        _ => Ok((turned, turn_by)),
    }
}

/// `image` at half its resolution in grey (each 2 × 2 block averaged), when it is at
/// 250 dpi or more; `None` below.
fn halved(image: &Image) -> Option<(Vec<u8>, u32, u32)> {
    if image.dpi < 250 || image.width < 2 || image.height < 2 {
        return None;
    }
    let (w, h, c) = (image.width as usize, image.height as usize, image.channels as usize);
    let (hw, hh) = (w / 2, h / 2);
    let grey = |x: usize, y: usize| -> u32 {
        let at = (y * w + x) * c;
        if c == 1 { image.pixels[at] as u32 } else { grey_of(&image.pixels[at..at + 3]) as u32 }
    };
    let mut out = Vec::with_capacity(hw * hh);
    for y in 0..hh {
        for x in 0..hw {
            let sum = grey(2 * x, 2 * y) + grey(2 * x + 1, 2 * y) + grey(2 * x, 2 * y + 1) + grey(2 * x + 1, 2 * y + 1);
            out.push((sum / 4) as u8);
        }
    }
    Some((out, hw as u32, hh as u32))
}

/// One RGB pixel's grey (ITU-R 601 weights), as Tesseract would convert it.
fn grey_of(p: &[u8]) -> u8 {
    ((p[0] as u32 * 299 + p[1] as u32 * 587 + p[2] as u32 * 114) / 1000) as u8
}

/// Packed RGB to grey.
pub fn grey_of_rgb(rgb: &[u8]) -> Vec<u8> {
    rgb.chunks_exact(3).map(grey_of).collect()
}

/// `pixels` (`width × height`, `channels` bytes a pixel) turned clockwise by `degrees`
/// (0, 90, 180 or 270): the pixels and the new width and height.
pub fn turn(pixels: &[u8], width: u32, height: u32, channels: u32, degrees: u32) -> (Vec<u8>, u32, u32) {
    let (w, h, c) = (width as usize, height as usize, channels as usize);
    if degrees.is_multiple_of(360) {
        return (pixels.to_vec(), width, height);
    }
    let mut out = vec![0u8; pixels.len()];
    let (nw, nh) = if degrees == 180 { (w, h) } else { (h, w) };
    for y in 0..h {
        for x in 0..w {
            let (nx, ny) = match degrees {
                90 => (h - 1 - y, x),
                180 => (w - 1 - x, h - 1 - y),
                _ => (y, w - 1 - x),
            };
            let from = (y * w + x) * c;
            let to = (ny * nw + nx) * c;
            out[to..to + c].copy_from_slice(&pixels[from..from + c]);
        }
    }
    (out, nw as u32, nh as u32)
}

/// The pages of `layouts` that have no text (scans), read by OCR: each is rendered at
/// [`SCAN_DPI`], read upright, and its characters replaced by the words read, so layout
/// analysis (Markdown, tables, statements, Word) reads a scan as it reads text. Answers the
/// pages read; a page turned upright gets the turned page's size. Nothing happens without
/// scanned pages; a machine without Tesseract answers 503 only when there is one.
pub fn read_scanned_pages(
    bytes: &[u8],
    password: Option<&str>,
    layouts: &mut [PageLayout],
    languages: &str,
    field: &str,
    progress: &dyn Progress,
) -> Result<Vec<u32>, EngineError> {
    let textless: Vec<u32> = layouts.iter().filter(|l| !l.has_text()).map(|l| l.number).collect();
    if textless.is_empty() {
        return Ok(textless);
    }
    // A page with nothing drawn on it is blank, not a scan: a small rendering finds it, and
    // it is neither rendered at full size nor read.
    let mut scanned = Vec::with_capacity(textless.len());
    pdfium::render_pages(bytes, password, &textless, BLANK_PROBE_DPI, field, field, |page| {
        if page.rgb.iter().any(|&level| level < BLANK_LEVEL) {
            scanned.push(page.number);
        }
        Ok(())
    })?;
    if scanned.is_empty() {
        return Ok(scanned);
    }
    let mut lent = lend(languages)?;
    let mut read = Vec::with_capacity(scanned.len());
    pdfium::render_pages(bytes, password, &scanned, SCAN_DPI, field, field, |page| {
        let grey = grey_of_rgb(&page.rgb);
        let image = Image { pixels: &grey, width: page.width, height: page.height, channels: 1, dpi: SCAN_DPI };
        let what = format!("page {}", page.number);
        let (reading, turned) = read_upright(&mut lent, &image, true, &what)?;
        let layout = layouts.iter_mut().find(|l| l.number == page.number).expect("a scanned page is selected");
        let (width, height) = if turned % 180 == 90 { (page.height, page.width) } else { (page.width, page.height) };
        *layout = layout_of(page.number, &reading.words, width, height, SCAN_DPI);
        read.push(page.number);
        progress.advance("scanned pages read by OCR", read.len() as u64, scanned.len() as u64);
        Ok(())
    })?;
    Ok(read)
}

/// The layouts of `pages` (as [`pdfium::page_layouts`]) with scanned pages read by OCR in
/// `languages` ([`read_scanned_pages`]), each page reported to `progress` as it is read
/// (the layouts, then the scans); also answers the pages OCR read. Without the OCR
/// engine, scanned pages stay without text rather than failing the call.
pub fn layouts_with_ocr(
    bytes: &[u8],
    password: Option<&str>,
    pages: &[u32],
    field: &str,
    languages: &str,
    progress: &dyn Progress,
) -> Result<(Vec<PageLayout>, Vec<u32>), EngineError> {
    let mut layouts = pdfium::page_layouts(bytes, password, pages, field, progress)?;
    let read = match read_scanned_pages(bytes, password, &mut layouts, languages, field, progress) {
        Ok(read) => read,
        Err(e) if matches!(e.kind, ErrorKind::Unavailable { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok((layouts, read))
}

/// The resolution scanned pages are read at for layout analysis.
pub const SCAN_DPI: u32 = 300;

/// A rendered page with no channel of a pixel darker than this has nothing on it to read.
const BLANK_LEVEL: u8 = 250;
/// The resolution a page without text is first rendered at, to tell a blank page from a
/// scan: a line a tenth of a point wide still darkens a pixel past [`BLANK_LEVEL`].
const BLANK_PROBE_DPI: u32 = 50;

/// A page layout from the words read on an image of `width × height` pixels at `dpi`:
/// each word's letters spread over its box, on its line's band (so the words of a line
/// share a baseline), a space between words, the size from the line's height.
pub fn layout_of(number: u32, words: &[Word], width: u32, height: u32, dpi: u32) -> PageLayout {
    let scale = 72.0 / dpi as f32;
    let mut glyphs = Vec::new();
    let mut start = 0;
    while start < words.len() {
        let end = (start + 1..words.len()).find(|&i| words[i].line_start).unwrap_or(words.len());
        let line = &words[start..end];
        let top = line.iter().map(|w| w.y0).min().unwrap_or(0) as f32 * scale;
        let bottom = line.iter().map(|w| w.y1).max().unwrap_or(0) as f32 * scale;
        // A line's box runs from the ascenders to the descenders: about 0.95 em.
        let size = ((bottom - top) / 0.95).max(1.0);
        let glyph = |ch: char, x0: f32, x1: f32, generated: bool| Glyph {
            ch,
            x0,
            y0: top,
            x1,
            y1: bottom,
            size,
            bold: false,
            italic: false,
            mono: false,
            generated,
            font: 0,
        };
        for (i, word) in line.iter().enumerate() {
            let (x0, x1) = (word.x0 as f32 * scale, word.x1 as f32 * scale);
            let letters: Vec<char> = word.text.chars().collect();
            let each = (x1 - x0) / letters.len().max(1) as f32;
            for (k, &ch) in letters.iter().enumerate() {
                let left = x0 + each * k as f32;
                glyphs.push(glyph(ch, left, left + each, false));
            }
            if let Some(next) = line.get(i + 1) {
                glyphs.push(glyph(' ', x1, (next.x0 as f32 * scale).max(x1), true));
            }
        }
        let end_x = line.last().map_or(0.0, |w| w.x1 as f32 * scale);
        glyphs.push(glyph('\n', end_x, end_x, true));
        start = end;
    }
    PageLayout {
        number,
        width: width as f32 * scale,
        height: height as f32 * scale,
        glyphs,
        fonts: vec!["OCR".to_string()],
        images: Vec::new(),
        rules: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, x0: i32, y0: i32, x1: i32, y1: i32, line_start: bool) -> Word {
        Word { text: text.into(), x0, y0, x1, y1, line_start }
    }

    #[test]
    fn words_read_become_characters_on_their_line() {
        // Two lines at 300 dpi: "ab cd" and "e"; "cd" sits a little higher than "ab".
        let words = [
            word("ab", 300, 300, 360, 350, true),
            word("cd", 390, 296, 450, 348, false),
            word("e", 300, 400, 330, 450, true),
        ];
        let layout = layout_of(7, &words, 2550, 3300, 300);
        assert_eq!((layout.number, layout.width, layout.height), (7, 612.0, 792.0));
        let text: String = layout.glyphs.iter().map(|g| g.ch).collect();
        assert_eq!(text, "ab cd\ne\n");
        // Letters share the word's box evenly, in points; a line's letters share its band.
        let a = layout.glyphs[0];
        assert_eq!((a.x0, a.x1), (72.0, 79.2));
        let line_one: Vec<_> = layout.glyphs.iter().take(5).collect();
        assert!(line_one.iter().all(|g| g.y0 == 296.0 * 0.24 && g.y1 == 350.0 * 0.24));
        // The space between words is generated and fills the gap.
        let space = layout.glyphs[2];
        assert!(space.generated && space.x0 == 86.4 && space.x1 == 93.6, "{space:?}");
        assert!(layout.has_text() && layout.images.is_empty());
    }

    #[test]
    fn turning_moves_the_corners_clockwise() {
        // 3 × 2, one byte a pixel: rows [1 2 3], [4 5 6].
        let pixels = [1u8, 2, 3, 4, 5, 6];
        assert_eq!(turn(&pixels, 3, 2, 1, 90), (vec![4, 1, 5, 2, 6, 3], 2, 3));
        assert_eq!(turn(&pixels, 3, 2, 1, 180), (vec![6, 5, 4, 3, 2, 1], 3, 2));
        assert_eq!(turn(&pixels, 3, 2, 1, 270), (vec![3, 6, 2, 5, 1, 4], 2, 3));
        assert_eq!(turn(&pixels, 3, 2, 1, 0).0, pixels.to_vec());
        // Three bytes a pixel move together.
        let rgb = [1u8, 1, 1, 2, 2, 2];
        assert_eq!(turn(&rgb, 2, 1, 3, 90), (vec![1, 1, 1, 2, 2, 2], 1, 2));
    }

    #[test]
    fn languages_are_checked_by_shape_first() {
        let err = check_languages(Some(&["English".into()]), "/languages").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("/languages/0"));
        let err = check_languages(Some(&["eng".into(), "xyz".into()]), "/languages").unwrap_err();
        assert_eq!((err.code.as_ref(), err.field.as_deref()), ("unknown_language", Some("/languages/1")));
        assert!(err.message.contains("eng"), "{}", err.message);
        let err = check_languages(Some(&["eng".into(), "eng".into()]), "/languages").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("/languages/1"));
        assert_eq!(check_languages(Some(&[]), "/languages").unwrap_err().field.as_deref(), Some("/languages"));
        assert_eq!(check_languages(None, "/languages").unwrap(), "eng");
    }
}
