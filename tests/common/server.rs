//! A `peer --role server` child driven byte by byte through the [`Transport`] that
//! `peerpipe::process::spawn_connected` returns, with the assertions on its replies that
//! `server_binary_serving.rs` and `server_binary_errors.rs` share. The client side is
//! hand-written from the specification, not the library's `Peer`: frames are built and parsed
//! by the helpers of `common`, and the library only moves the bytes.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use peerpipe::codec;
use peerpipe::error::Error;
use peerpipe::frame::{DEFAULT_MAX_FRAME_BYTES, Dtype, Kind};
use peerpipe::process::{Spawn, spawn_connected};
use peerpipe::transport::{Deadline, Transport, TransportKind};

use super::{RawFrame, TransportReader, client_hello, peer_exe, read_frame, read_on_thread, secs};

/// How long one read or write through the transport may wait for the server before the test
/// fails with a timeout (the server's own frame timeout is 10 s).
pub const IO_TIMEOUT: Duration = secs(20);

pub fn io_deadline() -> Deadline {
    Deadline::after(Some(IO_TIMEOUT))
}

/// A `peer --role server --transport KIND` child, connected by a transport of that kind, with
/// its stderr on a pipe.
pub struct Server {
    kind: TransportKind,
    child: Child,
    /// `None` once this side has closed both directions.
    pub transport: Option<Transport>,
    stderr: Option<JoinHandle<String>>,
}

impl Server {
    pub fn spawn(kind: TransportKind, handler: &str, extra: &[&str]) -> Server {
        let mut command = Command::new(peer_exe());
        command
            .args(["--role", "server", "--handler", handler, "--transport", kind.name()])
            .args(extra)
            .env("RUST_BACKTRACE", "1")
            .stderr(Stdio::piped());
        // spawn_connected sets stdin and stdout only: the stderr pipe asked for here stays.
        let (transport, mut child) =
            spawn_connected(command, &Spawn { transport: kind, ..Spawn::default() })
                .unwrap_or_else(|e| panic!("spawn peer --role server --transport {kind}: {e}"));
        assert_eq!(transport.kind(), kind);
        let stderr = child.stderr.take().expect("the server's stderr on a pipe");
        let stderr = read_on_thread(stderr);
        Server { kind, child, transport: Some(transport), stderr: Some(stderr) }
    }

    /// Spawns the server, reads its HELLO and sends a client HELLO.
    pub fn handshake(kind: TransportKind, handler: &str, extra: &[&str]) -> Server {
        let mut server = Server::spawn(kind, handler, extra);
        let hello = server.frame();
        assert_eq!(hello.header.kind, Kind::Hello);
        server.write(&client_hello(DEFAULT_MAX_FRAME_BYTES));
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn transport(&mut self) -> &mut Transport {
        self.transport.as_mut().expect("the transport is still open")
    }

    /// Writes all of `bytes`; the server must be reading.
    pub fn write(&mut self, bytes: &[u8]) {
        let kind = self.kind;
        if let Err(e) = self.transport().send_bytes(bytes, io_deadline()) {
            panic!("write {} bytes to the server over {kind}: {e}", bytes.len());
        }
    }

    /// Writes `bytes`, tolerating a server that has already stopped reading (it may reject a
    /// header and exit before the rest arrives).
    pub fn write_lossy(&mut self, bytes: &[u8]) {
        let kind = self.kind;
        match self.transport().send_bytes(bytes, io_deadline()) {
            Ok(()) | Err(Error::PeerClosed { .. }) => {}
            Err(e) => panic!("write to the server over {kind}: {e}"),
        }
    }

    /// Ends the client → server stream (half-close: the replies can still be read).
    pub fn shutdown_write(&mut self) {
        let kind = self.kind;
        if let Err(e) = self.transport().shutdown_write() {
            panic!("shut down the client → server direction of {kind}: {e}");
        }
    }

    /// Reads exactly `buf.len()` bytes, failing on end of stream.
    pub fn read_exact(&mut self, buf: &mut [u8]) {
        let kind = self.kind;
        match self.transport().recv_exact(buf, io_deadline()) {
            Ok(got) if got == buf.len() => {}
            Ok(got) => panic!("end of stream over {kind} after {got} of {} bytes", buf.len()),
            Err(e) => panic!("read from the server over {kind}: {e}"),
        }
    }

    /// Reads the next frame, failing on end of stream or a malformed frame.
    pub fn frame(&mut self) -> RawFrame {
        self.maybe_frame().expect("a frame from the server, found end of stream")
    }

    /// Reads the next frame, `None` at end of stream.
    pub fn maybe_frame(&mut self) -> Option<RawFrame> {
        let kind = self.kind;
        read_frame(&mut TransportReader(self.transport(), IO_TIMEOUT))
            .unwrap_or_else(|e| panic!("a well-formed frame from the server over {kind}: {e}"))
    }

    /// Everything the server writes until end of stream, as raw bytes.
    pub fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        TransportReader(self.transport(), IO_TIMEOUT)
            .read_to_end(&mut rest)
            .expect("read to end of stream");
        rest
    }

    /// Closes our side, waits for the server and returns its status and its stderr.
    pub fn finish(mut self) -> (ExitStatus, String) {
        self.transport = None;
        let status = self.child.wait().expect("wait for the server");
        let stderr = self.stderr.take().expect("stderr reader").join().expect("stderr reader");
        (status, stderr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only reached with a live child when a test failed: do not leave it behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Asserts the frame is an ERROR for `seq` whose message contains `fragment`.
pub fn assert_error_frame(frame: &RawFrame, seq: u64, fragment: &str) {
    assert_eq!(frame.header.kind, Kind::Error, "expected ERROR, got {:?}", frame.header);
    assert_eq!(frame.header.dtype, Dtype::Bytes);
    assert_eq!(frame.header.count, frame.payload.len() as u64);
    assert_eq!(frame.header.seq, seq, "ERROR seq; message {:?}", frame.text());
    assert!(frame.text().contains(fragment), "ERROR {:?} lacks {fragment:?}", frame.text());
}

pub fn f64_bytes(values: &[f64]) -> Vec<u8> {
    codec::encode_f64(values)
}

pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    codec::encode_f32(values)
}
