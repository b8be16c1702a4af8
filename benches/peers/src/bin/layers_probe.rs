//! Where a 500 f64 `shm-ring` round trip goes, layer by layer: the same ring (spinning), with
//! one more layer of peerpipe on top each time, in one process, client and server on two
//! pinned threads (as `--pin split`), the layers interleaved in a fresh random order per round.
//!
//! ```sh
//! cd benches/peers && cargo run --release --bin layers_probe -- [ROUNDS]   # default 5
//! ```
//!
//! Layers (each line's figure is the p50 of 20,000 round trips, and its ratio to the bare ring
//! of the same round):
//! - `bare ring`: `ShmLink::try_write` / `try_read` of the 4000 payload bytes, nothing else;
//! - `header + payload`: the same, with a 32-byte DATA header ahead of the payload in the same
//!   write (two `IoSlice`s) and read (two `IoSliceMut`s on the client, one buffer on the
//!   server), its bytes compared with the expected ones: what any framed exchange costs over
//!   this ring, without `Transport`, `Peer` or the serve loop;
//! - `frames`: `Transport::send_frame` / `recv_frame` on both sides (header, padding, the
//!   guessed single read, the header check of the guess) — no `Peer`, no serve loop, no clock;
//! - `Peer + plain server`: `Peer::call_f64` (its checks and its timing) against the plain
//!   frame echo of `frames`;
//! - `frames + serve`: plain frames against `server::serve` with the echo-raw handler (its
//!   checks and `server_ns`);
//! - `Peer + serve`: both, which is what `peer_pingpong` measures across two processes.
//!
//! Then the CPU cost of the same layers with no cross-core traffic at all: one thread plays
//! both sides of 200,000 round trips (request written, read, echoed, reply read).

use std::io::{IoSlice, IoSliceMut};
use std::thread;
use std::time::Instant;

use peerpipe::frame::{Dtype, HEADER_LEN, Header, Hello, Kind};
use peerpipe::handlers::EchoRaw;
use peerpipe::server::{ServeOptions, serve};
use peerpipe::transport::{
    DEFAULT_SHM_CAPACITY, Deadline, Link, Received, ShmLink, Transport, TransportKind, Wait,
};
use peerpipe::{Options, Peer, Values, ValuesMut};
use peerpipe_cli::report::cpu::Pinned;
use peerpipe_peers::{BoxResult, initial_values, pin_thread_to, ring_recv, ring_send, update};

const ELEMENTS: usize = 500;
const BYTES: usize = ELEMENTS * 8;
const WARMUP: usize = 1000;
const ITERATIONS: usize = 20_000;
const ONE_THREAD_ITERATIONS: usize = 200_000;

/// A server thread's work, on the second CPU.
type ServerSide = Box<dyn FnOnce() -> BoxResult<()> + Send>;

/// How the client connects, on the first CPU.
type ClientSide = Box<dyn FnOnce() -> BoxResult<Box<dyn Client>>>;

/// The client's side of the layer: one round trip of `values` into `reply`.
trait Client {
    fn round_trip(&mut self, values: &[f64], reply: &mut [f64]) -> BoxResult<()>;
    fn finish(self: Box<Self>) -> BoxResult<()>;
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Layer {
    Bare,
    HeaderPayload,
    Frames,
    PeerPlain,
    FramesServe,
    PeerServe,
}

const LAYERS: [Layer; 6] = [
    Layer::Bare,
    Layer::HeaderPayload,
    Layer::Frames,
    Layer::PeerPlain,
    Layer::FramesServe,
    Layer::PeerServe,
];

impl Layer {
    fn name(self) -> &'static str {
        match self {
            Layer::Bare => "bare ring",
            Layer::HeaderPayload => "header + payload",
            Layer::Frames => "frames",
            Layer::PeerPlain => "Peer + plain server",
            Layer::FramesServe => "frames + serve",
            Layer::PeerServe => "Peer + serve",
        }
    }
}

struct BareClient(ShmLink);

impl Client for BareClient {
    fn round_trip(&mut self, values: &[f64], reply: &mut [f64]) -> BoxResult<()> {
        ring_send(&mut self.0, bytemuck::cast_slice(values))?;
        ring_recv(&mut self.0, bytemuck::cast_slice_mut(reply))
    }

    fn finish(self: Box<Self>) -> BoxResult<()> {
        Ok(())
    }
}

/// A header and the payload in one ring write, and back, with no layer of peerpipe above the
/// ring; the echo's header must come back unchanged.
struct HeaderPayloadClient(ShmLink);

/// The DATA header of every request of [`HeaderPayloadClient`].
fn data_header() -> [u8; HEADER_LEN] {
    Header::data(1, Dtype::F64, ELEMENTS as u64).to_bytes()
}

impl Client for HeaderPayloadClient {
    fn round_trip(&mut self, values: &[f64], reply: &mut [f64]) -> BoxResult<()> {
        let header = data_header();
        ring_send_parts(&mut self.0, &header, bytemuck::cast_slice(values))?;
        let mut echoed = [0u8; HEADER_LEN];
        ring_recv_parts(&mut self.0, &mut echoed, bytemuck::cast_slice_mut(reply))?;
        if echoed != header {
            return Err("the echoed header differs from the request's".into());
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> BoxResult<()> {
        Ok(())
    }
}

/// Writes `header` and `payload` with one ring write where they fit (else as they fit). The
/// bare ring's `ring_send` keeps its one-slice write: an extra slice, even an empty one, costs
/// measurably (docs/experiments/ring-latency.md), and that layer is the floor.
fn ring_send_parts(link: &mut ShmLink, header: &[u8], payload: &[u8]) -> BoxResult<()> {
    let total = header.len() + payload.len();
    let mut done = 0;
    while done < total {
        let parts = if done < header.len() {
            [IoSlice::new(&header[done..]), IoSlice::new(payload)]
        } else {
            [IoSlice::new(&[]), IoSlice::new(&payload[done - header.len()..])]
        };
        match link.try_write(&parts)? {
            Some(n) => done += n,
            None => std::hint::spin_loop(),
        }
    }
    Ok(())
}

/// Reads exactly `header.len() + payload.len()` bytes into the two, spinning while none have
/// arrived.
fn ring_recv_parts(link: &mut ShmLink, header: &mut [u8], payload: &mut [u8]) -> BoxResult<()> {
    let total = header.len() + payload.len();
    let mut done = 0;
    while done < total {
        let got = if done < header.len() {
            let (head, body) = (&mut header[done..], &mut *payload);
            link.try_read(&mut [IoSliceMut::new(head), IoSliceMut::new(body)])?
        } else {
            link.try_read(&mut [IoSliceMut::new(&mut payload[done - header.len()..])])?
        };
        match got {
            Some(0) => return Err("the other side closed the ring".into()),
            Some(n) => done += n,
            None => std::hint::spin_loop(),
        }
    }
    Ok(())
}

/// Plain frames from the client's side; `seq` counts its requests.
struct FramesClient {
    transport: Transport,
    seq: u64,
}

impl FramesClient {
    /// Reads the server's HELLO and answers with the client's (as `Peer::connect` does).
    fn connect(mut transport: Transport) -> BoxResult<FramesClient> {
        read_hello(&mut transport)?;
        let hello =
            Hello { max_frame_bytes: DEFAULT_MAX_FRAME_BYTES, ..Hello::default() }.to_payload();
        let header = Header::control(Kind::Hello, 0, hello.len() as u64).to_bytes();
        transport.send_frame(&header, &hello, Deadline::NEVER)?;
        Ok(FramesClient { transport, seq: 1 })
    }
}

const DEFAULT_MAX_FRAME_BYTES: u64 = 64 << 20;

impl Client for FramesClient {
    fn round_trip(&mut self, values: &[f64], reply: &mut [f64]) -> BoxResult<()> {
        let header = Header::data(self.seq, Dtype::F64, values.len() as u64).to_bytes();
        self.seq += 1;
        self.transport.send_frame(&header, bytemuck::cast_slice(values), Deadline::NEVER)?;
        match self.transport.recv_frame(bytemuck::cast_slice_mut(reply), Deadline::NEVER)? {
            Received::Whole(_) => Ok(()),
            other => Err(format!("not the whole reply: {other:?}").into()),
        }
    }

    fn finish(mut self: Box<Self>) -> BoxResult<()> {
        let bye = Header::control(Kind::Bye, self.seq, 0).to_bytes();
        self.transport.send_frame(&bye, &[], Deadline::NEVER)?;
        self.transport.recv_header(Deadline::NEVER)?;
        Ok(())
    }
}

struct PeerClient(Peer);

impl Client for PeerClient {
    fn round_trip(&mut self, values: &[f64], reply: &mut [f64]) -> BoxResult<()> {
        self.0.call_f64(values, reply)?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> BoxResult<()> {
        self.0.close()?;
        Ok(())
    }
}

/// Sends a server's HELLO (handler echo-raw).
fn send_server_hello(transport: &mut Transport) -> BoxResult<()> {
    let hello = Hello::server(DEFAULT_MAX_FRAME_BYTES, "echo-raw").to_payload();
    let header = Header::control(Kind::Hello, 0, hello.len() as u64).to_bytes();
    Ok(transport.send_frame(&header, &hello, Deadline::NEVER)?)
}

/// Reads the other side's HELLO frame and checks that it is one.
fn read_hello(transport: &mut Transport) -> BoxResult<()> {
    let raw = transport.recv_header(Deadline::NEVER)?.ok_or("no HELLO")?;
    let header = Header::parse(&raw, u64::MAX)?;
    if header.kind != Kind::Hello {
        return Err(format!("expected HELLO, found {:?}", header.kind).into());
    }
    let mut payload = vec![0u8; header.payload_bytes()? as usize];
    Ok(transport.recv_payload(&mut payload, Deadline::NEVER)?)
}

/// The plain server: its HELLO, then every DATA frame echoed as it came, until BYE.
fn plain_server(transport: &mut Transport) -> BoxResult<()> {
    send_server_hello(transport)?;
    read_hello(transport)?;
    let mut frame = vec![0u8; HEADER_LEN + BYTES];
    loop {
        match transport.recv_frame_contiguous(&mut frame, BYTES, Deadline::NEVER)? {
            Received::Whole(raw) => {
                transport.send_frame(&raw, &frame[HEADER_LEN..], Deadline::NEVER)?
            }
            Received::Header(raw) => {
                let header = Header::parse(&raw, u64::MAX)?;
                if header.kind != Kind::Bye {
                    return Err(format!("unexpected {:?}", header.kind).into());
                }
                let bye = Header::control(Kind::Bye, header.seq, 0).to_bytes();
                transport.send_frame(&bye, &[], Deadline::NEVER)?;
                return Ok(());
            }
            other => return Err(format!("unexpected {other:?}").into()),
        }
    }
}

fn serve_echo_raw(transport: &mut Transport) -> BoxResult<()> {
    serve(transport, &mut EchoRaw, &ServeOptions::default())?;
    Ok(())
}

/// The two sides of `layer`: a server to run on the second CPU, and the client.
fn sides(layer: Layer) -> BoxResult<(ServerSide, ClientSide)> {
    let rounds = WARMUP + ITERATIONS;
    if layer == Layer::Bare {
        let (client, mut server) = ShmLink::pair(TransportKind::ShmRing, DEFAULT_SHM_CAPACITY)?;
        let echo: ServerSide = Box::new(move || {
            let mut buffer = vec![0u8; BYTES];
            for _ in 0..rounds {
                ring_recv(&mut server, &mut buffer)?;
                ring_send(&mut server, &buffer)?;
            }
            Ok(())
        });
        return Ok((echo, Box::new(move || Ok(Box::new(BareClient(client)) as Box<dyn Client>))));
    }
    if layer == Layer::HeaderPayload {
        let (client, mut server) = ShmLink::pair(TransportKind::ShmRing, DEFAULT_SHM_CAPACITY)?;
        let echo: ServerSide = Box::new(move || {
            let expected = data_header();
            let mut frame = vec![0u8; HEADER_LEN + BYTES];
            for _ in 0..rounds {
                ring_recv(&mut server, &mut frame)?;
                let (header, payload) = frame.split_at(HEADER_LEN);
                if header != expected {
                    return Err("the request's header is not the one sent".into());
                }
                ring_send_parts(&mut server, header, payload)?;
            }
            Ok(())
        });
        let connect: ClientSide =
            Box::new(move || Ok(Box::new(HeaderPayloadClient(client)) as Box<dyn Client>));
        return Ok((echo, connect));
    }
    let (client, mut server) = Transport::pair(TransportKind::ShmRing, Wait::Spin)?;
    let plain = matches!(layer, Layer::Frames | Layer::PeerPlain);
    let echo: ServerSide =
        Box::new(
            move || {
                if plain { plain_server(&mut server) } else { serve_echo_raw(&mut server) }
            },
        );
    let peer_client = matches!(layer, Layer::PeerPlain | Layer::PeerServe);
    let connect = Box::new(move || -> BoxResult<Box<dyn Client>> {
        if peer_client {
            let options = Options {
                transport: TransportKind::ShmRing,
                wait: Wait::Spin,
                ..Options::default()
            };
            Ok(Box::new(PeerClient(Peer::connect(client, options)?)))
        } else {
            Ok(Box::new(FramesClient::connect(client)?))
        }
    });
    Ok((echo, connect))
}

/// p50 of one layer's round trips, the client on the first CPU and the server on the second.
fn measure(layer: Layer) -> BoxResult<u64> {
    let (echo, connect) = sides(layer)?;
    let server = thread::spawn(move || -> Result<(), String> {
        pin_thread_to(1).map_err(|e| e.to_string())?;
        echo().map_err(|e| e.to_string())
    });
    // Pinned while it measures (the server thread took its CPU from the whole set).
    let _pinned = Pinned::to_first_allowed_cpu()?;
    let mut client = connect()?;
    let mut values = initial_values(ELEMENTS);
    let mut reply = vec![0.0f64; ELEMENTS];
    let mut samples = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        update(&mut values, i);
        let start = Instant::now();
        client.round_trip(&values, &mut reply)?;
        let ns = start.elapsed().as_nanos() as u64;
        if reply[i % ELEMENTS].to_bits() != values[i % ELEMENTS].to_bits() {
            return Err(format!("{}: round trip {i} echoed a stale array", layer.name()).into());
        }
        if i >= WARMUP {
            samples.push(ns);
        }
    }
    client.finish()?;
    server.join().map_err(|_| "the server thread panicked")??;
    samples.sort_unstable();
    Ok(samples[samples.len() / 2])
}

/// Nanoseconds per round trip with one thread playing both sides, for the bare ring, frames,
/// and `Peer` against frames written by hand.
fn one_thread() -> BoxResult<[f64; 3]> {
    let _pinned = Pinned::to_first_allowed_cpu()?;
    let values = initial_values(ELEMENTS);
    let mut reply = vec![0.0f64; ELEMENTS];
    let n = ONE_THREAD_ITERATIONS;
    let (mut client, mut server) = ShmLink::pair(TransportKind::ShmRing, DEFAULT_SHM_CAPACITY)?;
    let mut buffer = vec![0u8; BYTES];
    let start = Instant::now();
    for _ in 0..n {
        ring_send(&mut client, bytemuck::cast_slice(&values))?;
        ring_recv(&mut server, &mut buffer)?;
        ring_send(&mut server, &buffer)?;
        ring_recv(&mut client, bytemuck::cast_slice_mut(&mut reply))?;
    }
    let bare = start.elapsed().as_nanos() as f64 / n as f64;

    let (client, mut server) = Transport::pair(TransportKind::ShmRing, Wait::Spin)?;
    send_server_hello(&mut server)?;
    let mut frames = FramesClient::connect(client)?;
    read_hello(&mut server)?;
    let mut frame = vec![0u8; HEADER_LEN + BYTES];
    let mut echo = |server: &mut Transport| -> BoxResult<()> {
        match server.recv_frame_contiguous(&mut frame, BYTES, Deadline::NEVER)? {
            Received::Whole(raw) => {
                Ok(server.send_frame(&raw, &frame[HEADER_LEN..], Deadline::NEVER)?)
            }
            other => Err(format!("unexpected {other:?}").into()),
        }
    };
    let start = Instant::now();
    for _ in 0..n {
        let header = Header::data(frames.seq, Dtype::F64, ELEMENTS as u64).to_bytes();
        frames.seq += 1;
        frames.transport.send_frame(&header, bytemuck::cast_slice(&values), Deadline::NEVER)?;
        echo(&mut server)?;
        frames.transport.recv_frame(bytemuck::cast_slice_mut(&mut reply), Deadline::NEVER)?;
    }
    let framed = start.elapsed().as_nanos() as f64 / n as f64;

    // Peer::send, the server's step, Peer::recv: its own checks and clock reads on top.
    let (client, mut server2) = Transport::pair(TransportKind::ShmRing, Wait::Spin)?;
    send_server_hello(&mut server2)?;
    let options =
        Options { transport: TransportKind::ShmRing, wait: Wait::Spin, ..Options::default() };
    let mut peer = Peer::connect(client, options)?;
    read_hello(&mut server2)?;
    let start = Instant::now();
    for _ in 0..n {
        peer.send(Values::F64(&values))?;
        echo(&mut server2)?;
        peer.recv(ValuesMut::F64(&mut reply))?;
    }
    let with_peer = start.elapsed().as_nanos() as f64 / n as f64;
    // No server thread will say BYE back: close the ends instead of waiting for it.
    drop(server2);
    let _ = peer.close();
    Ok([bare, framed, with_peer])
}

fn main() -> BoxResult<()> {
    let rounds: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|_| format!("ROUNDS: not a count: {arg:?}"))?,
        None => 5,
    };
    let mut seed = u64::from(std::process::id()) | 1;
    let mut order = LAYERS;
    for round in 1..=rounds {
        // A fresh random order per round (xorshift), so a slow spell hits every layer alike.
        for k in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(k, (seed % (k as u64 + 1)) as usize);
        }
        let mut p50 = [0u64; LAYERS.len()];
        for layer in order {
            let at = LAYERS.iter().position(|&l| l == layer).expect("a layer of LAYERS");
            p50[at] = measure(layer)?;
        }
        let line: Vec<String> = LAYERS
            .iter()
            .zip(p50)
            .map(|(layer, ns)| {
                format!("{} {ns} ns ({:.2}x)", layer.name(), ns as f64 / p50[0] as f64)
            })
            .collect();
        println!("round {round}: {}", line.join(", "));
    }
    let [bare, framed, with_peer] = one_thread()?;
    println!(
        "one thread, both sides: bare ring {bare:.0} ns, frames {framed:.0} ns (+{:.0}), \
         Peer client on frames {with_peer:.0} ns (+{:.0})",
        framed - bare,
        with_peer - framed
    );
    Ok(())
}
