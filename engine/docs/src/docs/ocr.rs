//! `POST /v1/pdf/ocr`: a searchable PDF. Each scanned page is rendered, turned upright when
//! it was scanned sideways, read by Tesseract, and gets an invisible text layer laid over
//! it (Tesseract's glyph-less font, each word stretched over its box), the page's own
//! content left untouched, as OCRmyPDF does. Pages that already have text are skipped
//! unless `force`, which turns them into images first (their old text would otherwise
//! be found twice).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};

use lopdf::{Document, Object};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, NoProgress, Progress, blocking};
use crate::docs::rasterize::{image_page, jpeg};
use crate::error::EngineError;
use crate::ocr::{self, Image, TextLayer};
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::{PageSelection, ranges};
use crate::pdf::graft::Grafter;
use crate::pdf::pdfium::{self, PagePlan, RenderSource, RgbPage};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::pdf::{self, MAX_OUTPUT_BYTES};
use crate::price::Price;

/// The resolution pages are read at: Tesseract's models are trained on text of 10 pt and
/// up at 300 dpi; higher costs time without gaining accuracy.
pub const OCR_DPI: u32 = 300;

/// Pages read with a mean word confidence under this are listed in the report.
const LOW_CONFIDENCE: u32 = 60;

/// Most pages the report lists in one list.
const MAX_LISTED: usize = 100;

/// The lowest resolution a very large page is read at, rather than refused.
const MIN_OCR_DPI: u32 = 100;

/// The OCR price rule in words (`../shared/spec/routebook.md` §4).
pub const OCR_PRICE_RULE: &str = "$0.003 + $0.002 a page read (pages that already have text and are skipped cost nothing; paid with x402 \
     `upto`, pages where no word is found cost nothing either)";

/// OCR: $0.003 + $0.002 a page read.
pub fn ocr_price(pages: u32) -> Price {
    Price::tiered(Price::micros(3_000), 0, Price::micros(2_000), pages as u64)
}

/// Fields of `/v1/pdf/ocr` besides `file` (scanned pages, or pages drawn as pictures) and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OcrOptions {
    /// The languages of the text, as Tesseract codes (`eng`, `deu`, `fra`, `spa`…); `["eng"]` when omitted.
    /// Several may be given for mixed documents (each slows every page).
    #[serde(default)]
    #[schemars(length(min = 1, max = 5), inner(regex(pattern = r"^[a-z]{3}[a-z_]{0,13}$")))]
    pub languages: Option<Vec<String>>,
    /// Pages to read (`"1-3,5"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// Also read pages that already have text (an earlier OCR layer or a broken one): such a page is first turned
    /// into an image of itself (its text, links and form fields become part of the picture), then read, so its
    /// text is found once. Off by default: pages with text are skipped.
    #[serde(default)]
    pub force: Option<bool>,
    /// Turn pages scanned sideways or upside down upright (by their /Rotate, the image untouched) before reading.
    /// On by default.
    #[serde(default)]
    pub auto_rotate: Option<bool>,
}

/// A checked call.
pub struct OcrCall {
    bytes: Vec<u8>,
    password: Option<String>,
    doc: Document,
    filename: String,
    sorted: SortedPages,
    languages: String,
    dpi: u32,
    auto_rotate: bool,
    output: OutputMode,
}

/// The route.
pub struct OcrRoute;

impl Route for OcrRoute {
    const HEAVY: bool = true;
    type Input = PdfJob<OcrOptions>;
    type Prepared = OcrCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<OcrOptions>, ctx: &Context) -> Result<OcrCall, EngineError> {
        let PdfJob { file, options, output } = input;
        // Both engines are found before the file is read, so a server without them charges nothing.
        pdfium::ensure_library().await?;
        ocr::ensure_library().await?;
        let languages = ocr::check_languages(options.languages.as_deref(), "/languages")?;
        let selection = options.pages.as_deref().map(|p| PageSelection::parse(p, "/pages")).transpose()?;
        let force = options.force.unwrap_or(false);
        let RenderSource { pdf: source, bytes, password } = RenderSource::load(&file, "/file", ctx).await?;
        blocking(move || {
            let doc = source.doc;
            let selected: Vec<u32> = match selection {
                Some(selection) => selection.resolve_set(source.page_count, "/pages")?,
                None => (1..=source.page_count).collect(),
            };
            let sorted = sort_pages(&bytes, password.as_deref(), &selected, force)?;
            if sorted.read.is_empty() {
                return Err(EngineError::invalid_with(
                    "no_pages_to_read",
                    "/file",
                    format!(
                        "/file: every selected page already has text ({} page{}); give \"force\": true to read them \
                         anyway",
                        sorted.skipped.len(),
                        if sorted.skipped.len() == 1 { "" } else { "s" }
                    ),
                ));
            }
            let dpi = reading_dpi(&pdfium::plan_pages(&doc, &sorted.read))?;
            let auto_rotate = options.auto_rotate.unwrap_or(true);
            Ok(OcrCall { bytes, password, doc, filename: source.filename, sorted, languages, dpi, auto_rotate, output })
        })
        .await
    }

    const METERED: bool = true;

    fn quote(call: &OcrCall) -> Price {
        ocr_price(call.sorted.read.len() as u32)
    }

    /// The pages where words were found (`pages_with_words` in the report): a blank page
    /// read costs nothing to a payer charged by use.
    fn used(reply: &Reply<NoJson>) -> Option<Price> {
        let Reply::Files(files) = reply else { return None };
        let pages = files.report.as_ref()?.get("pages_with_words")?.as_u64()?;
        Some(ocr_price(u32::try_from(pages).ok()?))
    }

    async fn run(call: OcrCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let OcrCall { bytes, password, mut doc, filename, sorted, languages, dpi, auto_rotate, output } = call;
            let job = Reading { languages: &languages, dpi, auto_rotate };
            let done = read_pages(&bytes, password.as_deref(), &mut doc, &sorted, &job, &*progress)?;
            let bytes = pdf::save(&mut doc)?;
            let confidence =
                if done.is_empty() { 0 } else { done.iter().map(|p| p.confidence).sum::<u32>() / done.len() as u32 };
            // Short whatever the page count: it travels in a header. Page lists as selections,
            // and only the pages read with little confidence.
            let low: Vec<_> = done
                .iter()
                .filter(|p| p.confidence < LOW_CONFIDENCE)
                .take(MAX_LISTED)
                .map(|p| serde_json::json!({"page": p.number, "confidence": p.confidence, "words": p.words}))
                .collect();
            let turned: Vec<_> = done
                .iter()
                .filter(|p| p.turned != 0)
                .take(MAX_LISTED)
                .map(|p| serde_json::json!({"page": p.number, "degrees": p.turned}))
                .collect();
            let report = serde_json::json!({
                "languages": languages.split('+').collect::<Vec<_>>(),
                "dpi": dpi,
                "pages_read": ranges(&sorted.read),
                "pages_forced": ranges(&sorted.forced),
                "pages_skipped_with_text": ranges(&sorted.skipped),
                "pages_with_words": done.iter().filter(|p| p.words > 0).count(),
                "pages_blank": ranges(&done.iter().filter(|p| p.words == 0).map(|p| p.number).collect::<Vec<_>>()),
                "pages_turned": turned,
                "words": done.iter().map(|p| p.words).sum::<usize>(),
                "confidence": confidence,
                "low_confidence_pages": low,
            });
            let file = OutFile::pdf(derived_name(&filename, "ocr", "pdf"), bytes);
            Ok(Reply::Files(FileSet::single(file, output).with_report(report)))
        })
        .await
    }
}

/// The operation as a pipeline step: the pages that have no text are read (all of them
/// with `force`); a document whose pages all have text passes unchanged. Priced by the
/// pages the step receives (which of them need reading is known only when it runs).
pub struct Ocr;

/// A pipeline step's checked options.
pub struct OcrPlan {
    languages: String,
    pages: Vec<u32>,
    force: bool,
    auto_rotate: bool,
    dpi: u32,
}

impl Transform for Ocr {
    type Options = OcrOptions;
    type Plan = OcrPlan;

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "ocr";

    fn check(options: &OcrOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        // Found before anything runs, so a server without the engines charges nothing.
        pdfium::library()?;
        ocr::check_languages(options.languages.as_deref(), "/languages")?;
        if let Some(p) = &options.pages {
            PageSelection::parse(p, "/pages")?;
        }
        Ok(pages)
    }

    fn plan(options: OcrOptions, doc: &Document, _: &Limits) -> Result<OcrPlan, EngineError> {
        let languages = ocr::check_languages(options.languages.as_deref(), "/languages")?;
        let count = pdf::page_count(doc);
        let pages = match options.pages.as_deref() {
            Some(p) => PageSelection::parse(p, "/pages")?.resolve_set(count, "/pages")?,
            None => (1..=count).collect(),
        };
        let dpi = reading_dpi(&pdfium::plan_pages(doc, &pages))?;
        Ok(OcrPlan {
            languages,
            pages,
            force: options.force.unwrap_or(false),
            auto_rotate: options.auto_rotate.unwrap_or(true),
            dpi,
        })
    }

    fn apply(plan: OcrPlan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        let bytes = pdf::save(&mut doc)?;
        let sorted = sort_pages(&bytes, None, &plan.pages, plan.force)?;
        if sorted.read.is_empty() {
            return Ok(Pdf::Doc(doc));
        }
        let job = Reading { languages: &plan.languages, dpi: plan.dpi, auto_rotate: plan.auto_rotate };
        read_pages(&bytes, None, &mut doc, &sorted, &job, &NoProgress)?;
        Ok(Pdf::Doc(doc))
    }

    fn price(pages_in: u32, _: u32) -> Price {
        ocr_price(pages_in)
    }
}

/// The selected pages sorted by what happens to them.
pub struct SortedPages {
    /// The pages to read, ascending.
    read: Vec<u32>,
    /// Of those, the pages that have text and are turned into images first (`force`).
    forced: Vec<u32>,
    /// The selected pages skipped because they have text.
    skipped: Vec<u32>,
}

/// Sorts `selected` by whether each page has text (pdfium's reading of `bytes`).
fn sort_pages(bytes: &[u8], password: Option<&str>, selected: &[u32], force: bool) -> Result<SortedPages, EngineError> {
    let with_text = pdfium::pages_with_text(bytes, password, selected, "/file")?;
    let mut sorted = SortedPages { read: Vec::new(), forced: Vec::new(), skipped: Vec::new() };
    for (&page, has_text) in selected.iter().zip(with_text) {
        match (has_text, force) {
            (false, _) => sorted.read.push(page),
            (true, true) => {
                sorted.read.push(page);
                sorted.forced.push(page);
            }
            (true, false) => sorted.skipped.push(page),
        }
    }
    Ok(sorted)
}

/// How pages are read.
struct Reading<'a> {
    languages: &'a str,
    dpi: u32,
    auto_rotate: bool,
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/ocr",
    operation: "ocr_pdf",
    family: Family::Docs,
    summary: "Make a scanned PDF searchable (OCR)",
    description: "Reads the scanned pages of a PDF with Tesseract 5 and lays an invisible text layer over each \
            one, each word over its place on the page, so the PDF can be searched, selected and copied while it \
            looks exactly as before (the page image is not touched). Pages scanned sideways or upside down are \
            turned upright first (`auto_rotate`). Pages that already have text are skipped unless `force`. \
            `languages` takes Tesseract codes (`eng`, `deu`, `fra`, `spa`…). The report gives the pages read, \
            skipped and turned, the pages where no word was found, the words read, the mean word confidence (0 to 100) and the pages read with little \
            confidence. Priced by the pages read.",
    base_price: Price::micros(3_000),
    price_rule: OCR_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

/// The resolution the pages are read at: [`OCR_DPI`], lower when the largest page would
/// be over the pixel cap (down to [`MIN_OCR_DPI`]; larger pages are refused).
fn reading_dpi(plans: &[PagePlan]) -> Result<u32, EngineError> {
    let mut dpi = OCR_DPI;
    for plan in plans {
        while pdfium::check_page_pixels(plan, dpi, "/file").is_err() && dpi > MIN_OCR_DPI {
            dpi -= 25;
        }
        pdfium::check_page_pixels(plan, dpi, "/file").map_err(|_| {
            EngineError::too_large(
                "file_too_large",
                Some("/file".into()),
                format!(
                    "/file: page {} ({:.0} × {:.0} pt) is too large to read even at {MIN_OCR_DPI} dpi",
                    plan.number, plan.width_pt, plan.height_pt
                ),
            )
        })?;
    }
    Ok(dpi)
}

/// A rendered page waiting to be read.
struct Job {
    number: u32,
    grey: Vec<u8>,
    width: u32,
    height: u32,
}

/// What reading one page gave.
struct PageRead {
    number: u32,
    /// Clockwise degrees the page was turned to be upright.
    turned: u32,
    confidence: u32,
    words: usize,
    /// The reader that read it, and the page of that reader's layer it is.
    reader: usize,
    layer_page: u32,
}

/// What one reader (a thread with its own Tesseract handle and text layer) read.
struct Reader {
    pages: Vec<PageRead>,
    layer: Vec<u8>,
}

/// Reads the `sorted` pages of `doc` (whose bytes are `bytes`) and lays each one's text
/// layer over it; turns forced pages into pictures first and pages read upright by their
/// /Rotate. Answers what each page gave, in page order.
fn read_pages(
    bytes: &[u8],
    password: Option<&str>,
    doc: &mut Document,
    sorted: &SortedPages,
    job: &Reading,
    progress: &dyn Progress,
) -> Result<Vec<PageRead>, EngineError> {
    let (read, forced) = (&sorted.read, &sorted.forced);
    let (languages, dpi, auto_rotate) = (job.languages, job.dpi, job.auto_rotate);
    let readers = ocr::parallel_pages(read.len());
    let total = read.len() as u64;
    let done_count = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let (sender, receiver) = mpsc::sync_channel::<Job>(readers);
    let receiver = Mutex::new(receiver);
    let mut pictures: Vec<(u32, RgbPage, Vec<u8>)> = Vec::new();
    // Pages are rendered here, one at a time (pdfium takes one thread), and read by
    // `readers` threads side by side, each into its own text layer.
    let (rendered, results) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..readers)
            .map(|reader| {
                let (receiver, failed, done_count, languages) = (&receiver, &failed, &done_count, languages);
                // Each reader works for the call: Tesseract stops mid-page once it is stopped.
                let call = crate::cancel::carry();
                scope.spawn(move || -> Result<Reader, EngineError> {
                    call.enter(|| {
                        let next = || receiver.lock().unwrap_or_else(|e| e.into_inner()).recv().ok();
                        let work = || -> Result<Reader, EngineError> {
                            let mut lent = ocr::lend(languages)?;
                            let mut layer = TextLayer::new(ocr::library()?).map_err(EngineError::internal)?;
                            let mut pages = Vec::new();
                            while let Some(job) = next() {
                                let what = format!("page {}", job.number);
                                let image =
                                    Image { pixels: &job.grey, width: job.width, height: job.height, channels: 1, dpi };
                                let (reading, turned) = ocr::read_upright(&mut lent, &image, auto_rotate, &what)?;
                                lent.api().add_to(&mut layer).map_err(|f| ocr::failure(f, &what))?;
                                pages.push(PageRead {
                                    number: job.number,
                                    turned,
                                    confidence: reading.confidence,
                                    words: reading.words.len(),
                                    reader,
                                    layer_page: pages.len() as u32 + 1,
                                });
                                let done = done_count.fetch_add(1, Ordering::Relaxed) + 1;
                                progress.advance("pages", done, total);
                                if failed.load(Ordering::Relaxed) {
                                    break;
                                }
                                crate::cancel::check()?;
                            }
                            Ok(Reader { pages, layer: layer.finish().map_err(EngineError::internal)? })
                        };
                        let outcome = work();
                        if outcome.is_err() {
                            failed.store(true, Ordering::Relaxed);
                            // Keeps taking pages so the renderer never waits on a full queue.
                            while next().is_some() {}
                        }
                        outcome
                    })
                })
            })
            .collect();
        let rendered = pdfium::render_pages(bytes, password, read, dpi, "/file", "/file", |page| {
            if failed.load(Ordering::Relaxed) {
                return Err(EngineError::internal("a page could not be read"));
            }
            crate::cancel::check()?;
            let grey = ocr::grey_of_rgb(&page.rgb);
            let job = Job { number: page.number, grey, width: page.width, height: page.height };
            if forced.contains(&page.number) {
                let jpeg = jpeg(&page)?;
                let stored = pictures.iter().map(|p| p.2.len()).sum::<usize>() + jpeg.len();
                if stored > MAX_OUTPUT_BYTES {
                    return Err(pdf::output_too_large().at("/force"));
                }
                pictures.push((page.number, page, jpeg));
            }
            sender.send(job).map_err(|_| EngineError::internal("the page readers stopped"))
        });
        drop(sender);
        let results: Vec<Result<Reader, EngineError>> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err(EngineError::internal("a page reader crashed"))))
            .collect();
        (rendered, results)
    });
    // A reader's own error says more than the renderer's note that one stopped.
    let mut readers_done = Vec::with_capacity(results.len());
    for result in results {
        readers_done.push(result?);
    }
    rendered?;

    let layers = readers_done
        .iter()
        .map(|r| Document::load_mem(&r.layer).map_err(|e| EngineError::internal(format!("reading a text layer: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut grafters: Vec<Grafter> = layers.iter().map(Grafter::new).collect();
    let mut done: Vec<PageRead> = readers_done.into_iter().flat_map(|r| r.pages).collect();
    done.sort_by_key(|p| p.number);
    let ids: Vec<lopdf::ObjectId> = doc.page_iter().collect();
    for page in &done {
        let id = ids[page.number as usize - 1];
        if let Some(at) = pictures.iter().position(|p| p.0 == page.number) {
            let (_, rgb, jpeg) = pictures.swap_remove(at);
            as_picture(doc, id, &rgb, jpeg)?;
        }
        if page.turned != 0 {
            let turned = (pdf::rotation(doc, id) + page.turned as i64).rem_euclid(360);
            doc.get_dictionary_mut(id)
                .map_err(|e| pdf::edit_error("turning a page", e))?
                .set("Rotate", Object::Integer(turned));
        }
        grafters[page.reader].graft(page.layer_page, doc, id, "PcOCR")?;
    }
    Ok(done)
}

/// Makes page `id` show only `jpeg` (its rendering, as seen): its content, annotations and
/// boxes replaced, its rotation already in the picture.
fn as_picture(doc: &mut Document, id: lopdf::ObjectId, page: &RgbPage, jpeg: Vec<u8>) -> Result<(), EngineError> {
    let drawn = image_page(doc, page, jpeg);
    let dict = doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("turning a page into an image", e))?;
    for key in [b"CropBox".as_slice(), b"TrimBox", b"BleedBox", b"ArtBox", b"Annots", b"Group", b"Thumb"] {
        dict.remove(key);
    }
    dict.set("MediaBox", drawn.media_box.to_object());
    dict.set("Rotate", Object::Integer(0));
    dict.set("Resources", drawn.resources);
    dict.set("Contents", Object::Reference(drawn.contents));
    Ok(())
}
