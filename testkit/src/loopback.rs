//! What the tests' stand-in HTTP servers (fake nodes, replaying upstreams, gateways that
//! misbehave) share: reading one HTTP/1.1 request, writing one answer, a port where
//! nothing listens and a server that never answers.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// One HTTP/1.1 request as it was read.
pub struct Request {
    /// The request line and headers as sent, without the blank line that ends them.
    pub head: String,
    /// The body (Content-Length framed; empty without one).
    pub body: Vec<u8>,
}

impl Request {
    /// The request target of the request line (`/info`).
    pub fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("/")
    }
}

/// Reads one HTTP/1.1 request (Content-Length framed); None when the peer closes first.
pub async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).into_owned();
            let length: usize = head
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().to_string()))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let n = socket.read(&mut buf).await.ok()?;
                if n == 0 {
                    return None;
                }
                data.extend_from_slice(&buf[..n]);
            }
            return Some(Request { head, body: data[end + 4..end + 4 + length].to_vec() });
        }
    }
}

/// Reads one HTTP/1.1 request (Content-Length framed) and answers its body; None when
/// the peer closes first.
pub async fn read_request_body(socket: &mut TcpStream) -> Option<Vec<u8>> {
    read_request(socket).await.map(|request| request.body)
}

/// Writes one answer with `headers` besides Content-Length and `Connection: close`, then
/// shuts the connection down. Write errors are ignored: the peer may have gone.
pub async fn write_response(socket: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body).await;
    let _ = socket.shutdown().await;
}

/// A loopback address with nothing listening (connections are refused at once).
pub async fn closed_port() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

/// `http://127.0.0.1:<port>/` with nothing listening.
pub async fn closed_port_url() -> String {
    format!("http://{}/", closed_port().await)
}

/// A loopback server that accepts connections and never answers: its URL
/// (`http://127.0.0.1:<port>/`) and its task (dropping the handle leaves it running).
pub async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (url, task)
}

/// Serves each file at `/<name>` on a loopback port with its media type; anything else is
/// 404. Answers the base URL (`http://127.0.0.1:<port>`).
pub async fn serve_files(files: std::collections::HashMap<String, (&'static str, Vec<u8>)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let files = std::sync::Arc::new(files);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let files = std::sync::Arc::clone(&files);
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else { return };
                match files.get(request.path().trim_start_matches('/')) {
                    Some((media_type, body)) => {
                        write_response(&mut socket, 200, &[("Content-Type", media_type.to_string())], body).await;
                    }
                    None => write_response(&mut socket, 404, &[], b"not here").await,
                }
            });
        }
    });
    format!("http://{addr}")
}

/// An answer of [`counting_server`]: status, headers, body.
pub type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

/// A plain-thread HTTP server on `ip` (any loopback address, `127.0.0.2` standing for a
/// private one) answering each request path with what `answer` gives, and counting the
/// connections it gets: a target that must never be reached shows 0. Answers the base URL.
pub fn counting_server(
    ip: &str,
    answer: fn(&str) -> Answer,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let read = stream.read(&mut request).unwrap_or(0);
            let text = String::from_utf8_lossy(&request[..read]);
            let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, headers, body) = answer(&path);
            let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (base, hits)
}
