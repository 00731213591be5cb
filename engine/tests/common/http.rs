//! What the tests' stand-in servers (fake nodes, replaying upstreams) share.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads one HTTP/1.1 request (Content-Length framed) and answers its body; None when
/// the peer closes first.
pub async fn read_request_body(socket: &mut TcpStream) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let n = socket.read(&mut buf).await.ok()?;
                if n == 0 {
                    return None;
                }
                data.extend_from_slice(&buf[..n]);
            }
            return Some(data[end + 4..end + 4 + length].to_vec());
        }
    }
}
