//! End-to-end tests of the SSRF-safe fetcher against loopback HTTP servers: refusals
//! must happen before any connection, limits must hold.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use paperchain_engine::fetch::{AddressPolicy, BlockReason, FetchError, FetchLimits, Fetched, SafeFetcher};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the test server answers to one request.
#[derive(Clone)]
enum Reply {
    /// Write these bytes (head and body) and close.
    Raw(Vec<u8>),
    /// Accept, read the request, never answer.
    Hang,
    /// A chunked 200 response of `count` chunks of `size` bytes each.
    Chunked { size: usize, count: usize },
}

/// A running test server.
struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl Server {
    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

type Route = dyn Fn(&str) -> Reply + Send + Sync;

/// Serve `route` on `bind` (port 0), counting accepted connections.
async fn serve(bind: SocketAddr, route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    let route: Arc<Route> = Arc::new(route);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let route = Arc::clone(&route);
            tokio::spawn(handle(stream, route));
        }
    });
    Server { addr, connections }
}

async fn serve_v4(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Server {
    serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), route).await
}

async fn handle(mut stream: TcpStream, route: Arc<Route>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    match route(&path) {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
        }
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Reply::Chunked { size, count } => {
            let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            if stream.write_all(head).await.is_err() {
                return;
            }
            let chunk = vec![b'x'; size];
            for _ in 0..count {
                let mut piece = format!("{size:x}\r\n").into_bytes();
                piece.extend_from_slice(&chunk);
                piece.extend_from_slice(b"\r\n");
                if stream.write_all(&piece).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let _ = stream.write_all(b"0\r\n\r\n").await;
        }
    }
    let _ = stream.shutdown().await;
}

fn ok(body: &[u8], extra_headers: &str) -> Reply {
    let mut bytes =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n{extra_headers}\r\n", body.len())
            .into_bytes();
    bytes.extend_from_slice(body);
    Reply::Raw(bytes)
}

fn redirect(location: &str) -> Reply {
    Reply::Raw(
        format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .into_bytes(),
    )
}

fn status(code: u16, reason: &str) -> Reply {
    Reply::Raw(format!("HTTP/1.1 {code} {reason}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno").into_bytes())
}

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn loopback_fetcher(limits: FetchLimits) -> SafeFetcher {
    SafeFetcher::new(limits, AddressPolicy::allowing([LOCALHOST]))
}

/// Give a (wrongly) started connection time to reach the server before counting.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

#[track_caller]
fn assert_blocked(result: Result<Fetched, FetchError>, class: BlockReason) {
    match result {
        Err(FetchError::Blocked(reason)) => assert_eq!(reason.class(), &class, "{reason}"),
        other => panic!("expected Blocked({class:?}), got {other:?}"),
    }
}

#[tokio::test]
async fn public_only_refuses_loopback_literal_without_connecting() {
    let server = serve_v4(|_| ok(b"secret", "")).await;
    let fetcher = SafeFetcher::new(FetchLimits::default(), AddressPolicy::public_only());
    let result = fetcher.fetch(&server.url("/")).await;
    let message = match &result {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    assert_blocked(result, BlockReason::Loopback);
    assert_eq!(message, "refused target: 127.0.0.1 is a loopback address");
    settle().await;
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn public_only_refuses_localhost_names_without_connecting() {
    let server = serve_v4(|_| ok(b"secret", "")).await;
    let fetcher = SafeFetcher::new(FetchLimits::default(), AddressPolicy::public_only());
    for host in ["localhost", "LOCALHOST.", "a.localhost", "vm", "box.internal"] {
        let url = format!("http://{host}:{}/", server.port());
        let result = fetcher.fetch(&url).await;
        assert!(
            matches!(result, Err(FetchError::Blocked(BlockReason::LocalName(_) | BlockReason::SingleLabelName(_)))),
            "{url}: {result:?}"
        );
    }
    // Alternative IPv4 spellings normalise to 127.0.0.1 and are refused.
    for host in ["2130706433", "0177.0.0.1", "0x7f.1", "127.1"] {
        let url = format!("http://{host}:{}/", server.port());
        assert_blocked(fetcher.fetch(&url).await, BlockReason::Loopback);
    }
    // Even the test policy never exempts names.
    let loopback = loopback_fetcher(FetchLimits::default());
    let url = format!("http://localhost:{}/", server.port());
    assert!(matches!(loopback.fetch(&url).await, Err(FetchError::Blocked(BlockReason::LocalName(_)))));
    settle().await;
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn bad_schemes_and_userinfo_are_invalid() {
    let server = serve_v4(|_| ok(b"secret", "")).await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    for url in [
        "file:///etc/passwd".to_string(),
        format!("ftp://127.0.0.1:{}/", server.port()),
        format!("http://user:pass@127.0.0.1:{}/", server.port()),
        format!("http://user@127.0.0.1:{}/", server.port()),
        "not a url".to_string(),
    ] {
        assert!(matches!(fetcher.fetch(&url).await, Err(FetchError::InvalidUrl(_))), "{url}");
    }
    settle().await;
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn allowed_loopback_returns_the_body_exactly() {
    let body: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let served = body.clone();
    let server = serve_v4(move |path| match path {
        "/doc" => {
            ok(&served, "Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"paper.pdf\"\r\n")
        }
        "/files/report%20v2.pdf" => ok(b"%PDF-1.7", ""),
        _ => status(404, "Not Found"),
    })
    .await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    let fetched = fetcher.fetch(&server.url("/doc")).await.unwrap();
    assert_eq!(fetched.bytes, body);
    assert_eq!(fetched.content_type.as_deref(), Some("application/pdf"));
    assert_eq!(fetched.filename.as_deref(), Some("paper.pdf"));
    assert_eq!(fetched.final_url.as_str(), server.url("/doc"));

    let fetched = fetcher.fetch(&server.url("/files/report%20v2.pdf")).await.unwrap();
    assert_eq!(fetched.bytes, b"%PDF-1.7");
    assert_eq!(fetched.content_type, None);
    assert_eq!(fetched.filename.as_deref(), Some("report v2.pdf"));
}

#[tokio::test]
async fn redirect_to_other_loopback_address_is_refused_without_connecting() {
    // 127.0.0.2 is loopback on Linux; binding it must work for this test to mean anything.
    let second = serve(SocketAddr::from(([127, 0, 0, 2], 0)), |_| ok(b"secret", "")).await;
    let target = second.url("/");
    let first = serve_v4(move |_| redirect(&target)).await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    let result = fetcher.fetch(&first.url("/")).await;
    assert_blocked(result, BlockReason::Loopback);
    settle().await;
    assert_eq!(first.connections(), 1);
    assert_eq!(second.connections(), 0);
}

#[tokio::test]
async fn redirect_to_ipv6_loopback_is_refused() {
    // If IPv6 loopback is available, also prove nothing connects to it.
    let v6 = match TcpListener::bind("[::1]:0").await {
        Ok(probe) => {
            drop(probe);
            Some(serve("[::1]:0".parse().unwrap(), |_| ok(b"secret", "")).await)
        }
        Err(_) => None,
    };
    let port = v6.as_ref().map_or(9, Server::port);
    let target = format!("http://[::1]:{port}/");
    let mapped = format!("http://[::ffff:127.0.0.1]:{port}/");
    let first = serve_v4(move |path| match path {
        "/mapped" => redirect(&mapped),
        _ => redirect(&target),
    })
    .await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    assert_blocked(fetcher.fetch(&first.url("/")).await, BlockReason::Loopback);
    match fetcher.fetch(&first.url("/mapped")).await {
        Err(FetchError::Blocked(reason)) => assert!(matches!(reason.class(), BlockReason::Embedded { .. }), "{reason}"),
        other => panic!("expected Blocked, got {other:?}"),
    }
    settle().await;
    if let Some(server) = v6 {
        assert_eq!(server.connections(), 0);
    }
}

#[tokio::test]
async fn redirect_to_other_schemes_is_invalid() {
    let server = serve_v4(|path| match path {
        "/file" => redirect("file:///etc/passwd"),
        "/ftp" => redirect("ftp://127.0.0.1/pub"),
        "/userinfo" => redirect("http://user:pw@127.0.0.1/"),
        _ => ok(b"fine", ""),
    })
    .await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    for path in ["/file", "/ftp", "/userinfo"] {
        let result = fetcher.fetch(&server.url(path)).await;
        assert!(matches!(result, Err(FetchError::InvalidUrl(_))), "{path}: {result:?}");
    }
}

/// `/chain/N` redirects (relative, then absolute, alternating) down to `/chain/0`.
async fn chain_server() -> Server {
    let own = Arc::new(std::sync::OnceLock::<SocketAddr>::new());
    let own_in_route = Arc::clone(&own);
    let server = serve_v4(move |path| {
        let n: u32 = path.strip_prefix("/chain/").and_then(|n| n.parse().ok()).unwrap_or(0);
        match n {
            0 => ok(b"end of chain", ""),
            n if n % 2 == 0 => redirect(&format!("{}", n - 1)),
            n => match own_in_route.get() {
                Some(addr) => redirect(&format!("http://{addr}/chain/{}", n - 1)),
                None => status(500, "Not Ready"),
            },
        }
    })
    .await;
    let _ = own.set(server.addr);
    server
}

#[tokio::test]
async fn five_redirects_are_followed_six_are_too_many() {
    let server = chain_server().await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    let fetched = fetcher.fetch(&server.url("/chain/5")).await.unwrap();
    assert_eq!(fetched.bytes, b"end of chain");
    assert_eq!(fetched.final_url.as_str(), server.url("/chain/0"));
    assert_eq!(server.connections(), 6);

    let result = fetcher.fetch(&server.url("/chain/6")).await;
    assert!(matches!(result, Err(FetchError::TooManyRedirects { limit: 5 })), "{result:?}");

    let strict = loopback_fetcher(FetchLimits { max_redirects: 0, ..FetchLimits::default() });
    assert!(matches!(strict.fetch(&server.url("/chain/1")).await, Err(FetchError::TooManyRedirects { limit: 0 })));
}

#[tokio::test]
async fn bodies_over_the_limit_are_too_large() {
    let server = serve_v4(|path| match path {
        "/exact" => ok(&[b'a'; 1024], ""),
        "/declared" => ok(&[b'a'; 1025], ""),
        "/chunked" => Reply::Chunked { size: 100, count: 1000 },
        "/chunked-small" => Reply::Chunked { size: 100, count: 10 },
        "/no-length" => {
            let mut bytes = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
            bytes.extend_from_slice(&[b'z'; 5000]);
            Reply::Raw(bytes)
        }
        "/lying-length" => {
            // Declares a small length: the client must still never return more than that.
            let mut bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n".to_vec();
            bytes.extend_from_slice(&[b'z'; 5000]);
            Reply::Raw(bytes)
        }
        _ => status(404, "Not Found"),
    })
    .await;
    let fetcher = loopback_fetcher(FetchLimits { max_bytes: 1024, ..FetchLimits::default() });
    assert_eq!(fetcher.fetch(&server.url("/exact")).await.unwrap().bytes.len(), 1024);
    assert_eq!(fetcher.fetch(&server.url("/chunked-small")).await.unwrap().bytes.len(), 1000);
    for path in ["/declared", "/chunked", "/no-length"] {
        let result = fetcher.fetch(&server.url(path)).await;
        assert!(matches!(result, Err(FetchError::TooLarge { limit: 1024 })), "{path}: {result:?}");
    }
    let lying = fetcher.fetch(&server.url("/lying-length")).await.unwrap();
    assert_eq!(lying.bytes.len(), 10);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = serve_v4(|_| Reply::Hang).await;
    let fetcher = loopback_fetcher(FetchLimits { timeout: Duration::from_secs(1), ..FetchLimits::default() });
    let started = Instant::now();
    let result = fetcher.fetch(&server.url("/")).await;
    let elapsed = started.elapsed();
    assert!(matches!(result, Err(FetchError::Timeout)), "{result:?}");
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn the_time_limit_covers_the_whole_redirect_chain() {
    // A redirect whose target never answers: the budget spans the whole chain.
    let server = serve_v4(|path| match path {
        "/slow/0" => Reply::Hang,
        _ => redirect("/slow/0"),
    })
    .await;
    let fetcher = loopback_fetcher(FetchLimits { timeout: Duration::from_secs(1), ..FetchLimits::default() });
    let started = Instant::now();
    let result = fetcher.fetch(&server.url("/slow/1")).await;
    assert!(matches!(result, Err(FetchError::Timeout)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn non_success_status_is_named() {
    let server = serve_v4(|path| match path {
        "/gone" => status(410, "Gone"),
        "/broken" => status(500, "Internal Server Error"),
        "/no-location" => status(302, "Found"),
        _ => status(404, "Not Found"),
    })
    .await;
    let fetcher = loopback_fetcher(FetchLimits::default());
    let err = fetcher.fetch(&server.url("/missing")).await.unwrap_err();
    assert!(matches!(err, FetchError::Status(404)), "{err:?}");
    assert!(err.to_string().contains("404"), "{err}");
    assert!(matches!(fetcher.fetch(&server.url("/gone")).await, Err(FetchError::Status(410))));
    assert!(matches!(fetcher.fetch(&server.url("/broken")).await, Err(FetchError::Status(500))));
    assert!(matches!(fetcher.fetch(&server.url("/no-location")).await, Err(FetchError::Status(302))));
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    // Bind then drop to get a port with (almost certainly) nothing listening.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let fetcher = loopback_fetcher(FetchLimits::default());
    let result = fetcher.fetch(&format!("http://127.0.0.1:{port}/?token=s3cret")).await;
    match result {
        Err(FetchError::Network(message)) => {
            assert!(!message.contains("s3cret"), "{message}");
        }
        other => panic!("expected Network, got {other:?}"),
    }
}
