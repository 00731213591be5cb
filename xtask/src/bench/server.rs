//! A warm Paperchain server for the groups that time its answers: started on a free
//! loopback port with its own data folder, asked with curl, killed when dropped.
//!
//! What this module must not do: listen anywhere but loopback, or outlive the bench.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};

use crate::cmd::Cmd;

/// A child process killed when dropped.
pub(super) struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `paperchain serve` on a free loopback port with `env` set, its output in `dir/serve.log`;
/// stopped when dropped.
pub(super) struct Server {
    pub(super) child: Killed,
    pub(super) url: String,
    pub(super) addr: std::net::SocketAddr,
}

impl Server {
    pub(super) fn start(paperchain: &Path, dir: &Path, env: &[(&str, &str)]) -> anyhow::Result<Server> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let listen = format!("127.0.0.1:{port}");
        let log = dir.join("serve.log");
        let data = dir.join("data");
        let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        eprintln!(
            "$ {}{} serve --listen {listen} --data-dir {} >{} 2>&1",
            shown.concat(),
            paperchain.display(),
            data.display(),
            log.display()
        );
        let file = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = Killed(
            std::process::Command::new(paperchain)
                .args(["serve", "--listen", &listen, "--data-dir"])
                .arg(&data)
                .envs(env.iter().copied())
                .stdin(std::process::Stdio::null())
                .stdout(file.try_clone()?)
                .stderr(file)
                .spawn()
                .with_context(|| format!("starting {}", paperchain.display()))?,
        );
        let url = format!("http://{listen}");
        let health = Cmd::new("curl").args(["-sf", "--noproxy", "*", "-o", "/dev/null"]).arg(format!("{url}/healthz"));
        let start = Instant::now();
        while !health.succeeds() {
            if let Some(status) = child.0.try_wait()? {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                bail!("paperchain serve exited ({status}): {}", text.trim());
            }
            ensure!(start.elapsed() < Duration::from_secs(30), "paperchain serve did not answer at {url} in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Server { child, url, addr: listen.parse()? })
    }

    /// The server's process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// POSTs the JSON in `body` to `route`, the answer into `out`: the time it took; an
    /// answer other than 200 is an error with its body.
    pub(super) fn post(&self, route: &str, body: &Path, out: &Path) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let status = Cmd::new("curl")
            .args(["-s", "--noproxy", "*", "-H", "content-type: application/json", "-w", "%{http_code}", "-o"])
            .arg(out)
            .arg("--data-binary")
            .arg(format!("@{}", body.display()))
            .arg(format!("{}{route}", self.url))
            .quiet()
            .read_stdout()?;
        let elapsed = start.elapsed();
        ensure!(status.trim() == "200", "answered {status}: {}", std::fs::read_to_string(out).unwrap_or_default());
        Ok(elapsed)
    }
}
