//! PDF signatures (ISO 32000-2 12.8, PAdES baseline ETSI EN 319 142-1): signing as an
//! incremental update, and reading and validating every signature a file holds.
//!
//! Signing is three steps, so a time stamp can be fetched between them without the
//! document code knowing of the network: [`prepare`] appends the signature field, its
//! widget and a signature dictionary whose `/Contents` is a run of zeros and computes the
//! digest of every byte but those; [`Prepared::signed_attributes`] and
//! [`Identity::sign`](identity::Identity::sign) make the signature; [`Prepared::finish`]
//! writes the CMS into the zeros.

pub mod chain;
pub mod cms;
pub mod fields;
pub mod identity;
pub mod timestamp;
pub mod verify;

use std::ops::Range;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, StringFormat};
use time::OffsetDateTime;

use crate::error::EngineError;
use crate::pdf::incremental::Update;
use crate::pdf::sign::fields::SignatureField;
use crate::pdf::stamp::{self, Frame};
use crate::pdf::{self, Rect};

/// What a signature says and where it goes.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The field to sign: an empty signature field of the document, or the name of the new
    /// field (`None`: `Signature1`, `Signature2`…).
    pub field: Option<String>,
    /// 1-based page of a new field.
    pub page: u32,
    /// A new field's box, `[left, top, right, bottom]` in points from the visible page's top
    /// left corner; `None` makes it invisible.
    pub box_pt: Option<[f64; 4]>,
    /// Why (`/Reason`).
    pub reason: Option<String>,
    /// Where (`/Location`).
    pub location: Option<String>,
    /// How to reach the signer (`/ContactInfo`).
    pub contact: Option<String>,
    /// The signer's name as the appearance shows it.
    pub signer: String,
    /// When (`/M`, and the appearance).
    pub at: OffsetDateTime,
    /// Bytes reserved for the CMS.
    pub reserve: usize,
}

/// The document with its signature field, waiting for the signature.
#[derive(Debug)]
pub struct Prepared {
    bytes: Vec<u8>,
    /// The `<…>` of `/Contents`, brackets included.
    contents: Range<usize>,
    /// The field's full name.
    pub field: String,
    /// 1-based page of the widget (None when no page lists it).
    pub page: Option<u32>,
    /// Whether the widget has an area.
    pub visible: bool,
}

impl Prepared {
    /// The digest of the signed bytes (everything but `/Contents`' value).
    pub fn digest(&self, digest: cms::Digest) -> Vec<u8> {
        digest.of(&[&self.bytes[..self.contents.start], &self.bytes[self.contents.end..]])
    }

    /// The file as it will be signed, the CMS's room still zeros.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The room for the CMS, in bytes.
    pub fn room(&self) -> usize {
        (self.contents.len() - 2) / 2
    }

    /// The signed file, the CMS written into `/Contents`.
    pub fn finish(mut self, cms: &[u8]) -> Result<Vec<u8>, EngineError> {
        if cms.len() > self.room() {
            return Err(EngineError::internal(format!(
                "the signature takes {} bytes, more than the {} reserved",
                cms.len(),
                self.room()
            )));
        }
        let hex = hex::encode_upper(cms);
        let at = self.contents.start + 1;
        self.bytes[at..at + hex.len()].copy_from_slice(hex.as_bytes());
        Ok(self.bytes)
    }
}

/// Eleven digits of nines, the width of a `/ByteRange` number before it is known.
const WIDE: i64 = 99_999_999_999;

/// Appends the signature field (or fills the named empty one), its appearance and a
/// signature dictionary with room for the CMS to `base`, which `doc` was read from.
pub fn prepare(base: &[u8], doc: &Document, placement: &Placement) -> Result<Prepared, EngineError> {
    let root_id = doc
        .trailer
        .get(b"Root")
        .and_then(Object::as_reference)
        .map_err(|_| EngineError::invalid_with("damaged_pdf", "/file", "/file: the PDF has no document catalog"))?;
    let existing = fields::signature_fields(doc);
    let mut update = Update::new(base, doc);

    let mut sig = Dictionary::new();
    sig.set("Type", Object::Name(b"Sig".to_vec()));
    sig.set("Filter", Object::Name(b"Adobe.PPKLite".to_vec()));
    sig.set("SubFilter", Object::Name(b"ETSI.CAdES.detached".to_vec()));
    sig.set("ByteRange", Object::Array(vec![0.into(), WIDE.into(), WIDE.into(), WIDE.into()]));
    sig.set("Contents", Object::String(vec![0; placement.reserve], StringFormat::Hexadecimal));
    sig.set("M", Object::String(pdf::dates::pdf_date(placement.at).into_bytes(), StringFormat::Literal));
    for (key, value) in
        [(&b"Reason"[..], &placement.reason), (b"Location", &placement.location), (b"ContactInfo", &placement.contact)]
    {
        if let Some(value) = value {
            sig.set(key, pdf::encode_text_string(value));
        }
    }
    let sig_id = update.add(Object::Dictionary(sig));

    let named = placement.field.as_deref().and_then(|name| existing.iter().find(|f| f.name == name));
    let (field_name, widget_id, page_id, rect) = match named {
        Some(field) => {
            fill_field(doc, &mut update, field, sig_id)?;
            let rect = field.rect.unwrap_or(Rect { x0: 0.0, y0: 0.0, x1: 0.0, y1: 0.0 });
            (field.name.clone(), field.widget, field.page, rect)
        }
        None => {
            let name = match &placement.field {
                Some(name) => {
                    if let Some(other) = fields::any_field_named(doc, name) {
                        return Err(EngineError::invalid_with(
                            "not_a_signature_field",
                            "/field",
                            format!("/field: the document's field {name:?} is a {other} field, not a signature field"),
                        ));
                    }
                    name.clone()
                }
                None => fields::free_name(doc),
            };
            let (widget, page, rect) = new_field(doc, &mut update, root_id, &name, sig_id, placement)?;
            (name, widget, Some(page), rect)
        }
    };
    let visible = rect.width() > 0.0 && rect.height() > 0.0;
    let appearance = appearance(doc, page_id, rect, placement);
    let ap_id = update.add(Object::Stream(appearance));
    let mut widget = update.current(widget_id).and_then(|o| o.as_dict().ok()).cloned().ok_or_else(|| {
        EngineError::invalid_with("damaged_pdf", "/field", "/field: the field's widget cannot be read")
    })?;
    let mut ap = Dictionary::new();
    ap.set("N", Object::Reference(ap_id));
    widget.set("AP", Object::Dictionary(ap));
    update.replace(widget_id, Object::Dictionary(widget));
    set_sig_flags(&mut update, root_id)?;

    let written = update.write()?;
    let span = written.spans[&sig_id].clone();
    let mut bytes = written.bytes;
    let contents = find_contents(&bytes[span.clone()], placement.reserve)
        .map(|r| r.start + span.start..r.end + span.start)
        .ok_or_else(|| EngineError::internal("the signature dictionary was not written as expected"))?;
    let wide = format!("{WIDE} {WIDE} {WIDE}");
    let at = find(&bytes[span.clone()], wide.as_bytes())
        .map(|i| i + span.start)
        .ok_or_else(|| EngineError::internal("the byte range was not written as expected"))?;
    let ranges = format!("{} {} {}", contents.start, contents.end, bytes.len() - contents.end);
    let padded = format!("{ranges:<width$}", width = wide.len());
    bytes[at..at + wide.len()].copy_from_slice(padded.as_bytes());
    let page = page_id.and_then(|id| doc.get_pages().into_iter().find(|(_, p)| *p == id).map(|(n, _)| n));
    Ok(Prepared { bytes, contents, field: field_name, page, visible })
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The `<00…00>` of `reserve` zero bytes in hex.
fn find_contents(hay: &[u8], reserve: usize) -> Option<Range<usize>> {
    let start = find(hay, b"/Contents")?;
    let open = start + hay[start..].iter().position(|b| *b == b'<')?;
    let close = open + 1 + 2 * reserve;
    (hay.get(close) == Some(&b'>') && hay[open + 1..close].iter().all(|b| *b == b'0')).then_some(open..close + 1)
}

/// Fills an existing empty signature field.
fn fill_field(
    doc: &Document,
    update: &mut Update<'_>,
    field: &SignatureField,
    sig_id: ObjectId,
) -> Result<(), EngineError> {
    if field.signed {
        return Err(EngineError::invalid_with(
            "already_signed",
            "/field",
            format!("/field: the signature field {:?} is signed already; name another field or a new one", field.name),
        ));
    }
    let mut dict = doc
        .get_dictionary(field.id)
        .cloned()
        .map_err(|_| EngineError::invalid_with("damaged_pdf", "/field", "/field: the field cannot be read"))?;
    dict.set("V", Object::Reference(sig_id));
    update.replace(field.id, Object::Dictionary(dict));
    Ok(())
}

/// Adds a new signature field with its widget on the page; the widget's id, the page and
/// its rectangle.
fn new_field(
    doc: &Document,
    update: &mut Update<'_>,
    root_id: ObjectId,
    name: &str,
    sig_id: ObjectId,
    placement: &Placement,
) -> Result<(ObjectId, ObjectId, Rect), EngineError> {
    let pages = doc.get_pages();
    let page_id = *pages.get(&placement.page).ok_or_else(|| {
        EngineError::invalid_with(
            "page_out_of_range",
            "/page",
            format!("/page: the document has {} pages, not {}", pages.len(), placement.page),
        )
    })?;
    let rect = match placement.box_pt {
        Some(box_pt) => user_rect(doc, page_id, box_pt)?,
        None => Rect { x0: 0.0, y0: 0.0, x1: 0.0, y1: 0.0 },
    };
    let mut widget = Dictionary::new();
    widget.set("FT", Object::Name(b"Sig".to_vec()));
    widget.set("T", pdf::encode_text_string(name));
    widget.set("V", Object::Reference(sig_id));
    widget.set("Type", Object::Name(b"Annot".to_vec()));
    widget.set("Subtype", Object::Name(b"Widget".to_vec()));
    widget.set("Rect", rect.to_object());
    // Print, locked.
    widget.set("F", Object::Integer(132));
    widget.set("P", Object::Reference(page_id));
    let widget_id = update.add(Object::Dictionary(widget));

    // The page lists the widget among its annotations.
    let page = doc.get_dictionary(page_id).map_err(|_| damaged("a page"))?.clone();
    match page.get(b"Annots") {
        Ok(Object::Reference(array_id)) => {
            let mut array = doc.get_object(*array_id).and_then(Object::as_array).cloned().unwrap_or_default();
            array.push(Object::Reference(widget_id));
            update.replace(*array_id, Object::Array(array));
        }
        other => {
            let mut array = other.ok().and_then(|o| o.as_array().ok()).cloned().unwrap_or_default();
            array.push(Object::Reference(widget_id));
            let mut page = page;
            page.set("Annots", Object::Array(array));
            update.replace(page_id, Object::Dictionary(page));
        }
    }

    // The form lists the field.
    let catalog = doc.get_dictionary(root_id).map_err(|_| damaged("the document catalog"))?.clone();
    match catalog.get(b"AcroForm") {
        Ok(Object::Reference(form_id)) => {
            let form = doc.get_dictionary(*form_id).cloned().unwrap_or_default();
            let form = with_field(doc, update, form, widget_id);
            update.replace(*form_id, Object::Dictionary(form));
        }
        other => {
            let form = other.ok().and_then(|o| o.as_dict().ok()).cloned().unwrap_or_default();
            let form = with_field(doc, update, form, widget_id);
            let form_id = update.add(Object::Dictionary(form));
            let mut catalog = catalog;
            catalog.set("AcroForm", Object::Reference(form_id));
            update.replace(root_id, Object::Dictionary(catalog));
        }
    }
    Ok((widget_id, page_id, rect))
}

/// `form` with `field` added to its `/Fields` (an indirect array is rewritten in place).
fn with_field(doc: &Document, update: &mut Update<'_>, mut form: Dictionary, field: ObjectId) -> Dictionary {
    match form.get(b"Fields") {
        Ok(Object::Reference(array_id)) => {
            let array_id = *array_id;
            let mut array = doc.get_object(array_id).and_then(Object::as_array).cloned().unwrap_or_default();
            array.push(Object::Reference(field));
            update.replace(array_id, Object::Array(array));
        }
        other => {
            let mut array = other.ok().and_then(|o| o.as_array().ok()).cloned().unwrap_or_default();
            array.push(Object::Reference(field));
            form.set("Fields", Object::Array(array));
        }
    }
    form.set("SigFlags", Object::Integer(3));
    form
}

/// Sets `/SigFlags 3` (signatures exist, append only) on the form, wherever it is.
fn set_sig_flags(update: &mut Update<'_>, root_id: ObjectId) -> Result<(), EngineError> {
    let catalog =
        update.current(root_id).and_then(|o| o.as_dict().ok()).cloned().ok_or_else(|| damaged("the catalog"))?;
    match catalog.get(b"AcroForm") {
        Ok(Object::Reference(form_id)) => {
            let form_id = *form_id;
            if let Some(mut form) = update.current(form_id).and_then(|o| o.as_dict().ok()).cloned()
                && form.get(b"SigFlags").ok().and_then(|o| o.as_i64().ok()) != Some(3)
            {
                form.set("SigFlags", Object::Integer(3));
                update.replace(form_id, Object::Dictionary(form));
            }
        }
        Ok(Object::Dictionary(form)) => {
            let mut form = form.clone();
            form.set("SigFlags", Object::Integer(3));
            let mut catalog = catalog.clone();
            catalog.set("AcroForm", Object::Dictionary(form));
            update.replace(root_id, Object::Dictionary(catalog));
        }
        _ => {}
    }
    Ok(())
}

fn damaged(what: &str) -> EngineError {
    EngineError::invalid_with("damaged_pdf", "/file", format!("/file: {what} of the PDF cannot be read"))
}

/// A box from the visible page's top left corner as a rectangle of the page's user space.
fn user_rect(doc: &Document, page_id: ObjectId, box_pt: [f64; 4]) -> Result<Rect, EngineError> {
    let frame = Frame::of_page(doc, page_id);
    let [left, top, right, bottom] = box_pt;
    if !(box_pt.iter().all(|v| v.is_finite()) && left < right && top < bottom) {
        return Err(EngineError::invalid(
            "/box_pt",
            "/box_pt: give [left, top, right, bottom] with left < right and top < bottom",
        ));
    }
    if left < 0.0 || top < 0.0 || right > frame.width + 0.5 || bottom > frame.height + 0.5 {
        return Err(EngineError::invalid(
            "/box_pt",
            format!("/box_pt: the box leaves the page, which is {:.0} × {:.0} pt", frame.width, frame.height),
        ));
    }
    let (ax, ay) = frame.to_user(left, frame.height - bottom);
    let (bx, by) = frame.to_user(right, frame.height - top);
    Ok(Rect { x0: ax.min(bx), y0: ay.min(by), x1: ax.max(bx), y1: ay.max(by) })
}

/// The widget's appearance: a framed box with who signed, when, why and where, upright
/// on the page as it is shown; an empty form for an invisible signature.
fn appearance(doc: &Document, page_id: Option<ObjectId>, rect: Rect, placement: &Placement) -> Stream {
    let rotation = page_id.map_or(0, |id| pdf::rotation(doc, id));
    // The box as the reader sees it, and the matrix turning it onto the page.
    let (w, h, matrix) = match rotation {
        90 => (rect.height(), rect.width(), [0.0, 1.0, -1.0, 0.0, 0.0, 0.0]),
        180 => (rect.width(), rect.height(), [-1.0, 0.0, 0.0, -1.0, 0.0, 0.0]),
        270 => (rect.height(), rect.width(), [0.0, -1.0, 1.0, 0.0, 0.0, 0.0]),
        _ => (rect.width(), rect.height(), [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
    };
    let mut dict = Dictionary::new();
    dict.set("Type", Object::Name(b"XObject".to_vec()));
    dict.set("Subtype", Object::Name(b"Form".to_vec()));
    dict.set("BBox", Object::Array(vec![0.into(), 0.into(), Object::Real(w as f32), Object::Real(h as f32)]));
    dict.set("Matrix", Object::Array(matrix.iter().map(|v| Object::Real(*v as f32)).collect()));
    if w <= 0.0 || h <= 0.0 {
        return Stream::new(dict, Vec::new());
    }
    let mut lines = vec![format!("Digitally signed by {}", placement.signer)];
    lines.push(format!(
        "Date: {}",
        placement
            .at
            .format(&time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC"))
            .unwrap_or_default()
    ));
    if let Some(reason) = &placement.reason {
        lines.push(format!("Reason: {reason}"));
    }
    if let Some(location) = &placement.location {
        lines.push(format!("Location: {location}"));
    }
    let encoded: Vec<Vec<u8>> = lines.iter().map(|l| lossy_win_ansi(l)).collect();
    let pad = (w.min(h) * 0.08).clamp(1.0, 6.0);
    let widest = encoded.iter().map(|l| stamp::text_width(l, 1.0)).fold(0.0, f64::max).max(1.0);
    let by_width = (w - 2.0 * pad) / widest;
    let by_height = (h - 2.0 * pad) / (encoded.len() as f64 * 1.25);
    let size = by_width.min(by_height).clamp(2.0, 12.0);
    let mut content = format!(
        "q 0 0 {w} {h} re W n 0.2 0.3 0.6 RG 0.8 w {m} {m} {iw} {ih} re S 0.1 0.1 0.1 rg BT /F1 {size} Tf ",
        w = stamp::num(w),
        h = stamp::num(h),
        m = stamp::num(0.4),
        iw = stamp::num(w - 0.8),
        ih = stamp::num(h - 0.8),
        size = stamp::num(size)
    );
    let block = encoded.len() as f64 * size * 1.25;
    let mut y = h / 2.0 + block / 2.0 - size;
    for line in &encoded {
        content.push_str(&format!("1 0 0 1 {} {} Tm {} Tj ", stamp::num(pad), stamp::num(y), stamp::literal(line)));
        y -= size * 1.25;
    }
    content.push_str("ET Q");
    let mut fonts = Dictionary::new();
    fonts.set("F1", Object::Dictionary(stamp::helvetica()));
    let mut resources = Dictionary::new();
    resources.set("Font", Object::Dictionary(fonts));
    dict.set("Resources", Object::Dictionary(resources));
    Stream::new(dict, content.into_bytes())
}

/// `text` in WinAnsi, characters Helvetica cannot show as `?`.
fn lossy_win_ansi(text: &str) -> Vec<u8> {
    text.chars().flat_map(|c| stamp::win_ansi(&c.to_string(), "").unwrap_or_else(|_| b"?".to_vec())).collect()
}
