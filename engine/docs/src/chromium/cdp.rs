//! The Chrome DevTools Protocol over the pipe a browser started with
//! `--remote-debugging-pipe` reads on its fd 3 and writes on its fd 4: JSON messages ended
//! by a NUL byte. No port is opened, so no other program on the machine can drive the
//! browser.
//!
//! One reader thread hands each answer to the caller waiting for its id and each event to
//! the session it belongs to; callers block (they run on blocking threads).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Largest message the browser may send (a printed PDF is one message, in base64).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// Why a command did not answer.
#[derive(Debug)]
pub enum CdpError {
    /// The browser answered with an error.
    Protocol(String),
    /// No answer in time.
    Timeout,
    /// The pipe is closed: the browser is gone.
    Closed,
    /// The call it worked for was stopped before the answer came ([`crate::cancel`]).
    Stopped,
}

impl std::fmt::Display for CdpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CdpError::Protocol(message) => write!(f, "the browser answered: {message}"),
            CdpError::Timeout => write!(f, "the browser did not answer in time"),
            CdpError::Closed => write!(f, "the browser stopped"),
            CdpError::Stopped => write!(f, "the call was stopped"),
        }
    }
}

#[derive(Default)]
struct Routes {
    answers: HashMap<u64, Sender<Result<Value, CdpError>>>,
    sessions: HashMap<String, Sender<Value>>,
}

/// A connection to one browser.
pub struct Connection {
    writer: Mutex<std::io::PipeWriter>,
    routes: Arc<Mutex<Routes>>,
    next_id: AtomicU64,
    closed: Arc<AtomicBool>,
}

impl Connection {
    /// Starts reading `reader`; commands are written to `writer`.
    pub fn new(writer: std::io::PipeWriter, reader: std::io::PipeReader) -> Connection {
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let (for_thread, closed_flag) = (Arc::clone(&routes), Arc::clone(&closed));
        std::thread::Builder::new()
            .name("cdp-reader".into())
            .spawn(move || read_messages(reader, &for_thread, &closed_flag))
            .expect("a thread can be started");
        Connection { writer: Mutex::new(writer), routes, next_id: AtomicU64::new(1), closed }
    }

    /// Whether the browser's end of the pipe is closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends `method` with `params` (to `session`, or the browser) and waits for its answer.
    pub fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.call_with(session, method, params, timeout, false)
    }

    /// [`Connection::call`] for a long command (printing): it is given up as soon as the
    /// call it works for is stopped, looked at every 100 ms.
    pub fn call_stoppable(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.call_with(session, method, params, timeout, true)
    }

    fn call_with(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
        stoppable: bool,
    ) -> Result<Value, CdpError> {
        let answered = self.send(session, method, params)?;
        let give_up = Instant::now() + timeout;
        loop {
            if stoppable && crate::cancel::is_stopped() {
                return Err(CdpError::Stopped);
            }
            let Some(left) = give_up.checked_duration_since(Instant::now()) else { return Err(CdpError::Timeout) };
            let slice = if stoppable { left.min(Duration::from_millis(100)) } else { left };
            match answered.recv_timeout(slice) {
                Ok(answer) => return answer,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Err(CdpError::Closed),
            }
        }
    }

    /// Sends a command without waiting; the receiver gets its answer.
    pub fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Receiver<Result<Value, CdpError>>, CdpError> {
        if self.is_closed() {
            return Err(CdpError::Closed);
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (answer, answered) = mpsc::channel();
        self.lock_routes().answers.insert(id, answer);
        let mut bytes = serde_json::to_vec(&message).expect("a JSON value serializes");
        bytes.push(0);
        let written = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).write_all(&bytes);
        if written.is_err() {
            self.lock_routes().answers.remove(&id);
            return Err(CdpError::Closed);
        }
        Ok(answered)
    }

    /// Events of `session`, from now on, until [`Connection::forget`].
    pub fn subscribe(&self, session: &str) -> Receiver<Value> {
        let (events, receiver) = mpsc::channel();
        self.lock_routes().sessions.insert(session.to_string(), events);
        receiver
    }

    /// Stops routing `session`'s events.
    pub fn forget(&self, session: &str) {
        self.lock_routes().sessions.remove(session);
    }

    fn lock_routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn read_messages(reader: std::io::PipeReader, routes: &Mutex<Routes>, closed: &AtomicBool) {
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let mut message = Vec::new();
    loop {
        message.clear();
        match std::io::Read::take(&mut reader, MAX_MESSAGE as u64).read_until(0, &mut message) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if message.last() != Some(&0) {
            // Longer than allowed, or cut off: the connection cannot be trusted any more.
            tracing::error!(bytes = message.len(), "a browser message without its end; the browser is dropped");
            break;
        }
        message.pop();
        let Ok(value) = serde_json::from_slice::<Value>(&message) else { continue };
        let mut routes = routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(id) = value.get("id").and_then(Value::as_u64) {
            if let Some(answer) = routes.answers.remove(&id) {
                let result = match value.get("error") {
                    Some(error) => Err(CdpError::Protocol(
                        error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_string(),
                    )),
                    None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = answer.send(result);
            }
        } else if let Some(events) = value.get("sessionId").and_then(Value::as_str).and_then(|s| routes.sessions.get(s))
        {
            let _ = events.send(value);
        }
    }
    closed.store(true, Ordering::SeqCst);
    // Everyone waiting learns the browser is gone.
    let mut routes = routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (_, answer) in routes.answers.drain() {
        let _ = answer.send(Err(CdpError::Closed));
    }
    routes.sessions.clear();
}

/// Waits on `events` until `deadline` for the next event; `None` when the time is up or
/// the browser is gone.
pub fn next_event(events: &Receiver<Value>, deadline: Instant) -> Option<Value> {
    let left = deadline.checked_duration_since(Instant::now())?;
    events.recv_timeout(left).ok()
}
