//! `POST /v1/pdf/flatten`: burn form fields and annotations into the page content.
//!
//! Each annotation's normal appearance (/AP /N, or /AP /N /<AS> for buttons with states)
//! is drawn into the page as a form XObject mapped onto the annotation's /Rect
//! (ISO 32000-1, 12.5.5), inside a clean graphics state, and the annotation is removed.
//! What cannot be burned is kept rather than lost: annotations without an appearance
//! stay interactive, and so does the form when any of its widgets stays.

use std::collections::{HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pdf::stamp::num;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self, IDENTITY, Rect};
use crate::price::Price;

/// Fields of `/v1/pdf/flatten` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlattenOptions {
    /// Also burn in annotations other than form fields (comments, highlights, stamps, drawings); when false only
    /// form fields are flattened. Links, file attachments and media are always kept. Default true.
    #[serde(default = "yes")]
    pub annotations: bool,
}

fn yes() -> bool {
    true
}

/// The operation.
pub struct Flatten;

/// The route.
pub type FlattenRoute = TransformRoute<Flatten>;

impl Transform for Flatten {
    type Options = FlattenOptions;
    type Plan = bool;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/flatten",
        operation: "flatten_pdf_forms",
        family: Family::Docs,
        summary: "Burn form fields and annotations into the page",
        description: "Draws each form field's and annotation's visible appearance into the page content and removes \
            the interactive object, so values can no longer be edited and every viewer and printer shows the same. \
            With annotations=false only form fields are flattened. Hidden annotations are removed without drawing. \
            Links, file attachments and media annotations are kept. Fields or annotations with no appearance to draw \
            (e.g. forms that ask the viewer to draw them) are kept interactive rather than lost, and the form is then \
            kept too; otherwise the form (AcroForm, XFA) is removed. Appearances are drawn as stored; stale ones are \
            not redrawn. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "flattened";

    fn plan(options: FlattenOptions, _: &Document, _: &Limits) -> Result<bool, EngineError> {
        Ok(options.annotations)
    }

    fn apply(annotations: bool, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        flatten(&mut doc, annotations)?;
        Ok(Pdf::Doc(doc))
    }
}

/// Most annotations looked at in one file (hostile files list millions).
const MAX_ANNOTATIONS: usize = 500_000;

// Annotation flags (ISO 32000-1, table 165): bit n is 1 << (n - 1).
const HIDDEN: i64 = 1 << 1;
const NO_VIEW: i64 = 1 << 5;

/// What flattening does with one annotation.
#[derive(Debug, PartialEq)]
enum Fate {
    /// Left on the page as it is.
    Keep,
    /// Removed without drawing (hidden, or its appearance state shows nothing).
    Drop,
    /// Drawn with this form XObject and this matrix, then removed.
    Draw(ObjectId, [f64; 6]),
}

/// Flattens every page; `annotations` false limits it to form widgets.
pub fn flatten(doc: &mut Document, annotations: bool) -> Result<(), EngineError> {
    let mut seen = 0usize;
    let mut kept_widgets = false;
    let mut flattened = HashSet::new();
    for page_id in doc.page_iter().collect::<Vec<_>>() {
        let Some(annots) = annots_of(doc, page_id) else { continue };
        let mut keep = Vec::new();
        let mut draws: Vec<(ObjectId, [f64; 6])> = Vec::new();
        for entry in annots {
            seen += 1;
            if seen > MAX_ANNOTATIONS {
                keep.push(entry);
                continue;
            }
            let Ok((id, Object::Dictionary(annot))) = doc.dereference(&entry) else {
                // Entries that are not annotations (null, dangling references) are dropped.
                continue;
            };
            let widget = subtype(annot) == Some(b"Widget");
            let fate = fate(doc, annot, annotations);
            if let Some(id) = id
                && fate != Fate::Keep
            {
                flattened.insert(id);
            }
            match fate {
                Fate::Keep => {
                    kept_widgets |= widget;
                    keep.push(entry);
                }
                Fate::Drop => {}
                Fate::Draw(form, matrix) => draws.push((form, matrix)),
            }
        }
        // A popup belongs to the annotation that names it as /Popup; it goes with it.
        if annotations {
            keep.retain(|entry| !is_orphan_popup(doc, entry, &flattened));
        }
        draw(doc, page_id, &draws)?;
        let page = doc.get_dictionary_mut(page_id).map_err(|e| pdf::edit_error("flattening a page", e))?;
        if keep.is_empty() {
            page.remove(b"Annots");
        } else {
            page.set("Annots", keep);
        }
    }
    if let Ok(catalog) = doc.catalog_mut() {
        if kept_widgets {
            // The widgets left need their form; the XFA would redraw the flattened fields.
            if let Ok(Object::Dictionary(form)) = catalog.get_mut(b"AcroForm") {
                form.remove(b"XFA");
            } else if let Ok(id) = catalog.get(b"AcroForm").and_then(Object::as_reference)
                && let Ok(form) = doc.get_dictionary_mut(id)
            {
                form.remove(b"XFA");
            }
        } else {
            catalog.remove(b"AcroForm");
        }
    }
    Ok(())
}

/// The page's annotation entries, or None when it has none.
fn annots_of(doc: &Document, page_id: ObjectId) -> Option<Vec<Object>> {
    let page = doc.get_dictionary(page_id).ok()?;
    let annots = doc.dereference(page.get(b"Annots").ok()?).ok()?.1.as_array().ok()?;
    Some(annots.clone())
}

fn subtype(annot: &Dictionary) -> Option<&[u8]> {
    annot.get(b"Subtype").ok()?.as_name().ok()
}

/// Decides what happens to one annotation.
fn fate(doc: &Document, annot: &Dictionary, annotations: bool) -> Fate {
    let kind = subtype(annot).unwrap_or_default();
    let widget = kind == b"Widget";
    // Links are navigation, not printed content; the others carry data (files, media)
    // that a drawing would lose. Popups go with their parent (see `is_orphan_popup`).
    let kept_kinds: [&[u8]; 8] =
        [b"Link", b"Popup", b"FileAttachment", b"Sound", b"Movie", b"Screen", b"3D", b"RichMedia"];
    if (!widget && !annotations) || kept_kinds.contains(&kind) {
        return Fate::Keep;
    }
    let flags = annot.get(b"F").ok().and_then(|f| pdf::number(doc, f)).unwrap_or(0.0) as i64;
    if flags & (HIDDEN | NO_VIEW) != 0 {
        return Fate::Drop;
    }
    let Some(normal) = pdf::dict_at(doc, annot, b"AP").and_then(|ap| ap.get(b"N").ok()) else { return Fate::Keep };
    let form = match doc.dereference(normal) {
        Ok((Some(id), Object::Stream(_))) => id,
        Ok((_, Object::Dictionary(states))) => {
            // Buttons: the state named by /AS; no state, or one without an appearance,
            // shows nothing (an unchecked box drawn by its border alone).
            let state = annot.get(b"AS").ok().and_then(|s| doc.dereference(s).ok()).and_then(|(_, s)| s.as_name().ok());
            match state.and_then(|s| states.get(s).ok()).map(|o| doc.dereference(o)) {
                Some(Ok((Some(id), Object::Stream(_)))) => id,
                _ => return Fate::Drop,
            }
        }
        _ => return Fate::Keep,
    };
    let Some(rect) = annot.get(b"Rect").ok().and_then(|r| pdf::rect(doc, r)) else { return Fate::Keep };
    let Ok(Object::Stream(stream)) = doc.get_object(form) else { return Fate::Keep };
    let Some(bbox) = stream.dict.get(b"BBox").ok().and_then(|b| pdf::rect(doc, b)) else { return Fate::Keep };
    let matrix = stream.dict.get(b"Matrix").ok().and_then(|m| read_matrix(doc, m)).unwrap_or(IDENTITY);
    Fate::Draw(form, placement(bbox, matrix, rect))
}

fn read_matrix(doc: &Document, object: &Object) -> Option<[f64; 6]> {
    let array = doc.dereference(object).ok()?.1.as_array().ok()?;
    let values: Vec<f64> = array.iter().filter_map(|o| pdf::number(doc, o)).filter(|n| n.is_finite()).collect();
    values.try_into().ok()
}

/// The matrix A of ISO 32000-1 12.5.5: the form's /BBox transformed by its /Matrix gives a
/// box, and A scales and moves that box onto /Rect. (The /Matrix itself is applied by `Do`.)
fn placement(bbox: Rect, matrix: [f64; 6], rect: Rect) -> [f64; 6] {
    let [a, b, c, d, e, f] = matrix;
    let corners = [(bbox.x0, bbox.y0), (bbox.x1, bbox.y0), (bbox.x0, bbox.y1), (bbox.x1, bbox.y1)]
        .map(|(x, y)| (a * x + c * y + e, b * x + d * y + f));
    let x0 = corners.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x1 = corners.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y0 = corners.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y1 = corners.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    // A flat box cannot be scaled onto the rectangle: it is only moved there.
    let scale = |to: f64, from: f64| if from > 1e-9 && (to / from).is_finite() { to / from } else { 1.0 };
    let sx = scale(rect.width(), x1 - x0);
    let sy = scale(rect.height(), y1 - y0);
    let out = [sx, 0.0, 0.0, sy, rect.x0 - x0 * sx, rect.y0 - y0 * sy];
    if out.iter().all(|v| v.is_finite()) { out } else { [1.0, 0.0, 0.0, 1.0, rect.x0, rect.y0] }
}

/// Whether `entry` is a popup whose parent annotation was flattened.
fn is_orphan_popup(doc: &Document, entry: &Object, flattened: &HashSet<ObjectId>) -> bool {
    let Ok((_, Object::Dictionary(annot))) = doc.dereference(entry) else { return false };
    subtype(annot) == Some(b"Popup")
        && annot.get(b"Parent").ok().and_then(|p| p.as_reference().ok()).is_some_and(|p| flattened.contains(&p))
}

/// Appends the appearances to the page, each in the page's initial graphics state: a `q`
/// goes before the page's content and `Q` closes it before the drawings.
fn draw(doc: &mut Document, page_id: ObjectId, draws: &[(ObjectId, [f64; 6])]) -> Result<(), EngineError> {
    if draws.is_empty() {
        return Ok(());
    }
    // The page gets its own copy of its resources and their /XObject dictionary: both
    // are often shared with pages whose annotations differ.
    let mut resources = pdf::own_resources(doc, page_id);
    let mut xobjects = pdf::dict_at(doc, &resources, b"XObject").cloned().unwrap_or_default();
    let mut names: HashMap<ObjectId, String> = HashMap::new();
    // Names are taken counting up from where the last one was found: a page with many
    // appearances costs one pass, not one pass per appearance.
    let mut next = 1usize;
    let mut content = String::from("\nQ\n");
    for (form, m) in draws {
        let name = match names.get(form) {
            Some(name) => name.clone(),
            None => {
                while xobjects.has(format!("PcAPn{next}").as_bytes()) {
                    next += 1;
                }
                let name = format!("PcAPn{next}");
                next += 1;
                xobjects.set(name.as_bytes(), Object::Reference(*form));
                names.insert(*form, name.clone());
                name
            }
        };
        let m = m.map(num).join(" ");
        content.push_str(&format!("q {m} cm /{name} Do Q\n"));
    }
    resources.set("XObject", xobjects);
    // Appearance streams are form XObjects by definition, but some writers leave out the
    // keys `Do` needs.
    for form in names.keys() {
        if let Ok(Object::Stream(stream)) = doc.get_object_mut(*form) {
            stream.dict.set("Type", Object::Name(b"XObject".to_vec()));
            stream.dict.set("Subtype", Object::Name(b"Form".to_vec()));
        }
    }
    let open = doc.add_object(Stream::new(Dictionary::new(), b"q\n".to_vec()));
    pdf::draw_over(doc, page_id, open, content.into_bytes(), resources, "flattening a page")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::dictionary;
    use serde_json::json;

    use crate::pdf::stamp::tests::{close, operands, page_text, qpdf_check, rect, run, stamp_ops};

    const CORPUS: &str = "/work/shared/corpus/pdf";

    fn corpus(path: &str) -> Vec<u8> {
        std::fs::read(format!("{CORPUS}/{path}")).unwrap()
    }

    /// A one-page PDF with a form: one text widget whose appearance (a form XObject with
    /// the given /Matrix and a 50 x 10 /BBox) says "Hello flat", plus the given annotations.
    fn form_pdf(matrix: Vec<f64>, widget_rect: [f64; 4], extra: Vec<Dictionary>, with_ap: bool) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let ap = doc.add_object(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Form",
                "BBox" => vec![0.into(), 0.into(), 50.into(), 10.into()],
                "Matrix" => matrix.into_iter().map(|v| Object::Real(v as f32)).collect::<Vec<_>>(),
                "Resources" => dictionary! { "Font" => dictionary! { "Helv" => font } },
            },
            b"BT /Helv 4 Tf 1 2 Td (Hello flat) Tj ET".to_vec(),
        ));
        let mut widget = dictionary! {
            "Type" => "Annot", "Subtype" => "Widget", "FT" => "Tx", "T" => Object::string_literal("name"),
            "V" => Object::string_literal("Hello flat"), "Rect" => rect(widget_rect), "F" => 4,
        };
        if with_ap {
            widget.set("AP", dictionary! { "N" => ap });
        }
        let widget = doc.add_object(widget);
        let mut annots = vec![Object::Reference(widget)];
        for annot in extra {
            annots.push(Object::Reference(doc.add_object(annot)));
        }
        let content = doc.add_object(Stream::new(Dictionary::new(), b"0.5 0 0 0.5 0 0 cm".to_vec()));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content, "Annots" => annots,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()], "Resources" => Dictionary::new(),
        });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
        );
        let acroform = doc.add_object(dictionary! { "Fields" => vec![widget.into()], "NeedAppearances" => false });
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id, "AcroForm" => acroform });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    fn annot_subtypes(doc: &Document, page: u32) -> Vec<String> {
        let id = doc.get_pages()[&page];
        let Some(annots) = annots_of(doc, id) else { return Vec::new() };
        annots
            .iter()
            .filter_map(|a| doc.dereference(a).ok()?.1.as_dict().ok().and_then(subtype))
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    }

    /// How many appearances the flattening drew on page 1.
    fn draws(doc: &Document) -> usize {
        stamp_ops(doc, 1).iter().filter(|(op, _)| op == "Do").count()
    }

    fn has_acroform(doc: &Document) -> bool {
        doc.catalog().unwrap().has(b"AcroForm")
    }

    #[test]
    fn placement_maps_the_transformed_bbox_onto_the_rect() {
        let bbox = Rect { x0: 0.0, y0: 0.0, x1: 100.0, y1: 20.0 };
        // Turned a quarter: the box becomes [-20 0 0 100].
        let turned = placement(bbox, [0.0, 1.0, -1.0, 0.0, 0.0, 0.0], Rect { x0: 50.0, y0: 50.0, x1: 70.0, y1: 150.0 });
        close(&turned, &[1.0, 0.0, 0.0, 1.0, 70.0, 50.0]);
        let scaled = placement(bbox, IDENTITY, Rect { x0: 10.0, y0: 10.0, x1: 60.0, y1: 50.0 });
        close(&scaled, &[0.5, 0.0, 0.0, 2.0, 10.0, 10.0]);
        let flat = placement(Rect { x0: 5.0, y0: 5.0, x1: 5.0, y1: 5.0 }, IDENTITY, scaled_rect());
        close(&flat, &[1.0, 0.0, 0.0, 1.0, -5.0, -5.0]);
    }

    fn scaled_rect() -> Rect {
        Rect { x0: 0.0, y0: 0.0, x1: 10.0, y1: 10.0 }
    }

    #[tokio::test]
    async fn a_widget_is_drawn_at_its_rect_through_its_matrix() {
        // /Matrix doubles the 50 x 10 box to 100 x 20; /Rect is 200 x 40, so A scales by 2.
        let input = form_pdf(vec![2.0, 0.0, 0.0, 2.0, 0.0, 0.0], [100.0, 100.0, 300.0, 140.0], vec![], true);
        let (name, bytes) = run::<FlattenRoute>(&input, "form.pdf", json!({})).await.unwrap();
        assert_eq!(name, "form-flattened.pdf");
        qpdf_check(&bytes);
        let doc = Document::load_mem(&bytes).unwrap();
        close(&operands(&doc, 1, "cm"), &[2.0, 0.0, 0.0, 2.0, 100.0, 100.0]);
        assert!(annot_subtypes(&doc, 1).is_empty());
        assert!(!has_acroform(&doc));
        assert!(page_text(&bytes, 1).contains("Hello flat"));
    }

    #[tokio::test]
    async fn annotations_false_keeps_comments_and_links_are_always_kept() {
        let square = || {
            dictionary! { "Type" => "Annot", "Subtype" => "Square", "Rect" => rect([10.0, 10.0, 20.0, 20.0]) }
        };
        let link = || dictionary! { "Type" => "Annot", "Subtype" => "Link", "Rect" => rect([30.0, 30.0, 40.0, 40.0]) };
        let hidden = || {
            dictionary! { "Type" => "Annot", "Subtype" => "Widget", "F" => 2, "Rect" => rect([0.0, 0.0, 5.0, 5.0]) }
        };
        let input =
            form_pdf(IDENTITY.to_vec(), [0.0, 0.0, 50.0, 10.0], vec![square(), link(), hidden(), square()], true);
        // The second square gets the widget's appearance; the first has none.
        let mut doc = Document::load_mem(&input).unwrap();
        let annots = annots_of(&doc, doc.get_pages()[&1]).unwrap();
        let ap = doc.get_dictionary(annots[0].as_reference().unwrap()).unwrap().get(b"AP").unwrap().clone();
        doc.get_dictionary_mut(annots[4].as_reference().unwrap()).unwrap().set("AP", ap);
        let mut input = Vec::new();
        doc.save_to(&mut input).unwrap();

        let (_, bytes) = run::<FlattenRoute>(&input, "a.pdf", json!({ "annotations": false })).await.unwrap();
        qpdf_check(&bytes);
        let doc = Document::load_mem(&bytes).unwrap();
        assert_eq!(annot_subtypes(&doc, 1), ["Square", "Link", "Square"]);
        assert!(!has_acroform(&doc));
        assert_eq!(draws(&doc), 1);

        let (_, bytes) = run::<FlattenRoute>(&input, "a.pdf", json!({})).await.unwrap();
        qpdf_check(&bytes);
        let doc = Document::load_mem(&bytes).unwrap();
        // The square without an appearance has nothing to burn: it stays.
        assert_eq!(annot_subtypes(&doc, 1), ["Square", "Link"]);
        assert_eq!(draws(&doc), 2);
    }

    #[tokio::test]
    async fn a_widget_without_appearance_is_kept_with_its_form() {
        let input = form_pdf(IDENTITY.to_vec(), [0.0, 0.0, 50.0, 10.0], vec![], false);
        let (_, bytes) = run::<FlattenRoute>(&input, "a.pdf", json!({})).await.unwrap();
        qpdf_check(&bytes);
        let doc = Document::load_mem(&bytes).unwrap();
        assert_eq!(annot_subtypes(&doc, 1), ["Widget"]);
        assert!(has_acroform(&doc));
    }

    #[tokio::test]
    async fn corpus_forms_are_burned_in_with_their_values() {
        // (file, values that must be in the page text after, widgets left: the pdflatex
        // "Name" field has no appearance (/NeedAppearances) and stays interactive).
        let cases: [(&str, &[&str], usize); 3] = [
            ("qpdf/form-filled-by-acrobat.pdf", &["abc potato"], 0),
            ("qpdf/form-fields-and-annotations.pdf", &["Formy field", "Rot-ccw field"], 0),
            ("sample-files/pdflatex-forms.pdf", &["Submit"], 1),
        ];
        for (path, values, left) in cases {
            let input = corpus(path);
            let pages = Document::load_mem(&input).unwrap().get_pages().len();
            let (_, bytes) = run::<FlattenRoute>(&input, "f.pdf", json!({})).await.unwrap();
            qpdf_check(&bytes);
            let doc = Document::load_mem(&bytes).unwrap();
            assert_eq!(doc.get_pages().len(), pages, "{path}");
            assert_eq!(has_acroform(&doc), left > 0, "{path}");
            let widgets: usize = (1..=pages as u32)
                .map(|page| annot_subtypes(&doc, page).iter().filter(|s| *s == "Widget").count())
                .sum();
            assert_eq!(widgets, left, "{path}");
            let (_, text) = crate::pdf::stamp::tests::tool("pdftotext", &[], &bytes);
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            for value in values {
                assert!(text.contains(value), "{path}: {value:?} not in {text:?}");
            }
        }
    }

    #[tokio::test]
    async fn error_paths() {
        let e = run::<FlattenRoute>(b"hello", "a.pdf", json!({})).await.unwrap_err();
        assert_eq!(e.code, "not_a_pdf");
        let input = form_pdf(IDENTITY.to_vec(), [0.0, 0.0, 50.0, 10.0], vec![], true);
        let e = run::<FlattenRoute>(&input, "a.pdf", json!({ "pages": "1" })).await.unwrap_err();
        assert!(e.message.contains("pages"), "{}", e.message);
        let e = run::<FlattenRoute>(&input, "a.pdf", json!({ "annotations": "yes" })).await.unwrap_err();
        assert_eq!(e.code, "invalid_input");
    }

    #[test]
    fn hostile_annotations_do_not_break_the_walk() {
        // An /AP that points at itself, a /Rect of NaN-free junk, a popup of a flattened parent.
        let mut doc = Document::load_mem(&form_pdf(IDENTITY.to_vec(), [0.0, 0.0, 50.0, 10.0], vec![], true)).unwrap();
        let page = doc.get_pages()[&1];
        let widget = annots_of(&doc, page).unwrap()[0].as_reference().unwrap();
        let selfish = doc.new_object_id();
        doc.objects.insert(
            selfish,
            Object::Dictionary(dictionary! {
                "Subtype" => "Ink", "AP" => selfish, "Rect" => vec![Object::Null],
            }),
        );
        let popup = doc.add_object(dictionary! { "Subtype" => "Popup", "Parent" => widget });
        let page_dict = doc.get_dictionary_mut(page).unwrap();
        page_dict.set("Annots", vec![widget.into(), selfish.into(), popup.into(), Object::Null, Object::Integer(3)]);
        flatten(&mut doc, true).unwrap();
        assert_eq!(annot_subtypes(&doc, 1), ["Ink"]);
        let bytes = pdf::save(&mut doc).unwrap();
        qpdf_check(&bytes);
    }
}
