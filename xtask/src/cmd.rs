//! Running other programs. Each command line is printed (to stderr, shell-quoted) before it
//! runs, so a log shows exactly what to type to repeat a step.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};

use anyhow::{Context as _, bail};

/// A command line to run, built up like `std::process::Command` but printable and reusable.
#[derive(Clone)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    removed: Vec<OsString>,
    dir: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    echo: bool,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        Cmd {
            program: program.as_ref().into(),
            args: Vec::new(),
            envs: Vec::new(),
            removed: Vec::new(),
            dir: None,
            stdin: None,
            echo: true,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cmd {
        self.args.push(arg.as_ref().into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().into()));
        self
    }

    /// The command without the variable `key` of this process's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Cmd {
        self.removed.push(key.as_ref().into());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cmd {
        self.envs.push((key.as_ref().into(), value.as_ref().into()));
        self
    }

    /// The working directory (not shown in the printed line).
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Cmd {
        self.dir = Some(dir.into());
        self
    }

    /// Bytes written to the program's standard input (otherwise it gets none).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = Some(bytes.into());
        self
    }

    /// Runs without printing the line: for probes, and for repeats of a line already shown.
    pub fn quiet(mut self) -> Cmd {
        self.echo = false;
        self
    }

    /// Runs with the terminal's output; a non-zero exit is an error naming the command.
    pub fn run(&self) -> anyhow::Result<()> {
        let status = self.status()?;
        if !status.success() {
            bail!("`{self}` failed ({status})");
        }
        Ok(())
    }

    /// Runs with the terminal's output and returns how it exited.
    pub fn status(&self) -> anyhow::Result<ExitStatus> {
        let mut child = self.spawn(Stdio::inherit(), Stdio::inherit())?;
        child.wait().with_context(|| format!("waiting for `{self}`"))
    }

    /// Runs with both outputs captured; whether it succeeded is the caller's to judge.
    pub fn output(&self) -> anyhow::Result<Output> {
        let child = self.spawn(Stdio::piped(), Stdio::piped())?;
        child.wait_with_output().with_context(|| format!("waiting for `{self}`"))
    }

    /// Runs captured and returns standard output; a non-zero exit is an error quoting stderr.
    pub fn read(&self) -> anyhow::Result<String> {
        let output = self.output()?;
        if !output.status.success() {
            bail!("`{self}` failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Like `read`, but with stderr on the terminal: for long builds that report progress there.
    pub fn read_stdout(&self) -> anyhow::Result<String> {
        let output = self.spawn(Stdio::piped(), Stdio::inherit())?.wait_with_output()?;
        if !output.status.success() {
            bail!("`{self}` failed ({})", output.status);
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Whether the program runs and exits 0; silent, for "is it installed?" probes.
    pub fn succeeds(&self) -> bool {
        self.clone().quiet().output().is_ok_and(|o| o.status.success())
    }

    fn spawn(&self, stdout: Stdio, stderr: Stdio) -> anyhow::Result<Child> {
        if self.echo {
            eprintln!("$ {self}");
        }
        let mut command = Command::new(&self.program);
        for key in &self.removed {
            command.env_remove(key);
        }
        command.args(&self.args).envs(self.envs.iter().map(|(k, v)| (k, v))).stdout(stdout).stderr(stderr);
        command.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let mut child = command.spawn().with_context(|| format!("cannot start `{self}`"))?;
        if let (Some(bytes), Some(mut pipe)) = (&self.stdin, child.stdin.take()) {
            // A program that exits without reading its input is judged by its exit status,
            // not by the broken pipe.
            let _ = pipe.write_all(bytes);
        }
        Ok(child)
    }
}

impl fmt::Display for Cmd {
    /// The line as one would type it in a shell: `NAME=value program 'arg with spaces'`, after
    /// `echo 'input' |` when the program is given a line of text on stdin.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stdin.as_deref().map(std::str::from_utf8) {
            Some(Ok(text)) if !text.contains('\n') => write!(f, "echo {} | ", shell_quote(text.as_ref()))?,
            Some(_) => f.write_str("(input on stdin) ")?,
            None => {}
        }
        let env = self.envs.iter().map(|(k, v)| format!("{}={}", k.to_string_lossy(), shell_quote(v)));
        let words: Vec<String> = env
            .chain(std::iter::once(shell_quote(&self.program)))
            .chain(self.args.iter().map(|a| shell_quote(a)))
            .collect();
        f.write_str(&words.join(" "))
    }
}

/// The program's path, found in `$PATH` as a shell would.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// Quotes a word for a POSIX shell only when it needs it.
fn shell_quote(word: &OsStr) -> String {
    let word = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=/.,:@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_a_line_a_shell_would_run() {
        let cmd = Cmd::new("qpdf").env("A", "x y").args(["--pages", "a b.pdf", "it's", "", "1-3,5"]);
        assert_eq!(cmd.to_string(), r"A='x y' qpdf --pages 'a b.pdf' 'it'\''s' '' 1-3,5");
        let piped = Cmd::new("paperchain").args(["call", "split_pdf", "--input", "-"]).stdin(r#"{"every":1}"#);
        assert_eq!(piped.to_string(), r#"echo '{"every":1}' | paperchain call split_pdf --input -"#);
    }
}
