//! PDFs through libqpdf (the `qpdf` crate, qpdf built from the crate's vendored sources):
//! opening bytes with the same checks and error codes as [`crate::pdf::open`],
//! writing with chosen options, and mapping qpdf's errors to engine errors.
//!
//! A [`QPdf`] is not `Send` (it holds an `Rc`), and every libqpdf call is synchronous C++:
//! documents are opened, edited and written inside one `blocking(...)` task, so a prepared
//! call keeps the bytes and opens them again when it runs.

use qpdf::{EncryptionParams, ObjectStreamMode, QPdf, QPdfError, QPdfErrorCode, StreamDecodeLevel};

use crate::context::{Context, Limits, blocking};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::pdf::password_error;
use crate::pdf::{MAX_OUTPUT_BYTES, looks_like_pdf, output_too_large};

/// An input PDF checked with libqpdf: its bytes, to be opened again where the work runs.
pub struct QpdfSource {
    /// The file's bytes, as given.
    pub bytes: Vec<u8>,
    /// The input's file name.
    pub filename: String,
    /// The password that opened it, if one was given.
    pub password: Option<String>,
    /// Number of pages.
    pub page_count: u32,
    /// Whether the file is encrypted.
    pub encrypted: bool,
    /// Whether qpdf had to recover the file (it read it with warnings: a damaged file).
    pub recovered: bool,
    /// The JSON pointer of the input, for error messages.
    pub field: String,
    /// Whether a file without a `%PDF-` header is still tried.
    headerless: bool,
}

impl std::fmt::Debug for QpdfSource {
    // Never print bytes or passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QpdfSource")
            .field("filename", &self.filename)
            .field("bytes", &self.bytes.len())
            .field("page_count", &self.page_count)
            .field("encrypted", &self.encrypted)
            .field("recovered", &self.recovered)
            .finish()
    }
}

impl QpdfSource {
    /// Fetches or decodes `file` and opens it with qpdf; errors name `field` (e.g. `/file`).
    pub async fn load(file: &FileInput, field: &str, ctx: &Context) -> Result<QpdfSource, EngineError> {
        Self::load_with(file, field, ctx, false).await
    }

    /// As [`QpdfSource::load`], but a file whose `%PDF-` header is damaged is still given
    /// to qpdf's recovery; it is `not_a_pdf` only when that fails too.
    pub async fn load_damaged(file: &FileInput, field: &str, ctx: &Context) -> Result<QpdfSource, EngineError> {
        Self::load_with(file, field, ctx, true).await
    }

    async fn load_with(
        file: &FileInput,
        field: &str,
        ctx: &Context,
        headerless: bool,
    ) -> Result<QpdfSource, EngineError> {
        let input = file.resolve(ctx, field, "document.pdf").await?;
        let limits = ctx.limits;
        let field = field.to_string();
        blocking(move || {
            let opened =
                open_with(&input.bytes, input.password.as_deref(), &limits, headerless).map_err(|e| e.under(&field))?;
            let encrypted = opened.pdf.is_encrypted();
            let recovered = opened.pdf.more_warnings();
            Ok(QpdfSource {
                bytes: input.bytes,
                filename: input.filename,
                password: input.password,
                page_count: opened.page_count,
                encrypted,
                recovered,
                field,
                headerless,
            })
        })
        .await
    }

    /// Opens the bytes again; call inside the blocking task that does the work.
    pub fn reopen(&self, limits: &Limits) -> Result<QPdf, EngineError> {
        open_with(&self.bytes, self.password.as_deref(), limits, self.headerless)
            .map(|o| o.pdf)
            .map_err(|e| e.under(&self.field))
    }
}

/// A document opened by qpdf, with its page count.
pub struct Opened {
    /// The document (decrypted in memory if it was encrypted).
    pub pdf: QPdf,
    /// Number of pages.
    pub page_count: u32,
}

/// Opens a PDF from memory with qpdf's recovery of damaged files on (its default). Errors
/// carry fields relative to the file input, as [`crate::pdf::open`]'s do.
pub fn open(bytes: &[u8], password: Option<&str>, limits: &Limits) -> Result<Opened, EngineError> {
    open_with(bytes, password, limits, false)
}

fn open_with(bytes: &[u8], password: Option<&str>, limits: &Limits, headerless: bool) -> Result<Opened, EngineError> {
    let not_a_pdf = || EngineError::invalid_with("not_a_pdf", "", "the file is not a PDF (no %PDF- header)");
    let has_header = looks_like_pdf(bytes);
    if !has_header && !headerless {
        return Err(not_a_pdf());
    }
    refuse_stream_bombs(bytes, password, limits)?;
    let pdf = match password {
        // The crate silently drops a password with a NUL byte; no PDF password has one.
        Some(p) if p.contains('\0') => return Err(password_error(password)),
        Some(p) if !p.is_empty() => QPdf::read_from_memory_encrypted(bytes, p),
        _ => QPdf::read_from_memory(bytes),
    }
    .map_err(|e| if has_header { open_error(&e, password) } else { not_a_pdf() })?;
    let pages = pdf.get_num_pages().map_err(|e| open_error(&e, password))?;
    if pages == 0 {
        return Err(EngineError::invalid_with("damaged_pdf", "", "the PDF has no readable pages"));
    }
    if pages > limits.max_pages {
        return Err(EngineError::too_large(
            "too_many_pages",
            None,
            format!("the PDF has more than {} pages", limits.max_pages),
        ));
    }
    Ok(Opened { pdf, page_count: pages })
}

/// libqpdf inflates object and cross-reference streams while reading, and any stream it
/// is asked to decode, with no size limit the crate can set. lopdf reads the same
/// structure with a per-stream cap first: a stream that would inflate past it is refused
/// before qpdf sees the file, and so is a file whose streams decode past the limits of
/// [`super::decoded`]. Other lopdf failures are left to qpdf, whose recovery reads more
/// damaged files.
fn refuse_stream_bombs(bytes: &[u8], password: Option<&str>, limits: &Limits) -> Result<(), EngineError> {
    super::decoded::check_bytes(bytes, password, limits, super::decoded::For::Rewriting)
}

fn open_error(error: &QPdfError, password: Option<&str>) -> EngineError {
    match error.error_code() {
        QPdfErrorCode::InvalidPassword => password_error(password),
        QPdfErrorCode::Unsupported => EngineError::invalid_with(
            "damaged_pdf",
            "",
            format!("the PDF uses a feature that cannot be read ({})", detail(error)),
        ),
        _ => EngineError::invalid_with("damaged_pdf", "", format!("the PDF is too damaged to read: {}", detail(error))),
    }
}

/// qpdf's own words for an error, bounded: it names no path (the input is in memory) and
/// never the password.
fn detail(error: &QPdfError) -> String {
    let text = error.description().unwrap_or("unknown error").trim();
    let text = text.strip_prefix("memory: ").unwrap_or(text);
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    if text.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// How to write a document.
pub struct WriteOptions {
    /// Encrypt the output with these parameters.
    pub encryption: Option<EncryptionParams>,
    /// Write the output without encryption even if the input had it.
    pub decrypt: bool,
    /// Linearize ("fast web view").
    pub linearize: bool,
    /// What to do with object streams.
    pub object_streams: ObjectStreamMode,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { encryption: None, decrypt: false, linearize: false, object_streams: ObjectStreamMode::Preserve }
    }
}

/// Writes `pdf` as a complete new file (fresh cross-reference table). Stream data is
/// copied without decoding, so a compression bomb is never inflated here; errors on the
/// input's account are `damaged_pdf` with no field (the caller nests them under the file).
pub fn write(pdf: &QPdf, options: WriteOptions) -> Result<Vec<u8>, EngineError> {
    // A trailer rebuilt from a damaged file may lack /Size, and qpdf then writes a trailer
    // without one (readers call that damaged); any value makes it write the true size.
    if let Some(trailer) = pdf.get_trailer()
        && !trailer.has("/Size")
    {
        trailer.set("/Size", pdf.new_integer(0));
    }
    let mut writer = pdf.writer();
    writer
        .stream_decode_level(StreamDecodeLevel::None)
        .object_stream_mode(options.object_streams)
        .compress_streams(true)
        .preserve_unreferenced_objects(false)
        .linearize(options.linearize);
    if options.decrypt {
        writer.preserve_encryption(false);
    }
    if let Some(params) = options.encryption {
        writer.encryption_params(params);
    }
    let bytes = writer.write_to_memory().map_err(|e| {
        EngineError::invalid_with("damaged_pdf", "", format!("the PDF could not be rewritten: {}", detail(&e)))
    })?;
    if bytes.len() > MAX_OUTPUT_BYTES {
        return Err(output_too_large());
    }
    Ok(bytes)
}

/// Writes a document held in memory through qpdf (to encrypt, linearize or pack it):
/// what a pipeline step built on qpdf does with the previous step's result.
pub fn rewrite(doc: &mut lopdf::Document, options: WriteOptions, limits: &Limits) -> Result<Vec<u8>, EngineError> {
    let bytes = crate::pdf::save(doc)?;
    let opened = open(&bytes, None, limits)?;
    write(&opened.pdf, options)
}

#[cfg(test)]
pub(crate) mod testing {
    //! What the qpdf route tests share: small inputs, calling a route, the qpdf CLI.

    use std::path::{Path, PathBuf};
    use std::process::Command;

    use base64::Engine as _;
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    use serde_json::{Value, json};

    use crate::catalog::Route;
    use crate::error::EngineError;
    use crate::output::{OutFile, Reply};

    /// Where the shared qpdf test corpus lives.
    pub const CORPUS: &str = "/work/shared/corpus/pdf/qpdf";

    /// A corpus file's path.
    pub fn corpus(name: &str) -> PathBuf {
        Path::new(CORPUS).join(name)
    }

    /// A PDF of `pages` pages, each saying its number.
    pub fn sample_pdf(pages: u32) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
        let mut kids = Vec::new();
        for n in 1..=pages {
            let content = Content {
                operations: vec![
                    Operation::new("BT", vec![]),
                    Operation::new("Tf", vec!["F1".into(), 24.into()]),
                    Operation::new("Td", vec![72.into(), 720.into()]),
                    Operation::new("Tj", vec![Object::string_literal(format!("Page {n}"))]),
                    Operation::new("ET", vec![]),
                ],
            };
            let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
            kids.push(Object::Reference(doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
                "Resources" => resources,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            })));
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => pages as i64 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    /// A file input for `bytes`, with `password` when given.
    pub fn file_json(bytes: &[u8], filename: &str, password: Option<&str>) -> Value {
        let mut file = json!({ "data": base64::engine::general_purpose::STANDARD.encode(bytes), "filename": filename });
        if let Some(p) = password {
            file["password"] = json!(p);
        }
        file
    }

    /// Runs `R` on `body` and returns its one output file.
    pub async fn run_single<R: Route>(body: &Value) -> Result<OutFile, EngineError> {
        match crate::pdf::testing::call::<R>(body).await? {
            Reply::Files(set) => set.into_single_file(),
            Reply::Json(_) => panic!("{} answered JSON where a file was expected", R::INFO.path),
        }
    }

    /// Writes `bytes` to a temporary file kept alive by the returned handle.
    pub fn temp_pdf(bytes: &[u8]) -> tempfile::NamedTempFile {
        let file = tempfile::Builder::new().suffix(".pdf").tempfile().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        file
    }

    /// Runs the qpdf CLI; returns (exit code, stdout + stderr).
    pub fn qpdf_cli(args: &[&str]) -> (i32, String) {
        let out = Command::new("qpdf").args(args).output().expect("the qpdf CLI is installed");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), text)
    }

    /// Asserts `qpdf --check` passes without warnings on `bytes` (opened with `password`).
    pub fn assert_qpdf_check(bytes: &[u8], password: Option<&str>) {
        let file = temp_pdf(bytes);
        let path = file.path().to_str().unwrap();
        let pw = password.map(|p| format!("--password={p}"));
        let mut args = vec!["--check"];
        if let Some(pw) = pw.as_deref() {
            args.push(pw);
        }
        args.push(path);
        let (code, text) = qpdf_cli(&args);
        assert_eq!(code, 0, "qpdf --check failed:\n{text}");
    }

    /// The page count qpdf reads (opened with `password`).
    pub fn qpdf_pages(bytes: &[u8], password: Option<&str>) -> u32 {
        let file = temp_pdf(bytes);
        let pw = password.map(|p| format!("--password={p}"));
        let mut args = vec!["--show-npages"];
        if let Some(pw) = pw.as_deref() {
            args.push(pw);
        }
        args.push(file.path().to_str().unwrap());
        let out = Command::new("qpdf").args(&args).output().expect("the qpdf CLI is installed");
        // Exit code 3: read, with warnings (counted as a failure by the --check assertions).
        assert!(matches!(out.status.code(), Some(0 | 3)), "qpdf --show-npages failed: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn opens_counts_and_rewrites() {
        let opened = open(&sample_pdf(3), None, &Limits::default()).unwrap();
        assert_eq!(opened.page_count, 3);
        let out = write(&opened.pdf, WriteOptions::default()).unwrap();
        assert_qpdf_check(&out, None);
        assert_eq!(qpdf_pages(&out, None), 3);
    }

    #[test]
    fn refuses_object_stream_bombs_before_qpdf_reads_them() {
        // A file whose object stream inflates to 2 MiB, opened with a 1 MiB cap. Written
        // by hand: lopdf's writer would drop the object stream.
        let mut payload = lopdf::Stream::new(lopdf::Dictionary::new(), {
            let mut body = b"5 0 ".to_vec();
            body.extend(std::iter::repeat_n(b' ', 2 * 1024 * 1024));
            body
        });
        payload.compress().unwrap();
        let mut bytes = b"%PDF-1.7\n".to_vec();
        let mut offsets = Vec::new();
        let objects: [&[u8]; 3] = [
            b"1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n",
            b"2 0 obj <</Type/Pages/Kids[3 0 R]/Count 1>> endobj\n",
            b"3 0 obj <</Type/Page/Parent 2 0 R/MediaBox[0 0 10 10]>> endobj\n",
        ];
        for object in objects {
            offsets.push(bytes.len());
            bytes.extend_from_slice(object);
        }
        offsets.push(bytes.len());
        bytes.extend(
            format!(
                "4 0 obj <</Type/ObjStm/N 1/First 4/Filter/FlateDecode/Length {}>> stream\n",
                payload.content.len()
            )
            .bytes(),
        );
        bytes.extend(&payload.content);
        bytes.extend(b"\nendstream endobj\n");
        let xref = bytes.len();
        bytes.extend(b"xref\n0 5\n0000000000 65535 f \n");
        for offset in offsets {
            bytes.extend(format!("{offset:010} 00000 n \n").bytes());
        }
        bytes.extend(format!("trailer <</Size 5/Root 1 0 R>>\nstartxref\n{xref}\n%%EOF\n").bytes());

        let small = Limits { max_stream_bytes: 1024 * 1024, ..Limits::default() };
        let e = open(&bytes, None, &small).err().expect("refused");
        assert_eq!(e.code, "file_too_large");
        assert!(open(&bytes, None, &Limits::default()).is_ok(), "under the default cap it opens");
    }

    #[test]
    fn refuses_what_is_not_a_pdf() {
        let e = open(b"hello world", None, &Limits::default()).err().unwrap();
        assert_eq!(e.code, "not_a_pdf");
        assert_eq!(e.field.as_deref(), Some(""));
        let e = open(b"%PDF-1.4\ngarbage only", None, &Limits::default()).err().unwrap();
        assert_eq!(e.code, "damaged_pdf");
    }

    #[test]
    fn password_errors_name_the_password_and_never_quote_it() {
        let bytes = std::fs::read(corpus("enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
        let e = open(&bytes, None, &Limits::default()).err().unwrap();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/password")));
        let e = open(&bytes, Some("s3cret-guess"), &Limits::default()).err().unwrap();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("wrong_password", Some("/password")));
        assert!(!e.message.contains("s3cret-guess"));
        let e = open(&bytes, Some("vi\0ew"), &Limits::default()).err().unwrap();
        assert_eq!(e.code, "wrong_password");
        assert_eq!(open(&bytes, Some("view"), &Limits::default()).unwrap().page_count, 30);
    }

    #[test]
    fn refuses_too_many_pages() {
        let limits = Limits { max_pages: 2, ..Limits::default() };
        let e = open(&sample_pdf(3), None, &limits).err().unwrap();
        assert_eq!(e.code, "too_many_pages");
        assert_eq!(e.kind, crate::error::ErrorKind::TooLarge);
    }
}
