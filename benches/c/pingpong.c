/* Plain C pipe ping-pong: the reference the raw-bytes baseline of `peer` is held against.
 *
 * Build: gcc -O2 -o /tmp/pingpong benches/c/pingpong.c
 * Run:   [VMSPLICE=1] /tmp/pingpong BYTES ITERS block|spin|hybrid [spin_us]
 * Prints: bytes=.. wait=.. iters=.. p50_ns=.. p99_ns=.. min_ns=..
 *
 * Two processes (fork), two pipes of 1 MiB (F_SETPIPE_SZ). The parent writes BYTES bytes, the
 * child reads them all and writes them back, the parent reads them all: one round trip. With
 * `block` readers sleep in read(2); with `spin` the pipes are O_NONBLOCK and readers retry
 * read(2) until data arrives; `hybrid` spins up to spin_us (default 50) and then sleeps in
 * poll(2) -- the same three strategies peerpipe implements.
 *
 * VMSPLICE=1 (docs/experiments/round-trip.md, "Large payloads on pipes"): both writers send with vmsplice(2), which
 * maps the sender's pages into the pipe instead of copying them; the line then ends with
 * `send=vmsplice`. It is safe here only because each side waits for the other's answer (which
 * proves its bytes were read out of the pipe) before it touches its buffer again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { BLOCK, SPIN, HYBRID };
static int mode;
static long spin_ns = 50000;

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void read_all(int fd, char *buf, size_t len) {
    size_t got = 0;
    long spin_start = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n > 0) { got += n; spin_start = 0; continue; }
        if (n == 0) exit(0);
        if (errno == EINTR) continue;
        if (errno != EAGAIN) { perror("read"); exit(1); }
        if (mode == SPIN) continue;
        if (mode == HYBRID) {
            long t = now_ns();
            if (!spin_start) spin_start = t;
            if (t - spin_start < spin_ns) continue;
        }
        struct pollfd p = { fd, POLLIN, 0 };
        poll(&p, 1, -1);
    }
}

static int use_vmsplice;

static void write_all(int fd, const char *buf, size_t len) {
    size_t put = 0;
    while (put < len) {
        struct iovec iov = { (void *)(buf + put), len - put };
        ssize_t n = use_vmsplice ? vmsplice(fd, &iov, 1, 0) : write(fd, buf + put, len - put);
        if (n > 0) { put += n; continue; }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) { perror("write"); exit(1); }
        struct pollfd p = { fd, POLLOUT, 0 };
        if (mode != SPIN) poll(&p, 1, -1);
    }
}

static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s BYTES ITERS block|spin|hybrid [spin_us]\n", argv[0]); return 2; }
    size_t bytes = strtoul(argv[1], 0, 10);
    long iters = strtol(argv[2], 0, 10);
    mode = !strcmp(argv[3], "spin") ? SPIN : !strcmp(argv[3], "hybrid") ? HYBRID : BLOCK;
    if (argc > 4) spin_ns = strtol(argv[4], 0, 10) * 1000;
    int up[2], down[2];
    if (pipe(up) || pipe(down)) { perror("pipe"); return 1; }
    fcntl(up[0], F_SETPIPE_SZ, 1 << 20);
    fcntl(down[0], F_SETPIPE_SZ, 1 << 20);
    if (mode != BLOCK) {
        for (int i = 0; i < 2; i++) {
            fcntl(up[i], F_SETFL, O_NONBLOCK);
            fcntl(down[i], F_SETFL, O_NONBLOCK);
        }
    }
    use_vmsplice = getenv("VMSPLICE") && !strcmp(getenv("VMSPLICE"), "1");
    /* Page-aligned, so that vmsplice can lend whole pages. */
    char *buf = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    memset(buf, 0, bytes);
    pid_t child = fork();
    if (child == 0) {
        close(up[1]); close(down[0]);
        for (;;) { read_all(up[0], buf, bytes); write_all(down[1], buf, bytes); }
    }
    close(up[0]); close(down[1]);
    long warm = iters / 10 + 10;
    long *rtt = malloc(sizeof(long) * iters);
    for (long i = 0; i < warm + iters; i++) {
        long t0 = now_ns();
        write_all(up[1], buf, bytes);
        read_all(down[0], buf, bytes);
        if (i >= warm) rtt[i - warm] = now_ns() - t0;
    }
    close(up[1]);
    waitpid(child, 0, 0);
    qsort(rtt, iters, sizeof(long), cmp);
    printf("bytes=%zu wait=%s iters=%ld p50_ns=%ld p99_ns=%ld min_ns=%ld%s\n", bytes, argv[3], iters,
           rtt[iters / 2], rtt[iters * 99 / 100], rtt[0], use_vmsplice ? " send=vmsplice" : "");
    return 0;
}
