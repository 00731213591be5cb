//! `POST /v1/pdf/compress`: make a PDF smaller, losslessly or by downsampling images.
//!
//! The work is [`compress_document`], free of HTTP and output concerns so a pipeline can
//! call it on a document it already holds; the route around it keeps the input's bytes
//! to answer them unchanged when compressing gains nothing.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, blocking};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf;
use crate::pdf::flate::{inflate, zlib_best};
use crate::pdf::pdfium::{RENDERING_PRICE_RULE, rendering_price};
use crate::pdf::qpdf::{self, WriteOptions};
use crate::pdf::recompress_images::{ImageSettings, recompress_images};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::price::Price;

/// Fields of `/v1/pdf/compress` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompressOptions {
    /// How hard to compress: `lossless` (nothing visible changes), `recommended` (images shown above 150 dpi downsampled, photos as JPEG quality 75, other applications' private data dropped) or `extreme` (96 dpi, JPEG quality 50); `recommended` when omitted.
    #[serde(default)]
    pub mode: Mode,
}

/// How hard to compress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Repack the file only: pages, text and images are unchanged.
    Lossless,
    /// Also downsample images shown above 150 dpi to 150 dpi and store photos as JPEG, quality 75,
    /// and drop the private data other applications keep to edit the file again
    /// (`/PieceInfo`), which no viewer draws.
    #[default]
    Recommended,
    /// As recommended, at 96 dpi and JPEG quality 50.
    Extreme,
}

impl Mode {
    /// The name used in requests and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Lossless => "lossless",
            Mode::Recommended => "recommended",
            Mode::Extreme => "extreme",
        }
    }

    fn image_settings(self) -> Option<ImageSettings> {
        match self {
            Mode::Lossless => None,
            Mode::Recommended => Some(ImageSettings { target_dpi: 150.0, jpeg_quality: 75 }),
            Mode::Extreme => Some(ImageSettings { target_dpi: 96.0, jpeg_quality: 50 }),
        }
    }
}

/// What [`compress_document`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompressStats {
    /// Images written at a smaller pixel size.
    pub images_downsampled: usize,
    /// Images written at their pixel size in a smaller encoding (photos as JPEG).
    pub images_reencoded: usize,
    /// Stream objects dropped because another one had the same dictionary and data.
    pub duplicate_streams_merged: usize,
    /// Streams compressed, or Flate streams compressed again, to fewer bytes.
    pub streams_recompressed: usize,
    /// Why images were left alone, when the document was too large to analyse.
    pub images_skipped_because: Option<&'static str>,
    /// Page-piece dictionaries (`/PieceInfo`: other applications' private data) dropped.
    pub private_data_dropped: usize,
}

/// Compresses an opened (and decrypted) document. The result is a complete new file,
/// unencrypted, with object and cross-reference streams; it may be larger than the
/// file the document came from, which the caller compares.
pub fn compress_document(
    mut doc: Document,
    mode: Mode,
    limits: &Limits,
) -> Result<(Vec<u8>, CompressStats), EngineError> {
    // qpdf rewrites the result and inflates what it must on the way: a document whose streams
    // decode past the limits is refused first.
    pdf::decoded::check_document(&doc, limits, pdf::decoded::For::Rewriting)?;
    let page_count = doc.page_iter().count();
    let mut stats = CompressStats::default();
    let mut final_streams = HashSet::new();
    if let Some(settings) = mode.image_settings() {
        stats.private_data_dropped = drop_private_data(&mut doc);
        let outcome = recompress_images(&mut doc, settings, limits);
        stats.images_downsampled = outcome.downsampled;
        stats.images_reencoded = outcome.reencoded;
        stats.images_skipped_because = outcome.gave_up;
        final_streams = outcome.replaced;
    }
    // Between the passes over every stream, a stopped call goes no further.
    crate::cancel::check()?;
    stats.streams_recompressed = recompress_streams(&mut doc, &final_streams, limits.max_stream_bytes);
    crate::cancel::check()?;
    stats.duplicate_streams_merged = pdf::dedupe::share_identical(&mut doc).streams;
    crate::cancel::check()?;
    let saved = pdf::save(&mut doc)?;
    drop(doc);
    // qpdf writes the object streams and drops every object nothing refers to; stream
    // data is copied as it is, so the recompression above is kept.
    let reread = ::qpdf::QPdf::read_from_memory(&saved)
        .map_err(|e| EngineError::invalid_with("damaged_pdf", "", format!("the PDF could not be rewritten: {e}")))?;
    let pages = reread.get_num_pages().map_err(|e| {
        EngineError::invalid_with("damaged_pdf", "", format!("the PDF's pages could not be rewritten: {e}"))
    })?;
    if pages as usize != page_count {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "",
            format!("the PDF's page tree is damaged: {page_count} pages read, {pages} after rewriting"),
        ));
    }
    let options = WriteOptions { object_streams: ::qpdf::ObjectStreamMode::Generate, ..WriteOptions::default() };
    let bytes = qpdf::write(&reread, options)?;
    Ok((bytes, stats))
}

/// Drops every `/PieceInfo` (PDF 32000 §14.5: the data an application keeps on a page, a
/// form or the document to edit it again as its own objects; viewers never draw it), as
/// Acrobat's optimizer does with "discard private data of other applications". Such data
/// can outweigh the rest of the file: a PDF annotator's ink kept as a megabyte of base64.
/// What it referred to and nothing else uses is dropped when the file is rewritten.
/// Returns how many dictionaries lost theirs.
fn drop_private_data(doc: &mut Document) -> usize {
    let mut dropped = 0;
    for object in doc.objects.values_mut() {
        let dict = match object {
            Object::Dictionary(dict) => dict,
            Object::Stream(stream) => &mut stream.dict,
            _ => continue,
        };
        if dict.remove(b"PieceInfo").is_some() {
            dropped += 1;
        }
    }
    dropped
}

/// Makes every stream it can smaller without changing what it decodes to, keeping new
/// data only when smaller. Returns how many changed.
fn recompress_streams(doc: &mut Document, skip: &HashSet<ObjectId>, cap: usize) -> usize {
    let mut count = 0;
    let mut budget = MAX_DECODED_BYTES;
    for (id, object) in doc.objects.iter_mut() {
        if crate::cancel::is_stopped() {
            // The call was stopped: its caller checks and answers so.
            break;
        }
        let Object::Stream(stream) = object else { continue };
        if !skip.contains(id) && shrink_stream(stream, cap.min(budget), &mut budget) {
            count += 1;
        }
    }
    count
}

/// Most bytes the lossless pass decodes in all (a file of small compression bombs would
/// otherwise keep it busy); streams past it are kept as they are.
const MAX_DECODED_BYTES: usize = 2 * 1024 * 1024 * 1024;

/// One stream: ASCIIHex and ASCII85 layers are dropped, an unfiltered stream is
/// compressed, and a leading Flate layer is redone at the best level (or dropped, above
/// another filter, when that is smaller). Only the zlib layer is redone: the data under
/// it, predictor bytes included, is kept, so /DecodeParms stays true.
fn shrink_stream(stream: &mut lopdf::Stream, cap: usize, budget: &mut usize) -> bool {
    let kind = stream.dict.get(b"Type").and_then(Object::as_name).ok();
    if stream.dict.has(b"F") || matches!(kind, Some(b"XRef" | b"ObjStm")) {
        return false;
    }
    let Some(mut chain) = filter_chain(&stream.dict) else { return false };
    let mut data = std::borrow::Cow::Borrowed(stream.content.as_slice());
    let mut peeled = false;
    while let Some(first) =
        chain.filters.first().filter(|f| matches!(f.as_slice(), b"ASCIIHexDecode" | b"ASCII85Decode"))
    {
        let layer = lopdf::Stream::new(dictionary_with_filter(first), data.to_vec());
        let Ok(decoded) = layer.decompressed_content_with_limit(cap) else { return false };
        *budget = budget.saturating_sub(decoded.len());
        data = std::borrow::Cow::Owned(decoded);
        chain.filters.remove(0);
        chain.parms.remove(0);
        peeled = true;
    }
    let mut best: Option<(Vec<u8>, Chain)> = peeled.then(|| (data.to_vec(), chain.clone()));
    let mut consider = |content: Vec<u8>, chain: Chain| {
        if best.as_ref().is_none_or(|(b, _)| content.len() < b.len()) {
            best = Some((content, chain));
        }
    };
    match chain.filters.first().map(Vec::as_slice) {
        // XMP metadata stays readable to tools that do not parse PDF (as qpdf does).
        None if kind != Some(b"Metadata") || peeled => {
            consider(zlib_best(&data), Chain { filters: vec![b"FlateDecode".to_vec()], parms: vec![Object::Null] });
        }
        // zlib's header says when the data was packed at the highest levels already.
        Some(b"FlateDecode") if data.get(1).is_some_and(|flags| flags >> 6 == 3) && !peeled => {}
        Some(b"FlateDecode") => {
            let Some(plain) = inflate(&data, cap) else { return false };
            *budget = budget.saturating_sub(plain.len());
            consider(zlib_best(&plain), chain.clone());
            let plain_parms = matches!(chain.parms.first(), Some(Object::Null))
                || matches!(chain.parms.first(), Some(Object::Dictionary(d)) if d.is_empty());
            if chain.filters.len() > 1 && plain_parms {
                let rest = Chain { filters: chain.filters[1..].to_vec(), parms: chain.parms[1..].to_vec() };
                consider(plain, rest);
            }
        }
        _ => {}
    }
    let Some((content, chain)) = best else { return false };
    if content.len() >= stream.content.len() {
        return false;
    }
    chain.write_to(&mut stream.dict);
    stream.set_content(content);
    true
}

/// A stream's filters, with one decode-parameter entry (or null) for each.
#[derive(Clone)]
struct Chain {
    filters: Vec<Vec<u8>>,
    parms: Vec<Object>,
}

impl Chain {
    fn write_to(self, dict: &mut Dictionary) {
        let Chain { filters, parms } = self;
        match filters.len() {
            0 => {
                dict.remove(b"Filter");
            }
            1 => dict.set("Filter", Object::Name(filters.into_iter().next().unwrap_or_default())),
            _ => dict.set("Filter", Object::Array(filters.into_iter().map(Object::Name).collect())),
        }
        if parms.iter().all(|p| matches!(p, Object::Null)) {
            dict.remove(b"DecodeParms");
        } else if parms.len() == 1 {
            dict.set("DecodeParms", parms.into_iter().next().unwrap_or(Object::Null));
        } else {
            dict.set("DecodeParms", Object::Array(parms));
        }
    }
}

/// The filter chain of a stream; None when it is not in a form that can be rewritten
/// exactly (indirect names or parameters, counts that do not match).
fn filter_chain(dict: &Dictionary) -> Option<Chain> {
    let filters: Vec<Vec<u8>> = match dict.get(b"Filter") {
        Err(_) => Vec::new(),
        Ok(Object::Name(name)) => vec![name.clone()],
        Ok(Object::Array(items)) => {
            items.iter().map(|i| i.as_name().ok().map(<[u8]>::to_vec)).collect::<Option<_>>()?
        }
        Ok(_) => return None,
    };
    let parms = match dict.get(b"DecodeParms") {
        Err(_) | Ok(Object::Null) => vec![Object::Null; filters.len()],
        Ok(Object::Dictionary(d)) if filters.len() == 1 => vec![Object::Dictionary(d.clone())],
        Ok(Object::Array(items)) if items.len() == filters.len() => items.clone(),
        Ok(_) => return None,
    };
    let direct = parms.iter().all(|p| matches!(p, Object::Null | Object::Dictionary(_)));
    direct.then_some(Chain { filters, parms })
}

fn dictionary_with_filter(filter: &[u8]) -> Dictionary {
    let mut dict = Dictionary::new();
    dict.set("Filter", Object::Name(filter.to_vec()));
    dict
}

/// A checked compress call.
pub struct CompressCall {
    doc: Document,
    original: Vec<u8>,
    filename: String,
    page_count: u32,
    mode: Mode,
    output: OutputMode,
    limits: Limits,
}

/// The route.
pub struct CompressRoute;

impl Route for CompressRoute {
    const HEAVY: bool = true;
    type Input = PdfJob<CompressOptions>;
    type Prepared = CompressCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<CompressOptions>, ctx: &Context) -> Result<CompressCall, EngineError> {
        let file = input.file.resolve(ctx, "/file", "document.pdf").await?;
        let limits = ctx.limits;
        blocking(move || {
            let doc = pdf::open(&file.bytes, file.password.as_deref(), &limits).map_err(|e| e.under("/file"))?;
            let page_count = doc.page_iter().count() as u32;
            Ok(CompressCall {
                doc,
                original: file.bytes,
                filename: file.filename,
                page_count,
                mode: input.options.mode,
                output: input.output,
                limits,
            })
        })
        .await
    }

    fn quote(call: &CompressCall) -> Price {
        rendering_price(call.page_count)
    }

    async fn run(call: CompressCall, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let CompressCall { doc, original, filename, page_count: _, mode, output, limits } = call;
            let (compressed, stats) = compress_document(doc, mode, &limits).map_err(|e| match e.kind {
                crate::error::ErrorKind::InvalidInput => e.under("/file"),
                _ => e,
            })?;
            let original_bytes = original.len();
            let unchanged = compressed.len() >= original_bytes;
            let (bytes, stats) = if unchanged { (original, CompressStats::default()) } else { (compressed, stats) };
            let report = report(mode, unchanged, &stats, bytes.len(), original_bytes);
            let name = derived_name(&filename, "compressed", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(report)))
        })
        .await
    }
}

/// The operation, as a pipeline step: the document so far compressed (there is no
/// input file to fall back to, so a step that gains nothing still writes the packed file).
pub struct Compress;

impl Transform for Compress {
    type Options = CompressOptions;
    type Plan = Mode;

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "compressed";

    fn plan(options: CompressOptions, _: &Document, _: &Limits) -> Result<Mode, EngineError> {
        Ok(options.mode)
    }

    fn apply(mode: Mode, doc: Document, limits: &Limits) -> Result<Pdf, EngineError> {
        Ok(Pdf::Bytes(compress_document(doc, mode, limits)?.0))
    }

    fn price(pages_in: u32, _: u32) -> Price {
        rendering_price(pages_in)
    }
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/compress",
    operation: "compress_pdf",
    family: Family::Docs,
    summary: "Make a PDF smaller",
    description: "Makes a PDF smaller. mode=lossless repacks it: objects into compressed object streams, every Flate \
        stream recompressed at the best level, uncompressed streams compressed, unused objects dropped, identical \
        streams stored once; pages, text and images are unchanged. mode=recommended (the default) also downsamples \
        images shown above 150 dpi to 150 dpi and stores photos as JPEG quality 75; mode=extreme does so at 96 dpi \
        and quality 50. Line art and masks stay lossless. The result is never larger than the input: when nothing \
        is gained the input comes back byte for byte (still encrypted if it was). A compressed encrypted file comes \
        back decrypted, and digital signatures no longer verify. A report gives the sizes before and after and \
        what was done (Paperchain-Report header for output=file, `report` field for base64 and url).",
    base_price: Price::micros(3_000),
    price_rule: RENDERING_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

fn report(mode: Mode, unchanged: bool, stats: &CompressStats, compressed: usize, original: usize) -> serde_json::Value {
    let saved = original.saturating_sub(compressed);
    let percent = if original == 0 { 0.0 } else { (saved as f64 * 1000.0 / original as f64).round() / 10.0 };
    let mut report = serde_json::json!({
        "mode": mode.as_str(),
        "original_bytes": original,
        "compressed_bytes": compressed,
        "saved_bytes": saved,
        "saved_percent": percent,
        "unchanged": unchanged,
        "images_downsampled": stats.images_downsampled,
        "images_reencoded": stats.images_reencoded,
        "duplicate_streams_merged": stats.duplicate_streams_merged,
        "private_data_dropped": stats.private_data_dropped,
    });
    if unchanged {
        report["note"] = "compressing did not make the file smaller: it is returned unchanged".into();
    } else if let Some(reason) = stats.images_skipped_because {
        report["note"] = format!("images were left as they are: {reason}").into();
    }
    report
}

#[cfg(test)]
mod tests {
    use lopdf::{Stream, dictionary};
    use serde_json::{Value, json};

    use super::*;
    use crate::pdf::qpdf::testing::{assert_qpdf_check, corpus, file_json, qpdf_pages, sample_pdf};
    use crate::pdf::testing::call;

    /// A compress answer: the file's bytes and the report.
    struct Answer {
        bytes: Vec<u8>,
        report: Value,
        filename: String,
    }

    async fn compress(pdf: &[u8], mode: Option<&str>, password: Option<&str>) -> Result<Answer, EngineError> {
        let mut body = json!({ "file": file_json(pdf, "scan.pdf", password) });
        if let Some(mode) = mode {
            body["mode"] = json!(mode);
        }
        match call::<CompressRoute>(&body).await? {
            Reply::Files(set) => {
                let report = set.report.clone().expect("compress reports");
                let file = set.into_single_file()?;
                Ok(Answer { bytes: file.bytes, report, filename: file.filename })
            }
            Reply::Json(_) => panic!("compress answered JSON"),
        }
    }

    /// Checks what every answer must be: valid, as many pages, never larger, a true report.
    fn check(answer: &Answer, input: &[u8], pages: u32) {
        assert!(answer.bytes.len() <= input.len(), "{} > {}", answer.bytes.len(), input.len());
        assert_eq!(answer.report["original_bytes"], json!(input.len()));
        assert_eq!(answer.report["compressed_bytes"], json!(answer.bytes.len()));
        assert_eq!(answer.report["saved_bytes"], json!(input.len() - answer.bytes.len()));
        if answer.report["unchanged"] == json!(true) {
            assert_eq!(answer.bytes, input);
        } else {
            assert_qpdf_check(&answer.bytes, None);
            assert_eq!(qpdf_pages(&answer.bytes, None), pages);
        }
    }

    /// Builds a PDF page by page.
    struct Builder {
        doc: Document,
        pages_id: ObjectId,
        kids: Vec<Object>,
    }

    impl Builder {
        fn new() -> Self {
            let mut doc = Document::with_version("1.4");
            let pages_id = doc.new_object_id();
            Builder { doc, pages_id, kids: Vec::new() }
        }

        fn add(&mut self, object: impl Into<Object>) -> ObjectId {
            self.doc.add_object(object)
        }

        /// A Letter page with uncompressed `content` and these resources.
        fn page(&mut self, content: &str, resources: Dictionary) {
            let content = self.add(Stream::new(dictionary! {}, content.as_bytes().to_vec()));
            let page = self.add(dictionary! {
                "Type" => "Page",
                "Parent" => self.pages_id,
                "Contents" => content,
                "Resources" => resources,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            });
            self.kids.push(page.into());
        }

        fn finish(mut self) -> Vec<u8> {
            let count = self.kids.len() as i64;
            self.doc.objects.insert(
                self.pages_id,
                Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => self.kids, "Count" => count }),
            );
            let catalog = self.doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => self.pages_id });
            self.doc.trailer.set("Root", catalog);
            let mut out = Vec::new();
            self.doc.save_to(&mut out).unwrap();
            out
        }
    }

    /// Pages of plain, uncompressed text.
    fn text_pdf(pages: u32) -> Vec<u8> {
        let mut b = Builder::new();
        let font = b.add(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        for n in 1..=pages {
            let line = format!("BT /F1 11 Tf 72 700 Td (Page {n}: words that repeat, as text does.) Tj ET\n");
            b.page(&line.repeat(40), dictionary! { "Font" => dictionary! { "F1" => font } });
        }
        b.finish()
    }

    fn zlib_fast(data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    /// An 8-bit image stream, Flate-compressed quickly (so a better level gains).
    fn image(width: u32, height: u32, space: &str, pixels: &[u8]) -> Stream {
        Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => width as i64, "Height" => height as i64,
                "ColorSpace" => space, "BitsPerComponent" => 8, "Filter" => "FlateDecode",
            },
            zlib_fast(pixels),
        )
    }

    /// A smooth gradient with noise: a photo to the eye and to the encoder.
    fn photo(width: u32, height: u32) -> Vec<u8> {
        let mut seed = 0x2545_f491_u32;
        let mut out = Vec::with_capacity((width * height * 3) as usize);
        for y in 0..height {
            for x in 0..width {
                for channel in 0..3u32 {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    let base = (x * 200 / width + y * 55 / height + channel * 30) as i32;
                    out.push((base + (seed % 17) as i32 - 8).clamp(0, 255) as u8);
                }
            }
        }
        out
    }

    /// Wide bands of four colours: line art.
    fn stripes(width: u32, height: u32) -> Vec<u8> {
        let colours = [[255, 255, 255], [0, 0, 0], [200, 30, 30], [30, 30, 200]];
        (0..width * height).flat_map(|i| colours[((i % width) / 50 % 4) as usize]).collect()
    }

    fn resources(xobjects: Dictionary) -> Dictionary {
        dictionary! { "XObject" => xobjects }
    }

    fn images(doc: &Document) -> Vec<(ObjectId, &Stream)> {
        doc.objects
            .iter()
            .filter_map(|(id, o)| o.as_stream().ok().map(|s| (*id, s)))
            .filter(|(_, s)| s.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image"))
            .collect()
    }

    fn int(stream: &Stream, key: &[u8]) -> i64 {
        stream.dict.get(key).unwrap().as_i64().unwrap()
    }

    fn filter(stream: &Stream) -> &[u8] {
        stream.dict.get(b"Filter").unwrap().as_name().unwrap()
    }

    #[tokio::test]
    async fn lossless_repacks_merges_duplicates_and_keeps_pixels() {
        let mut b = Builder::new();
        let art = stripes(64, 64);
        let first = b.add(image(64, 64, "DeviceRGB", &art));
        let second = b.add(image(64, 64, "DeviceRGB", &art));
        // PNG-predicted rows: only the zlib layer may change.
        let mut predicted = Vec::new();
        for row in art.chunks(64 * 3) {
            predicted.push(0);
            predicted.extend_from_slice(row);
        }
        let mut with_predictor = image(64, 64, "DeviceRGB", &[]);
        with_predictor.dict.set("DecodeParms", dictionary! { "Predictor" => 15, "Colors" => 3, "Columns" => 64 });
        with_predictor.set_content(zlib_fast(&predicted));
        let third = b.add(with_predictor);
        let font_data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let mut fonts = Dictionary::new();
        for name in ["F1", "F2"] {
            let file = b.add(Stream::new(dictionary! { "Length1" => font_data.len() as i64 }, font_data.clone()));
            let descriptor =
                b.add(dictionary! { "Type" => "FontDescriptor", "FontName" => "Demo", "FontFile2" => file });
            let font = b.add(dictionary! {
                "Type" => "Font", "Subtype" => "TrueType", "BaseFont" => "Demo", "FontDescriptor" => descriptor,
            });
            fonts.set(name, font);
        }
        let text = "BT /F1 12 Tf 72 700 Td (The same line of text, again and again.) Tj ET\n".repeat(200);
        let draws = "q 64 0 0 64 72 72 cm /A Do Q q 64 0 0 64 172 72 cm /B Do Q q 64 0 0 64 272 72 cm /C Do Q\n";
        for n in 1..=2 {
            let mut res = resources(dictionary! { "A" => first, "B" => second, "C" => third });
            res.set("Font", fonts.clone());
            b.page(&format!("% page {n}\n{text}{draws}"), res);
        }
        let input = b.finish();
        let answer = compress(&input, Some("lossless"), None).await.unwrap();
        check(&answer, &input, 2);
        assert_eq!(answer.filename, "scan-compressed.pdf");
        let report = &answer.report;
        assert_eq!((report["mode"].as_str(), report["unchanged"].as_bool()), (Some("lossless"), Some(false)));
        assert_eq!(report["duplicate_streams_merged"], json!(2), "{report}");
        assert_eq!((report["images_downsampled"].clone(), report["images_reencoded"].clone()), (json!(0), json!(0)));
        let saved = report["saved_percent"].as_f64().unwrap();
        assert!(saved > 50.0 && (saved * 10.0).fract() == 0.0, "{saved}");
        // Objects live in object streams now.
        assert!(answer.bytes.windows(7).any(|w| w == b"/ObjStm"));

        let doc = Document::load_mem(&answer.bytes).unwrap();
        let kept = images(&doc);
        assert_eq!(kept.len(), 2, "the two identical images are one now");
        for (_, stream) in &kept {
            assert_eq!((int(stream, b"Width"), int(stream, b"Height"), filter(stream)), (64, 64, &b"FlateDecode"[..]));
            assert_eq!(stream.decompressed_content().unwrap(), art, "pixels are byte-identical");
        }
        let font_files: Vec<&Stream> =
            doc.objects.values().filter_map(|o| o.as_stream().ok()).filter(|s| s.dict.has(b"Length1")).collect();
        assert_eq!(font_files.len(), 1);
        assert_eq!(font_files[0].decompressed_content().unwrap(), font_data);
        let pages: Vec<ObjectId> = doc.page_iter().collect();
        let content_id = doc.get_page_contents(pages[1])[0];
        let content = doc.get_object(content_id).unwrap().as_stream().unwrap().decompressed_content().unwrap();
        assert!(content == format!("% page 2\n{text}{draws}").as_bytes(), "the page's content is unchanged");
        let page = doc.get_dictionary(pages[0]).unwrap();
        let xobjects = pdf::dict_at(&doc, pdf::dict_at(&doc, page, b"Resources").unwrap(), b"XObject").unwrap();
        assert_eq!(xobjects.get(b"A").unwrap(), xobjects.get(b"B").unwrap());
    }

    #[tokio::test]
    async fn recommended_downsamples_a_600_dpi_photo_to_150_and_extreme_to_96() {
        let mut b = Builder::new();
        let im = b.add(image(2400, 2400, "DeviceRGB", &photo(2400, 2400)));
        // Four inches square: 600 dpi.
        b.page("q 288 0 0 288 100 100 cm /Im0 Do Q", resources(dictionary! { "Im0" => im }));
        let input = b.finish();

        let recommended = compress(&input, None, None).await.unwrap();
        check(&recommended, &input, 1);
        assert_eq!(recommended.report["mode"], json!("recommended"), "the default mode");
        assert_eq!(recommended.report["images_downsampled"], json!(1));
        let doc = Document::load_mem(&recommended.bytes).unwrap();
        let out = images(&doc);
        assert_eq!(out.len(), 1);
        let (_, stream) = out[0];
        assert_eq!((int(stream, b"Width"), int(stream, b"Height"), filter(stream)), (600, 600, &b"DCTDecode"[..]));
        assert_eq!(stream.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
        let decoded = image::load_from_memory_with_format(&stream.content, image::ImageFormat::Jpeg).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (600, 600));

        let extreme = compress(&input, Some("extreme"), None).await.unwrap();
        check(&extreme, &input, 1);
        let doc = Document::load_mem(&extreme.bytes).unwrap();
        let (_, stream) = images(&doc)[0];
        assert_eq!((int(stream, b"Width"), int(stream, b"Height"), filter(stream)), (384, 384, &b"DCTDecode"[..]));
        assert!(extreme.bytes.len() < recommended.bytes.len());

        // Lossless leaves the photo's pixels alone.
        let lossless = compress(&input, Some("lossless"), None).await.unwrap();
        check(&lossless, &input, 1);
        if lossless.report["unchanged"] == json!(false) {
            let doc = Document::load_mem(&lossless.bytes).unwrap();
            let (_, stream) = images(&doc)[0];
            assert_eq!((int(stream, b"Width"), filter(stream)), (2400, &b"FlateDecode"[..]));
        }
    }

    #[tokio::test]
    async fn the_largest_drawing_decides_and_masks_stay_lossless() {
        let mut b = Builder::new();
        let gray: Vec<u8> = (0..1200u32 * 1200).map(|i| ((i % 1200) * 255 / 1199) as u8).collect();
        let mask = b.add(image(1200, 1200, "DeviceGray", &gray));
        let mut picture = image(1200, 1200, "DeviceRGB", &photo(1200, 1200));
        picture.dict.set("SMask", mask);
        let im = b.add(picture);
        // Page 1: one inch (1200 dpi). Page 2: a form scaling by 2 draws it 144 pt wide,
        // so four inches (300 dpi): 600 pixels at 150 dpi.
        b.page("q 72 0 0 72 10 10 cm /Im0 Do Q", resources(dictionary! { "Im0" => im }));
        let form = b.add(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 200.into(), 200.into()],
                "Matrix" => vec![2.into(), 0.into(), 0.into(), 2.into(), 0.into(), 0.into()],
                "Resources" => resources(dictionary! { "Im0" => im }),
            },
            b"q 144 0 0 144 0 0 cm /Im0 Do Q".to_vec(),
        ));
        b.page("q 0.5 0 0 0.5 0 0 cm /Fm0 Do Q", resources(dictionary! { "Fm0" => form }));
        let input = b.finish();
        let answer = compress(&input, Some("recommended"), None).await.unwrap();
        check(&answer, &input, 2);
        assert_eq!(answer.report["images_downsampled"], json!(2), "{}", answer.report);
        let doc = Document::load_mem(&answer.bytes).unwrap();
        let out = images(&doc);
        assert_eq!(out.len(), 2);
        let (_, colour) = out.iter().find(|(_, s)| s.dict.has(b"SMask")).unwrap();
        // The form draws at 0.5 × 2 × 144 = 144 pt: two inches, 300 pixels.
        assert_eq!((int(colour, b"Width"), int(colour, b"Height"), filter(colour)), (300, 300, &b"DCTDecode"[..]));
        let mask_id = colour.dict.get(b"SMask").unwrap().as_reference().unwrap();
        let mask = doc.get_object(mask_id).unwrap().as_stream().unwrap();
        assert_eq!((int(mask, b"Width"), int(mask, b"Height"), filter(mask)), (300, 300, &b"FlateDecode"[..]));
        assert_eq!(mask.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
    }

    #[tokio::test]
    async fn line_art_is_downsampled_losslessly_and_cycles_end() {
        let mut b = Builder::new();
        let art = b.add(image(2000, 2000, "DeviceRGB", &stripes(2000, 2000)));
        // A form that draws itself: readers stop, and so does the walk.
        let form = b.doc.new_object_id();
        b.doc.objects.insert(
            form,
            Object::Stream(Stream::new(
                dictionary! {
                    "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 1.into(), 1.into()],
                    "Resources" => resources(dictionary! { "Me" => form, "Art" => art }),
                },
                b"/Me Do q 144 0 0 144 0 0 cm /Art Do Q".to_vec(),
            )),
        );
        b.page("/Fm0 Do", resources(dictionary! { "Fm0" => form }));
        let input = b.finish();
        let answer = compress(&input, Some("recommended"), None).await.unwrap();
        check(&answer, &input, 1);
        let doc = Document::load_mem(&answer.bytes).unwrap();
        let (_, stream) = images(&doc)[0];
        assert_eq!((int(stream, b"Width"), int(stream, b"Height"), filter(stream)), (300, 300, &b"FlateDecode"[..]));
    }

    #[tokio::test]
    async fn annotation_appearances_count_and_type3_glyph_images_stay() {
        let mut b = Builder::new();
        let shown = b.add(image(1200, 1200, "DeviceRGB", &photo(1200, 1200)));
        let glyph = b.add(image(1200, 1200, "DeviceRGB", &photo(1200, 1200)));
        // The appearance's 100-unit box is fitted to a 288 pt square: four inches.
        let appearance = b.add(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
                "Resources" => resources(dictionary! { "Im" => shown }),
            },
            b"q 100 0 0 100 0 0 cm /Im Do Q".to_vec(),
        ));
        let annot = b.add(dictionary! {
            "Type" => "Annot", "Subtype" => "Stamp",
            "Rect" => vec![100.into(), 100.into(), 388.into(), 388.into()],
            "AP" => dictionary! { "N" => appearance },
        });
        let proc_ = b.add(Stream::new(dictionary! {}, b"0 0 d0 q 1 0 0 1 0 0 cm /G Do Q".to_vec()));
        let type3 = b.add(dictionary! {
            "Type" => "Font", "Subtype" => "Type3", "FontBBox" => vec![0.into(), 0.into(), 1.into(), 1.into()],
            "FontMatrix" => vec![1.into(), 0.into(), 0.into(), 1.into(), 0.into(), 0.into()],
            "CharProcs" => dictionary! { "a" => proc_ }, "Encoding" => dictionary! { "Differences" => vec![97.into(), "a".into()] },
            "FirstChar" => 97, "LastChar" => 97, "Widths" => vec![1.into()],
            "Resources" => resources(dictionary! { "G" => glyph }),
        });
        let mut res = resources(dictionary! { "Im" => shown, "G" => glyph });
        res.set("Font", dictionary! { "T3" => type3 });
        // Both drawn at one inch on the page (1200 dpi).
        b.page("q 72 0 0 72 0 0 cm /Im Do Q q 72 0 0 72 100 0 cm /G Do Q BT /T3 500 Tf (a) Tj ET", res);
        let page_id = b.kids[0].as_reference().unwrap();
        b.doc.get_dictionary_mut(page_id).unwrap().set("Annots", vec![annot.into()]);
        let input = b.finish();
        let answer = compress(&input, None, None).await.unwrap();
        check(&answer, &input, 1);
        let doc = Document::load_mem(&answer.bytes).unwrap();
        let mut sizes: Vec<(i64, Vec<u8>)> =
            images(&doc).iter().map(|(_, s)| (int(s, b"Width"), filter(s).to_vec())).collect();
        sizes.sort();
        assert_eq!(sizes, vec![(600, b"DCTDecode".to_vec()), (1200, b"FlateDecode".to_vec())]);
    }

    #[tokio::test]
    async fn images_never_drawn_or_of_unknown_kinds_are_left_alone() {
        let mut b = Builder::new();
        let pixels = photo(800, 800);
        let unused = b.add(image(800, 800, "DeviceRGB", &pixels));
        let mut decoded = image(800, 800, "DeviceRGB", &pixels);
        decoded.dict.set("Decode", vec![1.into(), 0.into(), 1.into(), 0.into(), 1.into(), 0.into()]);
        let with_decode = b.add(decoded);
        b.page("q 72 0 0 72 0 0 cm /D Do Q", resources(dictionary! { "Unused" => unused, "D" => with_decode }));
        let input = b.finish();
        let answer = compress(&input, Some("extreme"), None).await.unwrap();
        check(&answer, &input, 1);
        assert_eq!(
            (answer.report["images_downsampled"].clone(), answer.report["images_reencoded"].clone()),
            (json!(0), json!(0))
        );
        let doc = Document::load_mem(&answer.bytes).unwrap();
        for (_, stream) in images(&doc) {
            assert_eq!(int(stream, b"Width"), 800);
            assert_eq!(stream.decompressed_content().unwrap(), pixels);
        }
    }

    #[tokio::test]
    async fn other_applications_private_data_goes_except_in_lossless() {
        // A page whose editor kept a large private record on it, as a PDF annotator keeps
        // its ink: random base64, which no compressor shrinks much.
        let mut seed = 7u64;
        let private: Vec<u8> = (0..300_000)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(seed >> 58) as usize]
            })
            .collect();
        let mut b = Builder::new();
        let record = b.add(dictionary! { "Ink" => Object::string_literal(private), "Version" => 5 });
        let editor = b.add(dictionary! { "Private" => record, "LastModified" => Object::string_literal("D:20220920") });
        let font = b.add(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        b.page(
            "BT /F1 11 Tf 72 700 Td (Signed and annotated.) Tj ET",
            dictionary! { "Font" => dictionary! { "F1" => font } },
        );
        let page = b.kids[0].as_reference().unwrap();
        b.doc
            .get_object_mut(page)
            .unwrap()
            .as_dict_mut()
            .unwrap()
            .set("PieceInfo", dictionary! { "PDFAnnotator" => editor });
        let input = b.finish();

        let lossless = compress(&input, Some("lossless"), None).await.unwrap();
        check(&lossless, &input, 1);
        assert_eq!(lossless.report["private_data_dropped"], json!(0));
        assert!(lossless.bytes.len() > 200_000, "lossless keeps it: {}", lossless.bytes.len());
        let doc = Document::load_mem(&lossless.bytes).unwrap();
        assert!(doc.get_object(doc.page_iter().next().unwrap()).unwrap().as_dict().unwrap().has(b"PieceInfo"));

        let recommended = compress(&input, Some("recommended"), None).await.unwrap();
        check(&recommended, &input, 1);
        assert_eq!(recommended.report["private_data_dropped"], json!(1), "{}", recommended.report);
        assert!(recommended.bytes.len() < 5_000, "the record is gone: {} bytes", recommended.bytes.len());
        let doc = Document::load_mem(&recommended.bytes).unwrap();
        assert!(!doc.get_object(doc.page_iter().next().unwrap()).unwrap().as_dict().unwrap().has(b"PieceInfo"));
        let (read, text) = crate::pdf::stamp::tests::tool("pdftotext", &[], &recommended.bytes);
        assert!(read);
        assert_eq!(text.trim(), "Signed and annotated.", "the page itself is untouched");
    }

    #[tokio::test]
    async fn a_file_that_cannot_shrink_comes_back_unchanged() {
        let once = compress(&text_pdf(2), Some("lossless"), None).await.unwrap();
        assert_eq!(once.report["unchanged"], json!(false));
        for mode in ["lossless", "recommended", "extreme"] {
            let again = compress(&once.bytes, Some(mode), None).await.unwrap();
            check(&again, &once.bytes, 2);
            assert_eq!(again.report["unchanged"], json!(true), "{}", again.report);
            assert_eq!(again.bytes, once.bytes);
            assert_eq!(
                (again.report["saved_bytes"].clone(), again.report["saved_percent"].clone()),
                (json!(0), json!(0.0))
            );
            assert!(again.report["note"].as_str().unwrap().contains("unchanged"));
        }
    }

    #[tokio::test]
    async fn encrypted_files_come_back_decrypted_or_unchanged() {
        let input = std::fs::read(corpus("enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
        let answer = compress(&input, Some("lossless"), Some("view")).await.unwrap();
        let pages = qpdf_pages(&input, Some("view"));
        if answer.report["unchanged"] == json!(true) {
            assert_eq!(answer.bytes, input);
        } else {
            check(&answer, &input, pages);
            assert!(!Document::load_mem(&answer.bytes).unwrap().is_encrypted());
        }
    }

    #[tokio::test]
    async fn the_core_runs_without_the_route() {
        let doc = pdf::open(&text_pdf(3), None, &Limits::default()).unwrap();
        let (bytes, stats) = compress_document(doc, Mode::Lossless, &Limits::default()).unwrap();
        assert_qpdf_check(&bytes, None);
        assert_eq!(qpdf_pages(&bytes, None), 3);
        // Three content streams compressed; nothing else to do.
        assert_eq!(stats.streams_recompressed, 3);
        assert_eq!((stats.images_downsampled, stats.duplicate_streams_merged), (0, 0));
        let mode: Mode = serde_json::from_value(json!("extreme")).unwrap();
        assert_eq!(mode, Mode::Extreme);
    }

    #[tokio::test]
    async fn quotes_the_rendering_price() {
        let pdf = sample_pdf(4);
        let input: PdfJob<CompressOptions> = crate::catalog::parse_body(
            &serde_json::to_vec(&json!({ "file": file_json(&pdf, "a.pdf", None), "mode": "lossless" })).unwrap(),
        )
        .unwrap();
        let prepared = CompressRoute::prepare(input, &Context::new()).await.unwrap();
        assert_eq!(CompressRoute::quote(&prepared).units(), 3_000 + 4 * 500);
    }

    #[tokio::test]
    async fn every_mistake_names_its_field() {
        let pdf = sample_pdf(1);
        let f = file_json(&pdf, "a.pdf", None);
        let encrypted = std::fs::read(corpus("enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
        let cases = [
            (json!({ "file": f, "mode": "medium" }), "/mode", "invalid_input"),
            (json!({ "file": f, "mode": 1 }), "/mode", "invalid_input"),
            (json!({ "file": f, "quality": 50 }), "/quality", "unknown_field"),
            (json!({ "mode": "lossless" }), "/file", "invalid_input"),
            (json!({ "file": { "data": "aGVsbG8=" } }), "/file", "not_a_pdf"),
            (json!({ "file": file_json(&encrypted, "e.pdf", None) }), "/file/password", "password_required"),
            (json!({ "file": file_json(&encrypted, "e.pdf", Some("nope")) }), "/file/password", "wrong_password"),
        ];
        for (body, field, code) in cases {
            let e = match call::<CompressRoute>(&body).await {
                Ok(_) => panic!("{body} was accepted"),
                Err(e) => e,
            };
            assert_eq!((e.field.as_deref(), e.code.as_ref()), (Some(field), code), "{body}: {}", e.message);
        }
    }
}
