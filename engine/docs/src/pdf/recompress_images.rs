//! The image part of `compress_pdf`: how large every image XObject is shown, then
//! downsampling the ones shown above a target resolution and re-encoding photos as JPEG.
//!
//! An image's effective resolution is its pixel size over the largest size it is drawn
//! at anywhere: page content, form XObjects, tiling patterns, soft-mask groups and
//! annotation appearances are walked with their transformation matrices. An image also
//! reachable from somewhere the walk does not size (a Type 3 glyph, a content stream
//! that does not parse) is left alone, as is every image never drawn.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use crate::context::Limits;
use crate::pdf;
use crate::pdf::flate::{inflate, zlib_best};

/// Most memory one image may take decoded (as in from-images): a bigger one is skipped.
pub const MAX_IMAGE_DECODE_BYTES: u64 = 256 * 1024 * 1024;

/// Content streams decoded larger than this are not parsed; their images are left alone.
const MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;
/// Decoded content the whole walk may parse before it gives up (and changes no image).
const MAX_TOTAL_CONTENT_BYTES: usize = 512 * 1024 * 1024;
/// Content operators the whole walk may look at before it gives up.
const MAX_OPERATIONS: usize = 50_000_000;
/// Most pixel bytes decoded for all images together; images past it are left alone.
const MAX_TOTAL_DECODE_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Deepest nesting of forms and patterns followed.
const MAX_DEPTH: usize = 24;
/// Deepest q/Q nesting tracked; deeper saves are counted, not stored.
const MAX_SAVE_STACK: usize = 4096;
/// Most objects followed when marking images that must be left alone.
const MAX_TAINT_OBJECTS: usize = 1_000_000;
/// A re-encoded JPEG at the same pixel size must save this much to be worth a generation.
const JPEG_REENCODE_GAIN: f64 = 0.9;

/// How images are recompressed.
#[derive(Clone, Copy, Debug)]
pub struct ImageSettings {
    /// Images shown above this resolution are downsampled to it.
    pub target_dpi: f64,
    /// JPEG quality of photos, 1-100.
    pub jpeg_quality: u8,
}

/// What the image pass changed.
#[derive(Clone, Debug, Default)]
pub struct ImageOutcome {
    /// Images written at a smaller pixel size.
    pub downsampled: usize,
    /// Images written at their pixel size in a new encoding.
    pub reencoded: usize,
    /// The image streams replaced: their data is final.
    pub replaced: HashSet<ObjectId>,
    /// Why the pass changed nothing, when it gave up on the whole document.
    pub gave_up: Option<&'static str>,
}

/// Downsamples and re-encodes the document's images in place.
pub fn recompress_images(doc: &mut Document, settings: ImageSettings, limits: &Limits) -> ImageOutcome {
    let mut outcome = ImageOutcome::default();
    let usages = {
        let mut walk = Walk::new(doc, limits);
        walk.pages();
        if let Some(reason) = walk.gave_up {
            outcome.gave_up = Some(reason);
            return outcome;
        }
        walk.usages()
    };
    let mut budget = MAX_TOTAL_DECODE_BYTES;
    for (id, usage) in usages {
        let Some(Object::Stream(stream)) = doc.objects.get(&id) else { continue };
        let Some((replacement, downsampled)) = recompress(doc, stream, usage, settings, &mut budget) else {
            continue;
        };
        doc.objects.insert(id, Object::Stream(replacement));
        outcome.replaced.insert(id);
        if downsampled {
            outcome.downsampled += 1;
        } else {
            outcome.reencoded += 1;
        }
    }
    outcome
}

/// The largest size an image is drawn at, in points, and whether it serves as a soft mask.
#[derive(Clone, Copy, Debug)]
struct Usage {
    width: f64,
    height: f64,
    mask: bool,
}

/// A transformation matrix `[a b c d e f]`.
type Matrix = [f64; 6];

const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the matrix mapping through `m` first (PDF's `m × n`).
fn mul(m: &Matrix, n: &Matrix) -> Matrix {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

fn finite(m: &Matrix) -> bool {
    m.iter().all(|v| v.is_finite())
}

fn operand_number(object: &Object) -> Option<f64> {
    match object {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(*r as f64),
        _ => None,
    }
}

fn matrix_of(doc: &Document, object: Option<&Object>) -> Option<Matrix> {
    let Some(object) = object else { return Some(IDENTITY) };
    let array = doc.dereference(object).ok()?.1.as_array().ok()?;
    let values: Vec<f64> = array.iter().filter_map(|o| pdf::number(doc, o)).collect();
    let m: Matrix = values.try_into().ok()?;
    finite(&m).then_some(m)
}

/// Walks every page and records where images are drawn.
struct Walk<'a> {
    doc: &'a Document,
    max_stream_bytes: usize,
    drawn: HashMap<ObjectId, (f64, f64)>,
    tainted: HashSet<ObjectId>,
    taint_seen: HashSet<ObjectId>,
    parsed: HashMap<ObjectId, Option<Rc<Vec<Operation>>>>,
    invocations: HashSet<(ObjectId, [u64; 4])>,
    operations_left: usize,
    bytes_left: usize,
    gave_up: Option<&'static str>,
}

impl<'a> Walk<'a> {
    fn new(doc: &'a Document, limits: &Limits) -> Self {
        Walk {
            doc,
            max_stream_bytes: limits.max_stream_bytes.min(MAX_CONTENT_BYTES),
            drawn: HashMap::new(),
            tainted: HashSet::new(),
            taint_seen: HashSet::new(),
            parsed: HashMap::new(),
            invocations: HashSet::new(),
            operations_left: MAX_OPERATIONS,
            bytes_left: MAX_TOTAL_CONTENT_BYTES,
            gave_up: None,
        }
    }

    fn pages(&mut self) {
        let doc = self.doc;
        for page_id in doc.page_iter() {
            if self.gave_up.is_some() {
                return;
            }
            let Ok(page) = doc.get_dictionary(page_id) else { continue };
            let unit = page
                .get(b"UserUnit")
                .ok()
                .and_then(|o| pdf::number(doc, o))
                .filter(|u| u.is_finite() && *u > 0.0)
                .unwrap_or(1.0);
            let start: Matrix = [unit, 0.0, 0.0, unit, 0.0, 0.0];
            let resources =
                pdf::inherited(doc, page_id, b"Resources").and_then(|o| doc.dereference(o).ok()?.1.as_dict().ok());
            let mut data = Vec::new();
            let mut readable = true;
            for content in pdf::content_refs(doc, page) {
                let Object::Reference(id) = content else { continue };
                match self.stream_data(id) {
                    Some(bytes) if data.len() + bytes.len() <= self.max_stream_bytes => {
                        data.extend_from_slice(&bytes);
                        // Operators may not span streams, but tokens need a separator.
                        data.push(b'\n');
                    }
                    _ => readable = false,
                }
            }
            match readable.then(|| self.parse(&data)).flatten() {
                Some(ops) => self.walk_ops(&ops, resources, start, 0, &mut Vec::new()),
                None => self.taint_dict(resources),
            }
            self.annotations(page, start);
        }
    }

    /// Annotation appearances: each form's BBox (through its Matrix) is fitted to the Rect.
    fn annotations(&mut self, page: &'a Dictionary, start: Matrix) {
        let doc = self.doc;
        let Some(annots) = page.get(b"Annots").ok().and_then(|o| doc.dereference(o).ok()?.1.as_array().ok()) else {
            return;
        };
        for annot in annots {
            let Some(annot) = doc.dereference(annot).ok().and_then(|(_, o)| o.as_dict().ok()) else { continue };
            let Some(ap) = pdf::dict_at(doc, annot, b"AP") else { continue };
            let rect = annot.get(b"Rect").ok().and_then(|o| pdf::rect(doc, o));
            for key in [&b"N"[..], b"R", b"D"] {
                let Ok(entry) = ap.get(key) else { continue };
                let mut forms = Vec::new();
                match entry {
                    Object::Reference(id) => match doc.get_object(*id) {
                        Ok(Object::Stream(_)) => forms.push(*id),
                        Ok(Object::Dictionary(states)) => {
                            forms.extend(states.iter().filter_map(|(_, o)| o.as_reference().ok()))
                        }
                        _ => {}
                    },
                    Object::Dictionary(states) => {
                        forms.extend(states.iter().filter_map(|(_, o)| o.as_reference().ok()))
                    }
                    _ => {}
                }
                for form in forms {
                    match rect.and_then(|r| appearance_matrix(doc, form, r)) {
                        Some(fit) => self.walk_form(form, mul(&fit, &start), None, 0, &mut Vec::new()),
                        None => self.taint(&Object::Reference(form)),
                    }
                }
            }
        }
    }

    fn stream_data(&mut self, id: ObjectId) -> Option<Vec<u8>> {
        let stream = self.doc.get_object(id).ok()?.as_stream().ok()?;
        let data = stream.decompressed_content_with_limit(self.max_stream_bytes).ok()?;
        match self.bytes_left.checked_sub(data.len()) {
            Some(left) => self.bytes_left = left,
            None => self.gave_up = Some("the content streams are too large to analyse"),
        }
        Some(data)
    }

    fn parse(&mut self, data: &[u8]) -> Option<Rc<Vec<Operation>>> {
        if self.gave_up.is_some() {
            return None;
        }
        // Strict: a stream that stops parsing half-way may draw images after the point.
        Content::decode_strict(data).ok().map(|c| Rc::new(c.operations))
    }

    /// The operations of a form or pattern stream, parsed once.
    fn stream_ops(&mut self, id: ObjectId) -> Option<Rc<Vec<Operation>>> {
        if let Some(cached) = self.parsed.get(&id) {
            return cached.clone();
        }
        let ops = self.stream_data(id).and_then(|data| self.parse(&data));
        self.parsed.insert(id, ops.clone());
        ops
    }

    fn walk_ops(
        &mut self,
        ops: &[Operation],
        resources: Option<&'a Dictionary>,
        start: Matrix,
        depth: usize,
        chain: &mut Vec<ObjectId>,
    ) {
        let doc = self.doc;
        if let Some(resources) = resources {
            self.patterns(resources, start, depth, chain);
            self.type3_fonts(resources);
        }
        let mut ctm = start;
        let mut stack: Vec<Matrix> = Vec::new();
        let mut uncounted_saves = 0usize;
        for op in ops {
            if self.gave_up.is_some() {
                return;
            }
            match self.operations_left.checked_sub(1) {
                Some(left) => self.operations_left = left,
                None => {
                    self.gave_up = Some("the page content is too large to analyse");
                    return;
                }
            }
            match op.operator.as_str() {
                "q" => {
                    if stack.len() < MAX_SAVE_STACK {
                        stack.push(ctm);
                    } else {
                        uncounted_saves += 1;
                    }
                }
                "Q" => {
                    if uncounted_saves > 0 {
                        uncounted_saves -= 1;
                    } else if let Some(saved) = stack.pop() {
                        ctm = saved;
                    }
                }
                "cm" => {
                    let values: Vec<f64> = op.operands.iter().filter_map(operand_number).collect();
                    if let Ok(m) = <Matrix>::try_from(values) {
                        let next = mul(&m, &ctm);
                        if finite(&next) {
                            ctm = next;
                        }
                    }
                }
                "Do" => {
                    let Some(id) = named_resource(doc, resources, b"XObject", op) else { continue };
                    let Ok(Object::Stream(stream)) = doc.get_object(id) else { continue };
                    match stream.dict.get(b"Subtype").and_then(Object::as_name) {
                        Ok(b"Image") => self.draw(id, &ctm),
                        Ok(b"Form") => self.walk_form(id, ctm, resources, depth + 1, chain),
                        _ => {}
                    }
                }
                "gs" => {
                    let Some(state) = op
                        .operands
                        .first()
                        .and_then(|name| name.as_name().ok())
                        .and_then(|name| pdf::dict_at(doc, pdf::dict_at(doc, resources?, b"ExtGState")?, name))
                    else {
                        continue;
                    };
                    // A soft mask's group is painted in the coordinates current at `gs`.
                    if let Some(mask) = pdf::dict_at(doc, state, b"SMask")
                        && let Ok(Object::Reference(group)) = mask.get(b"G")
                    {
                        self.walk_form(*group, ctm, None, depth + 1, chain);
                    }
                }
                _ => {}
            }
        }
    }

    fn draw(&mut self, id: ObjectId, ctm: &Matrix) {
        let width = ctm[0].hypot(ctm[1]);
        let height = ctm[2].hypot(ctm[3]);
        if !(width.is_finite() && height.is_finite()) {
            self.tainted.insert(id);
            return;
        }
        let entry = self.drawn.entry(id).or_insert((0.0, 0.0));
        entry.0 = entry.0.max(width);
        entry.1 = entry.1.max(height);
    }

    fn walk_form(
        &mut self,
        id: ObjectId,
        ctm: Matrix,
        parent_resources: Option<&'a Dictionary>,
        depth: usize,
        chain: &mut Vec<ObjectId>,
    ) {
        let doc = self.doc;
        if depth > MAX_DEPTH || chain.contains(&id) {
            return;
        }
        let Ok(Object::Stream(form)) = doc.get_object(id) else { return };
        let own = pdf::dict_at(doc, &form.dict, b"Resources");
        // A form without resources of its own draws its parent's (PDF 1.1 files do
        // this), so what it draws depends on the parent: such a form is walked each time.
        if own.is_some() && !self.first_invocation(id, &ctm) {
            return;
        }
        let Some(matrix) = matrix_of(doc, form.dict.get(b"Matrix").ok()) else {
            self.taint(&Object::Reference(id));
            return;
        };
        let resources = own.or(parent_resources);
        let Some(ops) = self.stream_ops(id) else {
            self.taint_dict(resources);
            return;
        };
        chain.push(id);
        self.walk_ops(&ops, resources, mul(&matrix, &ctm), depth, chain);
        chain.pop();
    }

    /// Tiling patterns map to the default space of the content stream using them.
    fn patterns(&mut self, resources: &'a Dictionary, start: Matrix, depth: usize, chain: &mut Vec<ObjectId>) {
        let doc = self.doc;
        let Some(patterns) = pdf::dict_at(doc, resources, b"Pattern") else { return };
        for (_, entry) in patterns.iter() {
            let Ok(id) = entry.as_reference() else { continue };
            let Ok(Object::Stream(pattern)) = doc.get_object(id) else { continue };
            if depth + 1 > MAX_DEPTH || chain.contains(&id) || !self.first_invocation(id, &start) {
                continue;
            }
            let Some(matrix) = matrix_of(doc, pattern.dict.get(b"Matrix").ok()) else {
                self.taint(&Object::Reference(id));
                continue;
            };
            let own = pdf::dict_at(doc, &pattern.dict, b"Resources");
            let Some(ops) = self.stream_ops(id) else {
                self.taint_dict(own);
                continue;
            };
            chain.push(id);
            self.walk_ops(&ops, own, mul(&matrix, &start), depth + 1, chain);
            chain.pop();
        }
    }

    /// Type 3 glyphs are drawn at sizes the walk does not follow: their images stay.
    fn type3_fonts(&mut self, resources: &'a Dictionary) {
        let doc = self.doc;
        let Some(fonts) = pdf::dict_at(doc, resources, b"Font") else { return };
        for (_, font) in fonts.iter() {
            let Some(font) = doc.dereference(font).ok().and_then(|(_, o)| o.as_dict().ok()) else { continue };
            if font.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Type3")
                && let Ok(own) = font.get(b"Resources")
            {
                self.taint(own);
            }
        }
    }

    /// Whether `id` is drawn at this scale and rotation for the first time (a form
    /// repeated on every page is walked once).
    fn first_invocation(&mut self, id: ObjectId, ctm: &Matrix) -> bool {
        // Sizes depend on the linear part only: a logo at another place is the same size.
        self.invocations.insert((id, [ctm[0], ctm[1], ctm[2], ctm[3]].map(f64::to_bits)))
    }

    fn taint_dict(&mut self, dict: Option<&Dictionary>) {
        if let Some(dict) = dict {
            let mut ids = Vec::new();
            dict_refs(dict, &mut ids);
            self.taint_ids(ids);
        }
    }

    /// Marks every image reachable from `root` as one to leave alone.
    fn taint(&mut self, root: &Object) {
        let mut ids = Vec::new();
        object_refs(root, &mut ids);
        self.taint_ids(ids);
    }

    fn taint_ids(&mut self, mut ids: Vec<ObjectId>) {
        let doc = self.doc;
        while let Some(id) = ids.pop() {
            if !self.taint_seen.insert(id) {
                continue;
            }
            if self.taint_seen.len() > MAX_TAINT_OBJECTS {
                self.gave_up = Some("the document has too many objects to analyse");
                return;
            }
            let Ok(target) = doc.get_object(id) else { continue };
            if let Object::Stream(stream) = target
                && stream.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image")
            {
                self.tainted.insert(id);
            }
            object_refs(target, &mut ids);
        }
    }

    /// The images to consider, with the largest size each is shown at; soft masks take
    /// the sizes of the images they mask.
    fn usages(mut self) -> Vec<(ObjectId, Usage)> {
        let doc = self.doc;
        let mask_of = |id: &ObjectId| -> Option<(ObjectId, bool)> {
            let stream = doc.get_object(*id).ok()?.as_stream().ok()?;
            let mask = stream.dict.get(b"SMask").ok()?.as_reference().ok()?;
            let matte = doc.get_object(mask).ok()?.as_stream().ok()?.dict.has(b"Matte");
            Some((mask, matte))
        };
        // A mask with /Matte must keep its image's size: neither is touched.
        let parents: Vec<ObjectId> = self.drawn.keys().chain(self.tainted.iter()).copied().collect();
        for parent in &parents {
            if let Some((mask, matte)) = mask_of(parent) {
                if matte || self.tainted.contains(parent) {
                    self.tainted.insert(mask);
                }
                if matte {
                    self.tainted.insert(*parent);
                }
            }
        }
        let mut usages: HashMap<ObjectId, Usage> = HashMap::new();
        for (&id, &(width, height)) in &self.drawn {
            if self.tainted.contains(&id) {
                continue;
            }
            let own = usages.entry(id).or_insert(Usage { width: 0.0, height: 0.0, mask: false });
            own.width = own.width.max(width);
            own.height = own.height.max(height);
            if let Some((mask, _)) = mask_of(&id)
                && !self.tainted.contains(&mask)
            {
                let entry = usages.entry(mask).or_insert(Usage { width: 0.0, height: 0.0, mask: true });
                entry.width = entry.width.max(width);
                entry.height = entry.height.max(height);
                entry.mask = true;
            }
        }
        self.drawn.clear();
        let mut list: Vec<(ObjectId, Usage)> = usages.into_iter().collect();
        list.sort_by_key(|(id, _)| *id);
        list
    }
}

/// The references in an object and the containers directly inside it.
fn object_refs(object: &Object, out: &mut Vec<ObjectId>) {
    match object {
        Object::Reference(id) => out.push(*id),
        Object::Array(items) => items.iter().for_each(|i| object_refs(i, out)),
        Object::Dictionary(dict) => dict_refs(dict, out),
        Object::Stream(stream) => dict_refs(&stream.dict, out),
        _ => {}
    }
}

fn dict_refs(dict: &Dictionary, out: &mut Vec<ObjectId>) {
    for (key, value) in dict.iter() {
        // Back-links lead to the page tree and from there to everything.
        if key != b"Parent" && key != b"P" {
            object_refs(value, out);
        }
    }
}

/// The object named by the first operand of `op` in the resource category.
fn named_resource(doc: &Document, resources: Option<&Dictionary>, category: &[u8], op: &Operation) -> Option<ObjectId> {
    let name = op.operands.first()?.as_name().ok()?;
    let entries = pdf::dict_at(doc, resources?, category)?;
    entries.get(name).ok()?.as_reference().ok()
}

/// The matrix placing an appearance form on the page (ISO 32000-1, 12.5.5), without the
/// form's own Matrix (the form walk applies it).
fn appearance_matrix(doc: &Document, form: ObjectId, rect: pdf::Rect) -> Option<Matrix> {
    let stream = doc.get_object(form).ok()?.as_stream().ok()?;
    let bbox = pdf::rect(doc, stream.dict.get(b"BBox").ok()?)?;
    let matrix = matrix_of(doc, stream.dict.get(b"Matrix").ok())?;
    let corners = [(bbox.x0, bbox.y0), (bbox.x1, bbox.y0), (bbox.x0, bbox.y1), (bbox.x1, bbox.y1)];
    let points: Vec<(f64, f64)> = corners
        .iter()
        .map(|&(x, y)| (matrix[0] * x + matrix[2] * y + matrix[4], matrix[1] * x + matrix[3] * y + matrix[5]))
        .collect();
    let x0 = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x1 = points.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y0 = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y1 = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (w, h) = (x1 - x0, y1 - y0);
    if !(w > 1e-9 && h > 1e-9) {
        return None;
    }
    let (sx, sy) = (rect.width() / w, rect.height() / h);
    let fit = [sx, 0.0, 0.0, sy, rect.x0 - sx * x0, rect.y0 - sy * y0];
    finite(&fit).then_some(fit)
}

/// How an image's samples are stored, among the encodings handled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Encoding {
    Raw,
    Flate,
    Dct,
}

/// Decoded 8-bit samples, 1 (gray) or 3 (RGB) per pixel.
struct Pixels {
    width: u32,
    height: u32,
    components: usize,
    data: Vec<u8>,
}

/// The replacement stream for an image and whether it was downsampled, when the image is
/// one handled and the new stream is smaller.
fn recompress(
    doc: &Document,
    stream: &Stream,
    usage: Usage,
    settings: ImageSettings,
    budget: &mut u64,
) -> Option<(Stream, bool)> {
    let dict = &stream.dict;
    if dict.get(b"Subtype").and_then(Object::as_name).ok() != Some(b"Image")
        || dict.get(b"ImageMask").and_then(Object::as_bool).unwrap_or(false)
        || dict.has(b"Decode")
        // A colour-key mask needs exact colours, which JPEG does not keep; with a soft
        // mask beside it, readers ignore the colour key (ISO 32000-1, 11.6.5.2).
        || (matches!(dict.get(b"Mask"), Ok(Object::Array(_))) && !dict.has(b"SMask"))
        || int(doc, dict, b"BitsPerComponent")? != 8
    {
        return None;
    }
    let width = u32::try_from(int(doc, dict, b"Width")?).ok().filter(|w| *w > 0)?;
    let height = u32::try_from(int(doc, dict, b"Height")?).ok().filter(|h| *h > 0)?;
    let components = components(doc, dict.get(b"ColorSpace").ok()?)?;
    if usage.mask && components != 1 {
        return None;
    }
    let decoded_bytes = width as u64 * height as u64 * components as u64;
    if decoded_bytes > MAX_IMAGE_DECODE_BYTES || decoded_bytes > *budget {
        return None;
    }
    let (encoding, flate_over_jpeg) = image_filters(doc, dict)?;
    if !(usage.width > 0.0 && usage.height > 0.0) {
        return None;
    }
    let target = |inches: f64, pixels: u32| -> u32 {
        let wanted = (inches * settings.target_dpi).ceil();
        if wanted.is_finite() && wanted >= 1.0 && wanted < pixels as f64 { wanted as u32 } else { pixels }
    };
    let new_width = target(usage.width / 72.0, width);
    let new_height = target(usage.height / 72.0, height);
    let downsample = new_width < width || new_height < height;
    // A mask is never stored as JPEG: at its own size there is nothing to do.
    if !downsample && usage.mask {
        return None;
    }
    *budget -= decoded_bytes;
    let pixels = match encoding {
        Encoding::Dct if flate_over_jpeg => {
            let jpeg = inflate(&stream.content, MAX_IMAGE_DECODE_BYTES as usize)?;
            decode_jpeg(&jpeg, width, height, components)?
        }
        Encoding::Dct => decode_jpeg(&stream.content, width, height, components)?,
        Encoding::Raw | Encoding::Flate => decode_samples(doc, dict, stream, encoding, width, height, components)?,
    };
    let photo = !usage.mask && (encoding == Encoding::Dct || continuous_tone(&pixels));
    if !downsample && !photo {
        return None;
    }
    let pixels = if downsample { resize(pixels, new_width, new_height)? } else { pixels };
    let (content, filter) = if photo {
        (encode_jpeg(&pixels, settings.jpeg_quality)?, "DCTDecode")
    } else {
        (zlib_best(&pixels.data), "FlateDecode")
    };
    let limit = if !downsample && encoding == Encoding::Dct {
        (stream.content.len() as f64 * JPEG_REENCODE_GAIN) as usize
    } else {
        stream.content.len()
    };
    if content.len() >= limit {
        return None;
    }
    let mut new_dict = dict.clone();
    new_dict.set("Width", pixels.width as i64);
    new_dict.set("Height", pixels.height as i64);
    new_dict.set("BitsPerComponent", 8);
    new_dict.set("Filter", Object::Name(filter.as_bytes().to_vec()));
    new_dict.remove(b"DecodeParms");
    if new_dict.has(b"SMask") {
        new_dict.remove(b"Mask");
    }
    Some((Stream::new(new_dict, content), downsample))
}

fn int(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<i64> {
    match doc.dereference(dict.get(key).ok()?).ok()?.1 {
        Object::Integer(i) => Some(*i),
        _ => None,
    }
}

/// Components per pixel of the colour spaces handled: DeviceGray, DeviceRGB, and
/// ICCBased with 1 or 3 components.
fn components(doc: &Document, space: &Object) -> Option<usize> {
    match doc.dereference(space).ok()?.1 {
        Object::Name(name) if name == b"DeviceRGB" => Some(3),
        Object::Name(name) if name == b"DeviceGray" => Some(1),
        Object::Array(items) if items.len() == 2 && items.first()?.as_name().ok()? == b"ICCBased" => {
            let profile = doc.dereference(items.get(1)?).ok()?.1.as_stream().ok()?;
            match int(doc, &profile.dict, b"N")? {
                1 => Some(1),
                3 => Some(3),
                _ => None,
            }
        }
        _ => None,
    }
}

/// How the image's samples are stored, and whether a Flate layer wraps a JPEG; None for
/// other filters and chains.
fn image_filters(doc: &Document, dict: &Dictionary) -> Option<(Encoding, bool)> {
    let names: Vec<&[u8]> = match dict.get(b"Filter") {
        Err(_) => Vec::new(),
        Ok(filter) => match doc.dereference(filter).ok()?.1 {
            Object::Name(name) => vec![name.as_slice()],
            Object::Array(items) => items.iter().map(|i| i.as_name().ok()).collect::<Option<_>>()?,
            _ => return None,
        },
    };
    // ColorTransform overrides what the JPEG says; the decoder would not know. Other
    // entries (some producers note a /Quality) change nothing.
    let plain_jpeg = |parms: Option<&Object>| match parms.map(|p| doc.dereference(p).map(|(_, o)| o)) {
        None | Some(Ok(Object::Null)) => true,
        Some(Ok(Object::Dictionary(d))) => !d.has(b"ColorTransform"),
        Some(_) => false,
    };
    let parms = dict.get(b"DecodeParms").ok();
    match names.as_slice() {
        [] => Some((Encoding::Raw, false)),
        [b"FlateDecode"] => Some((Encoding::Flate, false)),
        [b"DCTDecode"] => {
            let single = match parms.map(|p| doc.dereference(p).map(|(_, o)| o)) {
                Some(Ok(Object::Array(items))) if items.len() == 1 => items.first(),
                _ => parms,
            };
            plain_jpeg(single).then_some((Encoding::Dct, false))
        }
        // Some producers deflate their JPEGs: a plain Flate layer over one.
        [b"FlateDecode", b"DCTDecode"] => {
            let (flate, jpeg) = match parms.map(|p| doc.dereference(p).map(|(_, o)| o)) {
                None | Some(Ok(Object::Null)) => (None, None),
                Some(Ok(Object::Array(items))) if items.len() == 2 => (items.first(), items.get(1)),
                _ => return None,
            };
            let plain_flate = match flate.map(|p| doc.dereference(p).map(|(_, o)| o)) {
                None | Some(Ok(Object::Null)) => true,
                Some(Ok(Object::Dictionary(d))) => !d.has(b"Predictor"),
                Some(_) => false,
            };
            (plain_flate && plain_jpeg(jpeg)).then_some((Encoding::Dct, true))
        }
        _ => None,
    }
}

/// The decode parameters of a single-filter stream (a one-element array unwrapped).
fn decode_parms<'d>(doc: &'d Document, dict: &'d Dictionary) -> Option<Option<&'d Dictionary>> {
    let Ok(parms) = dict.get(b"DecodeParms") else { return Some(None) };
    match doc.dereference(parms).ok()?.1 {
        Object::Null => Some(None),
        Object::Dictionary(d) => Some(Some(d)),
        Object::Array(items) if items.len() <= 1 => match items.first() {
            None => Some(None),
            Some(item) => match doc.dereference(item).ok()?.1 {
                Object::Null => Some(None),
                Object::Dictionary(d) => Some(Some(d)),
                _ => None,
            },
        },
        _ => None,
    }
}

fn decode_samples(
    doc: &Document,
    dict: &Dictionary,
    stream: &Stream,
    encoding: Encoding,
    width: u32,
    height: u32,
    components: usize,
) -> Option<Pixels> {
    let row = width as usize * components;
    let size = row * height as usize;
    let (predictor, parms) = match decode_parms(doc, dict)? {
        None => (1, None),
        Some(parms) => (parms.get(b"Predictor").ok().map_or(Some(1.0), |o| pdf::number(doc, o))? as i64, Some(parms)),
    };
    if predictor > 1 {
        // The predictor's own idea of the row must be the image's.
        let parms = parms?;
        let param = |key: &[u8], default: f64| parms.get(key).ok().map_or(Some(default), |o| pdf::number(doc, o));
        if param(b"Colors", 1.0)? != components as f64
            || param(b"BitsPerComponent", 8.0)? != 8.0
            || param(b"Columns", 1.0)? != width as f64
        {
            return None;
        }
    }
    let png = predictor >= 10;
    let expected = if png { (row + 1) * height as usize } else { size };
    let mut data = match encoding {
        Encoding::Flate => inflate(&stream.content, expected + 4096)?,
        Encoding::Raw if predictor == 1 => stream.content.clone(),
        _ => return None,
    };
    if data.len() < expected {
        return None;
    }
    data.truncate(expected);
    let data = match predictor {
        1 => data,
        2 => {
            for line in data.chunks_exact_mut(row) {
                for i in components..line.len() {
                    line[i] = line[i].wrapping_add(line[i - components]);
                }
            }
            data
        }
        10..=15 => unpredict_png(&data, row, components)?,
        _ => return None,
    };
    Some(Pixels { width, height, components, data })
}

/// Undoes PNG row filters (one filter byte per row) for 8-bit samples.
fn unpredict_png(data: &[u8], row: usize, bpp: usize) -> Option<Vec<u8>> {
    let rows = data.len() / (row + 1);
    let mut out = vec![0u8; rows * row];
    for r in 0..rows {
        let src = data.get(r * (row + 1)..(r + 1) * (row + 1))?;
        let (filter, line) = src.split_first()?;
        let (done, rest) = out.split_at_mut(r * row);
        let prev = if r == 0 { None } else { done.get((r - 1) * row..) };
        let cur = rest.get_mut(..row)?;
        for i in 0..row {
            let a = if i >= bpp { cur[i - bpp] } else { 0 };
            let b = prev.map_or(0, |p| p[i]);
            let c = if i >= bpp { prev.map_or(0, |p| p[i - bpp]) } else { 0 };
            let x = line[i];
            cur[i] = match filter {
                0 => x,
                1 => x.wrapping_add(a),
                2 => x.wrapping_add(b),
                3 => x.wrapping_add(((a as u16 + b as u16) / 2) as u8),
                4 => x.wrapping_add(paeth(a, b, c)),
                _ => return None,
            };
        }
    }
    Some(out)
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let (pa, pb, pc) = ((p - a as i16).abs(), (p - b as i16).abs(), (p - c as i16).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// What a JPEG's frame header says.
struct JpegHeader {
    width: u32,
    height: u32,
    components: usize,
    precision: u8,
    /// The Adobe APP14 colour transform, when the marker is there.
    adobe_transform: Option<u8>,
}

fn jpeg_header(data: &[u8]) -> Option<JpegHeader> {
    if data.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut at = 2;
    let mut adobe_transform = None;
    while at + 4 <= data.len() {
        if data[at] != 0xFF {
            return None;
        }
        let marker = data[at + 1];
        if marker == 0xFF {
            at += 1;
            continue;
        }
        if marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
            at += 2;
            continue;
        }
        let length = u16::from_be_bytes([data[at + 2], data[at + 3]]) as usize;
        let segment = data.get(at + 4..at + 2 + length)?;
        match marker {
            0xEE if segment.starts_with(b"Adobe") => adobe_transform = segment.get(11).copied(),
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                return Some(JpegHeader {
                    precision: *segment.first()?,
                    height: u16::from_be_bytes([*segment.get(1)?, *segment.get(2)?]) as u32,
                    width: u16::from_be_bytes([*segment.get(3)?, *segment.get(4)?]) as u32,
                    components: *segment.get(5)? as usize,
                    adobe_transform,
                });
            }
            0xDA | 0xD9 => return None,
            _ => {}
        }
        at += 2 + length;
    }
    None
}

fn decode_jpeg(data: &[u8], width: u32, height: u32, components: usize) -> Option<Pixels> {
    use image::ImageDecoder as _;
    let header = jpeg_header(data)?;
    if header.precision != 8 || header.components != components || (header.width, header.height) != (width, height) {
        return None;
    }
    // Three components the Adobe marker says are RGB, not YCbCr.
    if components == 3 && header.adobe_transform == Some(0) {
        return None;
    }
    let mut decoder = image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(data)).ok()?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_IMAGE_DECODE_BYTES);
    decoder.set_limits(limits).ok()?;
    let wanted = if components == 3 { image::ColorType::Rgb8 } else { image::ColorType::L8 };
    if decoder.dimensions() != (width, height) || decoder.color_type() != wanted {
        return None;
    }
    let mut buffer = vec![0u8; usize::try_from(decoder.total_bytes()).ok()?];
    decoder.read_image(&mut buffer).ok()?;
    Some(Pixels { width, height, components, data: buffer })
}

/// Whether the samples look like a photo (many colours, none dominant) rather than line
/// art, text or flat graphics, which JPEG would blur.
fn continuous_tone(pixels: &Pixels) -> bool {
    let count = pixels.width as usize * pixels.height as usize;
    if count < 64 {
        return false;
    }
    let step = (count / 40_000).max(1);
    let mut colours: HashMap<u32, u32> = HashMap::new();
    let mut sampled = 0u32;
    for chunk in pixels.data.chunks_exact(pixels.components).step_by(step) {
        let key = chunk.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32);
        *colours.entry(key).or_insert(0) += 1;
        sampled += 1;
    }
    let enough = if pixels.components == 1 { 64 } else { 256 };
    if colours.len() < enough {
        return false;
    }
    let mut counts: Vec<u32> = colours.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let dominant: u32 = counts.iter().take(16).sum();
    (dominant as f64) < 0.5 * sampled as f64
}

fn resize(pixels: Pixels, width: u32, height: u32) -> Option<Pixels> {
    use image::imageops::FilterType;
    let components = pixels.components;
    let image = if components == 3 {
        image::DynamicImage::ImageRgb8(image::RgbImage::from_raw(pixels.width, pixels.height, pixels.data)?)
    } else {
        image::DynamicImage::ImageLuma8(image::GrayImage::from_raw(pixels.width, pixels.height, pixels.data)?)
    };
    let resized = image.resize_exact(width, height, FilterType::Triangle);
    Some(Pixels { width, height, components, data: resized.into_bytes() })
}

fn encode_jpeg(pixels: &Pixels, quality: u8) -> Option<Vec<u8>> {
    let colour = if pixels.components == 3 { image::ExtendedColorType::Rgb8 } else { image::ExtendedColorType::L8 };
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode(&pixels.data, pixels.width, pixels.height, colour)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_compose_in_pdf_order() {
        let scale = [2.0, 0.0, 0.0, 3.0, 0.0, 0.0];
        let shift = [1.0, 0.0, 0.0, 1.0, 10.0, 20.0];
        // Scale first, then shift: the translation is not scaled.
        assert_eq!(mul(&scale, &shift), [2.0, 0.0, 0.0, 3.0, 10.0, 20.0]);
        assert_eq!(mul(&shift, &scale), [2.0, 0.0, 0.0, 3.0, 20.0, 60.0]);
    }

    #[test]
    fn png_rows_are_unfiltered() {
        // Two rows of 3 gray pixels: Sub then Up.
        let data = [1, 10, 5, 5, 2, 1, 1, 1];
        assert_eq!(unpredict_png(&data, 3, 1).unwrap(), vec![10, 15, 20, 11, 16, 21]);
        assert!(unpredict_png(&[9, 0, 0, 0], 3, 1).is_none());
    }

    #[test]
    fn reads_jpeg_headers() {
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80)
            .encode(&[0u8; 5 * 7 * 3], 5, 7, image::ExtendedColorType::Rgb8)
            .unwrap();
        let header = jpeg_header(&out).unwrap();
        assert_eq!((header.width, header.height, header.components, header.precision), (5, 7, 3, 8));
        assert!(jpeg_header(b"not a jpeg").is_none());
    }

    #[test]
    fn tells_photos_from_flat_graphics() {
        let noise: Vec<u8> = (0..200u32 * 200 * 3).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert!(continuous_tone(&Pixels { width: 200, height: 200, components: 3, data: noise }));
        let flat: Vec<u8> = (0..200u32 * 200).map(|i| if i % 7 == 0 { 0 } else { 255 }).collect();
        assert!(!continuous_tone(&Pixels { width: 200, height: 200, components: 1, data: flat }));
    }
}
