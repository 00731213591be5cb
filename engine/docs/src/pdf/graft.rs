//! Lays a page of another PDF over a page of this one as a form XObject, scaled to the
//! visible page whatever its crop box and rotation: how an OCR text layer (a text-only
//! page the size of the rendered image) joins the scanned page it was read from, the
//! page's own content left untouched.

use std::collections::HashMap;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use crate::error::EngineError;
use crate::pdf::{self, stamp};

/// Nesting followed when copying objects; the layers this module copies are shallow.
const MAX_DEPTH: usize = 32;

/// Copies objects from one source document into a target, each once.
pub struct Grafter<'a> {
    src: &'a Document,
    map: HashMap<ObjectId, ObjectId>,
    /// The `q` stream opened before a page's own content (shared by the pages grafted on).
    open: Option<ObjectId>,
}

impl<'a> Grafter<'a> {
    /// A grafter of pages of `src`.
    pub fn new(src: &'a Document) -> Grafter<'a> {
        Grafter { src, map: HashMap::new(), open: None }
    }

    /// Lays page `from` (1-based) of the source over the page `onto` of `doc`, stretched to
    /// the page's visible area (its crop box, turned by its /Rotate); `name` prefixes the
    /// XObject's resource name.
    pub fn graft(&mut self, from: u32, doc: &mut Document, onto: ObjectId, name: &str) -> Result<(), EngineError> {
        let src = self.src;
        let src_id = src
            .page_iter()
            .nth(from as usize - 1)
            .ok_or_else(|| EngineError::internal(format!("the layer has no page {from}")))?;
        let layer_box = pdf::media_box(src, src_id);
        let content = src.get_page_content(src_id);
        let resources =
            pdf::inherited(src, src_id, b"Resources").cloned().unwrap_or(Object::Dictionary(Dictionary::new()));
        let resources = self.copy(resources, doc, 0);

        let matrix = placement(layer_box, pdf::crop_box(doc, onto), pdf::rotation(doc, onto));
        let mut form = Dictionary::new();
        form.set("Type", Object::Name(b"XObject".to_vec()));
        form.set("Subtype", Object::Name(b"Form".to_vec()));
        form.set("BBox", layer_box.to_object());
        form.set("Matrix", Object::Array(matrix.iter().map(|&v| Object::Real(v as f32)).collect()));
        form.set("Resources", resources);
        let mut stream = Stream::new(form, content);
        // A layer that does not compress is stored as it is.
        let _ = stream.compress();
        let form_id = doc.add_object(stream);

        // The page gets its own copy of its resources and of their /XObject dictionary:
        // resources are often shared by pages that get no layer (or another one).
        let mut own = pdf::own_resources(doc, onto);
        let mut xobjects = pdf::dict_at(doc, &own, b"XObject").cloned().unwrap_or_default();
        let xname = stamp::unused_name(&xobjects, name);
        xobjects.set(xname.as_bytes(), Object::Reference(form_id));
        own.set("XObject", xobjects);
        let open = *self.open.get_or_insert_with(|| doc.add_object(Stream::new(Dictionary::new(), b"q\n".to_vec())));
        // Closes the `q` opened before the page's content, so the layer is placed in the
        // page's initial graphics state whatever that content left.
        let draw = format!("\nQ\nq\n/{xname} Do\nQ\n").into_bytes();
        pdf::draw_over(doc, onto, open, draw, own, "adding a layer to a page")
    }

    /// `object` with every reference into the source copied into `doc` (once each).
    fn copy(&mut self, object: Object, doc: &mut Document, depth: usize) -> Object {
        if depth > MAX_DEPTH {
            return Object::Null;
        }
        match object {
            Object::Reference(id) => {
                if let Some(&t) = self.map.get(&id) {
                    return Object::Reference(t);
                }
                let Ok(found) = self.src.get_object(id).cloned() else { return Object::Null };
                let t = doc.new_object_id();
                self.map.insert(id, t);
                let copied = self.copy(found, doc, depth + 1);
                doc.objects.insert(t, copied);
                Object::Reference(t)
            }
            Object::Array(items) => Object::Array(items.into_iter().map(|o| self.copy(o, doc, depth + 1)).collect()),
            Object::Dictionary(dict) => Object::Dictionary(self.copy_dict(dict, doc, depth)),
            Object::Stream(mut stream) => {
                stream.dict = self.copy_dict(std::mem::take(&mut stream.dict), doc, depth);
                Object::Stream(stream)
            }
            other => other,
        }
    }

    fn copy_dict(&mut self, dict: Dictionary, doc: &mut Document, depth: usize) -> Dictionary {
        let mut out = Dictionary::new();
        for (key, value) in dict.into_iter() {
            // A page's parent would drag the source's page tree along.
            if key.as_slice() != b"Parent" {
                out.set(key, self.copy(value, doc, depth + 1));
            }
        }
        out
    }
}

/// The form matrix that maps a layer of `layer` (its media box, as the page is seen) onto
/// a page whose crop box is `crop` and whose /Rotate is `rotate` (clockwise degrees).
pub fn placement(layer: pdf::Rect, crop: pdf::Rect, rotate: i64) -> [f64; 6] {
    let rotate = rotate.rem_euclid(360);
    let quarter = rotate % 180 == 90;
    let (seen_w, seen_h) = if quarter { (crop.height(), crop.width()) } else { (crop.width(), crop.height()) };
    let sx = seen_w / layer.width().max(f64::MIN_POSITIVE);
    let sy = seen_h / layer.height().max(f64::MIN_POSITIVE);
    // A layer point (u, v) is (U, V) = (sx·(u − u0), sy·(v − v0)) on the page as seen;
    // turning the seen page back to the page's own space:
    //   0°: (x0 + U, y0 + V)    90°: (x1 − V, y0 + U)
    // 180°: (x1 − U, y1 − V)   270°: (x0 + V, y1 − U)
    let (a, b, c, d, e, f) = match rotate {
        90 => (0.0, sx, -sy, 0.0, crop.x1, crop.y0),
        180 => (-sx, 0.0, 0.0, -sy, crop.x1, crop.y1),
        270 => (0.0, -sx, sy, 0.0, crop.x0, crop.y1),
        _ => (sx, 0.0, 0.0, sy, crop.x0, crop.y0),
    };
    // The layer's own origin is moved to (0, 0) first.
    let (u0, v0) = (layer.x0, layer.y0);
    [a, b, c, d, e - a * u0 - c * v0, f - b * u0 - d * v0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::Rect;

    fn apply(m: [f64; 6], u: f64, v: f64) -> (f64, f64) {
        (m[0] * u + m[2] * v + m[4], m[1] * u + m[3] * v + m[5])
    }

    #[test]
    fn the_layer_corners_land_on_the_seen_corners() {
        let layer = Rect { x0: 0.0, y0: 0.0, x1: 100.0, y1: 200.0 };
        // Unturned, crop box moved: the layer stretches over it.
        let crop = Rect { x0: 10.0, y0: 20.0, x1: 60.0, y1: 120.0 };
        let m = placement(layer, crop, 0);
        assert_eq!(apply(m, 0.0, 0.0), (10.0, 20.0));
        assert_eq!(apply(m, 100.0, 200.0), (60.0, 120.0));
        // Turned a quarter clockwise: a page 200 wide and 100 high in its own space is seen
        // 100 wide and 200 high; the seen top left is the page's bottom left.
        let crop = Rect { x0: 0.0, y0: 0.0, x1: 200.0, y1: 100.0 };
        let m = placement(layer, crop, 90);
        assert_eq!(apply(m, 0.0, 200.0), (0.0, 0.0));
        assert_eq!(apply(m, 100.0, 200.0), (0.0, 100.0));
        assert_eq!(apply(m, 0.0, 0.0), (200.0, 0.0));
        // Upside down.
        let crop = Rect { x0: 0.0, y0: 0.0, x1: 100.0, y1: 200.0 };
        let m = placement(layer, crop, 180);
        assert_eq!(apply(m, 0.0, 0.0), (100.0, 200.0));
        // A quarter anticlockwise: the seen top left is the page's top right… in its space,
        // the bottom right of the seen page is its bottom left.
        let crop = Rect { x0: 0.0, y0: 0.0, x1: 200.0, y1: 100.0 };
        let m = placement(layer, crop, 270);
        assert_eq!(apply(m, 100.0, 0.0), (0.0, 0.0));
        assert_eq!(apply(m, 0.0, 200.0), (200.0, 100.0));
    }
}
