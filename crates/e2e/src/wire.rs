//! The raw path: bytes written exactly as given, bytes read back exactly as sent.
//!
//! Kept only for what an HTTP client must hide by design: the fault matrix checks that no body
//! follows a `204` or `304` on the wire, and hyper (rightly) ends those responses at their
//! head and never shows what comes after. Everything else goes through [`crate::client`].
//! There is no response parsing here: the caller looks at the bytes.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Writes `raw_request` as given and returns every byte received until the connection closed
/// (or was reset), or `timeout` passed.
///
/// # Errors
/// Connection or write failures, and read errors other than a reset or a timeout.
pub fn send_raw(addr: SocketAddr, raw_request: &[u8], timeout: Duration) -> io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    let deadline = Instant::now() + timeout;
    stream.write_all(raw_request)?;
    let mut received = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(e) => return Err(e),
        }
    }
    Ok(received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn returns_exactly_what_the_peer_sent() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut got = [0u8; 5];
            socket.read_exact(&mut got).unwrap();
            socket
                .write_all(b"HTTP/1.1 204 No Content\r\n\r\nextra")
                .unwrap();
            got
        });
        let bytes = send_raw(addr, b"hello", Duration::from_secs(5)).unwrap();
        assert_eq!(bytes, b"HTTP/1.1 204 No Content\r\n\r\nextra");
        assert_eq!(&server.join().unwrap(), b"hello");
    }
}
