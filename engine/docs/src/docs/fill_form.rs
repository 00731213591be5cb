//! `POST /v1/pdf/fill-form`: set the values of a PDF's form fields, optionally flattening.
//!
//! Names, types and options are read with the form-fields reader, so a value is checked
//! against the same view of the form that `list_pdf_form_fields` reports. Text and
//! combo-box appearances are redrawn in standard Helvetica; /NeedAppearances is set so
//! viewers with the form's own fonts may redraw them.

use std::collections::{BTreeMap, HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::docs::form_fields::{self, FieldType, FormField};
use crate::error::EngineError;
use crate::pdf::stamp::{literal, num, win_ansi};
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self};
use crate::price::Price;

/// Fields of `/v1/pdf/fill-form` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FillFormOptions {
    /// Field values by fully qualified name (as `list_pdf_form_fields` reports): a string for text fields and
    /// choices, true/false for check boxes, the export value (a string) for radio buttons.
    pub values: BTreeMap<String, Value>,
    /// Burn the filled form into the pages (as `flatten_pdf_forms` with annotations=false). Default false.
    #[serde(default)]
    pub flatten: bool,
}

/// A new value for one field.
#[derive(Debug, Clone, PartialEq)]
pub enum NewValue {
    Text(String),
    Check(bool),
    Radio(String),
}

/// The operation.
pub struct FillForm;

/// The route.
pub type FillFormRoute = TransformRoute<FillForm>;

impl Transform for FillForm {
    type Options = FillFormOptions;
    type Plan = (Vec<(String, NewValue)>, bool);

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/fill-form",
        operation: "fill_pdf_form",
        family: Family::Docs,
        summary: "Fill in form fields",
        description: "Sets form field values by fully qualified name (as list_pdf_form_fields reports them): text \
            for text fields and choices, true/false for check boxes, the export value for radio buttons. Every \
            unknown name or wrong value is reported at once. Text and combo-box appearances are redrawn in \
            Helvetica (characters outside Windows-1252 show as '?' until a viewer redraws them; with flatten=true \
            they are refused). flatten=true burns the filled form into the pages. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "filled";

    fn plan(options: FillFormOptions, doc: &Document, _: &Limits) -> Result<Self::Plan, EngineError> {
        let report = form_fields::read(doc);
        let values = check(&report.fields, &options.values, options.flatten)?;
        Ok((values, options.flatten))
    }

    fn apply((values, flatten): Self::Plan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        fill(&mut doc, &values)?;
        if flatten {
            crate::docs::flatten::flatten(&mut doc, false)?;
        }
        Ok(Pdf::Doc(doc))
    }
}

/// A JSON pointer token for a field name (RFC 6901 escapes).
fn pointer(name: &str) -> String {
    format!("/values/{}", name.replace('~', "~0").replace('/', "~1"))
}

/// Checks every value against the form; all problems in one error.
fn check(
    fields: &[FormField],
    values: &BTreeMap<String, Value>,
    flatten: bool,
) -> Result<Vec<(String, NewValue)>, EngineError> {
    let by_name: HashMap<&str, &FormField> = fields.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for (name, value) in values {
        let shown = name.escape_debug();
        let Some(field) = by_name.get(name.as_str()) else {
            problems.push((name, format!("no field is named \"{shown}\"")));
            continue;
        };
        let exports = || field.options.iter().map(|o| o.export.as_str()).collect::<Vec<_>>();
        match (field.kind, value) {
            (FieldType::Text | FieldType::Choice, Value::String(text)) => {
                if field.kind == FieldType::Choice && !field.editable && !exports().contains(&text.as_str()) {
                    problems.push((name, format!("\"{shown}\" takes one of {:?}, not {text:?}", exports())));
                } else if flatten && win_ansi(text, "").is_err() {
                    problems.push((
                        name,
                        format!("\"{shown}\": the value has characters outside Windows-1252 that cannot be burned in"),
                    ));
                } else {
                    out.push((name.clone(), NewValue::Text(text.clone())));
                }
            }
            (FieldType::Checkbox, Value::Bool(on)) => out.push((name.clone(), NewValue::Check(*on))),
            (FieldType::Radio, Value::String(export)) => {
                if exports().contains(&export.as_str()) {
                    out.push((name.clone(), NewValue::Radio(export.clone())));
                } else {
                    problems.push((name, format!("\"{shown}\" takes one of {:?}, not {export:?}", exports())));
                }
            }
            (FieldType::Button | FieldType::Signature, _) => {
                problems.push((name, format!("\"{shown}\" is a {:?} field and holds no value", field.kind)))
            }
            (FieldType::Checkbox, _) => {
                problems.push((name, format!("\"{shown}\" is a check box: give true or false")))
            }
            (_, _) => problems.push((name, format!("\"{shown}\" takes a string"))),
        }
    }
    match problems.first() {
        None => Ok(out),
        Some((first, _)) => {
            let list: Vec<&str> = problems.iter().map(|(_, m)| m.as_str()).collect();
            Err(EngineError::invalid_with("form_mismatch", pointer(first), format!("values: {}", list.join("; "))))
        }
    }
}

/// A terminal field found in the field tree: the dictionary holding /V and its widgets.
struct Located {
    field: ObjectId,
    widgets: Vec<ObjectId>,
}

/// Maps fully qualified names to their field and widget objects (same walk rules as the
/// form-fields reader: visited set, depth cap; kids without /T or /Kids are widgets).
fn locate(doc: &Document) -> HashMap<String, Located> {
    let mut out = HashMap::new();
    let Some(acroform) = doc.catalog().ok().and_then(|c| pdf::dict_at(doc, c, b"AcroForm")) else { return out };
    let Some(roots) =
        acroform.get(b"Fields").ok().and_then(|f| doc.dereference(f).ok()).and_then(|(_, f)| f.as_array().ok())
    else {
        return out;
    };
    let mut seen = HashSet::new();
    let mut stack: Vec<(Object, String, usize)> = roots.iter().rev().map(|r| (r.clone(), String::new(), 0)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        let Ok(id) = node.as_reference() else { continue };
        if !seen.insert(id) || seen.len() > 200_000 || depth > 32 {
            continue;
        }
        let Ok(dict) = doc.get_dictionary(id) else { continue };
        let name = crate::docs::form_fields::qualified_name(doc, dict, &parent);
        let kids: Vec<ObjectId> = dict
            .get(b"Kids")
            .ok()
            .and_then(|k| doc.dereference(k).ok())
            .and_then(|(_, k)| k.as_array().ok())
            .map(|k| k.iter().filter_map(|o| o.as_reference().ok()).filter(|id| !seen.contains(id)).collect())
            .unwrap_or_default();
        let is_field = |id: &ObjectId| doc.get_dictionary(*id).is_ok_and(|d| d.has(b"T") || d.has(b"Kids"));
        if kids.iter().any(is_field) {
            for kid in kids.iter().rev().filter(|k| is_field(k)) {
                stack.push((Object::Reference(*kid), name.clone(), depth + 1));
            }
            continue;
        }
        let widgets = if kids.is_empty() { vec![id] } else { kids };
        out.entry(name).or_insert(Located { field: id, widgets });
    }
    out
}

/// Draws a normal appearance from its value for each text field widget that has none
/// (every text field widget when `all`: the form asked readers to regenerate them), as
/// PDF/A wants appearances rather than readers' rendering; answers how many were drawn.
pub(crate) fn draw_text_appearances(doc: &mut Document, all: bool) -> Result<u64, EngineError> {
    let located = locate(doc);
    let mut font = None;
    let mut drawn = 0;
    for at in located.values() {
        let is_text = pdf::inherited(doc, at.field, b"FT").and_then(|t| t.as_name().ok()) == Some(b"Tx".as_slice());
        let value = pdf::inherited(doc, at.field, b"V").and_then(|v| pdf::text_string(doc, v));
        let (true, Some(value)) = (is_text, value) else { continue };
        for &widget in &at.widgets {
            let has_look = doc
                .get_dictionary(widget)
                .ok()
                .and_then(|w| pdf::dict_at(doc, w, b"AP"))
                .is_some_and(|ap| ap.has(b"N"));
            if has_look && !all {
                continue;
            }
            let font = *font.get_or_insert_with(|| helvetica(doc));
            text_appearance(doc, widget, &value, font)?;
            drawn += 1;
        }
    }
    Ok(drawn)
}

/// Writes the values.
fn fill(doc: &mut Document, values: &[(String, NewValue)]) -> Result<(), EngineError> {
    let located = locate(doc);
    let font = helvetica(doc);
    for (name, value) in values {
        let Some(at) = located.get(name) else {
            // Listed by the reader but not reachable by reference (a field written inline
            // in /Fields): refusing beats returning the form unfilled.
            return Err(EngineError::invalid(
                pointer(name),
                format!("the field \"{}\" cannot be written: it is not stored as its own object", name.escape_debug()),
            ));
        };
        match value {
            NewValue::Text(text) => {
                set(doc, at.field, "V", pdf::encode_text_string(text))?;
                if let Ok(dict) = doc.get_dictionary_mut(at.field) {
                    // Selected indices of a choice would contradict the new value.
                    dict.remove(b"I");
                }
                let list_box = is_list_box(doc, at.field);
                for widget in &at.widgets {
                    if list_box {
                        // List boxes are not redrawn here: their old appearance would show
                        // (and flattening would burn) the old choice, so it goes, and the
                        // viewer draws one (/NeedAppearances); flattening keeps them.
                        if let Ok(dict) = doc.get_dictionary_mut(*widget) {
                            dict.remove(b"AP");
                        }
                    } else {
                        text_appearance(doc, *widget, text, font)?;
                    }
                }
            }
            NewValue::Check(on) => {
                let mut chosen = None;
                for widget in &at.widgets {
                    let state = if *on { on_state(doc, *widget) } else { None };
                    chosen = chosen.or(state.clone());
                    set(doc, *widget, "AS", Object::Name(state.unwrap_or_else(|| b"Off".to_vec())))?;
                }
                set(doc, at.field, "V", Object::Name(chosen.unwrap_or_else(|| b"Off".to_vec())))?;
            }
            NewValue::Radio(export) => {
                let opt = doc
                    .get_dictionary(at.field)
                    .ok()
                    .and_then(|d| d.get(b"Opt").ok())
                    .and_then(|o| doc.dereference(o).ok())
                    .and_then(|(_, o)| o.as_array().ok())
                    .cloned();
                let mut chosen = None;
                for widget in &at.widgets {
                    let state = on_state(doc, *widget);
                    let widget_export = state.as_ref().map(|s| {
                        // With /Opt the states are indices into it (ISO 32000-1, 12.7.4.2.3).
                        let by_index = std::str::from_utf8(s)
                            .ok()
                            .and_then(|i| i.parse::<usize>().ok())
                            .and_then(|i| opt.as_ref()?.get(i).and_then(|o| pdf::text_string(doc, o)));
                        by_index.unwrap_or_else(|| String::from_utf8_lossy(s).into_owned())
                    });
                    let pick = chosen.is_none() && widget_export.as_deref() == Some(export.as_str());
                    if pick {
                        chosen = state.clone();
                    }
                    let shown = if pick { state } else { None };
                    set(doc, *widget, "AS", Object::Name(shown.unwrap_or_else(|| b"Off".to_vec())))?;
                }
                set(doc, at.field, "V", Object::Name(chosen.unwrap_or_else(|| b"Off".to_vec())))?;
            }
        }
    }
    if let Ok(catalog) = doc.catalog()
        && let Ok(Object::Reference(id)) = catalog.get(b"AcroForm")
    {
        let id = *id;
        if let Ok(form) = doc.get_dictionary_mut(id) {
            form.set("NeedAppearances", true);
            form.remove(b"XFA");
        }
    } else if let Ok(catalog) = doc.catalog_mut()
        && let Ok(Object::Dictionary(form)) = catalog.get_mut(b"AcroForm")
    {
        form.set("NeedAppearances", true);
        // An XFA form would show its own, old values.
        form.remove(b"XFA");
    }
    Ok(())
}

fn set(doc: &mut Document, id: ObjectId, key: &str, value: Object) -> Result<(), EngineError> {
    let dict = doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("filling the form", e))?;
    dict.set(key, value);
    Ok(())
}

const COMBO: i64 = 1 << 17;

fn is_list_box(doc: &Document, field: ObjectId) -> bool {
    let Ok(dict) = doc.get_dictionary(field) else { return false };
    let ft = dict.get(b"FT").ok().and_then(|o| o.as_name().ok());
    let ff = dict.get(b"Ff").ok().and_then(|o| pdf::number(doc, o)).unwrap_or(0.0) as i64;
    ft == Some(b"Ch") && ff & COMBO == 0
}

/// The widget's "on" appearance state: the first /AP /N (or /D) state other than Off.
fn on_state(doc: &Document, widget: ObjectId) -> Option<Vec<u8>> {
    let dict = doc.get_dictionary(widget).ok()?;
    let ap = pdf::dict_at(doc, dict, b"AP")?;
    [b"N".as_slice(), b"D"].iter().find_map(|key| {
        let states = pdf::dict_at(doc, ap, key)?;
        states.iter().map(|(k, _)| k.clone()).find(|k| k.as_slice() != b"Off")
    })
}

fn helvetica(doc: &mut Document) -> ObjectId {
    doc.add_object(crate::pdf::stamp::helvetica())
}

/// Font size and colour from the /DA string (`/Helv 10 Tf 0 0 1 rg`): the widget's,
/// else the field's, else the form's.
fn appearance_style(doc: &Document, widget: &Dictionary) -> (f64, String) {
    let da = widget
        .get(b"DA")
        .ok()
        .or_else(|| pdf::dict_at(doc, widget, b"Parent").and_then(|p| p.get(b"DA").ok()))
        .or_else(|| doc.catalog().ok().and_then(|c| pdf::dict_at(doc, c, b"AcroForm")).and_then(|f| f.get(b"DA").ok()))
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_str().ok())
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    let tokens: Vec<&str> = da.split_whitespace().collect();
    let mut size = 0.0;
    let mut color = String::from("0 g");
    for (i, token) in tokens.iter().enumerate() {
        let operands = |n: usize| -> Option<Vec<f64>> {
            let start = i.checked_sub(n)?;
            tokens.get(start..i)?.iter().map(|t| t.parse::<f64>().ok().filter(|v| v.is_finite())).collect()
        };
        match *token {
            "Tf" => size = operands(1).and_then(|v| v.first().copied()).unwrap_or(0.0),
            "g" | "rg" | "k" => {
                let n = match *token {
                    "g" => 1,
                    "rg" => 3,
                    _ => 4,
                };
                if let Some(v) = operands(n) {
                    color =
                        format!("{} {token}", v.iter().map(|x| num(x.clamp(0.0, 1.0))).collect::<Vec<_>>().join(" "));
                }
            }
            _ => {}
        }
    }
    (size, color)
}

/// Replaces the widget's normal appearance by one drawing `text` on one line.
fn text_appearance(doc: &mut Document, widget: ObjectId, text: &str, font: ObjectId) -> Result<(), EngineError> {
    let dict = doc.get_dictionary(widget).map_err(|e| pdf::edit_error("filling the form", e))?;
    let Some(rect) = dict.get(b"Rect").ok().and_then(|r| pdf::rect(doc, r)) else { return Ok(()) };
    let (w, h) = (rect.width(), rect.height());
    let (size, color) = appearance_style(doc, dict);
    // Size 0 means "auto": fit the height, as viewers do, within reason.
    let size = if size > 0.0 && size < 1000.0 { size } else { (h * 0.7).clamp(4.0, 12.0) };
    let bytes: Vec<u8> = text
        .chars()
        .map(|c| win_ansi(&c.to_string(), "").ok().and_then(|b| b.first().copied()).unwrap_or(b'?'))
        .collect();
    let baseline = ((h - size * 0.78) / 2.0).max(1.0);
    let content = format!(
        "/Tx BMC\nq\n1 1 {} {} re W n\nBT\n/Helv {} Tf\n{color}\n2 {} Td\n{} Tj\nET\nQ\nEMC\n",
        num((w - 2.0).max(0.0)),
        num((h - 2.0).max(0.0)),
        num(size),
        num(baseline),
        literal(&bytes)
    );
    let mut fonts = Dictionary::new();
    fonts.set("Helv", Object::Reference(font));
    let mut resources = Dictionary::new();
    resources.set("Font", fonts);
    let mut stream_dict = Dictionary::new();
    stream_dict.set("Type", Object::Name(b"XObject".to_vec()));
    stream_dict.set("Subtype", Object::Name(b"Form".to_vec()));
    stream_dict.set("BBox", pdf::Rect { x0: 0.0, y0: 0.0, x1: w, y1: h }.to_object());
    stream_dict.set("Resources", resources);
    let ap = doc.add_object(Stream::new(stream_dict, content.into_bytes()));
    let mut appearances = Dictionary::new();
    appearances.set("N", Object::Reference(ap));
    set(doc, widget, "AP", Object::Dictionary(appearances))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::docs::form_fields::FieldValue;
    use crate::pdf::stamp::tests::{page_text, qpdf_check, run};

    const CORPUS: &str = "/work/shared/corpus/pdf";

    fn corpus(path: &str) -> Vec<u8> {
        std::fs::read(format!("{CORPUS}/{path}")).unwrap()
    }

    fn value_of(bytes: &[u8], name: &str) -> Option<FieldValue> {
        let doc = Document::load_mem(bytes).unwrap();
        form_fields::read(&doc).fields.into_iter().find(|f| f.name == name).unwrap().value
    }

    #[tokio::test]
    async fn fills_the_acrobat_form_and_reads_back() {
        let input = corpus("qpdf/form-filled-by-acrobat.pdf");
        let body = json!({ "values": {
            "Text Box 1": "new potato", "Check Box 1": true, "Check Box 2": false, "r1": "2",
        }});
        let (name, bytes) = run::<FillFormRoute>(&input, "form.pdf", body).await.unwrap();
        assert_eq!(name, "form-filled.pdf");
        qpdf_check(&bytes);
        assert_eq!(value_of(&bytes, "Text Box 1"), Some(FieldValue::Text("new potato".into())));
        assert_eq!(value_of(&bytes, "Check Box 1"), Some(FieldValue::Bool(true)));
        assert_eq!(value_of(&bytes, "Check Box 2"), Some(FieldValue::Bool(false)));
        assert_eq!(value_of(&bytes, "r1"), Some(FieldValue::Text("2".into())));
        assert_eq!(value_of(&bytes, "Text Box 2"), Some(FieldValue::Text("salad πʬ xyz".into())));
    }

    #[tokio::test]
    async fn fill_then_flatten_burns_the_new_values() {
        let input = corpus("sample-files/pdflatex-forms.pdf");
        let body = json!({ "values": { "Name": "Ada Lovelace", "Check": true }, "flatten": true });
        let (_, bytes) = run::<FillFormRoute>(&input, "f.pdf", body).await.unwrap();
        qpdf_check(&bytes);
        let doc = Document::load_mem(&bytes).unwrap();
        assert!(!doc.catalog().unwrap().has(b"AcroForm"));
        assert!(page_text(&bytes, 1).contains("Ada Lovelace"));
    }

    #[tokio::test]
    async fn every_problem_is_listed_in_one_error() {
        let input = corpus("qpdf/form-filled-by-acrobat.pdf");
        let body = json!({ "values": {
            "Nope": "x", "Check Box 1": "yes", "r1": "9", "Text Box 1": 3,
        }});
        let e = run::<FillFormRoute>(&input, "f.pdf", body).await.unwrap_err();
        assert_eq!(e.code, "form_mismatch");
        assert_eq!(e.field.as_deref(), Some("/values/Check Box 1"));
        for part in ["Nope", "Check Box 1", "r1", "Text Box 1"] {
            assert!(e.message.contains(part), "{part}: {}", e.message);
        }
        let e = run::<FillFormRoute>(b"nope", "f.pdf", json!({ "values": {} })).await.unwrap_err();
        assert_eq!(e.code, "not_a_pdf");
        let body = json!({ "values": { "Text Box 1": "ΩΩ" }, "flatten": true });
        let e = run::<FillFormRoute>(&input, "f.pdf", body).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/values/Text Box 1"));
    }

    #[test]
    fn pointers_escape_slashes() {
        assert_eq!(pointer("a/b~c"), "/values/a~1b~0c");
    }
}
