//! `POST /v1/pdf/attachments`: list, extract or add file attachments (embedded files).
//!
//! Attachments are read from the catalog's `/Names /EmbeddedFiles` name tree and from
//! FileAttachment annotations on the pages; a file specification reachable both ways is
//! one attachment. Every name an attachment is listed under is unique, so `names` can
//! select it: annotation attachments (which have no tree key) are listed under their
//! file name, with ` (2)`, ` (3)`… added on a clash.

//!
//! This file is the route: its input, checks and answers. Finding, decoding and adding
//! embedded files is [`crate::pdf::embedded_files`]'s.

use std::collections::{HashMap, HashSet};

use lopdf::Document;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::{FileInput, sanitize_filename};
use crate::output::{FileSet, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::embedded_files::{
    Addition, Found, add, collect, existing_keys, int_at, is_media_type, media_type_for, unique,
};
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

pub use crate::pdf::embedded_files::AttachmentInfo;

/// Request of `/v1/pdf/attachments`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// `add` with action add only (and then required), `names` with extract only; said without
// a top-level `allOf`, which some agents' tool schemas refuse.
#[schemars(extend(
    "if" = { "properties": { "action": { "const": "add" } } },
    "then" = { "required": ["add"], "properties": { "add": { "type": "array" }, "names": { "type": "null" } } },
    "else" = {
        "properties": { "add": { "type": "null" } },
        "if": { "properties": { "action": { "const": "extract" } } },
        "else": { "properties": { "names": { "type": "null" } } }
    }
))]
pub struct AttachmentsInput {
    /// The PDF.
    pub file: FileInput,
    /// `list` answers the attachments as JSON; `extract` answers their files; `add` answers the PDF with new files attached.
    pub action: AttachmentsAction,
    /// For `extract` only: the attachments to extract, by their `name` in `list`; all when omitted.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub names: Option<Vec<String>>,
    /// For `add` only (and required there): the files to attach. A name already taken gets ` (2)`, ` (3)`… before its extension.
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub add: Option<Vec<NewAttachment>>,
    /// How to deliver `extract`'s files (a ZIP for `file`) and `add`'s PDF; ignored by `list`.
    #[serde(default)]
    pub output: OutputMode,
}

/// What to do with the attachments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentsAction {
    /// Answer the attachments as JSON.
    List,
    /// Answer the attachments' files.
    Extract,
    /// Attach new files and answer the PDF.
    Add,
}

/// A file to attach.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAttachment {
    /// The attachment's file name as readers show it (no directories, no control characters).
    #[schemars(length(min = 1, max = MAX_FILENAME_CHARS), regex(pattern = FILENAME_PATTERN))]
    pub filename: String,
    /// The file's bytes (base64) or URL.
    pub file: FileInput,
    /// A description readers show beside the file.
    #[serde(default)]
    pub description: Option<String>,
}

/// What a new attachment's name may be, as its schema states it: something besides white
/// space, no `/` or `\`, no control character (Unicode's Cc: U+0000-U+001F, U+007F-U+009F).
pub const FILENAME_PATTERN: &str =
    r"^[^/\\\u0000-\u001F\u007F-\u009F]*[^/\\\s\u0000-\u001F\u007F-\u009F][^/\\\u0000-\u001F\u007F-\u009F]*$";

/// Why `name` cannot name a new attachment; `None` when it can.
fn filename_problem(name: &str) -> Option<String> {
    if name.chars().any(char::is_control) {
        Some("the file name has control characters".to_string())
    } else if name.trim().is_empty() {
        Some("the file name is empty".to_string())
    } else if name.chars().count() > MAX_FILENAME_CHARS {
        Some(format!("the file name is longer than {MAX_FILENAME_CHARS} characters"))
    } else if name.contains(['/', '\\']) {
        Some("a file name, not a path: remove the directories".to_string())
    } else {
        None
    }
}

/// The answer of `list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentsReport {
    /// The attachments: the EmbeddedFiles list in its order, then annotations by page.
    pub attachments: Vec<AttachmentInfo>,
    /// Number of attachments.
    pub count: u64,
}

/// Most files one `add` attaches.
const MAX_ADD: usize = 100;
/// Longest description taken, in characters.
const MAX_DESCRIPTION_CHARS: usize = 32_768;
/// Longest file name taken, in characters.
const MAX_FILENAME_CHARS: usize = 200;
/// Most bytes `list` decodes in all to learn sizes the file does not state.
const LIST_DECODE_BUDGET: usize = 256 * 1024 * 1024;
/// Most available names quoted in an unknown-name error.
const MAX_QUOTED_NAMES: usize = 20;

/// A checked attachments call.
pub struct Attachments {
    source: SourcePdf,
    plan: Plan,
    output: OutputMode,
}

/// What a checked call will do.
enum Plan {
    List,
    /// The attachments to extract, each with the field to blame for it.
    Extract(Vec<(Found, String)>),
    /// The files to attach, with the names chosen for them.
    Add(Vec<Addition>),
}

/// The route.
pub struct AttachmentsRoute;

impl Route for AttachmentsRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::PDF, media::ZIP];
    type Input = AttachmentsInput;
    type Prepared = Attachments;
    type Output = AttachmentsReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/attachments",
        operation: "manage_pdf_attachments",
        family: Family::Docs,
        summary: "List, extract or add file attachments",
        description: "action=list answers the PDF's attachments (the document's embedded files and file attachment \
            annotations) with name, file name, description, size, media type and dates. action=extract answers their \
            files (all, or the ones named in `names`): a ZIP for output=file, a list for base64 or url. action=add \
            attaches the files in `add` to the document's attachment list and answers the PDF; a name already taken \
            gets ` (2)`. Names and descriptions in the answer are text from the file.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::JsonOrFiles,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: AttachmentsInput, ctx: &Context) -> Result<Attachments, EngineError> {
        let AttachmentsInput { file, action, names, add, output } = input;
        check_fields(action, names.as_deref(), add.as_deref())?;
        let source = SourcePdf::load(&file, "/file", ctx).await?;
        let limits = ctx.limits;
        let (source, plan) = match action {
            AttachmentsAction::List => (source, Plan::List),
            AttachmentsAction::Extract => {
                blocking(move || {
                    let found = collect(&source.doc, 0);
                    let selected = select(&source.doc, found, names.as_deref(), limits.max_file_bytes)?;
                    Ok((source, Plan::Extract(selected)))
                })
                .await?
            }
            AttachmentsAction::Add => {
                let add = add.unwrap_or_default();
                let mut files = Vec::with_capacity(add.len());
                let mut total = 0usize;
                for (i, item) in add.iter().enumerate() {
                    let field = format!("/add/{i}/file");
                    let resolved = item.file.resolve(ctx, &field, item.filename.trim()).await?;
                    total += resolved.bytes.len();
                    if total > pdf::MAX_OUTPUT_BYTES {
                        return Err(EngineError::too_large(
                            "file_too_large",
                            Some(field.clone()),
                            format!(
                                "{field}: together the files to add are larger than {} MiB",
                                pdf::MAX_OUTPUT_BYTES / (1024 * 1024)
                            ),
                        ));
                    }
                    files.push(resolved.bytes);
                }
                blocking(move || {
                    let taken = existing_keys(&source.doc)?;
                    let additions = plan_additions(add, files, taken);
                    Ok((source, Plan::Add(additions)))
                })
                .await?
            }
        };
        Ok(Attachments { source, plan, output })
    }

    fn quote(call: &Attachments) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: Attachments, ctx: &Context) -> Result<Reply<AttachmentsReport>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let Attachments { mut source, plan, output } = call;
            match plan {
                Plan::List => {
                    let attachments: Vec<AttachmentInfo> =
                        collect(&source.doc, LIST_DECODE_BUDGET).into_iter().map(|f| f.info).collect();
                    Ok(Reply::Json(AttachmentsReport { count: attachments.len() as u64, attachments }))
                }
                Plan::Extract(selected) => {
                    let max = usize::try_from(limits.max_file_bytes).unwrap_or(usize::MAX);
                    let mut files = Vec::with_capacity(selected.len());
                    let mut total = 0usize;
                    for (index, (found, field)) in selected.iter().enumerate() {
                        let bytes = decode(&source.doc, found, max, field)?;
                        total += bytes.len();
                        if total > pdf::MAX_OUTPUT_BYTES {
                            return Err(pdf::output_too_large());
                        }
                        files.push(out_file(found, bytes, index));
                    }
                    let zip = derived_name(&source.filename, "attachments", "zip");
                    Ok(Reply::Files(FileSet::several(files, output, zip)))
                }
                Plan::Add(additions) => {
                    add(&mut source.doc, additions, crate::pdf::dates::now())?;
                    source.into_reply("attachments", output)
                }
            }
        })
        .await
    }
}

/// Checks that `names` goes with `extract` and `add` with `add` only, and that the new
/// files' names and descriptions are usable.
fn check_fields(
    action: AttachmentsAction,
    names: Option<&[String]>,
    add: Option<&[NewAttachment]>,
) -> Result<(), EngineError> {
    if names.is_some() && action != AttachmentsAction::Extract {
        return Err(EngineError::invalid(
            "/names",
            "/names: `names` is only taken by action `extract`; remove it, or use action `extract`",
        ));
    }
    if add.is_some() && action != AttachmentsAction::Add {
        return Err(EngineError::invalid(
            "/add",
            "/add: `add` is only taken by action `add`; remove it, or use action `add`",
        ));
    }
    if let Some(names) = names {
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(EngineError::invalid(format!("/names/{i}"), format!("/names/{i}: a name is empty")));
            }
        }
    }
    if action != AttachmentsAction::Add {
        return Ok(());
    }
    let add = match add {
        None => return Err(EngineError::invalid("/add", "/add: action `add` needs `add`, a list of files to attach")),
        Some([]) => return Err(EngineError::invalid("/add", "/add: `add` is empty; give at least one file")),
        Some(add) if add.len() > MAX_ADD => {
            return Err(EngineError::invalid("/add", format!("/add: at most {MAX_ADD} files at once")));
        }
        Some(add) => add,
    };
    for (i, item) in add.iter().enumerate() {
        let field = format!("/add/{i}/filename");
        let problem = filename_problem(&item.filename);
        if let Some(problem) = problem {
            return Err(EngineError::invalid(field.clone(), format!("{field}: {problem}")));
        }
        if let Some(description) = &item.description
            && description.chars().count() > MAX_DESCRIPTION_CHARS
        {
            let field = format!("/add/{i}/description");
            return Err(EngineError::invalid(
                field.clone(),
                format!("{field}: at most {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
    }
    Ok(())
}

/// The attachments `names` selects (all when None), each with the field to blame for
/// it; refuses unknown names, a PDF without attachments, and stated sizes over `max`.
fn select(
    doc: &Document,
    found: Vec<Found>,
    names: Option<&[String]>,
    max: u64,
) -> Result<Vec<(Found, String)>, EngineError> {
    if found.is_empty() {
        return Err(EngineError::invalid_with("no_attachments", "/file", "/file: the PDF has no attachments"));
    }
    let selected: Vec<(Found, String)> = match names {
        None => found.into_iter().map(|f| (f, "/file".to_string())).collect(),
        Some(names) => {
            let index: HashMap<&str, usize> =
                found.iter().enumerate().map(|(i, f)| (f.info.name.as_str(), i)).collect();
            let mut picked = Vec::new();
            let mut chosen = HashSet::new();
            for (i, name) in names.iter().enumerate() {
                let Some(&at) = index.get(name.as_str()) else {
                    return Err(unknown_name(&found, i, name));
                };
                // A name asked for twice is extracted once.
                if chosen.insert(at) {
                    picked.push((at, format!("/names/{i}")));
                }
            }
            picked.into_iter().map(|(at, field)| (found[at].clone(), field)).collect()
        }
    };
    for (item, field) in &selected {
        let stated = doc
            .get_object(item.stream)
            .ok()
            .and_then(|o| o.as_stream().ok())
            .and_then(|s| pdf::dict_at(doc, &s.dict, b"Params"))
            .and_then(|p| int_at(doc, p, b"Size"));
        if stated.is_some_and(|size| size > max) {
            return Err(attachment_too_large(&item.info.name, field, max));
        }
    }
    Ok(selected)
}

fn unknown_name(found: &[Found], i: usize, name: &str) -> EngineError {
    let mut available: Vec<String> =
        found.iter().take(MAX_QUOTED_NAMES).map(|f| format!("\"{}\"", f.info.name.escape_debug())).collect();
    if found.len() > MAX_QUOTED_NAMES {
        available.push(format!("and {} more", found.len() - MAX_QUOTED_NAMES));
    }
    let field = format!("/names/{i}");
    EngineError::invalid(
        field.clone(),
        format!(
            "{field}: the PDF has no attachment named \"{}\"; it has {}",
            name.chars().take(200).collect::<String>().escape_debug(),
            available.join(", ")
        ),
    )
}

fn attachment_too_large(name: &str, field: &str, max: u64) -> EngineError {
    EngineError::too_large(
        "file_too_large",
        Some(field.to_string()),
        format!("{field}: the attachment \"{}\" is larger than {} MiB", name.escape_debug(), max / (1024 * 1024)),
    )
}

/// The attachment's decoded bytes, at most `max` of them: a stream that decodes past
/// that is refused without being decoded whole.
fn decode(doc: &Document, found: &Found, max: usize, field: &str) -> Result<Vec<u8>, EngineError> {
    let name = &found.info.name;
    let damaged = |what: String| {
        EngineError::invalid_with(
            "damaged_pdf",
            field.to_string(),
            format!("{field}: the attachment \"{}\" cannot be read: {what}", name.escape_debug()),
        )
    };
    let stream = doc
        .get_object(found.stream)
        .ok()
        .and_then(|o| o.as_stream().ok())
        .ok_or_else(|| damaged("its data is missing".into()))?;
    match stream.get_plain_content_with_limit(max) {
        Ok(bytes) => Ok(bytes),
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. })) => {
            Err(attachment_too_large(name, field, max as u64))
        }
        Err(e) => Err(damaged(e.to_string())),
    }
}

/// The extracted file: a safe name, the stated media type when it is one, else a guess
/// from the extension.
fn out_file(found: &Found, bytes: Vec<u8>, index: usize) -> OutFile {
    let base = found.info.filename.as_deref().unwrap_or(&found.info.name);
    let mut filename = sanitize_filename(base);
    if filename.is_empty() {
        filename = format!("attachment-{}", index + 1);
    }
    let media_type = found
        .info
        .media_type
        .as_deref()
        .filter(|m| is_media_type(m))
        .map(str::to_ascii_lowercase)
        .unwrap_or_else(|| media_type_for(&filename).to_string());
    OutFile { filename, media_type, bytes }
}
/// Names the new files: each keeps its file name unless taken (in the PDF or earlier in
/// `add`), when ` (2)`, ` (3)`… go before the extension.
fn plan_additions(add: Vec<NewAttachment>, files: Vec<Vec<u8>>, mut taken: HashSet<String>) -> Vec<Addition> {
    add.into_iter()
        .zip(files)
        .map(|(item, bytes)| {
            let name = unique(item.filename.trim(), &mut taken);
            Addition {
                media_type: media_type_for(&name),
                name,
                description: item.description.filter(|d| !d.is_empty()),
                bytes,
                relationship: "Unspecified",
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_filename_pattern_takes_exactly_the_names_the_route_takes() {
        let validator = crate::patterns::validator(FILENAME_PATTERN);
        let names = [
            "a.pdf",
            " a.pdf ",
            "rapport final.pdf",
            "Über.txt",
            "x",
            " ",
            "",
            "\t",
            "a\tb",
            "a\nb",
            "a\u{7f}",
            "a\u{85}b",
            "a\u{9f}",
            "\u{a0}",
            "a\u{a0}b",
            "dir/a.pdf",
            "dir\\a.pdf",
            "a\u{2028}",
            "\u{2028}",
            "a\u{0}b",
            ".",
            "..",
        ];
        for name in names {
            let taken = filename_problem(name).is_none();
            assert_eq!(validator.is_valid(&serde_json::json!(name)), taken, "{name:?}");
        }
    }
    use crate::context::Limits;
    use crate::pdf::embedded_files::embedded_files_root;
    use crate::pdf::inspect::AttachmentSource;
    use crate::pdf::name_tree;
    use crate::pdf::testing::call;
    use base64::Engine as _;
    use lopdf::{Object, ObjectId, Stream, dictionary};
    use serde_json::{Value, json};
    use sha2::{Digest, Sha256};

    const CORPUS: &str = "/work/shared/corpus/pdf";

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    fn doc_with_pages(n: usize) -> (Document, Vec<ObjectId>) {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let ids: Vec<ObjectId> = (0..n)
            .map(|_| {
                doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()] })
            })
            .collect();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages",
            "Kids" => ids.iter().map(|&i| Object::Reference(i)).collect::<Vec<_>>(), "Count" => n as i64 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        (doc, ids)
    }

    fn save(doc: &mut Document) -> Vec<u8> {
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        bytes
    }

    fn set_catalog(doc: &mut Document, key: &str, value: Object) {
        let catalog = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
        doc.get_dictionary_mut(catalog).unwrap().set(key, value);
    }

    /// Two pages. The tree: `notes.txt` (deflated, with size, type and dates), `b-ref`
    /// (a reference to an outside file, not an attachment) and, through a cycle back to
    /// the root, nothing more. Page 2: a file attachment annotation (`notes.txt` again as
    /// its file name, unfiltered, no size) and one sharing the tree's file specification.
    fn sample() -> Vec<u8> {
        let (mut doc, pages) = doc_with_pages(2);
        let mut tree_stream = Stream::new(
            dictionary! { "Type" => "EmbeddedFile", "Subtype" => Object::Name(b"text/plain".to_vec()),
            "Params" => dictionary! { "Size" => 11, "CreationDate" => Object::string_literal("D:20240102030405+01'00'"),
                "ModDate" => Object::string_literal("not a date") } },
            b"hello world".to_vec(),
        );
        tree_stream.compress().unwrap();
        // Compression may not shrink 11 bytes: force a filter so the decode path is used.
        if !tree_stream.is_compressed() {
            tree_stream = Stream::new(tree_stream.dict.clone(), vec![]);
            tree_stream.dict.set("Filter", "ASCIIHexDecode");
            tree_stream.set_content(hex::encode(b"hello world").into_bytes());
        }
        let tree_stream = doc.add_object(tree_stream);
        let tree_spec = doc.add_object(dictionary! { "Type" => "Filespec", "F" => Object::string_literal("notes.txt"),
        "UF" => pdf::encode_text_string("notes.txt"), "Desc" => pdf::encode_text_string("Notizen Ü"),
        "EF" => dictionary! { "F" => tree_stream } });
        let outside = doc.add_object(dictionary! { "Type" => "Filespec", "F" => Object::string_literal("b.txt") });
        let root = doc.new_object_id();
        let leaf = doc.add_object(
            dictionary! { "Limits" => vec![Object::string_literal("b-ref"), Object::string_literal("b-ref")],
            "Names" => vec![Object::string_literal("b-ref"), outside.into()], "Kids" => vec![root.into()] },
        );
        doc.objects.insert(
            root,
            Object::Dictionary(dictionary! { "Names" => vec![Object::string_literal("a-notes"), tree_spec.into()],
            "Kids" => vec![leaf.into()] }),
        );
        let names = doc.add_object(dictionary! { "EmbeddedFiles" => root });
        set_catalog(&mut doc, "Names", names.into());

        let annot_stream =
            doc.add_object(Stream::new(dictionary! { "Type" => "EmbeddedFile" }, b"\x89PNG data".to_vec()));
        let annot_spec = dictionary! { "Type" => "Filespec", "F" => Object::string_literal("a-notes"),
        "EF" => dictionary! { "F" => annot_stream } };
        let annot = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "FileAttachment",
        "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()], "FS" => annot_spec,
        "Contents" => Object::string_literal("a picture") });
        let shared = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "FileAttachment",
        "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()], "FS" => tree_spec });
        doc.get_dictionary_mut(pages[1]).unwrap().set("Annots", vec![annot.into(), shared.into(), annot.into()]);
        save(&mut doc)
    }

    async fn run(pdf: &[u8], mut body: Value) -> Result<Reply<AttachmentsReport>, EngineError> {
        body["file"] = json!({ "data": b64(pdf), "filename": "report.pdf" });
        call::<AttachmentsRoute>(&body).await
    }

    async fn list(pdf: &[u8]) -> AttachmentsReport {
        match run(pdf, json!({ "action": "list" })).await.unwrap() {
            Reply::Json(report) => report,
            Reply::Files(_) => panic!("list answered files"),
        }
    }

    async fn extract(pdf: &[u8], body: Value) -> Result<FileSet, EngineError> {
        match run(pdf, body).await? {
            Reply::Files(set) => Ok(set),
            Reply::Json(_) => panic!("extract answered JSON"),
        }
    }

    async fn add_files(pdf: &[u8], add: Value) -> Vec<u8> {
        match run(pdf, json!({ "action": "add", "add": add })).await.unwrap() {
            Reply::Files(set) => set.into_single_file().unwrap().bytes,
            Reply::Json(_) => panic!("add answered JSON"),
        }
    }

    fn qpdf(args: &[&str], bytes: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pdf");
        std::fs::write(&path, bytes).unwrap();
        let out = std::process::Command::new("qpdf").args(args).arg(&path).output().unwrap();
        assert!(out.status.success(), "qpdf {args:?}: {}", String::from_utf8_lossy(&out.stdout));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[tokio::test]
    async fn lists_tree_and_annotation_attachments() {
        let report = list(&sample()).await;
        assert_eq!(report.count, 2, "{report:?}");
        let [tree, annot] = &report.attachments[..] else { panic!("{report:?}") };
        assert_eq!(tree.name, "a-notes");
        assert_eq!(tree.filename.as_deref(), Some("notes.txt"));
        assert_eq!(tree.description.as_deref(), Some("Notizen Ü"));
        assert_eq!(tree.bytes, Some(11));
        assert_eq!(tree.media_type.as_deref(), Some("text/plain"));
        assert_eq!(tree.created.as_deref(), Some("2024-01-02T03:04:05+01:00"));
        assert_eq!(tree.modified.as_deref(), Some("not a date"));
        assert_eq!((tree.source, tree.page), (AttachmentSource::EmbeddedFiles, None));
        // Its file name clashes with the tree key: the annotation gets a suffix.
        assert_eq!(annot.name, "a-notes (2)");
        assert_eq!(annot.filename.as_deref(), Some("a-notes"));
        assert_eq!(annot.description.as_deref(), Some("a picture"));
        assert_eq!(annot.bytes, Some(9));
        assert_eq!(annot.media_type, None);
        assert_eq!((annot.source, annot.page), (AttachmentSource::Annotation, Some(2)));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["attachments"][1]["source"], "annotation");
        assert_eq!(json["attachments"][0]["source"], "embedded_files");
    }

    #[tokio::test]
    async fn extracts_all_as_a_zip_and_some_as_base64() {
        let pdf = sample();
        let set = extract(&pdf, json!({ "action": "extract" })).await.unwrap();
        let zip = set.into_single_file().unwrap();
        assert_eq!((zip.filename.as_str(), zip.media_type.as_str()), ("report-attachments.zip", "application/zip"));
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip.bytes)).unwrap();
        let names: Vec<String> = archive.file_names().map(|n| n.unwrap().into_owned()).collect();
        assert_eq!(names, vec!["notes.txt", "a-notes"]);
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut archive.by_name("notes.txt").unwrap(), &mut body).unwrap();
        assert_eq!(body, b"hello world");

        let set =
            extract(&pdf, json!({ "action": "extract", "names": ["a-notes (2)", "a-notes (2)"], "output": "base64" }))
                .await
                .unwrap();
        assert_eq!(set.files.len(), 1);
        assert_eq!(set.files[0].bytes, b"\x89PNG data");
        assert_eq!(set.files[0].media_type, "application/octet-stream");
        assert_eq!(set.bundle.as_deref(), Some("report-attachments.zip"));
        let set =
            extract(&pdf, json!({ "action": "extract", "names": ["a-notes"], "output": "base64" })).await.unwrap();
        assert_eq!((set.files[0].filename.as_str(), set.files[0].media_type.as_str()), ("notes.txt", "text/plain"));
    }

    #[tokio::test]
    async fn refuses_unknown_names_and_pdfs_without_attachments() {
        let e = extract(&sample(), json!({ "action": "extract", "names": ["a-notes", "nope"] })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("invalid_input", Some("/names/1")));
        assert!(e.message.contains("\"a-notes\", \"a-notes (2)\""), "{}", e.message);
        let (mut doc, _) = doc_with_pages(1);
        let e = extract(&save(&mut doc), json!({ "action": "extract" })).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/file"));
        assert!(e.message.contains("no attachments"), "{}", e.message);
        assert_eq!(list(&save(&mut doc)).await.count, 0);
    }

    #[tokio::test]
    async fn refuses_fields_that_do_not_go_with_the_action() {
        let pdf = sample();
        let file = json!({ "filename": "a.txt", "file": { "data": b64(b"x") } });
        let cases = [
            (json!({ "action": "list", "names": ["a"] }), "/names"),
            (json!({ "action": "add", "names": ["a"], "add": [file] }), "/names"),
            (json!({ "action": "extract", "add": [file] }), "/add"),
            (json!({ "action": "add" }), "/add"),
            (json!({ "action": "add", "add": [] }), "/add"),
            (
                json!({ "action": "add", "add": [{ "filename": "dir/a.txt", "file": { "data": b64(b"x") } }] }),
                "/add/0/filename",
            ),
            (
                json!({ "action": "add", "add": [file, { "filename": "  ", "file": { "data": b64(b"x") } }] }),
                "/add/1/filename",
            ),
            (json!({ "action": "add", "add": [file, { "filename": "b.txt", "file": {} }] }), "/add/1/file/data"),
            (
                json!({ "action": "add", "add": [{ "filename": "a.txt", "file": { "data": b64(b"x") }, "size": 1 }] }),
                "/add/0/size",
            ),
            (json!({ "action": "extract", "names": [""] }), "/names/0"),
            (json!({ "action": "copy" }), "/action"),
        ];
        for (body, field) in cases {
            let e = run(&pdf, body.clone()).await.unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {e:?}");
        }
    }

    #[tokio::test]
    async fn add_then_list_then_extract_round_trips() {
        let pdf = sample();
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let out = add_files(
            &pdf,
            json!([
                { "filename": "zeta.csv", "file": { "data": b64(&data) }, "description": "Zahlen äöü" },
                { "filename": "a-notes", "file": { "data": b64(b"second") } },
                { "filename": "Über.txt", "file": { "data": b64(b"umlaut") } },
            ]),
        )
        .await;
        qpdf(&["--check"], &out);
        let listed = qpdf(&["--list-attachments"], &out);
        let keys: Vec<&str> = listed.lines().filter_map(|l| l.split(" -> ").next()).collect();
        // Sorted by key bytes; the UTF-16 key (BOM FE FF) sorts last. qpdf lists the
        // reference to an outside file too (as 0,0); it is kept, and not an attachment.
        assert_eq!(keys, vec!["a-notes", "a-notes (2)", "b-ref", "zeta.csv", "Über.txt"], "{listed}");

        let report = list(&out).await;
        let names: Vec<&str> = report.attachments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, vec!["a-notes", "a-notes (2)", "zeta.csv", "Über.txt", "a-notes (3)"]);
        let zeta = &report.attachments[2];
        assert_eq!(zeta.bytes, Some(data.len() as u64));
        assert_eq!(zeta.media_type.as_deref(), Some("text/csv"));
        assert_eq!(zeta.description.as_deref(), Some("Zahlen äöü"));
        assert!(zeta.modified.as_deref().is_some_and(|d| d.ends_with('Z')), "{zeta:?}");
        assert_eq!(report.attachments[1].filename.as_deref(), Some("a-notes (2)"));

        let set = extract(
            &out,
            json!({ "action": "extract", "names": ["zeta.csv", "a-notes (2)", "Über.txt"], "output": "base64" }),
        )
        .await
        .unwrap();
        let shas: Vec<String> = set.files.iter().map(|f| sha(&f.bytes)).collect();
        assert_eq!(shas, vec![sha(&data), sha(b"second"), sha(b"umlaut")]);
        assert_eq!(set.files[2].filename, "Über.txt");
        // The stream was deflated: it is smaller than the data.
        let doc = Document::load_mem(&out).unwrap();
        let tree = name_tree::read(&doc, embedded_files_root(&doc).unwrap());
        assert_eq!(tree.entries.len(), 5);
    }

    #[tokio::test]
    async fn add_creates_the_name_tree_when_absent() {
        let (mut doc, _) = doc_with_pages(3);
        let pdf = save(&mut doc);
        let out = add_files(&pdf, json!([{ "filename": "a.pdf", "file": { "data": b64(b"%PDF-1.4 tiny") } }])).await;
        qpdf(&["--check"], &out);
        assert!(qpdf(&["--list-attachments"], &out).starts_with("a.pdf -> "));
        let doc = Document::load_mem(&out).unwrap();
        assert_eq!(doc.get_pages().len(), 3);
        let report = list(&out).await;
        assert_eq!(report.attachments[0].media_type.as_deref(), Some("application/pdf"));
        assert_eq!(report.attachments[0].bytes, Some(13));
    }

    #[tokio::test]
    async fn refuses_attachments_that_decode_past_the_limit() {
        let (mut doc, _) = doc_with_pages(1);
        let max = Limits::default().max_file_bytes as usize;
        // A small stream that inflates past the limit and does not state its size.
        let mut bomb = Stream::new(dictionary! { "Type" => "EmbeddedFile" }, vec![0u8; max + 1024]);
        bomb.compress().unwrap();
        assert!(bomb.content.len() < 1024 * 1024);
        let bomb = doc.add_object(bomb);
        // One that states a size over the limit.
        let liar = doc.add_object(Stream::new(
            dictionary! { "Type" => "EmbeddedFile", "Params" => dictionary! { "Size" => (max as i64) * 2 } },
            b"small".to_vec(),
        ));
        let spec = |doc: &mut Document, name: &str, id: ObjectId| {
            doc.add_object(dictionary! { "F" => Object::string_literal(name), "EF" => dictionary! { "F" => id } })
        };
        let (a, b) = (spec(&mut doc, "bomb.bin", bomb), spec(&mut doc, "liar.bin", liar));
        let names = dictionary! { "EmbeddedFiles" => dictionary! { "Names" => vec![
        Object::string_literal("bomb.bin"), a.into(), Object::string_literal("liar.bin"), b.into()] } };
        set_catalog(&mut doc, "Names", names.into());
        let pdf = save(&mut doc);
        let e = extract(&pdf, json!({ "action": "extract", "names": ["bomb.bin"] })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("file_too_large", Some("/names/0")), "{e:?}");
        assert!(e.message.contains("bomb.bin"), "{}", e.message);
        let e = extract(&pdf, json!({ "action": "extract", "names": ["bomb.bin", "liar.bin"] })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("file_too_large", Some("/names/1")), "{e:?}");
        // Listing does not decode past its budget and states what it knows.
        let report = list(&pdf).await;
        assert_eq!(report.attachments[1].bytes, Some(max as u64 * 2));
    }

    /// The corpus files with attachments, compared with `qpdf --list-attachments`; the
    /// first attachment of each extracts to the bytes qpdf shows.
    #[tokio::test]
    async fn corpus_matches_qpdf() {
        for name in
            ["qpdf/add-attachments-1.pdf", "qpdf/enc-XI-attachments-base.pdf", "sample-files/with-attachment.pdf"]
        {
            let Ok(pdf) = std::fs::read(format!("{CORPUS}/{name}")) else { continue };
            let report = list(&pdf).await;
            let listed = qpdf(&["--list-attachments"], &pdf);
            let qpdf_keys: Vec<&str> = listed.lines().filter_map(|l| l.split(" -> ").next()).collect();
            let ours: Vec<&str> = report
                .attachments
                .iter()
                .filter(|a| a.source == AttachmentSource::EmbeddedFiles)
                .map(|a| a.name.as_str())
                .collect();
            assert_eq!(ours, qpdf_keys, "{name}");
            let first = qpdf_keys[0];
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("in.pdf");
            std::fs::write(&path, &pdf).unwrap();
            let shown = std::process::Command::new("qpdf")
                .arg(format!("--show-attachment={first}"))
                .arg(&path)
                .output()
                .unwrap()
                .stdout;
            let set =
                extract(&pdf, json!({ "action": "extract", "names": [first], "output": "base64" })).await.unwrap();
            assert_eq!(sha(&set.files[0].bytes), sha(&shown), "{name}");
            let all = extract(&pdf, json!({ "action": "extract", "output": "base64" })).await.unwrap();
            assert_eq!(all.files.len(), report.attachments.len());
        }
        let Ok(pdf) = std::fs::read(format!("{CORPUS}/qpdf/add-attachments-1.pdf")) else { return };
        let report = list(&pdf).await;
        let three = &report.attachments[1];
        assert_eq!(three.name, "auto-3");
        assert_eq!(three.filename.as_deref(), Some("auto-Three.txt"));
        assert_eq!(three.description.as_deref(), Some("two words"));
        assert_eq!(report.attachments[0].media_type.as_deref(), Some("text/plain"));
        assert_eq!(report.attachments[0].created.as_deref(), Some("2021-02-10T09:13:59-05:00"));
        assert_eq!(report.attachments[0].modified.as_deref(), Some("2021-02-10T14:13:59Z"));
        let out = add_files(&pdf, json!([{ "filename": "auto-1", "file": { "data": b64(b"new") } }])).await;
        qpdf(&["--check"], &out);
        let listed = qpdf(&["--list-attachments"], &out);
        assert!(listed.starts_with("auto-1 -> ") && listed.contains("\nauto-1 (2) -> "), "{listed}");
    }
}
