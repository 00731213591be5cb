//! `POST /v1/pdf/form-fields`: the names, types, values and options of a PDF's form
//! fields (AcroForm).
//!
//! The field tree is walked from the AcroForm's /Fields through /Kids with a visited
//! set, a depth cap and a node cap (hostile files have cycles). Inheritable attributes
//! (/FT, /Ff, /V, /DV, /MaxLen) come down the walk from the ancestors rather than up
//! /Parent links, which damaged files get wrong. A kid with neither /T nor /Kids is a
//! widget (the field's appearance on a page), not a field; a field without field kids
//! is terminal and is reported.

use std::collections::{HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::Reply;
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Request of `/v1/pdf/form-fields`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormFieldsInput {
    /// The PDF.
    pub file: FileInput,
}

/// The form's fields.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FormFieldsReport {
    /// The terminal fields (the ones that hold a value), in the order of the field tree.
    pub fields: Vec<FormField>,
    /// Number of fields.
    pub count: u64,
    /// Whether the catalog has an /AcroForm dictionary.
    pub acroform: bool,
    /// Whether the form carries an XFA form too (its fields are not listed; the AcroForm's are).
    pub xfa: bool,
    /// Whether the form asks readers to redraw field appearances (/NeedAppearances).
    pub need_appearances: bool,
    /// Parts of the form that could not be read (the list says what was read).
    pub warnings: Vec<String>,
}

/// One field. Names, values and options are text from the file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FormField {
    /// Fully qualified name: the partial names (/T) from the root down, joined with `.`.
    pub name: String,
    /// `text`, `checkbox`, `radio`, `choice` (list or combo box: see `combo`), `button` (push button) or `signature`.
    #[serde(rename = "type")]
    pub kind: FieldType,
    /// Text for text fields, true/false for check boxes, the selected export value for radio buttons, the selected
    /// option for choices (a list when several are selected); null when empty, for push buttons and signatures.
    pub value: Option<FieldValue>,
    /// The value the field resets to (/DV), in the same form as `value`.
    pub default_value: Option<FieldValue>,
    /// Choices' options, and the export values of check boxes and radio buttons.
    pub options: Vec<FieldOption>,
    /// Whether the field must have a value when the form is submitted.
    pub required: bool,
    /// Whether the user may not change the field.
    pub read_only: bool,
    /// 1-based page of the field's first widget; null when it has none on a page.
    pub page: Option<u32>,
    /// Text fields: the most characters allowed (/MaxLen).
    pub max_length: Option<u64>,
    /// Text fields: whether the text may span several lines.
    pub multiline: bool,
    /// Text fields: whether the text is hidden as a password.
    pub password: bool,
    /// Choices: a combo box (drop-down) when true, a list box when false.
    pub combo: bool,
    /// Choices: whether a combo box also takes text typed in.
    pub editable: bool,
    /// Choices: whether several options may be selected.
    pub multi_select: bool,
    /// The field's tooltip or alternate name (/TU).
    pub tooltip: Option<String>,
}

/// The kind of field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// A text field.
    Text,
    /// A check box.
    Checkbox,
    /// A group of radio buttons.
    Radio,
    /// A list box or combo box.
    Choice,
    /// A push button (holds no value).
    Button,
    /// A signature field.
    Signature,
}

/// A field value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FieldValue {
    /// Check boxes: checked or not.
    Bool(bool),
    /// Text, a radio export value, a choice.
    Text(String),
    /// Choices with several selected options.
    List(Vec<String>),
}

/// One option of a choice, or one export value of a check box or radio button.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FieldOption {
    /// The value the field takes (and submits) when the option is chosen.
    pub export: String,
    /// The text shown (the export value when the file gives no other).
    pub display: String,
}

/// A checked form-fields call.
pub struct FormFields {
    source: SourcePdf,
}

/// The route.
pub struct FormFieldsRoute;

impl Route for FormFieldsRoute {
    type Input = FormFieldsInput;
    type Prepared = FormFields;
    type Output = FormFieldsReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/form-fields",
        operation: "list_pdf_form_fields",
        family: Family::Docs,
        summary: "Names, types, values and options of form fields",
        description: "Lists the PDF's interactive form fields (AcroForm): each field's fully qualified name, type (text, \
            checkbox, radio, choice, button, signature), current and default value, options (choice options with \
            export and display values, export values of check boxes and radio buttons), whether it is required or \
            read-only, its page, and text and choice details. Inherited attributes are resolved. Says whether the \
            form also has XFA and whether it asks readers to redraw appearances. Text in the answer comes from the file.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: FormFieldsInput, ctx: &Context) -> Result<FormFields, EngineError> {
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(FormFields { source })
    }

    fn quote(call: &FormFields) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: FormFields, _ctx: &Context) -> Result<Reply<FormFieldsReport>, EngineError> {
        blocking(move || Ok(Reply::Json(read(&call.source.doc)))).await
    }
}

/// Field trees nested deeper than this are not followed.
const MAX_DEPTH: usize = 32;
/// Most field and widget dictionaries visited.
const MAX_NODES: usize = 200_000;
/// Most annotations looked at to find the fields' pages.
const MAX_ANNOTATIONS: usize = 500_000;
/// Most options listed for one field.
const MAX_OPTIONS: usize = 10_000;
/// Largest rich-text value (a text stream) decoded.
const MAX_TEXT_STREAM: usize = 1024 * 1024;
/// Most warnings listed.
const MAX_WARNINGS: usize = 20;

// Field flags (ISO 32000-1, 12.7.3.1 and tables 226, 228, 230): bit n is 1 << (n - 1).
const READ_ONLY: i64 = 1 << 0;
const REQUIRED: i64 = 1 << 1;
const MULTILINE: i64 = 1 << 12;
const PASSWORD: i64 = 1 << 13;
const RADIO: i64 = 1 << 15;
const PUSHBUTTON: i64 = 1 << 16;
const COMBO: i64 = 1 << 17;
const EDIT: i64 = 1 << 18;
const MULTI_SELECT: i64 = 1 << 21;

/// The whole report.
pub fn read(doc: &Document) -> FormFieldsReport {
    let mut report = FormFieldsReport {
        fields: Vec::new(),
        count: 0,
        acroform: false,
        xfa: false,
        need_appearances: false,
        warnings: Vec::new(),
    };
    let Some(acroform) = doc.catalog().ok().and_then(|c| pdf::dict_at(doc, c, b"AcroForm")) else { return report };
    report.acroform = true;
    report.xfa = acroform.get(b"XFA").is_ok_and(|x| !matches!(doc.dereference(x), Ok((_, Object::Null)) | Err(_)));
    report.need_appearances =
        acroform.get(b"NeedAppearances").ok().and_then(|v| doc.dereference(v).ok()).and_then(|(_, v)| v.as_bool().ok())
            == Some(true);
    let mut walk = Walk {
        doc,
        pages: pages_of_annotations(doc),
        page_numbers: doc.page_iter().enumerate().map(|(i, id)| (id, i as u32 + 1)).collect(),
        seen: HashSet::new(),
        visited: 0,
        fields: Vec::new(),
        warnings: crate::pdf::Warnings::default(),
    };
    if let Some(roots) = array_at(doc, acroform, b"Fields") {
        let top = Inherited::default();
        for root in roots {
            walk.field(root, &top, 0);
        }
    }
    report.count = walk.fields.len() as u64;
    report.fields = walk.fields;
    report.warnings = walk.warnings.finish();
    report
}

/// Attributes a field takes from its ancestors when it does not set them.
#[derive(Clone, Default)]
struct Inherited<'a> {
    name: String,
    ft: Option<&'a [u8]>,
    ff: Option<i64>,
    v: Option<&'a Object>,
    dv: Option<&'a Object>,
    max_len: Option<u64>,
}

/// State of one walk of the field tree.
struct Walk<'a> {
    doc: &'a Document,
    /// Annotation object → 1-based page, from the pages' /Annots.
    pages: HashMap<ObjectId, u32>,
    /// Page object → 1-based page.
    page_numbers: HashMap<ObjectId, u32>,
    seen: HashSet<ObjectId>,
    visited: usize,
    fields: Vec<FormField>,
    warnings: crate::pdf::Warnings<MAX_WARNINGS>,
}

impl<'a> Walk<'a> {
    fn field(&mut self, node: &'a Object, parent: &Inherited<'a>, depth: usize) {
        let doc = self.doc;
        self.visited += 1;
        if self.visited > MAX_NODES {
            if self.visited == MAX_NODES + 1 {
                self.warnings.push(format!("the form has more than {MAX_NODES} fields; the rest were not read"));
            }
            return;
        }
        let Ok((id, object)) = doc.dereference(node) else { return };
        if id.is_some_and(|id| !self.seen.insert(id)) {
            return;
        }
        let Ok(dict) = object.as_dict() else { return };
        let own = inherit(doc, dict, parent);
        let mut children = Vec::new();
        let mut widgets = Vec::new();
        for kid in array_at(doc, dict, b"Kids").map(Vec::as_slice).unwrap_or_default() {
            let Ok((kid_id, kid_object)) = doc.dereference(kid) else { continue };
            // A kid already met is a cycle back up the tree (or a shared node), not a child.
            if kid_id.is_some_and(|id| self.seen.contains(&id)) {
                continue;
            }
            let Ok(kid_dict) = kid_object.as_dict() else { continue };
            if kid_dict.has(b"T") || kid_dict.has(b"Kids") {
                children.push(kid);
            } else {
                widgets.push((kid_id, kid_dict));
            }
        }
        if !children.is_empty() {
            if depth + 1 >= MAX_DEPTH {
                self.warnings.push(format!(
                    "the field \"{}\" is nested more than {MAX_DEPTH} levels deep; its kids were not read",
                    own.name.escape_debug()
                ));
                return;
            }
            for kid in children {
                self.field(kid, &own, depth + 1);
            }
            return;
        }
        // A terminal field without widget kids is merged with its one widget.
        if widgets.is_empty() && (dict.has(b"Rect") || dict.has(b"Subtype")) {
            widgets.push((id, dict));
        }
        match self.terminal(dict, &own, &widgets) {
            Some(field) => self.fields.push(field),
            None => self
                .warnings
                .push(format!("the field \"{}\" has no usable type (/FT) and was left out", own.name.escape_debug())),
        }
    }

    fn terminal(
        &self,
        dict: &'a Dictionary,
        own: &Inherited<'a>,
        widgets: &[(Option<ObjectId>, &'a Dictionary)],
    ) -> Option<FormField> {
        let doc = self.doc;
        let ff = own.ff.unwrap_or(0);
        let kind = match own.ft? {
            b"Tx" => FieldType::Text,
            b"Ch" => FieldType::Choice,
            b"Sig" => FieldType::Signature,
            b"Btn" if ff & PUSHBUTTON != 0 => FieldType::Button,
            b"Btn" if ff & RADIO != 0 => FieldType::Radio,
            b"Btn" => FieldType::Checkbox,
            _ => return None,
        };
        let opt = array_at(doc, dict, b"Opt");
        let options = match kind {
            FieldType::Choice => choice_options(doc, opt),
            FieldType::Checkbox | FieldType::Radio => export_values(doc, opt, widgets),
            _ => Vec::new(),
        };
        let value = |object: Option<&Object>| object.and_then(|o| field_value(doc, kind, o, opt));
        let page = widgets.iter().find_map(|(id, widget)| {
            id.and_then(|id| self.pages.get(&id).copied()).or_else(|| {
                let page = widget.get(b"P").ok()?.as_reference().ok()?;
                self.page_numbers.get(&page).copied()
            })
        });
        let flag = |bit: i64, applies: bool| applies && ff & bit != 0;
        let text = kind == FieldType::Text;
        let choice = kind == FieldType::Choice;
        Some(FormField {
            name: own.name.clone(),
            kind,
            value: match kind {
                // An unset check box is off.
                FieldType::Checkbox => value(own.v).or(Some(FieldValue::Bool(false))),
                _ => value(own.v),
            },
            default_value: value(own.dv),
            options,
            required: ff & REQUIRED != 0,
            read_only: ff & READ_ONLY != 0,
            page,
            max_length: if text { own.max_len } else { None },
            multiline: flag(MULTILINE, text),
            password: flag(PASSWORD, text),
            combo: flag(COMBO, choice),
            editable: flag(EDIT, choice),
            multi_select: flag(MULTI_SELECT, choice),
            tooltip: dict.get(b"TU").ok().and_then(|t| pdf::text_string(doc, t)).filter(|t| !t.is_empty()),
        })
    }
}

/// Longest partial name (/T) read, in bytes, and longest fully qualified name, in
/// characters. Names are built by copying the parent's, and a hostile file can share
/// one huge /T among thousands of fields.
const MAX_PARTIAL_BYTES: usize = 1_024;
const MAX_NAME_CHARS: usize = 4_096;

/// The fully qualified name of a field whose own /T is in `dict`, under `parent`: both
/// bounded, so building names costs at most a few KiB per field.
pub(crate) fn qualified_name(doc: &Document, dict: &Dictionary, parent: &str) -> String {
    let partial = dict.get(b"T").ok().and_then(|t| doc.dereference(t).ok()).and_then(|(_, t)| match t {
        Object::String(bytes, _) => Some(pdf::decode_text_string(&bytes[..bytes.len().min(MAX_PARTIAL_BYTES)])),
        _ => None,
    });
    let name = match partial {
        Some(part) if parent.is_empty() => part,
        Some(part) => format!("{parent}.{part}"),
        None => parent.to_string(),
    };
    if name.chars().count() > MAX_NAME_CHARS { name.chars().take(MAX_NAME_CHARS).collect() } else { name }
}

/// The attributes of `dict`, with the ones it does not set taken from `parent`.
fn inherit<'a>(doc: &'a Document, dict: &'a Dictionary, parent: &Inherited<'a>) -> Inherited<'a> {
    let name = qualified_name(doc, dict, &parent.name);
    let get = |key: &[u8]| dict.get(key).ok().and_then(|o| doc.dereference(o).ok()).map(|(_, o)| o);
    Inherited {
        name,
        ft: get(b"FT").and_then(|o| o.as_name().ok()).or(parent.ft),
        ff: get(b"Ff").and_then(|o| o.as_i64().ok()).or(parent.ff),
        v: dict.get(b"V").ok().or(parent.v),
        dv: dict.get(b"DV").ok().or(parent.dv),
        max_len: get(b"MaxLen").and_then(|o| o.as_i64().ok()).and_then(|n| u64::try_from(n).ok()).or(parent.max_len),
    }
}

/// A value (/V or /DV) in the form of the field's type; None when empty.
fn field_value(doc: &Document, kind: FieldType, object: &Object, opt: Option<&Vec<Object>>) -> Option<FieldValue> {
    let (_, object) = doc.dereference(object).ok()?;
    match kind {
        FieldType::Button | FieldType::Signature => None,
        FieldType::Checkbox => {
            let state = object.as_name().ok()?;
            Some(FieldValue::Bool(!state.is_empty() && state != b"Off"))
        }
        FieldType::Radio => {
            let state = object.as_name().ok()?;
            if state.is_empty() || state == b"Off" {
                return None;
            }
            Some(FieldValue::Text(export_of(doc, state, opt)))
        }
        FieldType::Text => text_value(doc, object).filter(|t| !t.is_empty()).map(FieldValue::Text),
        FieldType::Choice => match object {
            Object::Array(items) => {
                let items: Vec<String> = items
                    .iter()
                    .take(MAX_OPTIONS)
                    .filter_map(|i| text_value(doc, i))
                    .filter(|t| !t.is_empty())
                    .collect();
                (!items.is_empty()).then_some(FieldValue::List(items))
            }
            other => text_value(doc, other).filter(|t| !t.is_empty()).map(FieldValue::Text),
        },
    }
}

/// Text from a string, a name, or a text stream (rich text values).
fn text_value(doc: &Document, object: &Object) -> Option<String> {
    match doc.dereference(object).ok()?.1 {
        Object::String(..) | Object::Name(_) => pdf::text_string(doc, object),
        Object::Stream(stream) => {
            stream.get_plain_content_with_limit(MAX_TEXT_STREAM).ok().map(|b| pdf::decode_text_string(&b))
        }
        _ => None,
    }
}

/// The export value of an appearance state: with /Opt, states may be indexes into it
/// (`/0`, `/1`…), which is how fields with repeated or non-ASCII export values are written.
fn export_of(doc: &Document, state: &[u8], opt: Option<&Vec<Object>>) -> String {
    let indexed = std::str::from_utf8(state)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .and_then(|i| opt?.get(i))
        .and_then(|o| pdf::text_string(doc, o));
    indexed.unwrap_or_else(|| pdf::decode_text_string(state))
}

/// A choice's options: strings (export value and text alike) or [export display] pairs.
fn choice_options(doc: &Document, opt: Option<&Vec<Object>>) -> Vec<FieldOption> {
    let Some(opt) = opt else { return Vec::new() };
    opt.iter()
        .take(MAX_OPTIONS)
        .filter_map(|item| match doc.dereference(item).ok()?.1 {
            Object::Array(pair) => {
                let export = pdf::text_string(doc, pair.first()?)?;
                let display = pair.get(1).and_then(|d| pdf::text_string(doc, d)).unwrap_or_else(|| export.clone());
                Some(FieldOption { export, display })
            }
            _ => {
                let text = pdf::text_string(doc, item)?;
                Some(FieldOption { export: text.clone(), display: text })
            }
        })
        .collect()
}

/// The export values of check boxes and radio buttons: the /Opt texts when there are, else
/// the "on" appearance states of the widgets, each once, in widget order.
fn export_values(
    doc: &Document,
    opt: Option<&Vec<Object>>,
    widgets: &[(Option<ObjectId>, &Dictionary)],
) -> Vec<FieldOption> {
    let mut seen = HashSet::new();
    let mut values = Vec::new();
    let mut push = |text: String| {
        if values.len() < MAX_OPTIONS && seen.insert(text.clone()) {
            values.push(FieldOption { export: text.clone(), display: text });
        }
    };
    if let Some(opt) = opt {
        opt.iter().filter_map(|o| pdf::text_string(doc, o)).for_each(&mut push);
        return values;
    }
    for (_, widget) in widgets {
        let Some(ap) = pdf::dict_at(doc, widget, b"AP") else { continue };
        for key in [&b"N"[..], b"D"] {
            if let Some(states) = pdf::dict_at(doc, ap, key) {
                for (state, _) in states.iter() {
                    if state.as_slice() != b"Off" {
                        push(pdf::decode_text_string(state));
                    }
                }
            }
        }
    }
    values
}

/// Every annotation object listed in a page's /Annots, with the first page listing it.
fn pages_of_annotations(doc: &Document) -> HashMap<ObjectId, u32> {
    let mut pages = HashMap::new();
    let mut seen_lists = HashSet::new();
    let mut visited = 0usize;
    for (index, page_id) in doc.page_iter().enumerate() {
        let Ok(page) = doc.get_dictionary(page_id) else { continue };
        let Some((list_id, list)) = page.get(b"Annots").ok().and_then(|a| doc.dereference(a).ok()) else { continue };
        if list_id.is_some_and(|id| !seen_lists.insert(id)) {
            continue;
        }
        let Ok(list) = list.as_array() else { continue };
        for annotation in list {
            visited += 1;
            if visited > MAX_ANNOTATIONS {
                return pages;
            }
            if let Object::Reference(id) = annotation {
                pages.entry(*id).or_insert(index as u32 + 1);
            }
        }
    }
    pages
}

fn array_at<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Vec<Object>> {
    doc.dereference(dict.get(key).ok()?).ok()?.1.as_array().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::testing::call;
    use base64::Engine as _;
    use lopdf::{Stream, dictionary};
    use serde_json::{Value, json};

    const CORPUS: &str = "/work/shared/corpus/pdf";

    fn s(text: &str) -> Object {
        pdf::encode_text_string(text)
    }

    fn name(text: &str) -> Object {
        Object::Name(text.as_bytes().to_vec())
    }

    fn rect() -> Object {
        vec![0.into(), 0.into(), 10.into(), 10.into()].into()
    }

    /// A widget whose "on" appearance state is `on`.
    fn widget(doc: &mut Document, on: &str) -> ObjectId {
        let look = doc.add_object(Stream::new(dictionary! {}, vec![]));
        doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Widget", "Rect" => rect(),
        "AP" => dictionary! { "N" => dictionary! { on => look, "Off" => look } } })
    }

    /// Two pages and a form with every kind of field, inherited attributes, widgets on
    /// page 2 found through /Annots only, a cycle and a field without a type.
    fn sample() -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let p1 = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()] });
        let p2 = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()] });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![p1.into(), p2.into()], "Count" => 2 }),
        );

        // person.first (a merged field and widget on page 1 by /P), person.last (a widget
        // kid on page 2); FT and Ff come from `person`.
        let person = doc.new_object_id();
        let first = doc
            .add_object(dictionary! { "T" => s("first"), "Parent" => person, "V" => s("Ada"), "MaxLen" => 20,
            "Subtype" => "Widget", "Rect" => rect(), "P" => p1 });
        let last_widget = doc.add_object(dictionary! { "Subtype" => "Widget", "Rect" => rect() });
        let last = doc.add_object(dictionary! { "T" => s("last"), "Parent" => person, "TU" => s("Family name"), "Kids" => vec![last_widget.into()] });
        doc.objects.insert(
            person,
            Object::Dictionary(dictionary! { "T" => s("person"), "FT" => "Tx", "Ff" => REQUIRED,
            "V" => s("inherited"), "Kids" => vec![first.into(), last.into()] }),
        );
        // A value inherited from the parent, which also sets Multiline; a name without /T in between.
        let home = doc.add_object(dictionary! { "T" => s("home"), "Subtype" => "Widget", "Rect" => rect() });
        let nameless = doc.add_object(dictionary! { "Kids" => vec![home.into()] });
        let city = doc.add_object(
            dictionary! { "T" => s("city"), "FT" => "Tx", "Ff" => MULTILINE | READ_ONLY, "V" => s("Paris"),
            "Kids" => vec![nameless.into()] },
        );
        // Radio buttons on page 2; one group with export values in /Opt.
        let (ws, wm, wl) = (widget(&mut doc, "S"), widget(&mut doc, "M"), widget(&mut doc, "L"));
        let size = doc.add_object(dictionary! { "T" => s("size"), "FT" => "Btn", "Ff" => RADIO | (1 << 14), "V" => name("M"), "DV" => name("Off"),
            "Kids" => vec![ws.into(), wm.into(), wl.into()] });
        let (w0, w1) = (widget(&mut doc, "0"), widget(&mut doc, "1"));
        let color = doc.add_object(dictionary! { "T" => s("color"), "FT" => "Btn", "Ff" => RADIO, "V" => name("1"),
        "Opt" => vec![s("Red"), s("Grün")], "Kids" => vec![w0.into(), w1.into()] });
        // Check boxes, merged with their widgets.
        let agree = widget(&mut doc, "Yes");
        let news = widget(&mut doc, "Yes");
        for (id, t) in [(agree, "agree"), (news, "news")] {
            let d = doc.get_dictionary_mut(id).unwrap();
            d.set("T", s(t));
            d.set("FT", "Btn");
        }
        doc.get_dictionary_mut(agree).unwrap().set("V", name("Yes"));
        // Choices.
        let country = doc.add_object(dictionary! { "T" => s("country"), "FT" => "Ch", "Ff" => COMBO | EDIT,
            "Opt" => vec![vec![s("de"), s("Germany")].into(), s("France")], "V" => s("de"), "DV" => s("France"), "P" => p1, "Rect" => rect() });
        let langs = doc.add_object(dictionary! { "T" => s("langs"), "FT" => "Ch", "Ff" => MULTI_SELECT,
        "Opt" => vec![s("en"), s("fr"), s("de")], "V" => vec![s("en"), s("fr")] });
        let go = doc.add_object(dictionary! { "T" => s("go"), "FT" => "Btn", "Ff" => PUSHBUTTON | READ_ONLY, "Subtype" => "Widget", "Rect" => rect() });
        let sig = doc.add_object(dictionary! { "T" => s("sig"), "FT" => "Sig" });
        // A cycle: loop → child → loop.
        let looped = doc.new_object_id();
        let child = doc.add_object(dictionary! { "T" => s("child"), "Kids" => vec![looped.into()] });
        doc.objects.insert(
            looped,
            Object::Dictionary(dictionary! { "T" => s("loop"), "FT" => "Tx", "Kids" => vec![child.into()] }),
        );
        let untyped = doc.add_object(dictionary! { "T" => s("untyped") });

        doc.get_dictionary_mut(p2)
            .unwrap()
            .set("Annots", vec![last_widget.into(), ws.into(), wm.into(), wl.into(), w0.into(), w1.into()]);
        doc.get_dictionary_mut(p1).unwrap().set("Annots", vec![agree.into(), news.into(), go.into()]);
        let fields: Vec<Object> =
            [person, city, size, color, agree, news, country, langs, go, sig, looped, untyped, person]
                .into_iter()
                .map(Object::Reference)
                .chain([Object::Null, Object::Integer(3)])
                .collect();
        let acroform = doc.add_object(dictionary! { "Fields" => fields, "NeedAppearances" => true });
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id, "AcroForm" => acroform });
        doc.trailer.set("Root", catalog);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        bytes
    }

    async fn run(pdf: &[u8]) -> FormFieldsReport {
        let body = json!({ "file": { "data": base64::engine::general_purpose::STANDARD.encode(pdf) } });
        match call::<FormFieldsRoute>(&body).await.unwrap() {
            Reply::Json(report) => report,
            Reply::Files(_) => panic!("answered files"),
        }
    }

    fn text(t: &str) -> Option<FieldValue> {
        Some(FieldValue::Text(t.to_string()))
    }

    fn options(pairs: &[(&str, &str)]) -> Vec<FieldOption> {
        pairs.iter().map(|(e, d)| FieldOption { export: e.to_string(), display: d.to_string() }).collect()
    }

    #[tokio::test]
    async fn reports_every_kind_of_field() {
        let report = run(&sample()).await;
        let by_name: HashMap<&str, &FormField> = report.fields.iter().map(|f| (f.name.as_str(), f)).collect();
        let names: Vec<&str> = report.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "person.first",
                "person.last",
                "city.home",
                "size",
                "color",
                "agree",
                "news",
                "country",
                "langs",
                "go",
                "sig",
                "loop.child"
            ]
        );
        assert_eq!(report.count, 12);
        assert!(report.acroform && report.need_appearances && !report.xfa);
        assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
        assert!(report.warnings[0].contains("untyped"));

        let first = by_name["person.first"];
        assert_eq!(
            (first.kind, first.value.clone(), first.required, first.max_length, first.page),
            (FieldType::Text, text("Ada"), true, Some(20), Some(1))
        );
        let last = by_name["person.last"];
        assert_eq!(
            (last.value.clone(), last.tooltip.as_deref(), last.page),
            (text("inherited"), Some("Family name"), Some(2))
        );
        let city = by_name["city.home"];
        assert_eq!(
            (city.value.clone(), city.multiline, city.read_only, city.required, city.page),
            (text("Paris"), true, true, false, None)
        );

        let size = by_name["size"];
        assert_eq!(
            (size.kind, size.value.clone(), size.default_value.clone(), size.page),
            (FieldType::Radio, text("M"), None, Some(2))
        );
        assert_eq!(size.options, options(&[("S", "S"), ("M", "M"), ("L", "L")]));
        let color = by_name["color"];
        assert_eq!(
            (color.value.clone(), color.options.clone()),
            (text("Grün"), options(&[("Red", "Red"), ("Grün", "Grün")]))
        );

        assert_eq!(
            (by_name["agree"].kind, by_name["agree"].value.clone()),
            (FieldType::Checkbox, Some(FieldValue::Bool(true)))
        );
        assert_eq!(by_name["agree"].options, options(&[("Yes", "Yes")]));
        assert_eq!((by_name["news"].value.clone(), by_name["news"].page), (Some(FieldValue::Bool(false)), Some(1)));

        let country = by_name["country"];
        assert_eq!(
            (country.kind, country.combo, country.editable, country.multi_select),
            (FieldType::Choice, true, true, false)
        );
        assert_eq!(
            (country.value.clone(), country.default_value.clone(), country.page),
            (text("de"), text("France"), Some(1))
        );
        assert_eq!(country.options, options(&[("de", "Germany"), ("France", "France")]));
        let langs = by_name["langs"];
        assert_eq!((langs.combo, langs.multi_select), (false, true));
        assert_eq!(langs.value, Some(FieldValue::List(vec!["en".into(), "fr".into()])));

        let go = by_name["go"];
        assert_eq!((go.kind, go.value.clone(), go.read_only, go.page), (FieldType::Button, None, true, Some(1)));
        assert_eq!(
            (by_name["sig"].kind, by_name["sig"].value.clone(), by_name["sig"].page),
            (FieldType::Signature, None, None)
        );

        let json = serde_json::to_value(&report).unwrap();
        let agree = &json["fields"][5];
        assert_eq!((agree["type"].clone(), agree["value"].clone()), (json!("checkbox"), json!(true)));
        assert_eq!(json["fields"][8]["value"], json!(["en", "fr"]));
        assert_eq!(json["fields"][9]["value"], Value::Null);
        assert_eq!(json["fields"][7]["options"][0], json!({ "export": "de", "display": "Germany" }));
    }

    #[tokio::test]
    async fn a_pdf_without_a_form_has_no_fields() {
        let mut doc = Document::with_version("1.7");
        let pages = doc.new_object_id();
        let page = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages });
        doc.objects.insert(
            pages,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages });
        doc.trailer.set("Root", catalog);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let report = run(&bytes).await;
        assert!(!report.acroform && report.fields.is_empty() && report.count == 0);
    }

    #[tokio::test]
    async fn a_deep_chain_stops_at_the_cap() {
        let mut doc = Document::with_version("1.7");
        let pages = doc.new_object_id();
        let page = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages });
        doc.objects.insert(
            pages,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
        );
        let mut node = doc.add_object(dictionary! { "T" => s("leaf"), "FT" => "Tx" });
        for _ in 0..100 {
            node = doc.add_object(dictionary! { "T" => s("n"), "Kids" => vec![node.into()] });
        }
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages, "AcroForm" => dictionary! { "Fields" => vec![node.into()] } });
        doc.trailer.set("Root", catalog);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let report = run(&bytes).await;
        assert!(report.fields.is_empty());
        assert!(report.warnings[0].contains("levels deep"), "{:?}", report.warnings);
    }

    #[tokio::test]
    async fn input_errors_name_their_field() {
        let e = call::<FormFieldsRoute>(&json!({ "file": {} })).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/file/data"));
        let e = call::<FormFieldsRoute>(&json!({ "file": { "data": "aGVsbG8=" } })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        let e = call::<FormFieldsRoute>(&json!({ "file": { "data": "aGVsbG8=" }, "pages": "1" })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("unknown_field", Some("/pages")));
    }

    /// qpdf's view of a form (`--json-key=acroform`), one entry per field (qpdf lists
    /// widgets): name → (type, value) in this route's terms.
    fn qpdf_fields(path: &str) -> Vec<(String, FieldType, Option<FieldValue>)> {
        let out = std::process::Command::new("qpdf").args(["--json", "--json-key=acroform", path]).output().unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut seen = HashSet::new();
        let mut fields = Vec::new();
        for f in json["acroform"]["fields"].as_array().unwrap() {
            let name = f["fullname"].as_str().unwrap().to_string();
            if !seen.insert(name.clone()) {
                continue;
            }
            let flags = f["fieldflags"].as_i64().unwrap();
            let kind = match f["fieldtype"].as_str().unwrap() {
                "/Tx" => FieldType::Text,
                "/Ch" => FieldType::Choice,
                "/Sig" => FieldType::Signature,
                "/Btn" if flags & PUSHBUTTON != 0 => FieldType::Button,
                "/Btn" if flags & RADIO != 0 => FieldType::Radio,
                _ => FieldType::Checkbox,
            };
            let raw = f["value"].as_str();
            let value = match (kind, raw) {
                (FieldType::Button | FieldType::Signature, _) | (_, None) => None,
                (FieldType::Checkbox, Some(v)) => Some(FieldValue::Bool(v != "/Off")),
                (FieldType::Radio, Some("/Off")) => None,
                (_, Some(v)) => {
                    let v = v.strip_prefix("u:").or_else(|| v.strip_prefix('/')).unwrap_or(v);
                    (!v.is_empty()).then(|| FieldValue::Text(v.to_string()))
                }
            };
            fields.push((name, kind, value));
        }
        fields
    }

    #[tokio::test]
    async fn corpus_forms_match_qpdf() {
        let files = [
            "qpdf/form-filled-by-acrobat.pdf",
            "qpdf/form-empty-from-odt.pdf",
            "qpdf/form-fields-and-annotations.pdf",
            "sample-files/libreoffice-form.pdf",
            "sample-files/pdflatex-forms.pdf",
        ];
        let mut reports = HashMap::new();
        for name in files {
            let path = format!("{CORPUS}/{name}");
            let Ok(pdf) = std::fs::read(&path) else { return };
            let report = run(&pdf).await;
            // qpdf lists fields in page order, this route in field tree order.
            let mut ours: Vec<(String, FieldType, Option<FieldValue>)> =
                report.fields.iter().map(|f| (f.name.clone(), f.kind, f.value.clone())).collect();
            let mut theirs = qpdf_fields(&path);
            ours.sort_by(|a, b| a.0.cmp(&b.0));
            theirs.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(ours, theirs, "{name}");
            assert!(report.warnings.is_empty(), "{name}: {:?}", report.warnings);
            reports.insert(name, report);
        }
        let field = |file: &str, name: &str| reports[file].fields.iter().find(|f| f.name == name).unwrap().clone();
        let acrobat = "qpdf/form-filled-by-acrobat.pdf";
        assert_eq!(field(acrobat, "Text Box 1").value, text("abc potato"));
        assert_eq!(field(acrobat, "Text Box 2").value, text("salad πʬ xyz"));
        assert_eq!(field(acrobat, "Text Box 2").page, Some(3));
        let r2 = field(acrobat, "r2");
        assert_eq!((r2.kind, r2.value, r2.page), (FieldType::Radio, text("2"), Some(3)));
        assert_eq!(r2.options, options(&[("1", "1"), ("2", "2"), ("3", "3")]));
        assert_eq!(field(acrobat, "Check Box 2").value, Some(FieldValue::Bool(true)));
        assert!(!reports[acrobat].need_appearances);
        assert!(reports["qpdf/form-empty-from-odt.pdf"].need_appearances);

        let annotations = field("qpdf/form-fields-and-annotations.pdf", "r1");
        assert_eq!((annotations.value, annotations.default_value), (text("2"), text("1")));

        let libre = "sample-files/libreoffice-form.pdf";
        let nationality = field(libre, "Nationality");
        assert_eq!((nationality.kind, nationality.combo, nationality.value), (FieldType::Choice, true, None));
        assert_eq!(nationality.options.len(), 7);
        assert_eq!(nationality.options[2], FieldOption { export: "Indonesian".into(), display: "Indonesian".into() });
        assert_eq!(field(libre, "First Name").value, text("Alice"));
        let bob = field(libre, "First Name_2");
        assert_eq!((bob.value, bob.multiline), (text("Bob"), true));
        assert_eq!((field(libre, "female").kind, field(libre, "female").value), (FieldType::Radio, None));

        let latex = "sample-files/pdflatex-forms.pdf";
        assert_eq!(field(latex, "Submit").kind, FieldType::Button);
        assert_eq!(field(latex, "Check").value, Some(FieldValue::Bool(false)));
        assert_eq!(reports[latex].count, 3);
    }
}
