//! The configuration a process follows while it runs: `config.toml` read again before every
//! decision it makes with it (where a call runs, whether and what to pay), so a change made
//! by anyone (the CLI, the app, an editor) holds from the next call in every running
//! server, service and app, without a restart.
//!
//! Reading the file costs a few microseconds; it is parsed again only when its text
//! changed. A text that is not a configuration the client follows changes nothing: the last
//! good one stays in force, and [`LiveConfig::problem`] says why the file is not followed
//! (`paperchain wallet status` and the app show it).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::{ClientConfig, ConfigError};

/// Builds a configuration from the file's text (`None`: the file does not exist), with
/// what the process sets over it (the environment, command-line options).
pub type Builder = Box<dyn Fn(Option<&str>, &Path) -> Result<ClientConfig, ConfigError> + Send + Sync>;

/// A configuration followed as its file changes (or a fixed one).
pub struct LiveConfig {
    source: Option<(PathBuf, Builder)>,
    state: Mutex<State>,
}

struct State {
    /// The file's text the configuration in force was read from (`None`: no file).
    read: Option<Option<String>>,
    /// The configuration in force.
    config: Arc<ClientConfig>,
    /// Why the file as it is now is not followed.
    problem: Option<String>,
}

impl LiveConfig {
    /// A configuration that never changes (tests, a client set up in code).
    pub fn fixed(config: Arc<ClientConfig>) -> LiveConfig {
        LiveConfig { source: None, state: Mutex::new(State { read: None, config, problem: None }) }
    }

    /// The configuration of `file`, built by `build`; fails when the file is not one the
    /// client follows now (there is no earlier good one to keep).
    pub fn follow(file: PathBuf, build: Builder) -> Result<LiveConfig, ConfigError> {
        let text = read(&file)?;
        let config = Arc::new(build(text.as_deref(), &file)?);
        let state = State { read: Some(text), config, problem: None };
        Ok(LiveConfig { source: Some((file, build)), state: Mutex::new(state) })
    }

    /// The file followed, if any.
    pub fn file(&self) -> Option<&Path> {
        self.source.as_ref().map(|(file, _)| file.as_path())
    }

    /// The configuration in force now: the file's, read again; the last good one when the
    /// file cannot be read or is not valid.
    pub fn current(&self) -> Arc<ClientConfig> {
        self.now().0
    }

    /// Why the file is not followed now, if it is not (the file read again).
    pub fn problem(&self) -> Option<String> {
        self.now().1
    }

    /// The configuration in force now and, when the file as it is now is not followed, why:
    /// both from one reading of the file.
    pub fn now(&self) -> (Arc<ClientConfig>, Option<String>) {
        let Some((file, build)) = &self.source else {
            let state = self.lock();
            return (state.config.clone(), state.problem.clone());
        };
        let text = read(file);
        let mut state = self.lock();
        match text {
            Ok(text) if state.read.as_ref() == Some(&text) => {}
            Ok(text) => {
                match build(text.as_deref(), file) {
                    Ok(config) => {
                        if state.problem.take().is_some() {
                            tracing::info!(file = %file.display(), "the configuration file is valid again and followed");
                        }
                        state.config = Arc::new(config);
                    }
                    Err(e) => {
                        let problem = not_followed(&e);
                        tracing::warn!(file = %file.display(), "{problem}");
                        state.problem = Some(problem);
                    }
                }
                // The text is remembered either way: a bad text is parsed once, not per call.
                state.read = Some(text);
            }
            Err(e) => {
                // Unreadable now (permissions, a folder in its place): read again next time.
                let problem = not_followed(&e);
                if state.problem.as_ref() != Some(&problem) {
                    tracing::warn!(file = %file.display(), "{problem}");
                }
                state.problem = Some(problem);
                state.read = None;
            }
        }
        (state.config.clone(), state.problem.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The file's text, `None` when it does not exist.
fn read(file: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError(format!("reading {}: {e}", file.display()))),
    }
}

fn not_followed(error: &ConfigError) -> String {
    format!("{error}; the last valid configuration stays in force until the file is fixed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(dir: &Path) -> (LiveConfig, PathBuf) {
        let file = dir.join("config.toml");
        std::fs::write(&file, "[policy]\nper_call = \"0.01\"\n").unwrap();
        let build: Builder = Box::new(|text, file| ClientConfig::parse(text.unwrap_or(""), Some(file)));
        (LiveConfig::follow(file.clone(), build).unwrap(), file)
    }

    #[test]
    fn a_change_to_the_file_holds_from_the_next_read_and_a_bad_one_keeps_the_last_good() {
        let dir = tempfile::tempdir().unwrap();
        let (live, file) = live(dir.path());
        assert_eq!(live.current().policy.per_call.unwrap().micros(), 10_000);
        // The same size, written in place within the same clock tick: still seen.
        std::fs::write(&file, "[policy]\nper_call = \"0.02\"\n").unwrap();
        assert_eq!(live.current().policy.per_call.unwrap().micros(), 20_000);
        assert_eq!(live.problem(), None);
        std::fs::write(&file, "[policy]\nper_call = \"lots\"\n").unwrap();
        assert_eq!(live.current().policy.per_call.unwrap().micros(), 20_000, "the last good one stays");
        let problem = live.problem().unwrap();
        assert!(problem.contains("policy.per_call") && problem.contains("last valid configuration"), "{problem}");
        std::fs::write(&file, "[policy]\nper_call = \"0.001\"\n").unwrap();
        assert_eq!(live.current().policy.per_call.unwrap().micros(), 1_000);
        assert_eq!(live.problem(), None);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(live.current().policy.per_call, None, "no file is the defaults, as at start");
    }

    #[test]
    fn a_file_that_is_not_valid_at_start_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "[policy\n").unwrap();
        let build: Builder = Box::new(|text, file| ClientConfig::parse(text.unwrap_or(""), Some(file)));
        assert!(LiveConfig::follow(file, build).is_err());
    }
}
