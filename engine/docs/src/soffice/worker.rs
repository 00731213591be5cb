//! One LibreOffice worker: a `soffice` kept running in its own box with its own profile,
//! to which each conversion is handed by a short-lived `soffice --convert-to` started in
//! the same box (LibreOffice passes the request over its pipe to the running instance).
//!
//! The running instance holds a hidden document open (`keep.txt`, a one-line text file): an
//! instance with no document open quits after the first request it is handed, one with a
//! document stays. It is ready once that document is open, which its lock file
//! (`.~lock.keep.txt#`) tells: a request handed over before then would be its last.

use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sandbox::{self, BOX_ROOT, Layout};

/// The profile's settings, written before the first start: macros never run (the highest
/// security level, and macro execution switched off), no recovery files, and links to
/// other files or the web are not followed on load. The box has no network and sees no
/// user file either; this is the second wall.
const SETTINGS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Recovery/RecoveryInfo"><prop oor:name="Enabled" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Recovery/AutoSave"><prop oor:name="Enabled" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"#;

/// The document a worker keeps open, in its root.
const KEEP: &str = "keep.txt";

/// How a conversion went wrong, for the pool to decide what to do with the worker.
#[derive(Debug)]
pub(super) enum Failure {
    /// LibreOffice made no PDF of the file, and is still running: the file is at fault.
    NotConverted,
    /// It took longer than allowed; the worker has been killed.
    TimedOut,
    /// The worker stopped during the conversion (killed, or crashed).
    WorkerDied,
    /// The worker stopped because the document needed more memory than its box may take
    /// ([`sandbox::memory_cap`]); it is replaced.
    OutOfMemory,
    /// The call it worked for was stopped; the worker was killed.
    Stopped,
    /// Our side failed (a folder could not be written, a program not started).
    Internal(String),
}

/// A running worker.
pub(super) struct Worker {
    /// Its folder on the host: `profile/`, `tmp/` (the box's /tmp, where the pipe is),
    /// `home/`, `jobs/`, and `office.log` (what soffice printed).
    root: PathBuf,
    program: PathBuf,
    layout: Layout,
    office: Child,
    /// Conversions handed to it so far.
    pub conversions: u32,
    /// When it last finished a conversion (or started).
    pub idle_since: Instant,
    jobs: u64,
}

impl Worker {
    /// Starts a worker in `root` (made here) and waits until it listens, at most `patience`.
    pub fn start(root: PathBuf, program: &Path, layout: &Layout, patience: Duration) -> Result<Worker, String> {
        for dir in ["profile/user", "tmp", "home", "jobs"] {
            fs::create_dir_all(root.join(dir)).map_err(|e| format!("cannot make {}: {e}", root.join(dir).display()))?;
        }
        fs::write(root.join("profile/user/registrymodifications.xcu"), SETTINGS)
            .map_err(|e| format!("cannot write the LibreOffice profile: {e}"))?;
        fs::write(root.join(KEEP), "Paperchain\n").map_err(|e| format!("cannot write the worker's document: {e}"))?;
        let log =
            fs::File::create(root.join("office.log")).map_err(|e| format!("cannot make the worker's log: {e}"))?;
        let log2 = log.try_clone().map_err(|e| format!("cannot make the worker's log: {e}"))?;
        let mut command = sandbox::command(
            &root,
            layout,
            program,
            &[
                &profile_arg(),
                "--headless",
                "--invisible",
                "--norestore",
                "--nologo",
                "--nolockcheck",
                "--nofirststartwizard",
                // The hidden document that keeps the instance running between requests.
                &format!("{BOX_ROOT}/{KEEP}"),
            ],
        )?;
        command.stdin(Stdio::null()).stdout(log).stderr(log2).process_group(0);
        let office = command.spawn().map_err(|e| format!("cannot start soffice: {e}"))?;
        let mut worker = Worker {
            root,
            program: program.to_path_buf(),
            layout: layout.clone(),
            office,
            conversions: 0,
            idle_since: Instant::now(),
            jobs: 0,
        };
        let give_up = Instant::now() + patience;
        loop {
            if worker.listens() {
                return Ok(worker);
            }
            if !worker.alive() {
                return Err(format!("soffice stopped while starting: {}", worker.log_tail()));
            }
            if Instant::now() > give_up {
                return Err(format!("soffice did not start within {} s: {}", patience.as_secs(), worker.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process id of the box (its process group), for tests that kill a worker.
    pub fn pid(&self) -> u32 {
        self.office.id()
    }

    /// Whether the worker's box is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.office.try_wait(), Ok(None))
    }

    /// Whether soffice opened its request pipe (in the box's private /tmp) and the document
    /// that keeps it running.
    fn listens(&self) -> bool {
        let pipe = fs::read_dir(self.root.join("tmp"))
            .is_ok_and(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("OSL_PIPE_")));
        pipe && self.root.join(format!(".~lock.{KEEP}#")).exists()
    }

    /// Converts `input` (its file name says the format: `input.docx`) to PDF within
    /// `timeout`: the PDF's bytes, or why not. The job's folder is gone when this returns.
    pub fn convert(&mut self, input: &[u8], extension: &str, timeout: Duration) -> Result<Vec<u8>, Failure> {
        self.jobs += 1;
        let job = Job::new(self.root.join("jobs").join(self.jobs.to_string()))?;
        let name = format!("input.{extension}");
        fs::write(job.dir.join("in").join(&name), input)
            .map_err(|e| Failure::Internal(format!("writing the input: {e}")))?;
        let inside = format!("{BOX_ROOT}/jobs/{}", self.jobs);
        let mut client = sandbox::command(
            &self.root,
            &self.layout,
            &self.program,
            &[
                &profile_arg(),
                "--headless",
                "--norestore",
                "--convert-to",
                "pdf",
                "--outdir",
                &format!("{inside}/out"),
                &format!("{inside}/in/{name}"),
            ],
        )
        .map_err(Failure::Internal)?;
        client.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
        self.conversions += 1;
        let outcome = run_while(&mut client, timeout, || self.alive());
        self.idle_since = Instant::now();
        match outcome {
            Err(why) => return Err(Failure::Internal(why)),
            Ok(Ended::TimedOut) => {
                self.kill();
                return Err(Failure::TimedOut);
            }
            Ok(Ended::Cancelled) => {
                // The worker may be half-way through the document: it goes too.
                self.kill();
                return Err(Failure::Stopped);
            }
            Ok(Ended::Stopped) => return Err(self.died()),
            Ok(Ended::Done) => {}
        }
        if !self.alive() {
            return Err(self.died());
        }
        let pdf = job.dir.join("out/input.pdf");
        match fs::read(&pdf) {
            Ok(bytes) if bytes.starts_with(b"%PDF") => Ok(bytes),
            Ok(_) | Err(_) => Err(Failure::NotConverted),
        }
    }

    /// Why the worker stopped mid-conversion: out of memory when it said an allocation failed.
    fn died(&self) -> Failure {
        let said = self.log_tail().to_ascii_lowercase();
        if said.contains("bad_alloc") || said.contains("out of memory") {
            Failure::OutOfMemory
        } else {
            Failure::WorkerDied
        }
    }

    /// The last lines soffice printed, for an error message.
    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = fs::File::open(self.root.join("office.log")) {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("javaldx")).collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" / ");
        if tail.is_empty() { "it printed nothing".into() } else { tail }
    }

    /// Kills the box and everything in it.
    pub fn kill(&mut self) {
        kill_group(self.office.id());
        let _ = self.office.kill();
        let _ = self.office.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// A conversion's folder (`in/`, `out/`), removed however the conversion ends.
struct Job {
    dir: PathBuf,
}

impl Job {
    fn new(dir: PathBuf) -> Result<Job, Failure> {
        for sub in ["in", "out"] {
            fs::create_dir_all(dir.join(sub))
                .map_err(|e| Failure::Internal(format!("making the job's folder: {e}")))?;
        }
        Ok(Job { dir })
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn profile_arg() -> String {
    format!("-env:UserInstallation=file://{BOX_ROOT}/profile")
}

/// How a client run ended.
enum Ended {
    /// It exited by itself.
    Done,
    /// It outlived its timeout and was killed.
    TimedOut,
    /// The worker it talks to stopped, and it was killed.
    Stopped,
    /// The call it works for was stopped, and it was killed.
    Cancelled,
}

/// Runs `command` to its end, or until `timeout`, or until `worker_alive` says the worker
/// it hands its request to has stopped, or until the call it works for is stopped (killed
/// with its process group in each case).
fn run_while(
    command: &mut Command,
    timeout: Duration,
    mut worker_alive: impl FnMut() -> bool,
) -> Result<Ended, String> {
    let mut child = command.spawn().map_err(|e| format!("cannot start soffice: {e}"))?;
    let give_up = Instant::now() + timeout;
    let mut polls = 0u32;
    loop {
        let ended = match child.try_wait() {
            Ok(Some(_)) => return Ok(Ended::Done),
            Err(e) => return Err(format!("waiting for soffice: {e}")),
            Ok(None) if Instant::now() >= give_up => Ended::TimedOut,
            // The call it works for was stopped (its caller went away, its time ran out).
            Ok(None) if crate::cancel::is_stopped() => Ended::Cancelled,
            // The worker is looked at every 100 ms: a crash mid-conversion answers at once.
            Ok(None) if polls % 20 == 19 && !worker_alive() => Ended::Stopped,
            Ok(None) => {
                polls += 1;
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        kill_group(child.id());
        let _ = child.kill();
        let _ = child.wait();
        return Ok(ended);
    }
}

/// SIGKILL to the process group `leader` leads (every process the box started).
fn kill_group(leader: u32) {
    if let Ok(pgid) = libc::pid_t::try_from(leader) {
        // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH, ignored.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}
