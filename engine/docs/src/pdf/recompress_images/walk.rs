//! How large every image is shown: page content, form XObjects, tiling patterns,
//! soft-mask groups and annotation appearances walked with their transformation matrices,
//! each image's largest drawn size kept ([`Usage`]). An image also reachable from somewhere
//! the walk does not size (a Type 3 glyph, a content stream that does not parse) is
//! tainted and left out, as is every image never drawn.
//!
//! What this module must not do: change the document, or parse past its content and
//! operation budgets (it gives up instead, and then no image is changed).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, ObjectId};

use crate::context::Limits;
use crate::pdf;
use crate::pdf::{IDENTITY, Matrix, concat as mul};

/// Content streams decoded larger than this are not parsed; their images are left alone.
const MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;
/// Decoded content the whole walk may parse before it gives up (and changes no image).
const MAX_TOTAL_CONTENT_BYTES: usize = 512 * 1024 * 1024;
/// Content operators the whole walk may look at before it gives up.
const MAX_OPERATIONS: usize = 50_000_000;
/// Parsed operations the walk may hold at once (each about 100 bytes once trimmed): a content
/// stream of millions of tiny operators (`q q q …`) is given up on, not held.
const MAX_HELD_OPERATIONS: usize = 2_000_000;
/// Deepest nesting of forms and patterns followed.
const MAX_DEPTH: usize = 24;
/// Deepest q/Q nesting tracked; deeper saves are counted, not stored.
const MAX_SAVE_STACK: usize = 4096;
/// Most objects followed when marking images that must be left alone.
const MAX_TAINT_OBJECTS: usize = 1_000_000;

/// The largest size an image is drawn at, in points, and whether it serves as a soft mask.
#[derive(Clone, Copy, Debug)]
pub(super) struct Usage {
    pub(super) width: f64,
    pub(super) height: f64,
    pub(super) mask: bool,
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
pub(super) struct Walk<'a> {
    doc: &'a Document,
    max_stream_bytes: usize,
    drawn: HashMap<ObjectId, (f64, f64)>,
    tainted: HashSet<ObjectId>,
    taint_seen: HashSet<ObjectId>,
    parsed: HashMap<ObjectId, Option<Rc<Vec<Operation>>>>,
    invocations: HashSet<(ObjectId, [u64; 4])>,
    operations_left: usize,
    held_left: usize,
    bytes_left: usize,
    pub(super) gave_up: Option<&'static str>,
}

impl<'a> Walk<'a> {
    pub(super) fn new(doc: &'a Document, limits: &Limits) -> Self {
        Walk {
            doc,
            max_stream_bytes: limits.max_stream_bytes.min(MAX_CONTENT_BYTES),
            drawn: HashMap::new(),
            tainted: HashSet::new(),
            taint_seen: HashSet::new(),
            parsed: HashMap::new(),
            invocations: HashSet::new(),
            operations_left: MAX_OPERATIONS,
            held_left: MAX_HELD_OPERATIONS,
            bytes_left: MAX_TOTAL_CONTENT_BYTES,
            gave_up: None,
        }
    }

    pub(super) fn pages(&mut self) {
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
        let mut operations = Vec::new();
        for operation in Content::decode_iter(data) {
            let Some(left) = self.held_left.checked_sub(1) else {
                self.gave_up = Some("the content streams have too many operators to analyse");
                return None;
            };
            self.held_left = left;
            let mut operation = operation.ok()?;
            // The parser leaves room for four operands whatever the operator had (several
            // hundred bytes): held by the million, that room is given back.
            operation.operands.shrink_to_fit();
            operations.push(operation);
        }
        Some(Rc::new(operations))
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
    pub(super) fn usages(mut self) -> Vec<(ObjectId, Usage)> {
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
}
