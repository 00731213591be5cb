//! `paperchain call`: one operation from JSON input and local files, through the local
//! server that serves this data folder when one runs (`call_server`), else in-process.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use indicatif::{ProgressBar, ProgressStyle};
use paperchain_calls::paywall::Failure;
use paperchain_calls::routed::{answer_reply, quote_json};
use paperchain_calls::{Call, CallPath, Outcome as Ran};
use paperchain_engine::catalog::RouteEntry;
use paperchain_engine::context::Progress;
use paperchain_engine::output::OutputMode;
use paperchain_engine::{Context, ErrorKind, FileSet, Reply};
use paperchain_wallet::ledger::Caller;
use serde_json::{Map, Value};

#[derive(clap::Args)]
#[command(after_help = "\
The input is the route's JSON body (see `paperchain routes` and /openapi.json). Local files
go in with --file POINTER=PATH, which puts {\"data\": <base64>, \"filename\": <name>} at that
place of the input, keeping fields already there (such as \"password\"):
  paperchain call rotate_pdf_pages --file file=scan.pdf --input rotate.json --out rotated.pdf
  paperchain call inspect_pdf_document -f file=report.pdf
File results are written to --out (a folder for several files, else one file or a ZIP), or
next to you under their own name when --out is omitted. Existing files are kept unless --force.
When a local server serves this data folder (the desktop app, `paperchain serve`, the
background service), the call goes to it: one engine and one ledger writer per user, and a
payment above policy.approve_above waits for approval where that server asks (the app's
dialog); --standalone runs it in this process instead.")]
pub struct CallArgs {
    /// Operation name (as listed by `paperchain routes`) or route path (`/v1/pdf/merge`).
    operation: String,
    /// JSON input: a file, or `-` for standard input. Default: `{}`.
    #[arg(long, short)]
    input: Option<PathBuf>,
    /// Put a local file into the input: POINTER=PATH, e.g. `file=a.pdf` or `files/1/file=b.pdf`.
    #[arg(long = "file", short = 'f', value_name = "POINTER=PATH")]
    files: Vec<String>,
    /// Where to write file results: a file path, or an existing folder for several files.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
    /// Where it runs: here (`local`), on the hosted service, paid by the wallet (`hosted`),
    /// or here unless the engine cannot (`auto`). Default: the configuration's routing.
    #[arg(long, value_parser = ["local", "hosted", "auto"])]
    pub route: Option<String>,
    /// Only say what the hosted service would charge, and whether the spend policy would
    /// pay it; nothing runs and nothing is paid.
    #[arg(long)]
    pub quote: bool,
    /// Run the engine in this process even when a local server serves this data folder.
    #[arg(long)]
    standalone: bool,
}

/// Runs the call; exit code 2 for input errors, 1 for other failures.
pub async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let catalog = paperchain_engine::catalog::standard();
    let entry =
        catalog.by_operation(&args.operation).or_else(|| catalog.by_path(&args.operation)).ok_or_else(|| {
            let close: Vec<&str> = catalog
                .routes()
                .map(|r| r.info().operation)
                .filter(|op| op.split('_').any(|w| w.len() > 2 && args.operation.contains(w)))
                .collect();
            let hint = if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) };
            anyhow!("no operation `{}`{hint}; `paperchain routes` lists them", args.operation)
        })?;
    let mut input = read_input(args.input.as_deref())?;
    for spec in &args.files {
        put_file(&mut input, spec)?;
    }
    let data_dir = crate::data_dir();
    let runtime = paperchain_server::instance::runtime_dir(&data_dir);
    let running = paperchain_server::instance::find(&runtime, &data_dir).filter(|_| !args.standalone);
    let unpack = unpack_into_folder(entry, &mut input, args.out.as_deref());
    let reply = match running {
        Some(server) => {
            tracing::debug!(url = %server.base_url, pid = server.pid, "calling through the running local server");
            crate::call_server::call(&server, entry, input, &args, unpack).await?
        }
        None => run_here(&data_dir, entry, input, &args).await?,
    };
    let reply = match reply {
        // Asked as a list to be written one by one.
        Ok(Reply::Files(mut set)) if unpack => {
            set.mode = OutputMode::File;
            Reply::Files(set)
        }
        Ok(reply) => reply,
        Err(code) => return Ok(code),
    };
    match reply {
        Reply::Json(value) => {
            let text = serde_json::to_string_pretty(&value)? + "\n";
            match &args.out {
                Some(path) => write_all(&[(path.clone(), text.as_bytes())], args.force)?,
                None => print!("{text}"),
            }
        }
        Reply::Files(set) => write_files(set, args.out.as_deref(), args.force)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Several files into a folder: the input asks for them as a list (`output: "base64"`), so
/// each is written under its own name where a file answer would be one ZIP. Whether it
/// did so; an input that chose its output keeps it.
pub fn unpack_into_folder(entry: &RouteEntry, input: &mut Value, out: Option<&Path>) -> bool {
    let into_folder = out.is_some_and(Path::is_dir);
    let unpack = entry.info().produces.files() && into_folder && input.get("output").is_none_or(Value::is_null);
    if unpack && let Some(object) = input.as_object_mut() {
        object.insert("output".into(), Value::String("base64".into()));
    }
    unpack
}

/// What a call gave: its result, or the exit code when it said all there was to say.
pub type Outcome = Result<Reply<Value>, ExitCode>;

/// The call in this process: the engine here, or the hosted service through this
/// process's paying client, asking at this terminal before a payment above the threshold.
async fn run_here(data_dir: &Path, entry: &RouteEntry, input: Value, args: &CallArgs) -> anyhow::Result<Outcome> {
    if input.get("output").and_then(Value::as_str) == Some("url") {
        bail!("{URL_NEEDS_SERVER}");
    }
    let body = serde_json::to_vec(&input)?;
    // A configuration the call would not follow (a malformed PAPERCHAIN_CHAINS) stops it here.
    let ctx = Context::try_new()?;

    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(entry.info().operation.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    let ctx = ctx.with_progress(Arc::new(BarProgress(bar.clone())));
    let approver = Arc::new(crate::paying::TerminalApprover { bar: Some(bar.clone()) });
    let client = crate::paying::client(data_dir, &ctx, approver, &Default::default()).await?;
    let mode = args.route.as_deref().map(str::parse).transpose().map_err(|e: String| anyhow!("--route: {e}"))?;
    let mut call = Call::new(entry.info().path, body, Caller { front_door: "cli", client: None });
    call.mode = mode;
    call.quote_only = args.quote;
    // As long as it takes: the user is watching, and can stop it.
    let catalog = Arc::new(paperchain_engine::catalog::standard());
    let calls = CallPath::local(catalog, ctx, Some(client.clone()), Duration::from_secs(24 * 3600));
    let ran = calls.run(call).await;
    bar.finish_and_clear();
    client.ledger().close().await;

    let reply = match ran {
        Ran::Quote(quote) => {
            println!("{}", serde_json::to_string_pretty(&quote_json(&(*quote)?))?);
            return Ok(Err(ExitCode::SUCCESS));
        }
        Ran::Hosted(Err(error)) => {
            eprintln!("error: {error}");
            return Ok(Err(ExitCode::FAILURE));
        }
        Ran::Hosted(Ok(answer)) => {
            let place = client.config().service_url.clone().unwrap_or_default();
            match &answer.paid {
                Some(paid) => eprintln!(
                    "ran on {place}: paid {} on {}, transaction {}",
                    paid.amount_text(),
                    paid.network,
                    paid.tx
                ),
                None => eprintln!("ran on {place}: nothing paid"),
            }
            match answer_reply(&answer) {
                Ok(reply) => reply,
                Err((status, message)) => {
                    eprintln!("error: {message}");
                    return Ok(Err(ExitCode::from(if (400..500).contains(&status) { 2 } else { 1 })));
                }
            }
        }
        Ran::Local(Ok(reply), _) => reply,
        // The CLI sends a JSON body to a route that exists, and has no paywall.
        Ran::Paywall(_) | Ran::Refused(Failure::NotJson(_) | Failure::TooLarge(_)) => {
            eprintln!("error: the call was refused before it ran");
            return Ok(Err(ExitCode::FAILURE));
        }
        Ran::Local(Err(e), _) | Ran::Refused(Failure::Engine(e)) => {
            let field =
                e.field.as_deref().filter(|f| !f.is_empty()).map(|f| format!(" (field {f})")).unwrap_or_default();
            eprintln!("error [{}]: {}{field}", e.code, e.message);
            let input_error = matches!(e.kind, ErrorKind::InvalidInput | ErrorKind::TooLarge | ErrorKind::NotFound);
            return Ok(Err(ExitCode::from(if input_error { 2 } else { 1 })));
        }
    };
    Ok(Ok(reply))
}

struct BarProgress(ProgressBar);

impl Progress for BarProgress {
    fn advance(&self, what: &str, done: u64, total: u64) {
        self.0.set_length(total);
        self.0.set_position(done);
        self.0.set_message(what.to_string());
    }
}

fn read_input(path: Option<&Path>) -> anyhow::Result<Value> {
    let text = match path {
        None => return Ok(Value::Object(Map::new())),
        Some(p) if p == Path::new("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading the input from standard input")?;
            text
        }
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading the input {}", p.display()))?,
    };
    let value: Value = serde_json::from_str(&text).context("the input is not valid JSON")?;
    if !value.is_object() {
        bail!("the input must be a JSON object");
    }
    Ok(value)
}

/// Puts `{"data", "filename"}` of a local file at a JSON pointer of the input.
fn put_file(input: &mut Value, spec: &str) -> anyhow::Result<()> {
    let (pointer, path) =
        spec.split_once('=').ok_or_else(|| anyhow!("--file takes POINTER=PATH, e.g. file=a.pdf (got `{spec}`)"))?;
    let path = PathBuf::from(path);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let filename = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let slot = slot_at(input, pointer.trim_start_matches('/'))?;
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let Value::Object(map) = slot {
        map.insert("data".into(), Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)));
        map.insert("filename".into(), Value::String(filename));
    }
    Ok(())
}

/// The value at `pointer` (segments separated by `/`), creating objects and arrays on the way.
fn slot_at<'a>(mut value: &'a mut Value, pointer: &str) -> anyhow::Result<&'a mut Value> {
    for segment in pointer.split('/').filter(|s| !s.is_empty()) {
        if let Ok(index) = segment.parse::<usize>() {
            if value.is_null() {
                *value = Value::Array(Vec::new());
            }
            let Value::Array(items) = value else { bail!("--file: `{segment}` indexes something that is not a list") };
            if index > items.len() {
                bail!("--file: index {index} skips list entries; fill them in order (0, 1, 2…)");
            }
            if index == items.len() {
                items.push(Value::Null);
            }
            value = &mut items[index];
        } else {
            if value.is_null() {
                *value = Value::Object(Map::new());
            }
            let Value::Object(map) = value else {
                bail!("--file: `{segment}` names a field of something that is not an object")
            };
            value = map.entry(segment.to_string()).or_insert(Value::Null);
        }
    }
    Ok(value)
}

fn write_files(set: FileSet, out: Option<&Path>, force: bool) -> anyhow::Result<()> {
    match set.mode {
        OutputMode::Url => bail!("{URL_NEEDS_SERVER}"),
        OutputMode::Base64 => {
            let mut items: Vec<_> = set.files.iter().map(|f| f.to_base64()).collect();
            let value = match (set.bundle.is_none(), items.as_mut_slice()) {
                (true, [one]) => {
                    one.report = set.report.clone();
                    serde_json::to_value(one)?
                }
                _ => serde_json::to_value(&items)?,
            };
            let text = serde_json::to_string_pretty(&value)? + "\n";
            match out {
                Some(path) => write_all(&[(path.to_path_buf(), text.as_bytes())], force),
                None => {
                    print!("{text}");
                    Ok(())
                }
            }
        }
        OutputMode::File => {
            // The bytes go to files; what the operation says about them goes to stderr.
            if let Some(report) = set.report.as_ref().filter(|_| set.bundle.is_none()) {
                eprintln!("{report}");
            }
            if let Some(dir) = out.filter(|p| p.is_dir()) {
                let targets: Vec<(PathBuf, &[u8])> =
                    set.files.iter().map(|f| (dir.join(&f.filename), f.bytes.as_slice())).collect();
                return write_all(&targets, force);
            }
            let file = set.into_single_file()?;
            let path = out.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(&file.filename));
            write_all(&[(path, &file.bytes)], force)
        }
    }
}

/// What `output: "url"` needs that `call` does not have.
const URL_NEEDS_SERVER: &str =
    "output \"url\" needs a running local server (`paperchain serve`, which `call` then goes through); here, use --out";

/// Writes every file or none: existing targets are refused up front (unless `force`),
/// everything goes to temporary files first, and only then are they renamed into place.
pub fn write_all(targets: &[(PathBuf, &[u8])], force: bool) -> anyhow::Result<()> {
    if !force {
        let existing: Vec<String> =
            targets.iter().filter(|(p, _)| p.exists()).map(|(p, _)| p.display().to_string()).collect();
        if !existing.is_empty() {
            bail!(
                "{} already exist{}; pass --force to overwrite",
                existing.join(", "),
                if existing.len() == 1 { "s" } else { "" }
            );
        }
    }
    let mut staged = Vec::with_capacity(targets.len());
    for (path, bytes) in targets {
        let tmp = temporary_path(path);
        if let Err(e) = std::fs::write(&tmp, bytes) {
            for (tmp, _) in &staged {
                let _ = std::fs::remove_file(tmp);
            }
            let _ = std::fs::remove_file(&tmp);
            return Err(e).with_context(|| format!("writing {}", tmp.display()));
        }
        staged.push((tmp, path));
    }
    for (tmp, path) in &staged {
        std::fs::rename(tmp, path).with_context(|| format!("moving the result to {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn temporary_path(path: &Path) -> PathBuf {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "output".into());
    dir.join(format!(".{name}.part"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_all_files_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.pdf");
        let b = dir.path().join("b.pdf");
        std::fs::write(&b, b"keep me").unwrap();
        let err = write_all(&[(a.clone(), b"one".as_slice()), (b.clone(), b"two".as_slice())], false).unwrap_err();
        assert!(err.to_string().contains("b.pdf"), "{err}");
        assert!(!a.exists(), "nothing written when one target exists");
        assert_eq!(std::fs::read(&b).unwrap(), b"keep me");
        write_all(&[(a.clone(), b"one".as_slice()), (b.clone(), b"two".as_slice())], true).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"two");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".part"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn puts_files_at_pointers_keeping_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.pdf");
        std::fs::write(&path, b"%PDF").unwrap();
        let mut input = serde_json::json!({ "file": { "password": "x" } });
        put_file(&mut input, &format!("file={}", path.display())).unwrap();
        assert_eq!(input["file"]["password"], "x");
        assert_eq!(input["file"]["data"], "JVBERg==");
        assert_eq!(input["file"]["filename"], "a.pdf");
        put_file(&mut input, &format!("/files/0/file={}", path.display())).unwrap();
        put_file(&mut input, &format!("files/1/file={}", path.display())).unwrap();
        assert_eq!(input["files"][1]["file"]["filename"], "a.pdf");
        assert!(put_file(&mut input, &format!("files/5/file={}", path.display())).is_err());
        assert!(put_file(&mut input, "nopath").is_err());
    }
}
