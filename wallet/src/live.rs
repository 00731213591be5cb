//! The configuration a process follows while it runs: `config.toml` read again before every
//! decision it makes with it (where a call runs, whether and what to pay), so a change made
//! by anyone (the CLI, the app, an editor) holds from the next call in every running
//! server, service and app, without a restart.
//!
//! Reading the file costs a few microseconds; it is parsed again only when its text
//! changed. A text that is not a configuration the client follows changes nothing: the last
//! good one stays in force, and [`LiveConfig::problem`] says why the file is not followed
//! (`paperchain wallet status` and the app show it).
//!
//! A guarded configuration ([`LiveConfig::guarded`], the user's) is followed only as far as
//! its owner confirmed it ([`crate::confirmed`]): the record beside the file is read again
//! with it, and what the file loosens waits, listed by [`LiveConfig::unconfirmed`], until
//! [`LiveConfig::confirm`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use zeroize::Zeroizing;

use crate::config::{ClientConfig, ConfigError};
use crate::confirmed::{Unsealed, locked, loosened, meet, open, record_file, seal};

/// Builds a configuration from the file's text (`None`: the file does not exist), with
/// what the process sets over it (the environment, command-line options).
pub type Builder = Box<dyn Fn(Option<&str>, &Path) -> Result<ClientConfig, ConfigError> + Send + Sync>;

/// The secret that seals the record: `Ok(None)` when there is none and the argument (create)
/// is false. Blocking.
pub type SecretSource = Box<dyn Fn(bool) -> Result<Option<Zeroizing<[u8; 32]>>, String> + Send + Sync>;

/// A configuration followed as its file changes (or a fixed one).
pub struct LiveConfig {
    source: Option<(PathBuf, Builder)>,
    guard: Option<Guard>,
    state: Mutex<State>,
}

/// What keeps a file's loosening waiting: its record and the secret that seals it.
struct Guard {
    record: PathBuf,
    secret: SecretSource,
    /// The secret once read (it does not change while it exists).
    known: Mutex<Option<Zeroizing<[u8; 32]>>>,
    /// Whether a first run confirms the file as it is (a process that pays), or only looks.
    adopt: bool,
}

struct State {
    /// The texts of the file and of its record the configuration in force was read from
    /// (`None`: no file).
    read: Option<(Option<String>, Option<String>)>,
    /// The configuration in force.
    config: Arc<ClientConfig>,
    /// Why the file as it is now is not followed.
    problem: Option<String>,
    /// What the file says beyond what was confirmed, and the file's text that says it.
    unconfirmed: Option<Unconfirmed>,
}

/// A configuration file that says more than its owner confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unconfirmed {
    /// What it loosens, one line per key, in words.
    pub changes: Vec<String>,
    /// Why nothing is confirmed at all, when that is the case (no record, a broken seal).
    pub reason: Option<String>,
    /// The file's text (`None`: no file), which confirming seals.
    pub text: Option<String>,
}

impl LiveConfig {
    /// A configuration that never changes (tests, a client set up in code).
    pub fn fixed(config: Arc<ClientConfig>) -> LiveConfig {
        let state = State { read: None, config, problem: None, unconfirmed: None };
        LiveConfig { source: None, guard: None, state: Mutex::new(state) }
    }

    /// The configuration of `file`, built by `build`; fails when the file is not one the
    /// client follows now (there is no earlier good one to keep).
    pub fn follow(file: PathBuf, build: Builder) -> Result<LiveConfig, ConfigError> {
        let text = read(&file)?;
        let config = Arc::new(build(text.as_deref(), &file)?);
        let state = State { read: Some((text, None)), config, problem: None, unconfirmed: None };
        Ok(LiveConfig { source: Some((file, build)), guard: None, state: Mutex::new(state) })
    }

    /// The configuration of `file` as [`LiveConfig::follow`], followed only as far as its
    /// owner confirmed it: the record `<name>.confirmed.toml` beside it, sealed with `secret`.
    /// With no record and no secret yet (a first run), the file as it is is confirmed when
    /// `adopt` (a process that pays); one that only looks follows it as it is.
    pub fn guarded(
        file: PathBuf,
        build: Builder,
        secret: SecretSource,
        adopt: bool,
    ) -> Result<LiveConfig, ConfigError> {
        let mut live = LiveConfig::follow(file.clone(), build)?;
        live.guard = Some(Guard { record: record_file(&file), secret, known: Mutex::new(None), adopt });
        live.lock().read = None;
        let (_, problem) = live.now();
        match problem {
            Some(problem) => Err(ConfigError(problem)),
            None => Ok(live),
        }
    }

    /// What the file says beyond what its owner confirmed, if anything (read again).
    pub fn unconfirmed(&self) -> Option<Unconfirmed> {
        self.now();
        self.lock().unconfirmed.clone()
    }

    /// Confirms `shown` (what [`LiveConfig::unconfirmed`] returned and the person saw): its
    /// text is sealed as the confirmed configuration, and followed whole from the next read.
    /// Blocking (the key store).
    pub fn confirm(&self, shown: &Unconfirmed) -> Result<(), ConfigError> {
        let guard = self.guard.as_ref().ok_or_else(|| ConfigError("this configuration is not guarded".into()))?;
        let secret = guard.secret(true)?.ok_or_else(|| ConfigError("the key store made no seal".into()))?;
        write_record(&guard.record, &secret, shown.text.as_deref().unwrap_or(""))?;
        self.lock().read = None;
        Ok(())
    }

    /// Puts the file back as its owner last confirmed it, taking back what waits (and any
    /// other change made since). Needs no check of the owner: it loosens nothing. Blocking
    /// (the key store).
    pub fn discard(&self) -> Result<(), ConfigError> {
        let (Some((file, _)), Some(guard)) = (&self.source, &self.guard) else {
            return Err(ConfigError("this configuration is not guarded".into()));
        };
        let nothing =
            || ConfigError(format!("there is no confirmed configuration to go back to ({})", guard.record.display()));
        let secret = guard.secret(false)?.ok_or_else(nothing)?;
        let record = read(&guard.record)?.ok_or_else(nothing)?;
        let (text, _) = open(&secret, &record, &guard.record).map_err(|e| ConfigError(e.to_string()))?;
        crate::config_edit::write_atomically(file, text.as_bytes())
            .map_err(|e| ConfigError(format!("writing {}: {e}", file.display())))?;
        self.lock().read = None;
        Ok(())
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
        let record = match &self.guard {
            Some(guard) => read(&guard.record),
            None => Ok(None),
        };
        let mut state = self.lock();
        match text.and_then(|text| Ok((text, record?))) {
            Ok(texts) if state.read.as_ref() == Some(&texts) => {}
            Ok((text, record)) => {
                match build(text.as_deref(), file) {
                    Ok(config) => {
                        if state.problem.take().is_some() {
                            tracing::info!(file = %file.display(), "the configuration file is valid again and followed");
                        }
                        let (config, unconfirmed, settled) = match &self.guard {
                            Some(guard) => guard.judge(config, text.as_deref(), record.as_deref(), build, file),
                            None => (config, None, true),
                        };
                        if let Some(unconfirmed) = &unconfirmed
                            && state.unconfirmed.as_ref() != Some(unconfirmed)
                        {
                            tracing::warn!(
                                file = %file.display(),
                                changes = %unconfirmed.changes.join("; "),
                                "the configuration file loosens what its owner confirmed; that waits for `paperchain config confirm` or the app"
                            );
                        }
                        state.config = Arc::new(config);
                        state.unconfirmed = unconfirmed;
                        if !settled {
                            // The key store failed: asked again at the next read.
                            state.read = None;
                            return (state.config.clone(), None);
                        }
                    }
                    Err(e) => {
                        let problem = not_followed(&e);
                        tracing::warn!(file = %file.display(), "{problem}");
                        state.problem = Some(problem);
                    }
                }
                // The texts are remembered either way: a bad text is parsed once, not per call.
                // A record this read wrote is read again next time, and then is the same.
                state.read = Some((text, record));
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

impl Guard {
    /// The seal's secret (made when `create` and there is none). The key store is asked on a
    /// thread of its own: the keyring's client runs its own runtime.
    fn secret(&self, create: bool) -> Result<Option<Zeroizing<[u8; 32]>>, ConfigError> {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(secret) = known.as_ref() {
            return Ok(Some(secret.clone()));
        }
        let found = std::thread::scope(|scope| scope.spawn(|| (self.secret)(create)).join())
            .map_err(|_| ConfigError("the key store's client failed".into()))?
            .map_err(|e| ConfigError(format!("the seal of the confirmed configuration: {e}")))?;
        known.clone_from(&found);
        Ok(found)
    }

    /// What to follow of `file` (the file's configuration, built from `text`), given the
    /// record's text: the file whole when it loosens nothing confirmed (sealed as the new
    /// confirmed one when it differs), else the meet and what waits. The last part says
    /// whether the answer holds while the texts stay the same (not after a key store error,
    /// which the next read tries again).
    fn judge(
        &self,
        file: ClientConfig,
        text: Option<&str>,
        record: Option<&str>,
        build: &Builder,
        path: &Path,
    ) -> (ClientConfig, Option<Unconfirmed>, bool) {
        let body = text.unwrap_or("");
        let mut settled = true;
        let confirmed = match (record, self.secret(false)) {
            (None, Ok(None)) if !self.adopt => return (file, None, true),
            (None, Ok(None)) => {
                // A first run: the file as it is becomes the confirmed configuration.
                match self.secret(true).and_then(|secret| {
                    let secret = secret.ok_or_else(|| ConfigError("the key store made no seal".into()))?;
                    write_record(&self.record, &secret, body)
                }) {
                    Ok(()) => return (file, None, true),
                    Err(e) => {
                        settled = false;
                        Err(e.to_string())
                    }
                }
            }
            (None, Ok(Some(_))) => Err(Unsealed::Missing(self.record.display().to_string()).to_string()),
            (Some(_), Ok(None)) => Err(format!(
                "the seal's secret is missing from the key store, so {} confirms nothing; confirm the configuration",
                self.record.display()
            )),
            (Some(record), Ok(Some(secret))) => match open(&secret, record, &self.record) {
                Ok((confirmed_text, _)) => match build(Some(&confirmed_text), path) {
                    Ok(confirmed) => {
                        if loosened(&confirmed, &file).is_empty() {
                            if confirmed_text != body
                                && let Err(e) = write_record(&self.record, &secret, body)
                            {
                                tracing::warn!("{e}");
                            }
                            return (file, None, true);
                        }
                        Ok(confirmed)
                    }
                    Err(e) => Err(format!("the confirmed configuration does not read any more ({e})")),
                },
                Err(unsealed) => Err(unsealed.to_string()),
            },
            (_, Err(e)) => {
                settled = false;
                Err(e.to_string())
            }
        };
        let (ceiling, reason) = match confirmed {
            Ok(confirmed) => (confirmed, None),
            Err(reason) => match build(None, path) {
                Ok(base) => (locked(base, &reason), Some(reason)),
                Err(_) => (locked(ClientConfig::default(), &reason), Some(reason)),
            },
        };
        let changes = loosened(&ceiling, &file);
        let met = meet(&ceiling, &file);
        (met, Some(Unconfirmed { changes, reason, text: text.map(str::to_string) }), settled)
    }
}

/// Writes the record of `text` confirmed now, sealed with `secret`, whole or not at all.
fn write_record(record: &Path, secret: &[u8; 32], text: &str) -> Result<(), ConfigError> {
    let at = crate::ledger::rfc3339(crate::ledger::now_ms());
    crate::config_edit::write_atomically(record, seal(secret, &at, text).as_bytes())
        .map_err(|e| ConfigError(format!("writing {}: {e}", record.display())))
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

    fn guarded(dir: &Path) -> (LiveConfig, PathBuf) {
        let file = dir.join("config.toml");
        std::fs::write(&file, "[service]\nurl = \"https://api.example.test\"\n[policy]\nper_day = \"1\"\n").unwrap();
        let build: Builder = Box::new(|text, file| ClientConfig::parse(text.unwrap_or(""), Some(file)));
        // The secret as a key store keeps it: none until made, then the same one.
        let kept = Arc::new(Mutex::new(None::<[u8; 32]>));
        let secret: SecretSource = Box::new(move |create| {
            let mut kept = kept.lock().unwrap();
            if kept.is_none() && create {
                *kept = Some(rand::random());
            }
            Ok(kept.map(Zeroizing::new))
        });
        (LiveConfig::guarded(file.clone(), build, secret, true).unwrap(), file)
    }

    fn per_day(live: &LiveConfig) -> Option<u64> {
        live.current().policy.per_day.map(|d| d.micros())
    }

    #[test]
    fn a_guarded_file_is_tightened_at_once_and_loosened_only_when_confirmed() {
        let dir = tempfile::tempdir().unwrap();
        let (live, file) = guarded(dir.path());
        let record = dir.path().join("config.confirmed.toml");
        assert!(std::fs::read_to_string(&record).unwrap().starts_with("[service]"), "a first run confirms the file");
        assert_eq!((per_day(&live), live.unconfirmed()), (Some(1_000_000), None));
        let text =
            |day: &str| format!("[service]\nurl = \"https://api.example.test\"\n[policy]\nper_day = \"{day}\"\n");
        // Tighter: followed, and confirmed with it.
        std::fs::write(&file, text("0.5")).unwrap();
        assert_eq!((per_day(&live), live.unconfirmed()), (Some(500_000), None));
        assert!(std::fs::read_to_string(&record).unwrap().contains("per_day = \"0.5\""));
        // Looser: waits, said key by key.
        std::fs::write(&file, text("1000") + "[routing]\ndefault = \"hosted\"\n").unwrap();
        assert_eq!(per_day(&live), Some(500_000));
        assert_eq!(live.current().mode_of("merge_pdfs", "/v1/pdf/merge"), crate::config::RouteMode::Local);
        let waiting = live.unconfirmed().unwrap();
        assert_eq!(waiting.changes, ["policy.per_day: $0.50 → $1000.00", "routing.default: local → hosted"]);
        assert_eq!(waiting.reason, None);
        // A hand edit of the record confirms nothing: nothing is paid.
        let sealed = std::fs::read_to_string(&record).unwrap();
        std::fs::write(&record, sealed.replace("0.5", "5000")).unwrap();
        assert_eq!(per_day(&live), Some(0));
        let waiting = live.unconfirmed().unwrap();
        assert!(waiting.reason.as_deref().unwrap().contains("changed since it was sealed"), "{waiting:?}");
        std::fs::remove_file(&record).unwrap();
        assert_eq!(per_day(&live), Some(0), "a removed record confirms nothing either");
        assert!(live.unconfirmed().unwrap().reason.unwrap().contains("there is no confirmed configuration"));
        // Confirmed as shown: followed whole.
        std::fs::write(&record, sealed).unwrap();
        let shown = live.unconfirmed().unwrap();
        std::fs::write(&file, text("2000")).unwrap();
        live.confirm(&shown).unwrap();
        assert_eq!(per_day(&live), Some(1_000_000_000), "the change shown, not the later one, is confirmed");
        assert!(live.unconfirmed().unwrap().changes[0].starts_with("policy.per_day: $1000.00 → $2000.00"));
    }
}
