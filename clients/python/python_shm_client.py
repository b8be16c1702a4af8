#!/usr/bin/env python3
"""A peerpipe client in plain Python over the shared-memory ring (`shm-ring`).

Written from docs/PROTOCOL.md alone (section numbers below, like "§13", refer
to it), using only the standard library (ctypes for the futex system call and
for word-sized loads and stores on the shared mapping). Linux on x86-64 only:
memfd, futex and the memory-ordering shortcuts below are specific to it.

    python3 python_shm_client.py [PEER]          # PEER defaults to target/release/peer
    python3 python_shm_client.py --peer PEER [--capacity BYTES] [--no-rewind]

What it does (§13 "Hand-over"): creates a memfd, sizes it with ftruncate, maps
it MAP_SHARED, fills the 128-byte region header, and starts
`PEER --role server --handler echo --transport shm-ring` with the memfd as its
stdin and a pipe as its stdout. The pipe carries no bytes; we keep its read end
open and poll it for POLLHUP to notice the server's death. Then the frames of
§2-§7 go through the two rings: HELLO exchange, DATA round trips (f64 values
including NaNs with payloads, -0.0, subnormals and infinities, checked bit for
bit), a pipelined pair, requests larger than the ring (so both sides must wait
for space and wake each other), then BYE, end of stream, the closing flags, and
the server's exit status 0.

Prints one line starting "ok:" and exits 0 on success; prints what was expected
and what was found and exits 1 otherwise.

Writing this client from an earlier §13 found gaps in it, since fixed there (the
rewind's accounting and check order, who may store into a sleeping word, the
fences, the end-of-stream reload, the closing order); the comments at each place
say which rule of §13 the code follows.
"""

import argparse
import collections
import ctypes
import mmap
import os
import platform
import select
import struct
import subprocess
import sys
import time

# --- wire format constants (§2, §3, Constants), as in python_client.py ----------

HEADER = struct.Struct("<4sBBBBQQQ")  # magic version kind dtype flags seq count aux
HEADER_LEN = 32
MAGIC = b"PEER"
VERSION = 1

HELLO, DATA, ERROR, BYE = 1, 2, 3, 4
KIND_NAMES = {HELLO: "HELLO", DATA: "DATA", ERROR: "ERROR", BYE: "BYE"}

BYTES, F32, F64 = 0, 1, 2
DTYPE_NAMES = {BYTES: "bytes", F32: "f32", F64: "f64"}
WIDTH = {BYTES: 1, F32: 4, F64: 8}

DEFAULT_MAX_FRAME_BYTES = 64 << 20
MAX_CONTROL_PAYLOAD = 65536
U64_MAX = (1 << 64) - 1

IMPL = "peerpipe-python-shm-example 0.1.0"

TIMEOUT = 10.0  # seconds for any one wait (HELLO, a reply, space in the ring, the exit)

# --- shared-memory constants (§13) ---------------------------------------------

REGION_MAGIC = b"PPSHM\0v1"  # 50 50 53 48 4d 00 76 31
LAYOUT_VERSION = 1
KIND_SHM_SEM, KIND_SHM_RING = 1, 2
REGION_HEADER_LEN = 128
CONTROL_LEN = 512  # four 128-byte control blocks per channel, then the data
MIN_CAPACITY, MAX_CAPACITY = 4096, 1 << 30

# offsets inside a channel (shm-ring column of the §13 table)
OFF_WRITE_POS = 0  # u64, block 0 (writer)
OFF_WRITE_START = 8  # u64, block 0 (writer)
OFF_WRITER_CLOSED = 128  # u32, block 1 (writer)
OFF_WRITER_SLEEPING = 132  # u32, block 1 (writer's futex word)
OFF_READ_POS = 256  # u64, block 2 (reader)
OFF_READER_CLOSED = 384  # u32, block 3 (reader)
OFF_READER_SLEEPING = 388  # u32, block 3 (reader's futex word)

SYS_FUTEX = 202  # x86-64
FUTEX_WAKE = 1  # shared: without FUTEX_PRIVATE_FLAG (128)


# --- errors ----------------------------------------------------------------------


class PeerError(Exception):
    """Anything that went wrong talking to the server."""


class ProtocolError(PeerError):
    """The server's bytes (or its region words) break a rule of the protocol."""


class ServerDied(PeerError):
    """The liveness pipe hung up: the server is gone."""


# --- frames (§2, §3), copied from python_client.py -------------------------------

Frame = collections.namedtuple("Frame", "kind dtype flags seq count aux payload")


def padding_len(payload_len):
    """Zero bytes after a payload so the frame length is a multiple of 8 (§3)."""
    return (8 - payload_len % 8) % 8


def encode_frame(kind, dtype, seq, count, payload=b"", aux=0, flags=0):
    """One complete frame: header, payload, zero padding."""
    header = HEADER.pack(MAGIC, VERSION, kind, dtype, flags, seq, count, aux)
    return header + bytes(payload) + b"\0" * padding_len(len(payload))


def check_header(header, max_frame_bytes):
    """Steps 2-9 of the receiver checklist (§10) on 32 header bytes."""
    magic, version, kind, dtype, flags, seq, count, aux = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic: expected {MAGIC!r}, found {magic!r}")
    if version != VERSION:
        raise ProtocolError(f"unsupported version: expected 1, found {version}")
    if kind not in KIND_NAMES:
        raise ProtocolError(f"unknown frame kind {kind}")
    if dtype not in WIDTH:
        raise ProtocolError(f"unknown dtype {dtype}")
    if flags != 0:
        raise ProtocolError(f"reserved flags set: expected 0, found {flags:#04x}")
    if kind != DATA and dtype != BYTES:
        raise ProtocolError(f"malformed {KIND_NAMES[kind]} frame: dtype {dtype}, expected 0")
    if kind == BYE and count != 0:
        raise ProtocolError(f"malformed BYE frame: expected count 0, found count {count}")
    payload_len = count * WIDTH[dtype]
    if payload_len > U64_MAX:
        raise ProtocolError(f"payload length overflows u64: count {count} x {WIDTH[dtype]}")
    limit = max_frame_bytes
    if kind in (HELLO, ERROR):
        limit = min(limit, MAX_CONTROL_PAYLOAD)
    if payload_len > limit:
        raise ProtocolError(f"frame too large: payload of {payload_len} bytes exceeds {limit}")
    return kind, dtype, flags, seq, count, aux, payload_len


def encode_hello(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES, impl=IMPL):
    """Our HELLO payload (§4)."""
    return f"version=1\nmax_frame_bytes={max_frame_bytes}\nimpl={impl}\n".encode()


def parse_hello(payload):
    """Validate a HELLO payload (§4) and return its keys as a dict of strings."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"HELLO is not UTF-8: {e}") from None
    if not text.endswith("\n"):
        raise ValueError("the last HELLO line lacks its newline")
    info = {}
    for line in text[:-1].split("\n"):
        if "=" not in line:
            raise ValueError(f"HELLO line without '=': {line!r}")
        key, value = line.split("=", 1)
        info[key] = value
    if info.get("version") != "1":
        raise ValueError(f"HELLO version: expected '1', found {info.get('version')!r}")
    mfb = info.get("max_frame_bytes")
    if mfb is None or not (mfb.isascii() and mfb.isdigit() and int(mfb) <= U64_MAX):
        raise ValueError(f"HELLO max_frame_bytes is not a u64: {mfb!r}")
    return info


# --- memory ordering and the futex (x86-64) --------------------------------------
#
# On x86-64 an aligned 8- or 4-byte load or store is atomic, every load is an
# acquire and every store a release (TSO). The one reordering x86 does allow is a
# later load passing an earlier store, which the sleeping protocol of §13 forbids
# ("publishing its position (sequentially consistent), loads the sleeper's
# word"): a full fence goes between the two. ctypes cannot emit MFENCE itself;
# a locked instruction is as good, and glibc's spin lock is one.

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _make_fence():
    lock = ctypes.c_int(0)
    _libc.pthread_spin_init(ctypes.byref(lock), 0)

    def fence():  # pthread_spin_lock is a LOCK-prefixed instruction: a full barrier
        _libc.pthread_spin_lock(ctypes.byref(lock))
        _libc.pthread_spin_unlock(ctypes.byref(lock))

    return fence


full_fence = _make_fence()


def futex_wake(word):
    """FUTEX_WAKE (shared, not private) one waiter on a ctypes u32 in the mapping."""
    r = _libc.syscall(SYS_FUTEX, ctypes.c_void_p(ctypes.addressof(word)), FUTEX_WAKE, 1, 0, 0, 0)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"futex(FUTEX_WAKE): {os.strerror(e)}")
    return r


# --- the region and its rings (§13) -----------------------------------------------


class Liveness:
    """The read end of the server's stdout pipe (§13): no bytes ever arrive on
    it; POLLHUP means the server is gone."""

    def __init__(self, fd):
        self.fd = fd
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def check(self):
        for _, events in self.poller.poll(0):
            if events & select.POLLIN and not events & select.POLLHUP:
                raise ProtocolError(
                    "the server wrote bytes on its stdout; §13 says that pipe carries none"
                )
            if events & (select.POLLHUP | select.POLLERR):
                raise ServerDied("the server's stdout pipe hung up (POLLHUP): the server died")


class Stats:
    def __init__(self):
        self.rewinds_written = 0  # rewinds we made as a writer
        self.rewinds_seen = 0  # rewinds of the server we skipped as a reader
        self.skipped_bytes = 0
        self.wakes_sent = collections.Counter()  # FUTEX_WAKEs by word, after finding it at 1
        self.max_lag_before_skip = 0  # largest write_pos - read_pos seen before a skip
        self.waits_for_space = 0


class Channel:
    """One direction of a `shm-ring` region: four control blocks, then data."""

    def __init__(self, mm, base, capacity, liveness, stats, name):
        self.mm, self.capacity, self.liveness, self.stats, self.name = (
            mm,
            capacity,
            liveness,
            stats,
            name,
        )
        u64 = ctypes.c_uint64.from_buffer
        u32 = ctypes.c_uint32.from_buffer
        self.write_pos = u64(mm, base + OFF_WRITE_POS)
        self.write_start = u64(mm, base + OFF_WRITE_START)
        self.writer_closed = u32(mm, base + OFF_WRITER_CLOSED)
        self.writer_sleeping = u32(mm, base + OFF_WRITER_SLEEPING)
        self.read_pos = u64(mm, base + OFF_READ_POS)
        self.reader_closed = u32(mm, base + OFF_READER_CLOSED)
        self.reader_sleeping = u32(mm, base + OFF_READER_SLEEPING)
        self.data = base + CONTROL_LEN

    def release(self):
        """Drop the ctypes views so the mmap can be closed."""
        for name in (
            "write_pos",
            "write_start",
            "writer_closed",
            "writer_sleeping",
            "read_pos",
            "reader_closed",
            "reader_sleeping",
        ):
            setattr(self, name, None)

    def _wake_if_sleeping(self, word, name):
        """§13: after publishing our position (followed by a full fence), load the
        sleeper's word; if it is 1, store 0 and FUTEX_WAKE it."""
        full_fence()
        if word.value == 1:
            word.value = 0
            futex_wake(word)
            self.stats.wakes_sent[f"{self.name}.{name}"] += 1

    def _copy_in(self, pos, data):
        off = pos % self.capacity
        first = min(len(data), self.capacity - off)
        self.mm[self.data + off : self.data + off + first] = data[:first]
        if first < len(data):
            self.mm[self.data : self.data + len(data) - first] = data[first:]

    def _copy_out(self, pos, n):
        off = pos % self.capacity
        first = min(n, self.capacity - off)
        out = self.mm[self.data + off : self.data + off + first]
        if first < n:
            out += self.mm[self.data : self.data + n - first]
        return out

    # --- writer side (client -> server) -----------------------------------

    def write(self, data, timeout=TIMEOUT, rewind=True):
        """Write all of data into the ring. Raises BrokenPipeError when the
        reader has closed, PeerError on a timeout or the server's death."""
        data = memoryview(bytes(data))
        deadline = time.monotonic() + timeout
        while data:
            if self.reader_closed.value:
                raise BrokenPipeError(f"{self.name}: the server closed its reading end")
            wp = self.write_pos.value  # our own word
            rp = self.read_pos.value  # acquire (x86 load)
            used = wp - rp
            if used < 0 or used > self.capacity:
                raise ProtocolError(
                    f"{self.name}: read_pos {rp} is not within capacity {self.capacity} "
                    f"behind write_pos {wp}"
                )
            if rewind and used == 0 and wp % self.capacity:
                # Optional rewind (§13): start again at data offset 0. "The next
                # multiple of capacity" is read as rounding up: an aligned
                # write_pos needs no rewind, and `peer` refuses a rewind of a
                # whole ring. We keep §13's writer limit literally, so the
                # skipped bytes count as used until the reader skips them and a
                # rewind leaves only wp % capacity bytes free. So we rewind only
                # when everything still to write fits in that space; otherwise
                # a long write would rewind, and shrink, at every empty ring.
                target = (wp // self.capacity + 1) * self.capacity
                if len(data) <= self.capacity - (target - rp):
                    wp = target
                    self.write_start.value = wp  # stored before write_pos is published
                    self.stats.rewinds_written += 1
                    used = wp - rp
            free = self.capacity - used
            if free == 0:
                self.stats.waits_for_space += 1
                self._wait(deadline, f"space in the {self.name} ring")
                continue
            n = min(free, len(data))
            self._copy_in(wp, data[:n])
            self.write_pos.value = wp + n  # release (x86 store after the copy)
            self._wake_if_sleeping(self.reader_sleeping, "reader_sleeping")
            data = data[n:]

    # --- reader side (server -> client) -----------------------------------

    def read(self, n, timeout=TIMEOUT):
        """Read exactly n bytes; fewer only at the end of the stream (writer_closed
        with no data left). Raises PeerError on a timeout or the server's death."""
        out = bytearray()
        deadline = time.monotonic() + timeout
        while len(out) < n:
            wp = self.write_pos.value  # acquire
            rp = self.read_pos.value  # our own word
            ws = self.write_start.value  # loaded after write_pos: a rewind is seen whole
            if ws > rp and ws <= wp:
                # Skip first, check the distance after: `peer` as a writer counts
                # the skipped bytes as free, so before the skip write_pos - read_pos
                # can exceed capacity (up to almost two rings) in a sound region.
                if ws - rp >= self.capacity:  # not in §13; `peer` refuses this too
                    raise ProtocolError(
                        f"{self.name}: rewind from {rp} to {ws}: expected less than a ring "
                        f"({self.capacity} bytes) ahead (region corrupt)"
                    )
                self.stats.max_lag_before_skip = max(self.stats.max_lag_before_skip, wp - rp)
                self.stats.rewinds_seen += 1
                self.stats.skipped_bytes += ws - rp
                rp = ws
                self.read_pos.value = rp  # the skipped bytes are free again
                self._wake_if_sleeping(self.writer_sleeping, "writer_sleeping")
            avail = wp - rp
            if avail < 0 or avail > self.capacity:
                raise ProtocolError(
                    f"{self.name}: write_pos - read_pos = {wp} - {rp} = {avail}, "
                    f"expected 0..{self.capacity} (region corrupt)"
                )
            if avail == 0:
                if self.writer_closed.value:
                    # Closed: end of stream only after every byte written before it,
                    # so look at write_pos once more after seeing the flag.
                    if self.write_pos.value == wp:
                        break
                    continue
                self._wait(deadline, f"{n - len(out)} more bytes in the {self.name} ring")
                continue
            k = min(avail, n - len(out))
            out += self._copy_out(rp, k)
            self.read_pos.value = rp + k  # release: frees the space
            self._wake_if_sleeping(self.writer_sleeping, "writer_sleeping")
        return bytes(out)

    def _wait(self, deadline, what):
        """Poll (no futex of our own): check the liveness pipe, yield the CPU."""
        self.liveness.check()
        if time.monotonic() > deadline:
            raise PeerError(f"timed out waiting for {what}")
        time.sleep(0)


class ShmRegion:
    """The memfd, its mapping and the region header (§13)."""

    def __init__(self, capacity):
        if capacity % 64 or not MIN_CAPACITY <= capacity <= MAX_CAPACITY:
            raise ValueError(f"capacity {capacity}: must be a multiple of 64, 4096 to 2^30")
        self.capacity = capacity
        self.length = REGION_HEADER_LEN + 2 * (CONTROL_LEN + capacity)
        # MFD_CLOEXEC: only the dup2 onto the child's fd 0 crosses exec.
        self.fd = os.memfd_create("peerpipe-shm-ring", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.length)  # zero-filled: every control word starts at 0
        self.mm = mmap.mmap(
            self.fd, self.length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE
        )
        # native byte order (§13): magic, layout version, kind, capacity, total length
        header = (REGION_MAGIC, LAYOUT_VERSION, KIND_SHM_RING, capacity, self.length)
        struct.pack_into("=8sIIQQ", self.mm, 0, *header)
        self.c2s_base = REGION_HEADER_LEN
        self.s2c_base = REGION_HEADER_LEN + CONTROL_LEN + capacity


# --- the client ----------------------------------------------------------------------


class ShmRingClient:
    def __init__(self, peer, capacity, rewind=True, timeout=TIMEOUT):
        self.timeout = timeout
        self.rewind = rewind
        self.stats = Stats()
        self.region = ShmRegion(capacity)
        self.pending = collections.deque()
        self.next_seq = 1
        self.max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        cmd = [peer, "--role", "server", "--handler", "echo", "--transport", "shm-ring"]
        try:
            # stdin = the memfd (dup2'd onto fd 0, which clears CLOEXEC there),
            # stdout = a pipe (we keep the read end), stderr inherited for the
            # server's messages; close_fds so nothing else crosses exec.
            self.proc = subprocess.Popen(
                cmd, stdin=self.region.fd, stdout=subprocess.PIPE, close_fds=True, bufsize=0
            )
        except OSError as e:
            raise PeerError(f"cannot start {peer!r}: {e}") from None
        os.close(self.region.fd)  # the server has its own copy; the mapping stays
        self.region.fd = -1
        self.liveness = Liveness(self.proc.stdout.fileno())
        mm = self.region.mm
        self.c2s = Channel(mm, self.region.c2s_base, capacity, self.liveness, self.stats, "c2s")
        self.s2c = Channel(mm, self.region.s2c_base, capacity, self.liveness, self.stats, "s2c")
        try:
            hello = encode_hello(self.max_frame_bytes)
            self.c2s.write(encode_frame(HELLO, BYTES, 0, len(hello), hello), timeout, self.rewind)
            frame = self.read_frame("the server's HELLO")
            if frame is None:
                raise ProtocolError(f"end of stream before the server's HELLO{self.exit_note()}")
            if frame.kind != HELLO:
                raise ProtocolError(
                    f"first frame: expected HELLO, found {KIND_NAMES[frame.kind]}"
                    f" {frame.payload[:200]!r}"
                )
            if frame.payload == hello:
                raise ProtocolError(
                    "the peer sent back our own HELLO: is the command echoing its input, like cat?"
                )
            try:
                self.server_info = parse_hello(frame.payload)
            except ValueError as e:
                raise ProtocolError(f"bad HELLO from the server: {e}") from None
            role = self.server_info.get("role")
            if role != "server":
                found = "no role" if role is None else f"role={role!r}"
                raise ProtocolError(
                    f"bad HELLO from the server: expected role=server, found {found}: "
                    "is the command a peerpipe server?"
                )
            self.server_max_frame_bytes = int(self.server_info["max_frame_bytes"])
        except BaseException:
            self.abort()
            raise

    def exit_note(self):
        status = self.proc.poll()
        return "" if status is None else f" (server exited with status {status})"

    def read_frame(self, what):
        """One frame from the server->client ring (§10 steps 1-9, 11, 12), or
        None at a clean end of stream."""
        try:
            deadline = time.monotonic() + self.timeout
            header = self.s2c.read(HEADER_LEN, self.timeout)
            if not header:
                return None
            if len(header) < HEADER_LEN:
                raise ProtocolError(f"truncated header: got {len(header)} of {HEADER_LEN} bytes")
            kind, dtype, flags, seq, count, aux, plen = check_header(header, self.max_frame_bytes)
            body = self.s2c.read(plen + padding_len(plen), max(0.0, deadline - time.monotonic()))
            if len(body) < plen + padding_len(plen):
                raise ProtocolError(f"truncated frame: got {len(body)} of {plen} + padding bytes")
            if any(body[plen:]):
                raise ProtocolError(f"nonzero padding {body[plen:].hex()}")
            return Frame(kind, dtype, flags, seq, count, aux, body[:plen])
        except PeerError as e:
            if isinstance(e, ServerDied):
                try:
                    self.proc.wait(timeout=1.0)  # so the message can name its exit status
                except subprocess.TimeoutExpired:
                    pass
            raise type(e)(f"reading {what}: {e}{self.exit_note()}") from None

    def send(self, dtype, payload, count):
        if len(payload) > self.server_max_frame_bytes:
            raise ValueError("payload exceeds the server's max_frame_bytes")
        seq = self.next_seq
        self.next_seq += 1
        self.c2s.write(encode_frame(DATA, dtype, seq, count, payload), self.timeout, self.rewind)
        self.pending.append((seq, dtype, count))
        return seq

    def recv(self):
        seq, dtype, count = self.pending[0]
        frame = self.read_frame(f"the reply to seq {seq}")
        if frame is None:
            raise ProtocolError(f"end of stream with request seq {seq} unanswered")
        if frame.kind == ERROR:
            text = frame.payload.decode("utf-8", "replace")
            raise PeerError(f"reply to seq {seq}: expected DATA, found ERROR {frame.seq}: {text}")
        if frame.kind != DATA:
            found = KIND_NAMES[frame.kind]
            raise ProtocolError(f"reply to seq {seq}: expected DATA, found {found}")
        if frame.seq != seq:
            raise ProtocolError(f"reply seq: expected {seq}, found {frame.seq}")
        if (frame.dtype, frame.count) != (dtype, count):
            raise ProtocolError(
                f"reply to seq {seq}: expected {count} x {DTYPE_NAMES[dtype]}, "
                f"found {frame.count} x {DTYPE_NAMES[frame.dtype]}"
            )
        self.pending.popleft()
        return frame

    def close_our_side(self):
        """§13 Closing: writer_closed of the channel we write, reader_closed of
        the one we read, then wake the server on both of its sleeping words."""
        self.c2s.writer_closed.value = 1
        self.s2c.reader_closed.value = 1
        full_fence()
        for word in (self.c2s.reader_sleeping, self.s2c.writer_sleeping):
            if word.value == 1:
                word.value = 0
            futex_wake(word)

    def bye(self):
        """§7: BYE, the answering BYE with our seq, end of stream, close, exit 0.
        Returns a description of the closing flags the server left."""
        bye_seq = self.next_seq
        self.next_seq += 1
        self.c2s.write(encode_frame(BYE, BYTES, bye_seq, 0), self.timeout, self.rewind)
        frame = self.read_frame("BYE in answer to ours")
        if frame is None or frame.kind != BYE:
            found = "end of stream" if frame is None else KIND_NAMES[frame.kind]
            raise ProtocolError(f"expected BYE in answer to ours, found {found}")
        if frame.seq != bye_seq:
            raise ProtocolError(f"answering BYE: expected seq {bye_seq}, found {frame.seq}")
        if self.read_frame("the end of stream after BYE") is not None:
            raise ProtocolError("expected end of stream after the answering BYE, found a frame")
        self.close_our_side()
        try:
            status = self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise PeerError(f"server still running {self.timeout:g} s after BYE") from None
        # Read only after the exit: §13 does not order the two flags, and `peer`
        # sets writer_closed (our end of stream) before reader_closed.
        server_flags = (self.s2c.writer_closed.value, self.c2s.reader_closed.value)
        if status != 0:
            raise PeerError(f"server exit status: expected 0, found {status}")
        # the stdout pipe must now read as hung up, with no byte on it
        events = dict(self.liveness.poller.poll(1000))
        ev = events.get(self.liveness.fd, 0)
        if not ev & select.POLLHUP:
            raise PeerError(f"liveness pipe after exit: expected POLLHUP, found events {ev:#x}")
        if os.read(self.liveness.fd, 1) != b"":
            raise ProtocolError("the server wrote bytes on its stdout pipe")
        return server_flags

    def abort(self):
        """Close our side, terminate and reap the server, unmap."""
        try:
            self.close_our_side()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.finish()

    def finish(self):
        if self.proc.stdout and not self.proc.stdout.closed:
            self.proc.stdout.close()
        for ch in ("c2s", "s2c"):
            if hasattr(self, ch):
                getattr(self, ch).release()
        if not self.region.mm.closed:
            self.region.mm.close()


# --- the checks -----------------------------------------------------------------------


def f64_from_bits(bits):
    return struct.pack(f"<{len(bits)}Q", *bits)


SPECIAL_BITS = [
    0x3FF0000000000000,  # 1.0
    0x8000000000000000,  # -0.0
    0x0000000000000000,  # +0.0
    0x7FF8000000000001,  # quiet NaN with payload 1
    0x7FF0000000000001,  # signalling NaN
    0xFFF80000DEADBEEF,  # negative quiet NaN with payload
    0x7FF4000000000000,  # signalling NaN, other payload
    0x0000000000000001,  # smallest subnormal
    0x000FFFFFFFFFFFFF,  # largest subnormal
    0x800FFFFFFFFFFFFF,  # negative subnormal
    0x7FF0000000000000,  # +inf
    0xFFF0000000000000,  # -inf
    0x7FEFFFFFFFFFFFFF,  # largest finite
    0x400921FB54442D18,  # pi
]


def first_bit_difference(sent, got, width):
    for i in range(0, min(len(sent), len(got)), width):
        if sent[i : i + width] != got[i : i + width]:
            return i // width
    return min(len(sent), len(got)) // width


def describe(payload, index, width):
    chunk = payload[index * width : (index + 1) * width]
    return "0x" + chunk[::-1].hex() if chunk else "(missing)"


def roundtrip(client, dtype, payload, count, label, checks):
    client.send(dtype, payload, count)
    reply = client.recv()
    verify(reply, payload, dtype, label)
    checks.append(label)
    return reply


def verify(reply, payload, dtype, label):
    if reply.payload != payload:
        w = WIDTH[dtype]
        i = first_bit_difference(payload, reply.payload, w)
        raise PeerError(
            f"{label}: element {i} expected bits {describe(payload, i, w)}, "
            f"found {describe(reply.payload, i, w)} "
            f"(sent {len(payload)} bytes, got {len(reply.payload)})"
        )


def run(peer, capacity, rewind):
    checks = []
    client = ShmRingClient(peer, capacity, rewind=rewind)
    try:
        if client.server_info.get("handler") != "echo":
            found = client.server_info.get("handler")
            raise PeerError(f"server handler: expected 'echo', found {found!r}")

        # 1. the special values, f64, bit for bit
        special = f64_from_bits(SPECIAL_BITS)
        roundtrip(client, F64, special, len(SPECIAL_BITS), "f64 special values", checks)

        # 2. several more single round trips, so both rings pass their end and
        #    (with rewinds) start again at offset 0
        for k in range(1, 6):
            bits = [(b * 0x9E3779B97F4A7C15 + k) & U64_MAX for b in SPECIAL_BITS] + SPECIAL_BITS
            payload = f64_from_bits(bits * k)
            roundtrip(client, F64, payload, len(bits) * k, f"f64 round trip {k}", checks)

        # 3. empty request, f32 with padding (raw bits incl. a signalling NaN), bytes
        roundtrip(client, F64, b"", 0, "f64 count 0", checks)
        f32 = struct.pack("<3I", 0x3F800000, 0x7F800001, 0x80000001)
        roundtrip(client, F32, f32, 3, "f32 with padding", checks)
        roundtrip(client, BYTES, b"shared\0memory", 13, "bytes", checks)

        # 4. pipelined: two requests, then both replies in order
        a = f64_from_bits(SPECIAL_BITS[::-1])
        b = f64_from_bits(SPECIAL_BITS[:5])
        client.send(F64, a, len(SPECIAL_BITS))
        client.send(F64, b, 5)
        verify(client.recv(), a, F64, "pipelined 1")
        verify(client.recv(), b, F64, "pipelined 2")
        checks.append("pipelined pair")

        # 5. a request and a reply larger than the ring: we must wait for space
        #    (the server reads while we write), and the server must wait for us
        #    to read (we wake it on its writer_sleeping word). A pause before
        #    reading lets the server fill the ring and go to sleep.
        n = (2 * capacity + 1000) // 8
        big_bits = [(i * 0x9E3779B97F4A7C15) & U64_MAX for i in range(n)]
        for j, v in enumerate(SPECIAL_BITS):
            big_bits[j * 97 % n] = v
        big = f64_from_bits(big_bits)
        client.send(F64, big, n)
        time.sleep(0.05)
        verify(client.recv(), big, F64, "larger than the ring")
        checks.append(f"{n} f64 ({len(big)} bytes > capacity {capacity})")

        # 6. small again after the big one: a round trip after a pause, so the
        #    server finds its ring empty and may rewind
        time.sleep(0.02)
        roundtrip(client, F64, special, len(SPECIAL_BITS), "f64 special values again", checks)

        impl = client.server_info.get("impl", "?")
        server_flags = client.bye()
    except BaseException:
        client.abort()
        raise
    client.finish()
    return checks, impl, server_flags, client.stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("peer_pos", nargs="?", metavar="PEER", help="path of the peer binary")
    ap.add_argument("--peer", help="path of the peer binary (same as PEER)")
    ap.add_argument("--capacity", type=int, default=65536, help="ring bytes per direction")
    ap.add_argument("--no-rewind", action="store_true", help="never rewind as a writer")
    args = ap.parse_args(argv)
    peer = args.peer or args.peer_pos or "target/release/peer"

    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        print(f"FAIL: this client needs Linux on x86-64, found {sys.platform} {platform.machine()}")
        return 1
    try:
        checks, impl, server_flags, stats = run(peer, args.capacity, not args.no_rewind)
    except (PeerError, OSError, ValueError) as e:
        print(f"FAIL: {e}")
        return 1
    if server_flags != (1, 1):
        print(
            "FAIL: after its BYE the server should have set writer_closed (s2c) and "
            f"reader_closed (c2s) to 1 (§13 Closing); found {server_flags}"
        )
        return 1
    wakes = ", ".join(f"{k} {v}" for k, v in sorted(stats.wakes_sent.items()))
    print(
        f"ok: shm-ring capacity {args.capacity}: HELLO, {len(checks)} DATA checks bit for bit "
        f"(NaN payloads, -0.0, subnormals, inf; {checks[-2]}), BYE answered, end of stream, "
        f"server closing flags set, exit status 0; rewinds: we made {stats.rewinds_written}, "
        f"skipped {stats.rewinds_seen} of the server's (largest write_pos - read_pos before a "
        f"skip: {stats.max_lag_before_skip}); futex wakes sent: {wakes or 'none'}; "
        f"server impl={impl}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
