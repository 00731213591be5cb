//! The box external programs that read untrusted files run in (LibreOffice and Chromium).
//!
//! bubblewrap (`bwrap`) starts the program in new namespaces: no network at all (a linked
//! image or a `WEBSERVICE` formula cannot reach any address, public or private), its own
//! process tree (killing the box kills every process in it), its own `/tmp`. It sees the
//! system's programs, libraries and fonts read-only and one writable folder, the box's
//! root, as `/box`; nothing of the user's files, the server's data or other calls' inputs.
//!
//! Every process in a box has a hard cap on the memory it may take for its data
//! (`RLIMIT_DATA`, [`memory_cap`]): a document built to swell LibreOffice or a page built
//! to swell Chromium makes that program's allocations fail, and it stops, instead of
//! taking the machine.
//!
//! bwrap needs user namespaces, which Debian's kernel allows to every user. Where it is
//! missing or refused, the routes that need it answer 503 naming the package.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};

/// Where the box's root folder appears inside the box.
pub const BOX_ROOT: &str = "/box";

/// What a box is made of: the program's files that must be visible besides `/usr`.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// Extra folders bound read-only at the same path (a program installed under `/opt`).
    pub read_only: Vec<PathBuf>,
}

/// The bwrap program, checked once a process: found (`PAPERCHAIN_BWRAP` or `bwrap` on the
/// `PATH`) and able to make a box here.
pub fn bwrap() -> Result<&'static Path, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let program = match std::env::var_os("PAPERCHAIN_BWRAP") {
                Some(path) => PathBuf::from(path),
                None => find_on_path("bwrap").ok_or_else(|| {
                    "bubblewrap (bwrap) is not installed; install Debian's `bubblewrap` package (cargo xtask setup \
                     does), or set PAPERCHAIN_BWRAP to its path"
                        .to_string()
                })?,
            };
            // One empty box, to learn now rather than on a user's call that namespaces are refused.
            let probe = tempfile::Builder::new()
                .prefix("paperchain-box-probe-")
                .tempdir()
                .map_err(|e| format!("cannot make a folder for the box: {e}"))?;
            std::fs::create_dir_all(probe.path().join("tmp"))
                .map_err(|e| format!("cannot make the box's /tmp: {e}"))?;
            let out = command_with(&program, probe.path(), &Layout::default(), Path::new("/usr/bin/true"), &[])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} cannot make a box on this machine (user namespaces refused?): {}",
                    program.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            Ok(program)
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// A command that runs `program` with `args` in a box whose root is the host folder `root`
/// (seen as `/box`; `root/tmp` is the box's `/tmp`, `root/home` its `$HOME`).
///
/// The box has no network, its own process, IPC and host-name namespaces, no capabilities,
/// a new session (no terminal to write to), and dies with the thread that started it.
pub fn command(root: &Path, layout: &Layout, program: &Path, args: &[&str]) -> Result<Command, String> {
    Ok(command_with(bwrap()?, root, layout, program, args))
}

/// The most memory each process in a box may take for its data: `PAPERCHAIN_WORKER_MEMORY_MIB`
/// (1536 MiB by default; LibreOffice and Chromium take 200 to 600 MiB for common documents).
pub fn memory_cap() -> u64 {
    static CAP: OnceLock<u64> = OnceLock::new();
    *CAP.get_or_init(|| crate::context::env_number("PAPERCHAIN_WORKER_MEMORY_MIB").unwrap_or(1536).max(256) << 20)
}

fn command_with(bwrap: &Path, root: &Path, layout: &Layout, program: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(bwrap);
    let cap = memory_cap() as libc::rlim_t;
    // SAFETY: setrlimit is async-signal-safe, and the closure touches nothing else; the limit
    // is inherited through bwrap by every process of the box.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            let limit = libc::rlimit { rlim_cur: cap, rlim_max: cap };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.args(["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    command.args(["--ro-bind", "/usr", "/usr"]);
    // Merged-/usr systems have these as links into /usr; older ones as folders.
    for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64"] {
        let path = Path::new(top);
        match std::fs::read_link(path) {
            Ok(target) => {
                command.arg("--symlink").arg(target).arg(top);
            }
            Err(_) if path.is_dir() => {
                command.args(["--ro-bind", top, top]);
            }
            Err(_) => {}
        }
    }
    // What programs read from /etc and /var: the dynamic linker's cache, fonts, their own
    // settings. Not /etc as a whole (passwd, hosts, the machine's secrets).
    command.args(["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]);
    for shared in ["/etc/fonts", "/etc/alternatives", "/etc/libreoffice", "/etc/localtime", "/var/cache/fontconfig"] {
        command.args(["--ro-bind-try", shared, shared]);
    }
    for extra in &layout.read_only {
        command.arg("--ro-bind").arg(extra).arg(extra);
    }
    command.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]);
    command.arg("--bind").arg(root).arg(BOX_ROOT);
    command.arg("--bind").arg(root.join("tmp")).arg("/tmp");
    command.args(["--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME"]);
    command.arg(format!("{BOX_ROOT}/home"));
    command.args(["--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8", "--chdir", BOX_ROOT, "--"]);
    command.arg(program).args(args);
    command
}

/// Work run on one long-lived thread: boxes are started there, so that they live until
/// they are stopped and not until a passing thread ends (`--die-with-parent` ties a box to
/// the thread that started it), yet die when the process does.
pub struct Spawner {
    jobs: Mutex<mpsc::Sender<Box<dyn FnOnce() + Send>>>,
}

impl Spawner {
    /// A spawner with its thread, named `name`.
    pub fn new(name: &str) -> Spawner {
        let (jobs, received) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
        let started = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            for job in received {
                job();
            }
        });
        if let Err(e) = started {
            tracing::error!(error = %e, "cannot start the thread that starts boxes");
        }
        Spawner { jobs: Mutex::new(jobs) }
    }

    /// Runs `work` on the spawner's thread and waits for its result.
    pub fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let (answer, answered) = mpsc::channel();
        let job: Box<dyn FnOnce() + Send> = Box::new(move || {
            let _ = answer.send(work());
        });
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(job)
            .map_err(|_| "the thread that starts boxes has stopped".to_string())?;
        answered.recv().map_err(|_| "the thread that starts boxes has stopped".to_string())
    }
}

/// `name` in a folder of the `PATH`, as a canonical path.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_has_no_network_and_sees_only_its_own_folder() {
        if let Err(why) = bwrap() {
            panic!("bubblewrap is installed by cargo xtask setup: {why}");
        }
        // A server on the host's loopback, which the box must not reach.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tmp")).unwrap();
        std::fs::write(root.path().join("mine.txt"), "inside").unwrap();
        let script = format!(
            "echo file=$(cat /box/mine.txt); [ -e /root ] && echo root=seen || echo root=absent; \
             echo ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,); echo pid=$$; \
             /usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' \
             2>/dev/null && echo host=reached || echo host=unreachable"
        );
        let out =
            command(root.path(), &Layout::default(), Path::new("/bin/sh"), &["-c", &script]).unwrap().output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        for line in ["file=inside", "root=absent", "ifaces=lo,", "host=unreachable"] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        // Its own process tree: the shell is one of the first processes in it.
        let pid: u32 = text.lines().find_map(|l| l.strip_prefix("pid=")).unwrap().parse().unwrap();
        assert!(pid < 10, "{text}");
    }

    #[test]
    fn a_program_in_a_box_cannot_take_more_than_the_cap() {
        if let Err(why) = bwrap() {
            panic!("bwrap is part of the set-up (cargo xtask setup): {why}");
        }
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tmp")).unwrap();
        let take = |mib: u64| {
            let script = format!("b = bytearray({mib} << 20); print(len(b) >> 20)");
            let out = command(root.path(), &Layout::default(), Path::new("/usr/bin/python3"), &["-c", &script])
                .unwrap()
                .output()
                .unwrap();
            (out.status.success(), String::from_utf8_lossy(&out.stdout).trim().to_string(), out.stderr)
        };
        let cap = memory_cap() >> 20;
        let (ok, printed, _) = take(cap / 4);
        assert!(ok && printed == (cap / 4).to_string(), "a quarter of the cap is taken: {printed}");
        let (ok, _, stderr) = take(cap * 2);
        assert!(!ok, "twice the cap is refused");
        assert!(String::from_utf8_lossy(&stderr).contains("MemoryError"), "{}", String::from_utf8_lossy(&stderr));
    }
}
