//! The PDF support code the document routes share; no route lives here.
//!
//! This module itself opens and saves PDFs: the checks every PDF route shares (not a PDF,
//! damaged, encrypted, too many pages) and the helpers for pages and their inherited
//! attributes. Its submodules hold the larger shared parts: building documents from pages
//! of others, outlines and name trees, the qpdf and pdfium bindings, the repair pass,
//! image recompression, stamped text, the inspection of what a document holds, its
//! metadata (Info and XMP) and embedded files, and the transforms the page-edit routes and the pipeline are
//! written as.

pub mod assemble;
pub mod dates;
pub mod decoded;
pub mod dedupe;
pub mod embedded_files;
pub mod flate;
pub mod graft;
pub mod impose;
pub mod incremental;
pub mod inspect;
pub mod metadata;
pub mod name_tree;
pub mod outline_tree;
pub mod paper;
pub mod pdfa;
pub mod pdfium;
pub mod qpdf;
pub mod recompress_images;
pub mod repair_pass;
pub mod sign;
pub mod stamp;
#[cfg(test)]
pub(crate) mod testing;
pub mod transform;
pub mod words;
pub mod xmp;

use lopdf::{Dictionary, Document, LoadOptions, Object, ObjectId, Stream};

use crate::context::{Context, Limits, blocking};
use crate::error::{EngineError, ErrorKind};
use crate::input::{FileBytes, FileInput};
use crate::output::{FileSet, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;

/// A loaded input PDF.
pub struct SourcePdf {
    /// The document, decrypted if it was encrypted.
    pub doc: Document,
    /// The input's file name.
    pub filename: String,
    /// Number of pages.
    pub page_count: u32,
    /// The JSON pointer of the input, for error messages.
    pub field: String,
}

impl std::fmt::Debug for SourcePdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourcePdf").field("filename", &self.filename).field("page_count", &self.page_count).finish()
    }
}

impl SourcePdf {
    /// Fetches or decodes `file` and opens it; errors name `field` (e.g. `/file`).
    pub async fn load(file: &FileInput, field: &str, ctx: &Context) -> Result<SourcePdf, EngineError> {
        let input = file.resolve(ctx, field, "document.pdf").await?;
        SourcePdf::from_bytes(input, field, ctx).await
    }

    /// Opens a file already fetched or decoded; errors name `field`.
    pub async fn from_bytes(input: FileBytes, field: &str, ctx: &Context) -> Result<SourcePdf, EngineError> {
        let limits = ctx.limits;
        let field = field.to_string();
        blocking(move || {
            let doc = open(&input.bytes, input.password.as_deref(), &limits).map_err(|e| e.under(&field))?;
            let page_count = doc.get_pages().len() as u32;
            Ok(SourcePdf { doc, filename: input.filename, page_count, field })
        })
        .await
    }

    /// The edited document as the one-file answer of a route, named
    /// `<input>-<suffix>.pdf`.
    pub fn into_reply<T>(mut self, suffix: &str, output: OutputMode) -> Result<Reply<T>, EngineError> {
        let bytes = save(&mut self.doc)?;
        let name = derived_name(&self.filename, suffix, "pdf");
        Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output)))
    }

    /// The object ids of the pages, in page order.
    pub fn page_ids(&self) -> Vec<ObjectId> {
        self.doc.page_iter().collect()
    }

    /// The distinct pages a selection names, ascending, as (number, object). A page
    /// object the page tree lists twice is one page to edit: it comes once.
    pub fn selected_pages(&self, selection: &PageSelection, field: &str) -> Result<Vec<(u32, ObjectId)>, EngineError> {
        selected_pages(&self.doc, selection, field)
    }
}

/// The distinct pages of `doc` a selection names, ascending, as (number, object). A page
/// object the page tree lists twice is one page to edit: it comes once.
pub fn selected_pages(
    doc: &Document,
    selection: &PageSelection,
    field: &str,
) -> Result<Vec<(u32, ObjectId)>, EngineError> {
    let ids: Vec<ObjectId> = doc.page_iter().collect();
    let mut seen = std::collections::HashSet::new();
    let numbers = selection.resolve_set(ids.len() as u32, field)?;
    Ok(numbers
        .into_iter()
        .filter_map(|n| ids.get(n as usize - 1).map(|&id| (n, id)))
        .filter(|(_, id)| seen.insert(*id))
        .collect())
}

/// The number of pages of `doc`.
pub fn page_count(doc: &Document) -> u32 {
    doc.page_iter().count() as u32
}

/// Whether `bytes` start like a PDF (`%PDF-` within the first KiB, as readers allow).
pub fn looks_like_pdf(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1024)];
    head.windows(5).any(|w| w == b"%PDF-")
}

/// Opens a PDF from memory. Errors carry fields relative to the file input
/// (`/password` for password problems, none for the file as a whole).
pub fn open(bytes: &[u8], password: Option<&str>, limits: &Limits) -> Result<Document, EngineError> {
    if !looks_like_pdf(bytes) {
        return Err(EngineError::invalid_with("not_a_pdf", "", "the file is not a PDF (no %PDF- header)"));
    }
    let options = LoadOptions {
        password: password.map(str::to_string),
        max_decompressed_size: Some(limits.max_stream_bytes),
        ..LoadOptions::default()
    };
    let doc = match Document::load_mem_with_options(bytes, options) {
        Ok(doc) => doc,
        Err(lopdf::Error::InvalidPassword) | Err(lopdf::Error::Decryption(_)) => return Err(password_error(password)),
        Err(lopdf::Error::Decompress(e)) => {
            return Err(EngineError::too_large(
                "file_too_large",
                None,
                format!(
                    "a stream of the PDF decompresses past the limit ({e}); refusing a possible decompression bomb"
                ),
            ));
        }
        Err(lopdf::Error::UnsupportedSecurityHandler(handler)) => {
            return Err(EngineError::invalid_with(
                "damaged_pdf",
                "",
                format!("the PDF uses an unsupported security handler ({})", String::from_utf8_lossy(&handler)),
            ));
        }
        Err(e) => {
            return Err(EngineError::invalid_with("damaged_pdf", "", format!("the PDF is too damaged to read: {e}")));
        }
    };
    if doc.is_encrypted() {
        // Still encrypted after loading: the password (or the empty one) did not open it.
        return Err(password_error(password));
    }
    let mut pages = 0;
    for id in doc.page_iter().take(limits.max_pages as usize + 1) {
        pages += 1;
        // Found here, before any price is quoted, rather than half-way through an edit.
        if doc.get_dictionary(id).is_err() {
            return Err(EngineError::invalid_with(
                "damaged_pdf",
                "",
                format!("page {pages} of the PDF cannot be read"),
            ));
        }
    }
    if pages == 0 {
        return Err(EngineError::invalid_with("damaged_pdf", "", "the PDF has no readable pages"));
    }
    if pages > limits.max_pages as usize {
        return Err(EngineError::too_large(
            "too_many_pages",
            None,
            format!("the PDF has more than {} pages", limits.max_pages),
        ));
    }
    Ok(doc)
}

/// The error for a password that is missing or does not open the file, at `/password`
/// (relative to the file input); the password itself is never quoted.
pub(crate) fn password_error(password: Option<&str>) -> EngineError {
    match password {
        None | Some("") => EngineError::invalid_with(
            "password_required",
            "/password",
            "the PDF is encrypted: give its password in `password` beside the file's data",
        ),
        Some(_) => EngineError::invalid_with("wrong_password", "/password", "the password does not open this PDF"),
    }
}

/// Largest result one call may produce, in bytes (all files together): a small input
/// whose pages share large resources can otherwise multiply when split.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024 * 1024;

/// The error for a result over [`MAX_OUTPUT_BYTES`].
pub fn output_too_large() -> EngineError {
    EngineError::too_large(
        "output_too_large",
        None,
        format!(
            "the result would be larger than {} MiB; ask for fewer pages or parts",
            MAX_OUTPUT_BYTES / (1024 * 1024)
        ),
    )
}

/// Serialises a document; the output is never encrypted.
pub fn save(doc: &mut Document) -> Result<Vec<u8>, EngineError> {
    // The output is one fresh revision: keys describing the input's revisions go.
    for key in [&b"Encrypt"[..], b"XRefStm", b"Prev"] {
        doc.trailer.remove(key);
    }
    // Objects describing the input's file layout (cross-reference and object streams,
    // linearization) are not written; they must not count as objects of this file.
    doc.objects.retain(|_, object| !matches!(object.type_name(), Ok(b"XRef" | b"ObjStm" | b"Linearized")));
    // Damaged inputs carry missing, wrong or indirect stream lengths: write the true one.
    for object in doc.objects.values_mut() {
        if let Object::Stream(stream) = object {
            stream.dict.set("Length", Object::Integer(stream.content.len() as i64));
        }
    }
    // Objects may have been removed (the encryption dictionary, pruned pages): the
    // cross-reference section must end at the highest object that is left.
    doc.max_id = doc.objects.keys().map(|(number, _)| *number).max().unwrap_or(0);
    let mut out = Vec::new();
    doc.save_to(&mut out).map_err(|e| EngineError::internal(format!("writing the PDF: {e}")))?;
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(output_too_large());
    }
    Ok(out)
}

/// A transformation matrix `[a b c d e f]`.
pub type Matrix = [f64; 6];

/// The matrix that changes nothing.
pub const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the matrix mapping through `m` first (PDF's `m × n`).
pub fn concat(m: &Matrix, n: &Matrix) -> Matrix {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

/// Page attributes a page inherits from its ancestors when it does not set them.
pub const INHERITABLE: [&[u8]; 4] = [b"Resources", b"MediaBox", b"CropBox", b"Rotate"];

/// The value of `key` for a page, looking up the page tree for inheritable attributes.
pub fn inherited<'a>(doc: &'a Document, page_id: ObjectId, key: &[u8]) -> Option<&'a Object> {
    let mut node = doc.get_dictionary(page_id).ok()?;
    for _ in 0..64 {
        if let Ok(value) = node.get(key) {
            return Some(value);
        }
        let parent = node.get(b"Parent").ok()?.as_reference().ok()?;
        node = doc.get_dictionary(parent).ok()?;
    }
    None
}

/// Copies inherited attributes onto the page itself, so the page no longer depends on
/// its place in the page tree.
pub fn materialize_inherited(doc: &mut Document, page_id: ObjectId) {
    let mut found = Vec::new();
    for key in INHERITABLE {
        let own = doc.get_dictionary(page_id).map(|d| d.has(key)).unwrap_or(true);
        if !own && let Some(value) = inherited(doc, page_id, key) {
            found.push((key, value.clone()));
        }
    }
    if let Ok(page) = doc.get_dictionary_mut(page_id) {
        for (key, value) in found {
            page.set(key, value);
        }
    }
}

/// A rectangle in PDF points: lower-left and upper-right corners, normalised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x0: f64,
    /// Bottom edge.
    pub y0: f64,
    /// Right edge.
    pub x1: f64,
    /// Top edge.
    pub y1: f64,
}

impl Rect {
    /// Width in points.
    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }

    /// Height in points.
    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }

    /// The part of this rectangle inside `bounds`, if any of it is.
    pub fn intersect(self, bounds: Rect) -> Option<Rect> {
        let cut = Rect {
            x0: self.x0.max(bounds.x0),
            y0: self.y0.max(bounds.y0),
            x1: self.x1.min(bounds.x1),
            y1: self.y1.min(bounds.y1),
        };
        (cut.width() > 0.0 && cut.height() > 0.0).then_some(cut)
    }

    /// As a PDF array.
    pub fn to_object(self) -> Object {
        Object::Array(vec![self.x0, self.y0, self.x1, self.y1].into_iter().map(real).collect())
    }
}

fn real(value: f64) -> Object {
    // Whole numbers are written as integers: smaller files, and exact.
    if value.fract() == 0.0 && value.abs() < 1e9 { Object::Integer(value as i64) } else { Object::Real(value as f32) }
}

/// Reads a number (integer or real), following a reference.
pub fn number(doc: &Document, object: &Object) -> Option<f64> {
    match doc.dereference(object).ok()?.1 {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(*r as f64),
        _ => None,
    }
}

/// Reads a rectangle array, normalising reversed corners.
pub fn rect(doc: &Document, object: &Object) -> Option<Rect> {
    let array = doc.dereference(object).ok()?.1.as_array().ok()?;
    if array.len() != 4 {
        return None;
    }
    let v: Vec<f64> = array.iter().filter_map(|o| number(doc, o)).collect();
    if v.len() != 4 || v.iter().any(|n| !n.is_finite()) {
        return None;
    }
    Some(Rect { x0: v[0].min(v[2]), y0: v[1].min(v[3]), x1: v[0].max(v[2]), y1: v[1].max(v[3]) })
}

/// US Letter, the default when a page has no usable MediaBox (as readers assume).
pub const LETTER: Rect = Rect { x0: 0.0, y0: 0.0, x1: 612.0, y1: 792.0 };

/// The page's MediaBox, inherited if needed; Letter if missing or unusable.
pub fn media_box(doc: &Document, page_id: ObjectId) -> Rect {
    inherited(doc, page_id, b"MediaBox")
        .and_then(|o| rect(doc, o))
        .filter(|r| r.width() > 0.0 && r.height() > 0.0)
        .unwrap_or(LETTER)
}

/// The page's CropBox clipped to its MediaBox (the visible area), MediaBox if none.
pub fn crop_box(doc: &Document, page_id: ObjectId) -> Rect {
    let media = media_box(doc, page_id);
    match inherited(doc, page_id, b"CropBox").and_then(|o| rect(doc, o)) {
        Some(c) => {
            let clipped =
                Rect { x0: c.x0.max(media.x0), y0: c.y0.max(media.y0), x1: c.x1.min(media.x1), y1: c.y1.min(media.y1) };
            if clipped.width() > 0.0 && clipped.height() > 0.0 { clipped } else { media }
        }
        None => media,
    }
}

/// The page's rotation in degrees, normalised to 0, 90, 180 or 270.
pub fn rotation(doc: &Document, page_id: ObjectId) -> i64 {
    let raw = inherited(doc, page_id, b"Rotate").and_then(|o| number(doc, o)).unwrap_or(0.0) as i64;
    let r = raw.rem_euclid(360);
    // Values that are not multiples of 90 are invalid; readers round down.
    r - r % 90
}

/// Reads a text string (PDFDocEncoding or UTF-16 with BOM) into a Rust string.
pub fn text_string(doc: &Document, object: &Object) -> Option<String> {
    match doc.dereference(object).ok()?.1 {
        Object::String(bytes, _) => Some(decode_text_string(bytes)),
        Object::Name(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    }
}

/// Decodes UTF-16 text that starts with a byte order mark (either order); None without one.
pub fn decode_utf16_with_bom(bytes: &[u8]) -> Option<String> {
    let big_endian = match bytes {
        [0xFE, 0xFF, ..] => true,
        [0xFF, 0xFE, ..] => false,
        _ => return None,
    };
    let units: Vec<u16> = bytes[2..]
        .chunks_exact(2)
        .map(|c| if big_endian { u16::from_be_bytes([c[0], c[1]]) } else { u16::from_le_bytes([c[0], c[1]]) })
        .collect();
    Some(String::from_utf16_lossy(&units))
}

/// Decodes PDF text-string bytes: UTF-16BE/LE with BOM, UTF-8 with BOM, else PDFDocEncoding.
pub fn decode_text_string(bytes: &[u8]) -> String {
    if let Some(text) = decode_utf16_with_bom(bytes) {
        return text;
    }
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    bytes.iter().map(|&b| pdf_doc_char(b)).collect()
}

fn pdf_doc_char(b: u8) -> char {
    // PDFDocEncoding matches Latin-1 except 0x18-0x1F and 0x80-0x9F.
    const HIGH: [char; 32] = [
        '•', '†', '‡', '…', '—', '–', 'ƒ', '⁄', '‹', '›', '−', '‰', '„', '“', '”', '‘', '’', '‚', '™', 'ﬁ', 'ﬂ', 'Ł',
        'Œ', 'Š', 'Ÿ', 'Ž', 'ı', 'ł', 'œ', 'š', 'ž', '\u{FFFD}',
    ];
    const LOW: [char; 8] = ['˘', 'ˇ', 'ˆ', '˙', '˝', '˛', '˚', '˜'];
    match b {
        0x18..=0x1F => LOW[(b - 0x18) as usize],
        0x80..=0x9F => HIGH[(b - 0x80) as usize],
        0xA0 => '€',
        _ => b as char,
    }
}

/// Encodes a Rust string as a PDF text string: plain bytes when ASCII, else UTF-16BE with BOM.
pub fn encode_text_string(text: &str) -> Object {
    if text.is_ascii() {
        Object::String(text.as_bytes().to_vec(), lopdf::StringFormat::Literal)
    } else {
        let mut bytes = vec![0xFE, 0xFF];
        for unit in text.encode_utf16() {
            bytes.extend_from_slice(&unit.to_be_bytes());
        }
        Object::String(bytes, lopdf::StringFormat::Hexadecimal)
    }
}

/// The dictionary at `key` of `dict`, following a reference.
pub fn dict_at<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Dictionary> {
    let object = dict.get(key).ok()?;
    doc.dereference(object).ok()?.1.as_dict().ok()
}

/// A copy of page `page_id`'s resources (inherited ones followed) for the page to own and
/// change: resources are often shared by pages that must not change. Only this dictionary
/// is copied; what it refers to stays shared.
pub fn own_resources(doc: &Document, page_id: ObjectId) -> Dictionary {
    inherited(doc, page_id, b"Resources")
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_dict().ok())
        .cloned()
        .unwrap_or_default()
}

/// Draws `over` after page `page_id`'s own content, in the page's initial graphics state:
/// the content list becomes `open` (a stream holding `q`), the page's streams, then
/// `over`, which starts by closing that `q` (`Q`). The page gets `resources`; `what`
/// names the edit in errors ("stamping a page").
pub fn draw_over(
    doc: &mut Document,
    page_id: ObjectId,
    open: ObjectId,
    over: Vec<u8>,
    resources: Dictionary,
    what: &str,
) -> Result<(), EngineError> {
    let page = doc.get_dictionary(page_id).map_err(|e| edit_error(what, e))?;
    let old_contents = content_refs(doc, page);
    let over = doc.add_object(Stream::new(Dictionary::new(), over));
    let mut contents = Vec::with_capacity(old_contents.len() + 2);
    contents.push(Object::Reference(open));
    contents.extend(old_contents);
    contents.push(Object::Reference(over));
    let page = doc.get_dictionary_mut(page_id).map_err(|e| edit_error(what, e))?;
    page.set("Resources", resources);
    page.set("Contents", contents);
    Ok(())
}

/// The page's content stream references, flattened; entries that are not streams drop out.
pub fn content_refs(doc: &Document, page: &Dictionary) -> Vec<Object> {
    let entries: Vec<Object> = match page.get(b"Contents") {
        Ok(Object::Reference(id)) => match doc.get_object(*id) {
            Ok(Object::Array(items)) => items.clone(),
            _ => vec![Object::Reference(*id)],
        },
        Ok(Object::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    entries
        .into_iter()
        .filter(|o| matches!(o, Object::Reference(id) if matches!(doc.get_object(*id), Ok(Object::Stream(_)))))
        .collect()
}

/// Warnings for a report, at most `MAX` of them, then a count of the ones left out.
#[derive(Default)]
pub struct Warnings<const MAX: usize> {
    list: Vec<String>,
    more: usize,
}

impl<const MAX: usize> Warnings<MAX> {
    /// Adds one, or counts it when the list is full.
    pub fn push(&mut self, note: String) {
        if self.list.len() < MAX {
            self.list.push(note);
        } else {
            self.more += 1;
        }
    }

    /// The list, ending with how many were left out.
    pub fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.list.push(format!("and {} more warnings", self.more));
        }
        self.list
    }
}

/// Maps a lopdf failure during an edit to an error about the input (it is the input's
/// structure that broke the edit, not a defect of ours).
pub fn edit_error(what: &str, e: lopdf::Error) -> EngineError {
    EngineError::new(ErrorKind::InvalidInput, "damaged_pdf", format!("{what}: the PDF's structure is damaged ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_strings_round_trip() {
        for text in ["Chapter 1", "Kapitel Über", "第一章", ""] {
            let object = encode_text_string(text);
            let doc = Document::with_version("1.7");
            assert_eq!(text_string(&doc, &object).unwrap(), text);
        }
        assert_eq!(decode_text_string(&[0x8D, b'a', 0x8E, 0xA0]), "“a”€");
    }

    #[test]
    fn a_page_that_cannot_be_read_is_refused_when_opening() {
        use lopdf::dictionary;
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let good = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id });
        let missing = doc.new_object_id();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(
                dictionary! { "Type" => "Pages", "Kids" => vec![good.into(), missing.into()], "Count" => 2 },
            ),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        doc.objects.insert(missing, Object::Integer(5));
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let e = open(&bytes, None, &Limits::default()).unwrap_err();
        assert_eq!(e.code, "damaged_pdf");
        assert!(e.message.contains("page 2"), "{}", e.message);
    }

    #[test]
    fn refuses_non_pdf_bytes() {
        let e = open(b"hello world", None, &Limits::default()).unwrap_err();
        assert_eq!(e.code, "not_a_pdf");
    }
}
