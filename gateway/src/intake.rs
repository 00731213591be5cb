//! Receiving request bodies: at most the body limit each, and at most the budget of body
//! bytes across all calls at once. A body is counted from its first byte (its whole
//! Content-Length when it declares one) until its call ends; a body that would go past the
//! budget is refused at once with 503 `busy` and a Retry-After, so many large uploads at
//! once cost a bounded amount of memory, never an out-of-memory kill.
//!
//! The limit is `routes::BODY_LIMIT` (64 MiB, 413 past it, the rest of the body read and
//! thrown away so that its sender sees the answer); the budget is
//! [`DEFAULT_BUDGET`] (1 GiB) unless `PAPERCHAIN_BODY_BUDGET_MIB` says otherwise. The route
//! API reads through [`read_body`]; the routers mounted beside it (MCP's) count their
//! bodies against the same budget through the [`hold_body`] middleware.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use bytes::BytesMut;
use futures::StreamExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// The budget when the environment sets none: sixteen bodies of the largest size (64 MiB).
pub const DEFAULT_BUDGET: usize = 1024 * 1024 * 1024;

/// The budget in bytes the environment asks for (`PAPERCHAIN_BODY_BUDGET_MIB`), else
/// [`DEFAULT_BUDGET`].
pub fn budget_from_env() -> usize {
    paperchain_engine::context::env_number("PAPERCHAIN_BODY_BUDGET_MIB")
        .map_or(DEFAULT_BUDGET, |mib| (mib as usize).saturating_mul(1024 * 1024))
}

/// The bytes of request bodies held at once, across all calls.
#[derive(Debug)]
pub struct BodyBudget {
    bytes: Arc<Semaphore>,
    total: usize,
}

/// A body's share of the budget, given back when dropped (at the end of its call).
#[derive(Debug, Default)]
pub struct BodyHold(Option<OwnedSemaphorePermit>);

impl BodyBudget {
    /// A budget of `total` bytes; never less than `body_limit`, so the largest body allowed
    /// can always arrive alone.
    pub fn new(total: usize, body_limit: usize) -> BodyBudget {
        let total = total.max(body_limit).min(Semaphore::MAX_PERMITS);
        BodyBudget { bytes: Arc::new(Semaphore::new(total)), total }
    }

    /// The budget the environment asks for ([`budget_from_env`]).
    pub fn from_env(body_limit: usize) -> BodyBudget {
        BodyBudget::new(budget_from_env(), body_limit)
    }

    /// The budget in bytes.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Body bytes held now.
    pub fn held(&self) -> usize {
        self.total - self.bytes.available_permits()
    }

    /// `more` bytes added to `hold`, or 503 `busy` when the budget has no room for them.
    fn grow(&self, hold: &mut BodyHold, more: usize) -> Result<(), ApiError> {
        if more == 0 {
            return Ok(());
        }
        let permits = u32::try_from(more).map_err(|_| self.busy())?;
        let permit = Arc::clone(&self.bytes).try_acquire_many_owned(permits).map_err(|_| self.busy())?;
        match &mut hold.0 {
            Some(held) => held.merge(permit),
            None => hold.0 = Some(permit),
        }
        Ok(())
    }

    fn busy(&self) -> ApiError {
        ApiError::from(paperchain_engine::work_gate::busy(format!(
            "this server is receiving {} MiB of request bodies at once, the most it holds; send the call again in a \
             few seconds",
            self.total / (1024 * 1024)
        )))
    }
}

impl BodyHold {
    /// The bytes held.
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.num_permits())
    }
}

/// 413 for a body over `limit` bytes.
pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the request body is larger than {} MiB", limit / (1024 * 1024)),
    )
}

/// Reads the body, refusing more than `limit` bytes (by Content-Length first) and any byte
/// past the `budget`; the hold keeps the body's share until it is dropped.
pub async fn read_body(request: Request, limit: usize, budget: &BodyBudget) -> Result<(Bytes, BodyHold), ApiError> {
    let (parts, body) = request.into_parts();
    read_parts(&parts.headers, body, limit, budget).await
}

/// Middleware for the routers served beside the API (MCP's streamable HTTP): their request
/// bodies are read under the same limit and budget as the API's, and keep their share
/// until the answer is made.
pub async fn hold_body(
    State((budget, limit)): State<(Arc<BodyBudget>, usize)>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    match read_parts(&parts.headers, body, limit, &budget).await {
        Ok((bytes, hold)) => {
            let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
            drop(hold);
            response
        }
        Err(error) => error.into_response(),
    }
}

/// Most bytes of a refused body read and thrown away so that its sender sees the 413.
const DRAIN_BYTES: u64 = 1024 * 1024 * 1024;

/// Longest a refused body is read and thrown away.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// Longest a refused body's sender may pause while the rest is thrown away.
const DRAIN_IDLE: std::time::Duration = std::time::Duration::from_secs(2);

/// A body over the limit is refused; unless its sender waits for `100 Continue` before
/// sending it, the rest is read and thrown away first (up to [`DRAIN_BYTES`] or
/// [`DRAIN_TIME`], and while it keeps coming, nothing kept): a server that answers and
/// closes while the client still sends makes the client see a reset instead of the 413
/// and its reason.
async fn refuse_too_large(headers: &HeaderMap, mut stream: axum::body::BodyDataStream, limit: usize) -> ApiError {
    let waits_to_send = headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"));
    if !waits_to_send {
        let drain = async {
            let mut read = 0u64;
            // A sender that stops sending is answered after a short wait, not kept waiting.
            while let Ok(Some(Ok(chunk))) = tokio::time::timeout(DRAIN_IDLE, stream.next()).await {
                read += chunk.len() as u64;
                if read > DRAIN_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
    }
    too_large(limit)
}

async fn read_parts(
    headers: &HeaderMap,
    incoming: Body,
    limit: usize,
    budget: &BodyBudget,
) -> Result<(Bytes, BodyHold), ApiError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(refuse_too_large(headers, incoming.into_data_stream(), limit).await);
    }
    let declared = declared.unwrap_or(0) as usize;
    let mut hold = BodyHold::default();
    budget.grow(&mut hold, declared)?;
    let mut body = BytesMut::with_capacity(declared);
    let mut stream = incoming.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", format!("reading the request body: {e}"))
        })?;
        let size = body.len() + chunk.len();
        if size > limit {
            // Nothing of it is kept while the rest is thrown away.
            drop((body, hold));
            return Err(refuse_too_large(headers, stream, limit).await);
        }
        let more = size.saturating_sub(hold.bytes());
        budget.grow(&mut hold, more)?;
        body.extend_from_slice(&chunk);
    }
    Ok((body.freeze(), hold))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Vec<u8>, declared: bool) -> Request {
        let mut builder = Request::builder().method("POST").uri("/v1/x");
        if declared {
            builder = builder.header(header::CONTENT_LENGTH, body.len());
        }
        builder.body(axum::body::Body::from(body)).unwrap()
    }

    fn chunked(chunks: Vec<&'static [u8]>) -> Request {
        let stream = futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))));
        Request::builder().method("POST").uri("/v1/x").body(axum::body::Body::from_stream(stream)).unwrap()
    }

    #[tokio::test]
    async fn bodies_hold_their_bytes_until_their_call_ends() {
        let budget = BodyBudget::new(100, 60);
        let (first, hold) = read_body(request(vec![1; 60], true), 60, &budget).await.unwrap();
        assert_eq!((first.len(), hold.bytes(), budget.held()), (60, 60, 60));

        // Past the budget: refused at once by its declared length, as 503 busy.
        let refused = read_body(request(vec![2; 41], true), 60, &budget).await.unwrap_err();
        assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.error.code, "busy");
        assert_eq!(budget.held(), 60, "a refused body holds nothing");
        // One that fits goes through beside it.
        let (_, small) = read_body(request(vec![3; 40], true), 60, &budget).await.unwrap();
        assert_eq!(budget.held(), 100);

        drop((hold, small));
        assert_eq!(budget.held(), 0);
        read_body(request(vec![2; 41], true), 60, &budget).await.unwrap();
    }

    #[tokio::test]
    async fn a_body_without_a_length_is_counted_as_it_arrives() {
        let budget = BodyBudget::new(10, 8);
        let (body, hold) = read_body(chunked(vec![b"abc", b"defg"]), 8, &budget).await.unwrap();
        assert_eq!((&body[..], hold.bytes()), (&b"abcdefg"[..], 7));
        // Past the budget half-way: refused, and what it held is given back.
        let refused = read_body(chunked(vec![b"ab", b"cd"]), 8, &budget).await.unwrap_err();
        assert_eq!(refused.error.code, "busy");
        assert_eq!(budget.held(), 7);
        // Past the limit: 413, whatever the budget.
        drop(hold);
        let refused = read_body(chunked(vec![b"abcde", b"fghij"]), 8, &budget).await.unwrap_err();
        assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn the_budget_takes_at_least_the_largest_body() {
        assert_eq!(BodyBudget::new(10, 64).total(), 64);
    }
}
