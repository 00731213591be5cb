//! Making a PDF conform to PDF/A-2b or PDF/A-3b (ISO 19005-2 and -3, level B: the
//! look of every page is kept reproducible for the long term).
//!
//! What a conversion does, in order, and what each step answers in the report:
//! - fonts: every font drawn with is embedded; a missing one gets an installed font of
//!   the same metrics or the call is refused naming it ([`fonts`]);
//! - colour: an sRGB output intent ([`icc`]) unless the file has a PDF/A one that fits;
//!   device CMYK is described by a CMYK profile mapping it as readers do without one;
//! - what PDF/A forbids goes: JavaScript, actions that launch, play, hide or reset,
//!   automatic actions, XFA, the form's "regenerate appearances" flag, transfer functions,
//!   PostScript and reference XObjects, interpolation, alternate images, LZW compression,
//!   streams kept in outside files, and for PDF/A-2 embedded files;
//! - annotations: each printable, with an appearance; hidden ones and media go;
//! - metadata: the Info dictionary and a fresh XMP packet saying the same, naming the
//!   part and conformance; a document ID; no encryption.
//!
//! What this module must not do: change what a page shows (apart from the hidden,
//! media and script parts listed), or call a file PDF/A that it has not made so.

pub mod facturx;
pub mod fonts;
pub mod icc;
pub mod scan;
pub mod truetype;

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, StringFormat, dictionary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::docs::sanitize::{SanitizeOptions, sanitize};
use crate::error::EngineError;
use crate::pdf::embedded_files::media_type_for;
use crate::pdf::metadata;
use crate::pdf::{self, xmp};

pub use fonts::EmbeddedFont;

/// Action types PDF/A-2 and -3 forbid (JavaScript goes with the scripts).
const FORBIDDEN_ACTIONS: [&[u8]; 11] = [
    b"Launch",
    b"Sound",
    b"Movie",
    b"ResetForm",
    b"ImportData",
    b"Hide",
    b"SetOCGState",
    b"Rendition",
    b"Trans",
    b"GoTo3DView",
    b"RichMediaExecute",
];
/// The named actions PDF/A keeps.
const ALLOWED_NAMED: [&[u8]; 4] = [b"NextPage", b"PrevPage", b"FirstPage", b"LastPage"];
/// Annotation types PDF/A forbids.
const FORBIDDEN_ANNOTATIONS: [&[u8]; 5] = [b"3D", b"Sound", b"Screen", b"Movie", b"RichMedia"];
/// Deepest nesting of direct dictionaries looked into.
const MAX_DEPTH: usize = 8;

/// The PDF/A part and level made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Level {
    /// PDF/A-2b (ISO 19005-2, level B): the archival standard most validators and archives ask for. Embedded files go.
    #[default]
    #[serde(rename = "2b")]
    A2b,
    /// PDF/A-3b (ISO 19005-3, level B): as PDF/A-2b, and embedded files of any kind stay, each associated with the document.
    #[serde(rename = "3b")]
    A3b,
}

impl Level {
    /// The part of ISO 19005.
    pub fn part(self) -> u8 {
        match self {
            Level::A2b => 2,
            Level::A3b => 3,
        }
    }
}

/// What a conversion did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PdfaReport {
    /// The conformance claimed in the file's XMP: `PDF/A-2b` or `PDF/A-3b`.
    pub conformance: String,
    /// Fonts that were not embedded and now are, each with the font of the same metrics embedded in its place.
    pub fonts_embedded: Vec<EmbeddedFont>,
    /// Every change made, with how many times.
    pub changes: Vec<Change>,
}

/// One kind of change.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// What was changed, in words.
    pub what: String,
    /// How many times.
    pub count: u64,
}

#[derive(Default)]
struct Changes(Vec<Change>);

impl Changes {
    fn add(&mut self, what: &str, count: u64) {
        if count == 0 {
            return;
        }
        match self.0.iter_mut().find(|c| c.what == what) {
            Some(change) => change.count += count,
            None => self.0.push(Change { what: what.to_string(), count }),
        }
    }
}

/// XMP a caller adds to the packet (the e-invoice's extension schema and properties):
/// whole `rdf:Description` elements.
pub type ExtraXmp = Vec<String>;

/// Converts `doc` in place to `level`; refuses (leaving `doc` half-converted, to be
/// dropped) when a font cannot be embedded or the colour cannot be described.
pub fn convert(
    doc: &mut Document,
    level: Level,
    at: OffsetDateTime,
    extra_xmp: ExtraXmp,
) -> Result<PdfaReport, EngineError> {
    let mut changes = Changes::default();
    doc.prune_objects();
    // Text fields are drawn from their values before the fonts are looked at, so the
    // font of the new appearances is embedded too.
    let regenerate = matches!(
        doc.catalog().ok().and_then(|c| pdf::dict_at(doc, c, b"AcroForm")).and_then(|f| f.get(b"NeedAppearances").ok()),
        Some(Object::Boolean(true))
    );
    let drawn = crate::docs::fill_form::draw_text_appearances(doc, regenerate)?;
    changes.add("text field appearances drawn from their values", drawn);
    fonts::promote_direct_fonts(doc);
    let drawing = scan::scan(doc);
    let fonts_embedded = fonts::embed_missing(doc, &drawing)?;
    output_intent(doc, &drawing, &mut changes)?;
    let cleaned = sanitize(
        doc,
        SanitizeOptions {
            javascript: true,
            actions: false,
            embedded_files: level == Level::A2b,
            links: false,
            metadata: false,
        },
    );
    changes.add("JavaScript removed (scripts, script actions, XFA forms)", cleaned.javascript);
    changes.add("embedded files removed (PDF/A-2 keeps none; PDF/A-3 keeps them)", cleaned.embedded_files);
    actions(doc, &mut changes);
    catalog(doc, &mut changes);
    annotations(doc, &mut changes);
    objects(doc, &mut changes);
    if level == Level::A3b {
        associate_files(doc, at, &mut changes);
    }
    write_metadata(doc, level, at, extra_xmp, &mut changes)?;
    // The trailer says where the catalog, the information and the ID are, and nothing else.
    doc.trailer = doc
        .trailer
        .iter()
        .filter(|(key, _)| matches!(key.as_slice(), b"Root" | b"Info" | b"ID" | b"Size"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if doc.version.as_str() < "1.4" || doc.version.len() != 3 {
        doc.version = "1.7".into();
    }
    doc.prune_objects();
    Ok(PdfaReport { conformance: format!("PDF/A-{}b", level.part()), fonts_embedded, changes: changes.0 })
}

fn name<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a [u8]> {
    doc.dereference(dict.get(key).ok()?).ok()?.1.as_name().ok()
}

fn catalog_id(doc: &Document) -> Result<ObjectId, EngineError> {
    doc.trailer.get(b"Root").and_then(Object::as_reference).map_err(|e| pdf::edit_error("finding the catalog", e))
}

// ---------------------------------------------------------------------------------------
// Colour

/// Whether the document paints in device colour.
#[derive(Default)]
struct DeviceColour {
    cmyk: bool,
    rgb: bool,
}

/// Adds the sRGB output intent unless a PDF/A one fits the colour the file uses.
fn output_intent(doc: &mut Document, drawing: &scan::Scan, changes: &mut Changes) -> Result<(), EngineError> {
    let used = device_colour(doc, drawing);
    let root = catalog_id(doc)?;
    let catalog = doc.get_dictionary(root).map_err(|e| pdf::edit_error("reading the catalog", e))?;
    let existing = catalog
        .get(b"OutputIntents")
        .ok()
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_array().ok())
        .into_iter()
        .flatten()
        .filter_map(|intent| doc.dereference(intent).ok().and_then(|(_, i)| i.as_dict().ok()))
        .find(|intent| name(doc, intent, b"S") == Some(b"GTS_PDFA1"))
        .and_then(|intent| doc.dereference(intent.get(b"DestOutputProfile").ok()?).ok()?.1.as_stream().ok())
        .and_then(|profile| pdf::number(doc, profile.dict.get(b"N").ok()?));
    match (existing, used.cmyk) {
        (Some(3.0), false) => return Ok(()),
        (Some(4.0), _) if !used.rgb => return Ok(()),
        (_, true) => describe_cmyk(doc, changes)?,
        _ => {}
    }
    let mut profile = Stream::new(dictionary! { "N" => 3 }, icc::srgb_profile());
    profile.compress().map_err(|e| pdf::edit_error("compressing the colour profile", e))?;
    let profile = doc.add_object(profile);
    let intent = doc.add_object(dictionary! {
        "Type" => "OutputIntent",
        "S" => "GTS_PDFA1",
        "OutputConditionIdentifier" => Object::string_literal(icc::DESCRIPTION),
        "RegistryName" => Object::string_literal("http://www.color.org"),
        "Info" => Object::string_literal(icc::DESCRIPTION),
        "DestOutputProfile" => profile,
    });
    doc.get_dictionary_mut(root)
        .map_err(|e| pdf::edit_error("updating the catalog", e))?
        .set("OutputIntents", vec![Object::Reference(intent)]);
    changes.add("sRGB output intent added", 1);
    Ok(())
}

/// Device colour used anywhere: colour spaces named in the file's objects, and what the
/// content paints (`drawing`).
fn device_colour(doc: &Document, drawing: &scan::Scan) -> DeviceColour {
    let mut found = DeviceColour { cmyk: drawing.cmyk, rgb: drawing.rgb };
    for object in doc.objects.values() {
        let dict = match object {
            Object::Stream(s) => &s.dict,
            Object::Dictionary(d) => d,
            _ => continue,
        };
        let mut names = Vec::new();
        dict.iter().for_each(|(_, v)| device_names(v, 1, &mut names));
        found.cmyk |= names.contains(&&b"DeviceCMYK"[..]);
        found.rgb |= names.contains(&&b"DeviceRGB"[..]);
    }
    found
}

/// The device colour space names under `object` (not following references).
fn device_names(object: &Object, depth: usize, out: &mut Vec<&'static [u8]>) {
    if depth > MAX_DEPTH {
        return;
    }
    match object {
        Object::Name(n) if n == b"DeviceCMYK" || n == b"CMYK" => out.push(b"DeviceCMYK"),
        Object::Name(n) if n == b"DeviceRGB" || n == b"RGB" => out.push(b"DeviceRGB"),
        Object::Array(items) => items.iter().for_each(|i| device_names(i, depth + 1, out)),
        Object::Dictionary(d) => d.iter().for_each(|(_, v)| device_names(v, depth + 1, out)),
        _ => {}
    }
}

/// Describes device CMYK with [`icc::cmyk_profile`]: every colour space named DeviceCMYK
/// in the file's objects becomes that ICC-based space, and every resource dictionary gets
/// it as DefaultCMYK, which the content's CMYK operators and inline images then mean.
fn describe_cmyk(doc: &mut Document, changes: &mut Changes) -> Result<(), EngineError> {
    let mut profile = Stream::new(dictionary! { "N" => 4, "Alternate" => "DeviceCMYK" }, icc::cmyk_profile());
    profile.compress().map_err(|e| pdf::edit_error("compressing the colour profile", e))?;
    let profile = doc.add_object(profile);
    let space = doc.add_object(Object::Array(vec![Object::Name(b"ICCBased".to_vec()), Object::Reference(profile)]));
    let mut named = 0;
    for (id, object) in doc.objects.iter_mut() {
        if *id == profile || *id == space {
            continue;
        }
        match object {
            Object::Dictionary(d) => named += replace_cmyk(d, space, 0),
            Object::Stream(s) => named += replace_cmyk(&mut s.dict, space, 0),
            Object::Array(items) => items.iter_mut().for_each(|i| named += replace_cmyk_in(i, space, 1)),
            _ => {}
        }
    }
    // Every resource dictionary, found from what holds one.
    let mut resources: HashSet<ObjectId> = HashSet::new();
    let mut direct: Vec<ObjectId> = Vec::new();
    for (id, object) in &doc.objects {
        let dict = match object {
            Object::Dictionary(d) => d,
            Object::Stream(s) => &s.dict,
            _ => continue,
        };
        match dict.get(b"Resources") {
            Ok(Object::Reference(r)) => {
                resources.insert(*r);
            }
            Ok(Object::Dictionary(_)) => direct.push(*id),
            _ => {}
        }
    }
    let mut spaces: HashSet<ObjectId> = HashSet::new();
    let mut add_default = |resources: &mut Dictionary| match resources.get_mut(b"ColorSpace") {
        Ok(Object::Dictionary(d)) => d.set("DefaultCMYK", space),
        Ok(Object::Reference(r)) => {
            spaces.insert(*r);
        }
        _ => resources.set("ColorSpace", dictionary! { "DefaultCMYK" => space }),
    };
    for id in direct {
        let dict = match doc.objects.get_mut(&id) {
            Some(Object::Dictionary(d)) => d,
            Some(Object::Stream(s)) => &mut s.dict,
            _ => continue,
        };
        if let Ok(Object::Dictionary(r)) = dict.get_mut(b"Resources") {
            add_default(r);
        }
    }
    for id in resources {
        if let Some(Object::Dictionary(r)) = doc.objects.get_mut(&id) {
            add_default(r);
        }
    }
    for id in spaces {
        if let Some(Object::Dictionary(d)) = doc.objects.get_mut(&id) {
            d.set("DefaultCMYK", space);
        }
    }
    changes.add("device CMYK described by a CMYK profile that keeps its look", 1 + named);
    Ok(())
}

/// Replaces the DeviceCMYK colour space names under `dict` (not an ICC profile's
/// alternate) with `space`; answers how many.
fn replace_cmyk(dict: &mut Dictionary, space: ObjectId, depth: usize) -> u64 {
    if depth > MAX_DEPTH {
        return 0;
    }
    let mut count = 0;
    for (key, value) in dict.iter_mut() {
        if key != b"Alternate" {
            count += replace_cmyk_in(value, space, depth + 1);
        }
    }
    count
}

fn replace_cmyk_in(object: &mut Object, space: ObjectId, depth: usize) -> u64 {
    match object {
        Object::Name(n) if n == b"DeviceCMYK" => {
            *object = Object::Reference(space);
            1
        }
        Object::Array(items) if depth <= MAX_DEPTH => {
            items.iter_mut().map(|i| replace_cmyk_in(i, space, depth + 1)).sum()
        }
        Object::Dictionary(d) => replace_cmyk(d, space, depth),
        _ => 0,
    }
}

// ---------------------------------------------------------------------------------------
// Actions, the catalog, annotations

/// Removes automatic actions everywhere, actions PDF/A forbids wherever they hang, and
/// the actions of form widgets.
fn actions(doc: &mut Document, changes: &mut Changes) {
    let forbidden: HashSet<ObjectId> = doc
        .objects
        .iter()
        .filter_map(|(id, o)| o.as_dict().ok().filter(|d| is_forbidden_action(doc, d)).map(|_| *id))
        .collect();
    let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
    for id in ids {
        let Some(mut object) = doc.objects.remove(&id) else { continue };
        if let Some(dict) = match &mut object {
            Object::Dictionary(d) => Some(d),
            Object::Stream(s) => Some(&mut s.dict),
            _ => None,
        } {
            clean_actions(doc, dict, &forbidden, changes, 0);
        }
        doc.objects.insert(id, object);
    }
}

fn is_forbidden_action(doc: &Document, dict: &Dictionary) -> bool {
    match name(doc, dict, b"S") {
        Some(b"Named") => name(doc, dict, b"N").is_none_or(|n| !ALLOWED_NAMED.contains(&n)),
        Some(kind) => FORBIDDEN_ACTIONS.contains(&kind) && (dict.has(b"Type") || !dict.has(b"Subtype")),
        None => false,
    }
}

fn clean_actions(
    doc: &Document,
    dict: &mut Dictionary,
    forbidden: &HashSet<ObjectId>,
    changes: &mut Changes,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if dict.remove(b"AA").is_some() {
        changes.add("automatic actions removed (on open, close, page or field events)", 1);
    }
    if name(doc, dict, b"Subtype") == Some(b"Widget") && dict.remove(b"A").is_some() {
        changes.add("form field actions removed", 1);
    }
    for key in [&b"A"[..], b"OpenAction", b"Next"] {
        let goes = match dict.get(key) {
            Ok(Object::Reference(id)) => forbidden.contains(id),
            Ok(Object::Dictionary(d)) => is_forbidden_action(doc, d),
            Ok(Object::Array(items)) if key == b"Next" => items.iter().any(|i| match i {
                Object::Reference(id) => forbidden.contains(id),
                Object::Dictionary(d) => is_forbidden_action(doc, d),
                _ => false,
            }),
            _ => false,
        };
        if goes {
            dict.remove(key);
            changes.add("actions PDF/A forbids removed (launch, media, hide, reset, other named actions)", 1);
        }
    }
    for (_, value) in dict.iter_mut() {
        match value {
            Object::Dictionary(inner) => clean_actions(doc, inner, forbidden, changes, depth + 1),
            Object::Array(items) => {
                for item in items.iter_mut() {
                    if let Object::Dictionary(inner) = item {
                        clean_actions(doc, inner, forbidden, changes, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The catalog's form and optional content.
fn catalog(doc: &mut Document, changes: &mut Changes) {
    let Ok(root) = catalog_id(doc) else { return };
    let Ok(mut catalog) = doc.get_dictionary(root).cloned() else { return };
    let form_id = catalog.get(b"AcroForm").ok().and_then(|f| f.as_reference().ok());
    let mut form = match catalog.get(b"AcroForm") {
        Ok(Object::Reference(id)) => doc.get_dictionary(*id).ok().cloned(),
        Ok(Object::Dictionary(d)) => Some(d.clone()),
        _ => None,
    };
    if let Some(form) = &mut form {
        if form.remove(b"NeedAppearances").is_some() {
            changes.add("the form's request to regenerate appearances removed", 1);
        }
        if form.remove(b"XFA").is_some() {
            changes.add("XFA form removed", 1);
        }
    }
    if let Some(form) = form {
        match form_id {
            Some(id) => {
                doc.objects.insert(id, Object::Dictionary(form));
            }
            None => catalog.set("AcroForm", form),
        }
    }
    if catalog.remove(b"NeedsRendering").is_some() {
        changes.add("XFA form removed", 1);
    }
    if let Ok(perms) = catalog.get(b"Perms").and_then(Object::as_dict).cloned() {
        let kept: Dictionary = perms.into_iter().filter(|(k, _)| k == b"DocMDP" || k == b"UR3").collect();
        if kept.is_empty() {
            catalog.remove(b"Perms");
        } else {
            catalog.set("Perms", kept);
        }
    }
    // Each optional content configuration needs a unique name and no automatic states.
    let oc_id = catalog.get(b"OCProperties").ok().and_then(|o| o.as_reference().ok());
    let oc = match catalog.get(b"OCProperties") {
        Ok(Object::Reference(id)) => doc.get_dictionary(*id).ok().cloned(),
        Ok(Object::Dictionary(d)) => Some(d.clone()),
        _ => None,
    };
    if let Some(mut oc) = oc {
        let mut fixed = 0;
        let mut names = HashSet::new();
        let mut fix = |doc: &mut Document, config: &mut Object, n: usize| {
            let dict = match config {
                Object::Reference(id) => match doc.get_dictionary_mut(*id) {
                    Ok(d) => d,
                    Err(_) => return,
                },
                Object::Dictionary(d) => d,
                _ => return,
            };
            let current = dict.get(b"Name").ok().and_then(|n| n.as_str().ok()).map(<[u8]>::to_vec);
            if current.as_ref().is_none_or(|c| !names.insert(c.clone())) {
                let fresh = if n == 0 { "Default".to_string() } else { format!("Configuration {n}") };
                names.insert(fresh.clone().into_bytes());
                dict.set("Name", Object::string_literal(fresh));
                fixed += 1;
            }
            if dict.remove(b"AS").is_some() {
                fixed += 1;
            }
        };
        if let Ok(mut d) = oc.get(b"D").cloned() {
            fix(doc, &mut d, 0);
            oc.set("D", d);
        }
        if let Ok(Object::Array(mut configs)) = oc.get(b"Configs").cloned() {
            for (i, config) in configs.iter_mut().enumerate() {
                fix(doc, config, i + 1);
            }
            oc.set("Configs", configs);
        }
        changes.add("optional content configurations named, automatic states removed", fixed);
        match oc_id {
            Some(id) => {
                doc.objects.insert(id, Object::Dictionary(oc));
            }
            None => catalog.set("OCProperties", oc),
        }
    }
    doc.objects.insert(root, Object::Dictionary(catalog));
}

/// Annotations: media and hidden ones go; the rest print, with a normal appearance only.
fn annotations(doc: &mut Document, changes: &mut Changes) {
    let pages: Vec<ObjectId> = doc.page_iter().collect();
    for page_id in pages {
        let Some(annots) = doc.get_dictionary(page_id).ok().and_then(|p| p.get(b"Annots").ok()).cloned() else {
            continue;
        };
        let (annots_id, items) = match &annots {
            Object::Reference(id) => match doc.get_object(*id).and_then(Object::as_array) {
                Ok(a) => (Some(*id), a.clone()),
                Err(_) => continue,
            },
            Object::Array(a) => (None, a.clone()),
            _ => continue,
        };
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            let (id, mut annot) = match &item {
                Object::Reference(id) => match doc.get_dictionary(*id) {
                    Ok(d) => (Some(*id), d.clone()),
                    Err(_) => continue,
                },
                Object::Dictionary(d) => (None, d.clone()),
                _ => continue,
            };
            if !fix_annotation(doc, &mut annot, changes) {
                continue;
            }
            match id {
                Some(id) => {
                    doc.objects.insert(id, Object::Dictionary(annot));
                    kept.push(item);
                }
                None => kept.push(Object::Dictionary(annot)),
            }
        }
        match annots_id {
            Some(id) => {
                doc.objects.insert(id, Object::Array(kept));
            }
            None => {
                if let Ok(page) = doc.get_dictionary_mut(page_id) {
                    page.set("Annots", kept);
                }
            }
        }
    }
}

/// Fixes one annotation; false when it goes.
fn fix_annotation(doc: &mut Document, annot: &mut Dictionary, changes: &mut Changes) -> bool {
    let subtype = name(doc, annot, b"Subtype").map(<[u8]>::to_vec).unwrap_or_default();
    if FORBIDDEN_ANNOTATIONS.contains(&subtype.as_slice()) {
        changes.add("media and 3D annotations removed", 1);
        return false;
    }
    if subtype == b"Popup" {
        return true;
    }
    let flags = annot.get(b"F").ok().and_then(|f| pdf::number(doc, f)).unwrap_or(0.0) as i64;
    // Invisible (1), hidden (2), no view (32): nothing a reader shows; PDF/A allows none.
    if flags & (1 | 2 | 32) != 0 {
        changes.add("hidden annotations removed", 1);
        return false;
    }
    let printing = (flags | 4) & !256;
    if printing != flags {
        annot.set("F", printing);
        changes.add("annotations marked to print", 1);
    }
    let rect = annot.get(b"Rect").ok().and_then(|r| pdf::rect(doc, r));
    let (width, height) = rect.map(|r| (r.width(), r.height())).unwrap_or((0.0, 0.0));
    let ap = match annot.get(b"AP") {
        Ok(Object::Reference(id)) => doc.get_dictionary(*id).ok().cloned(),
        Ok(Object::Dictionary(d)) => Some(d.clone()),
        _ => None,
    };
    match ap {
        Some(ap) if ap.has(b"N") => {
            let mut ap = ap;
            let removed = ap.remove(b"D").is_some() | ap.remove(b"R").is_some();
            if removed {
                changes.add("rollover and down appearances removed", 1);
                annot.set("AP", ap);
            }
        }
        _ if width > 0.0 && height > 0.0 => {
            let empty = doc.add_object(Stream::new(
                dictionary! {
                    "Type" => "XObject",
                    "Subtype" => "Form",
                    "BBox" => vec![0.into(), 0.into(), Object::Real(width as f32), Object::Real(height as f32)],
                },
                Vec::new(),
            ));
            annot.set("AP", dictionary! { "N" => empty });
            changes.add("appearances added to annotations without one (links draw nothing)", 1);
        }
        _ => {}
    }
    true
}

// ---------------------------------------------------------------------------------------
// Every object

fn objects(doc: &mut Document, changes: &mut Changes) {
    let root = catalog_id(doc).ok();
    let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
    for id in ids {
        let Some(mut object) = doc.objects.remove(&id) else { continue };
        match &mut object {
            Object::Stream(stream) => {
                fix_stream(doc, stream, changes);
                fix_dict(doc, &mut stream.dict, Some(id) == root, changes);
            }
            Object::Dictionary(dict) => fix_dict(doc, dict, Some(id) == root, changes),
            _ => {}
        }
        doc.objects.insert(id, object);
    }
}

fn fix_stream(doc: &Document, stream: &mut Stream, changes: &mut Changes) {
    if stream.dict.remove(b"F").is_some()
        | stream.dict.remove(b"FFilter").is_some()
        | stream.dict.remove(b"FDecodeParms").is_some()
    {
        changes.add("references to data in outside files removed", 1);
    }
    // A filter entry that is neither a name nor a list: a reference is followed, anything
    // else cannot have been applied and goes.
    match stream.dict.get(b"Filter") {
        Ok(Object::Name(_) | Object::Array(_)) | Err(_) => {}
        Ok(Object::Reference(id)) => {
            let target = doc.get_object(*id).ok().filter(|t| matches!(t, Object::Name(_) | Object::Array(_))).cloned();
            match target {
                Some(target) => stream.dict.set("Filter", target),
                None => {
                    stream.dict.remove(b"Filter");
                }
            }
            changes.add("malformed stream filter entries repaired", 1);
        }
        Ok(_) => {
            stream.dict.remove(b"Filter");
            stream.dict.remove(b"DecodeParms");
            changes.add("malformed stream filter entries repaired", 1);
        }
    }
    let filters: Vec<Vec<u8>> = match stream.dict.get(b"Filter") {
        Ok(Object::Name(n)) => vec![n.clone()],
        Ok(Object::Array(a)) => a.iter().filter_map(|f| f.as_name().ok().map(<[u8]>::to_vec)).collect(),
        _ => Vec::new(),
    };
    let decodable = |f: &[u8]| {
        matches!(f, b"FlateDecode" | b"LZWDecode" | b"ASCII85Decode" | b"ASCIIHexDecode" | b"RunLengthDecode")
    };
    if filters.iter().any(|f| f == b"LZWDecode" || f == b"Crypt")
        && filters.iter().all(|f| decodable(f))
        && let Ok(plain) = stream.decompressed_content()
    {
        stream.dict.remove(b"Filter");
        stream.dict.remove(b"DecodeParms");
        stream.set_plain_content(plain);
        if stream.compress().is_ok() {
            changes.add("LZW-compressed streams recompressed with Flate", 1);
        }
    }
}

fn fix_dict(doc: &mut Document, dict: &mut Dictionary, is_catalog: bool, changes: &mut Changes) {
    let subtype = name(doc, dict, b"Subtype").map(<[u8]>::to_vec);
    let kind = name(doc, dict, b"Type").map(<[u8]>::to_vec);
    match subtype.as_deref() {
        Some(b"Image") => {
            if matches!(dict.get(b"Interpolate"), Ok(Object::Boolean(true))) {
                dict.set("Interpolate", false);
                changes.add("image interpolation turned off", 1);
            }
            if dict.remove(b"Alternates").is_some() | dict.remove(b"OPI").is_some() {
                changes.add("alternate images and OPI links removed", 1);
            }
        }
        Some(b"Form") => {
            let removed = dict.remove(b"OPI").is_some() | dict.remove(b"PS").is_some() | dict.remove(b"Ref").is_some();
            if removed {
                changes.add("PostScript, OPI and reference parts of form XObjects removed", 1);
            }
        }
        Some(b"PS") if kind.as_deref() != Some(b"Font") => {
            dict.set("Subtype", "Form");
            dict.set("BBox", vec![0.into(), 0.into(), 0.into(), 0.into()]);
            changes.add("PostScript XObjects emptied", 1);
        }
        _ => {}
    }
    if kind.as_deref() == Some(b"ExtGState") || dict.has(b"TR") || dict.has(b"TR2") || dict.has(b"HTP") {
        let default = matches!(dict.get(b"TR2"), Ok(Object::Name(n)) if n == b"Default");
        if dict.remove(b"TR").is_some() | dict.remove(b"HTP").is_some() | (!default && dict.remove(b"TR2").is_some()) {
            changes.add("transfer functions removed from graphics states", 1);
        }
    }
    if kind.as_deref() == Some(b"FontDescriptor")
        && (dict.remove(b"CIDSet").is_some() | dict.remove(b"CharSet").is_some())
    {
        changes.add("optional glyph lists of font subsets removed", 1);
    }
    if kind.as_deref() == Some(b"Page") && dict.remove(b"PresSteps").is_some() {
        changes.add("presentation steps removed", 1);
    }
    // Metadata of parts would have to be PDF/A-conforming XMP too; the document's is rewritten.
    if !is_catalog && kind.as_deref() != Some(b"Metadata") && dict.remove(b"Metadata").is_some() {
        changes.add("XMP metadata of parts (images, pages) removed", 1);
    }
}

// ---------------------------------------------------------------------------------------
// PDF/A-3: embedded files

/// Gives every embedded file a relationship, a media type and a date, and lists it in the
/// catalog's associated files unless something else associates it.
fn associate_files(doc: &mut Document, at: OffsetDateTime, changes: &mut Changes) {
    let mut associated: HashSet<ObjectId> = HashSet::new();
    for object in doc.objects.values() {
        let dict = match object {
            Object::Dictionary(d) => d,
            Object::Stream(s) => &s.dict,
            _ => continue,
        };
        if let Ok(af) = dict.get(b"AF") {
            let list = doc.dereference(af).ok().and_then(|(_, a)| a.as_array().ok().cloned()).unwrap_or_default();
            associated.extend(list.iter().filter_map(|o| o.as_reference().ok()));
        }
    }
    let specs: Vec<ObjectId> =
        doc.objects.iter().filter(|(_, o)| o.as_dict().is_ok_and(|d| d.has(b"EF"))).map(|(id, _)| *id).collect();
    let date = Object::string_literal(crate::pdf::dates::pdf_date_utc(at, "Z"));
    let mut unassociated = Vec::new();
    for spec_id in specs {
        let Ok(spec) = doc.get_dictionary(spec_id).cloned() else { continue };
        let mut spec = spec;
        let file_name = [&b"UF"[..], b"F"]
            .iter()
            .find_map(|k| spec.get(k).ok().and_then(|v| pdf::text_string(doc, v)))
            .unwrap_or_else(|| "attachment".into());
        let mut fixed = false;
        if !spec.has(b"F") {
            spec.set("F", pdf::encode_text_string(&file_name));
            fixed = true;
        }
        if !spec.has(b"UF") {
            spec.set("UF", pdf::encode_text_string(&file_name));
            fixed = true;
        }
        if !spec.has(b"AFRelationship") {
            spec.set("AFRelationship", "Unspecified");
            fixed = true;
        }
        let streams: Vec<ObjectId> = spec
            .get(b"EF")
            .ok()
            .and_then(|ef| doc.dereference(ef).ok())
            .and_then(|(_, ef)| ef.as_dict().ok())
            .map(|ef| ef.iter().filter_map(|(_, s)| s.as_reference().ok()).collect())
            .unwrap_or_default();
        for stream_id in streams {
            if let Ok(Object::Stream(stream)) = doc.get_object_mut(stream_id) {
                if stream.dict.get(b"Subtype").and_then(Object::as_name).is_err() {
                    stream.dict.set("Subtype", Object::Name(media_type_for(&file_name).as_bytes().to_vec()));
                    fixed = true;
                }
                let mut params = stream.dict.get(b"Params").and_then(Object::as_dict).cloned().unwrap_or_default();
                if !params.has(b"ModDate") {
                    params.set("ModDate", date.clone());
                    stream.dict.set("Params", params);
                    fixed = true;
                }
            }
        }
        if fixed {
            changes.add("embedded files given a relationship, media type and date", 1);
        }
        doc.objects.insert(spec_id, Object::Dictionary(spec));
        if !associated.contains(&spec_id) {
            unassociated.push(Object::Reference(spec_id));
        }
    }
    if unassociated.is_empty() {
        return;
    }
    let count = unassociated.len() as u64;
    let Ok(root) = catalog_id(doc) else { return };
    let mut af = doc
        .get_dictionary(root)
        .ok()
        .and_then(|c| c.get(b"AF").ok())
        .and_then(|a| doc.dereference(a).ok())
        .and_then(|(_, a)| a.as_array().ok().cloned())
        .unwrap_or_default();
    af.extend(unassociated);
    if let Ok(catalog) = doc.get_dictionary_mut(root) {
        catalog.set("AF", af);
        changes.add("embedded files associated with the document", count);
    }
}

// ---------------------------------------------------------------------------------------
// Metadata

fn write_metadata(
    doc: &mut Document,
    level: Level,
    at: OffsetDateTime,
    extra: ExtraXmp,
    changes: &mut Changes,
) -> Result<(), EngineError> {
    let mut info = metadata::info_dict(doc).cloned().unwrap_or_default();
    // Only text entries have XMP equivalents; the trapping flag has no place in PDF/A-2's.
    info.remove(b"Trapped");
    info.set("ModDate", Object::String(crate::pdf::dates::pdf_date(at).into_bytes(), StringFormat::Literal));
    let old = metadata::xmp_stream(doc).and_then(|s| s.get_plain_content_with_limit(metadata::MAX_XMP_BYTES).ok());
    let document_id = old.map(|p| xmp::parse(&xmp::decode_packet(&p))).and_then(|t| t.text(xmp::XMP_MM, "DocumentID"));
    let mut kept = vec![
        xmp::Simple { ns: xmp::PDFAID, prefix: "pdfaid", local: "part", value: level.part().to_string() },
        xmp::Simple { ns: xmp::PDFAID, prefix: "pdfaid", local: "conformance", value: "B".into() },
    ];
    if let Some(id) = document_id {
        kept.push(xmp::Simple { ns: xmp::XMP_MM, prefix: "xmpMM", local: "DocumentID", value: id });
    }
    let packet = metadata::packet_for(doc, &info, at, None, kept, extra);
    let info_id = doc.add_object(Object::Dictionary(info));
    doc.trailer.set("Info", Object::Reference(info_id));
    metadata::write_xmp(doc, packet)?;
    changes.add("XMP metadata written (PDF/A identification, the document information)", 1);
    if !matches!(doc.trailer.get(b"ID"), Ok(Object::Array(a)) if a.len() == 2) {
        let mut hash = Sha256::new();
        hash.update(at.unix_timestamp_nanos().to_be_bytes());
        hash.update(doc.objects.len().to_be_bytes());
        let id = Object::String(hash.finalize()[..16].to_vec(), StringFormat::Hexadecimal);
        doc.trailer.set("ID", vec![id.clone(), id]);
        changes.add("document ID added", 1);
    }
    Ok(())
}
