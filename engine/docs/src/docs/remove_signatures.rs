//! `POST /v1/pdf/remove-signatures`: takes signatures out of a PDF: every one, or the
//! fields named; the fields themselves go too unless they are to be kept, empty, for
//! signing again. The file is rewritten as one revision.

use std::collections::HashSet;

use lopdf::{Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::sign::fields::{self, SignatureField};
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Request of `/v1/pdf/remove-signatures`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveSignaturesInput {
    /// The signed PDF.
    pub file: FileInput,
    /// The signature fields to clear, by full name. Default: every signed field.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub fields: Vec<String>,
    /// Keep the fields, empty, so they can be signed again. Default: the fields and their widgets go too.
    #[serde(default)]
    pub keep_fields: bool,
    /// How to deliver the PDF.
    #[serde(default)]
    pub output: OutputMode,
}

/// What was removed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoveSignaturesReport {
    /// The fields whose signatures were removed.
    pub removed: Vec<String>,
    /// Whether those fields were kept, empty.
    pub fields_kept: bool,
    /// Signatures left in the document. They no longer verify: the rewrite moved the bytes they cover.
    pub remaining: usize,
    /// Whether the certification (`/Perms`) and the validation data (`/DSS`) went too, no signature being left.
    pub certification_removed: bool,
}

/// A checked call.
#[derive(Debug)]
pub struct RemoveSignaturesCall {
    source: SourcePdf,
    targets: Vec<SignatureField>,
    keep_fields: bool,
    output: OutputMode,
}

/// The route.
pub struct RemoveSignaturesRoute;

impl Route for RemoveSignaturesRoute {
    type Input = RemoveSignaturesInput;
    type Prepared = RemoveSignaturesCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/remove-signatures",
        operation: "remove_pdf_signatures",
        family: Family::Docs,
        summary: "Remove a PDF's signatures: all, or the fields named",
        description: "Removes digital signatures: every one, or the signature fields named. The signature values go, \
            and the fields with their widgets too unless keep_fields keeps them empty for signing again. With no \
            signature left, the certification permissions (/Perms) and validation data (/DSS) go as well. The file \
            is rewritten as a single revision, so signatures that are kept no longer verify (the bytes they \
            cover move): clear one field of a document signed once, or all of them. The report (Paperchain-Report header for output=file, `report` \
            field for base64 and url) lists the fields cleared.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: RemoveSignaturesInput, ctx: &Context) -> Result<RemoveSignaturesCall, EngineError> {
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let signed: Vec<SignatureField> =
            fields::signature_fields(&source.doc).into_iter().filter(|f| f.signed).collect();
        if signed.is_empty() {
            return Err(EngineError::invalid_with(
                "no_signatures",
                "/file",
                "/file: the PDF has no signatures to remove",
            ));
        }
        let targets = if input.fields.is_empty() {
            signed
        } else {
            let mut targets = Vec::new();
            for (i, name) in input.fields.iter().enumerate() {
                match signed.iter().find(|f| f.name == *name) {
                    Some(field) => targets.push(field.clone()),
                    None => {
                        let names: Vec<&str> = signed.iter().map(|f| f.name.as_str()).collect();
                        return Err(EngineError::invalid_with(
                            "form_mismatch",
                            format!("/fields/{i}"),
                            format!(
                                "/fields/{i}: the PDF has no signed field {name:?}; its signed fields: {}",
                                names.join(", ")
                            ),
                        ));
                    }
                }
            }
            targets
        };
        Ok(RemoveSignaturesCall { source, targets, keep_fields: input.keep_fields, output: input.output })
    }

    fn quote(call: &RemoveSignaturesCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: RemoveSignaturesCall, _: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let RemoveSignaturesCall { mut source, targets, keep_fields, output } = call;
            let doc = &mut source.doc;
            for field in &targets {
                if keep_fields {
                    clear(doc, field);
                } else {
                    remove(doc, field);
                }
            }
            let remaining = fields::signature_fields(doc).iter().filter(|f| f.signed).count();
            let mut certification_removed = false;
            if remaining == 0 {
                if let Ok(catalog) = doc.catalog_mut() {
                    certification_removed = catalog.remove(b"Perms").is_some() | catalog.remove(b"DSS").is_some();
                }
                set_sig_flags(doc, if keep_fields { 1 } else { 0 });
            }
            let report = RemoveSignaturesReport {
                removed: targets.iter().map(|f| f.name.clone()).collect(),
                fields_kept: keep_fields,
                remaining,
                certification_removed,
            };
            let bytes = pdf::save(doc)?;
            let name = derived_name(&source.filename, "unsigned", "pdf");
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(e.to_string()))?;
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(report)))
        })
        .await
    }
}

/// Empties a field: no value, an empty appearance, unlocked.
fn clear(doc: &mut Document, field: &SignatureField) {
    if let Some(value) = field.value {
        doc.objects.remove(&value);
    }
    if let Ok(dict) = doc.get_dictionary_mut(field.id) {
        dict.remove(b"V");
        dict.remove(b"Lock");
    }
    let rect = field.rect.unwrap_or(pdf::Rect { x0: 0.0, y0: 0.0, x1: 0.0, y1: 0.0 });
    let mut form = lopdf::Dictionary::new();
    form.set("Type", Object::Name(b"XObject".to_vec()));
    form.set("Subtype", Object::Name(b"Form".to_vec()));
    form.set(
        "BBox",
        Object::Array(vec![0.into(), 0.into(), Object::Real(rect.width() as f32), Object::Real(rect.height() as f32)]),
    );
    let empty = doc.add_object(Stream::new(form, Vec::new()));
    if let Ok(widget) = doc.get_dictionary_mut(field.widget) {
        let mut ap = lopdf::Dictionary::new();
        ap.set("N", Object::Reference(empty));
        widget.set("AP", Object::Dictionary(ap));
    }
}

/// Removes a field, its widgets and its value, and every reference to them.
fn remove(doc: &mut Document, field: &SignatureField) {
    let mut gone: HashSet<ObjectId> = HashSet::from([field.id, field.widget]);
    gone.extend(field.value);
    if let Ok(Object::Array(kids)) = doc.get_dictionary(field.id).and_then(|d| d.get(b"Kids")).cloned() {
        gone.extend(kids.iter().filter_map(|o| o.as_reference().ok()));
    }
    let drop_refs = |array: &mut Vec<Object>| array.retain(|o| !o.as_reference().is_ok_and(|id| gone.contains(&id)));
    // The parent's kids, or the form's fields.
    let parent =
        doc.get_dictionary(field.id).ok().and_then(|d| d.get(b"Parent").ok()).and_then(|o| o.as_reference().ok());
    let holder =
        parent.or_else(|| doc.catalog().ok().and_then(|c| c.get(b"AcroForm").ok()).and_then(|o| o.as_reference().ok()));
    let key: &[u8] = if parent.is_some() { b"Kids" } else { b"Fields" };
    edit_array(doc, holder, key, drop_refs);
    if holder.is_none() {
        // A form written directly in the catalog.
        if let Ok(catalog) = doc.catalog_mut()
            && let Ok(Object::Dictionary(form)) = catalog.get_mut(b"AcroForm")
            && let Ok(Object::Array(fields)) = form.get_mut(b"Fields")
        {
            drop_refs(fields);
        }
    }
    let pages: Vec<ObjectId> = doc.page_iter().collect();
    for page in pages {
        edit_array(doc, Some(page), b"Annots", drop_refs);
    }
    for id in gone {
        doc.objects.remove(&id);
    }
}

/// Applies `edit` to the array at `key` of object `holder`, direct or indirect.
fn edit_array(doc: &mut Document, holder: Option<ObjectId>, key: &[u8], edit: impl Fn(&mut Vec<Object>)) {
    let Some(holder) = holder else { return };
    let target = match doc.get_dictionary(holder).ok().and_then(|d| d.get(key).ok()) {
        Some(Object::Reference(id)) => Some(*id),
        _ => None,
    };
    match target {
        Some(id) => {
            if let Ok(Object::Array(array)) = doc.get_object_mut(id) {
                edit(array);
            }
        }
        None => {
            if let Ok(Object::Array(array)) = doc.get_dictionary_mut(holder).and_then(|d| d.get_mut(key)) {
                edit(array);
            }
        }
    }
}

/// Sets the form's `/SigFlags` (0 removes it).
fn set_sig_flags(doc: &mut Document, flags: i64) {
    let form = doc.catalog().ok().and_then(|c| c.get(b"AcroForm").ok()).cloned();
    let dict = match form {
        Some(Object::Reference(id)) => doc.get_dictionary_mut(id).ok(),
        Some(Object::Dictionary(_)) => {
            doc.catalog_mut().ok().and_then(|c| c.get_mut(b"AcroForm").ok()).and_then(|o| o.as_dict_mut().ok())
        }
        _ => None,
    };
    if let Some(dict) = dict {
        if flags == 0 {
            dict.remove(b"SigFlags");
        } else {
            dict.set("SigFlags", Object::Integer(flags));
        }
    }
}
