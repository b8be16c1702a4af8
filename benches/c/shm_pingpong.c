/* Plain C shared-memory ping-pong: the reference the shared-memory transport is held against.
 *
 * Build: gcc -O2 -Wall -Wextra -pthread -o /tmp/shm_pingpong benches/c/shm_pingpong.c
 * Run:   /tmp/shm_pingpong BYTES ITERS block|spin|hybrid [spin_us [split]]
 *         `split` pins the parent to CPU 0 and the child to CPU 1, as `peer --pin split`.
 * Prints: bytes=.. wait=.. iters=.. p50_ns=.. p99_ns=.. min_ns=..   (as benches/c/pingpong.c)
 *
 * Two processes (fork) and one MAP_SHARED|MAP_ANONYMOUS mapping, made before the fork, that
 * holds two one-slot mailboxes: request (parent -> child) and reply (child -> parent). A
 * mailbox is a data buffer of BYTES bytes, a `ready` flag, a `sleeping` flag and a
 * process-shared POSIX semaphore (sem_init(&sem, 1, 0)); the flags of each mailbox sit on a
 * cache line of their own, the buffers start on pages of their own.
 *
 * One round trip: the parent (client) memcpy's its message into the request buffer, publishes
 * it, waits for the reply and memcpy's the reply out into a local buffer; the child (server)
 * waits for the request, memcpy's it out into a local buffer, memcpy's that into the reply
 * buffer and publishes it. Each side copies the bytes once in and once out, as a transport
 * that hands the caller its own buffer does. The consumer clears `ready` after copying out.
 * The timed span is from before the client's copy-in to after its copy-out; the client
 * checks the first and last byte of every reply (it changes them every round trip).
 *
 * Like pingpong.c: ITERS/10 + 10 untimed warm-up round trips, then ITERS timed ones; p50, p99
 * and min of the timed ones (clock_gettime CLOCK_MONOTONIC). Without `split` the scheduler
 * places the two processes.
 *
 * Wait strategies (the same three peerpipe implements):
 *   spin    the waiter spins on `ready` (acquire load + pause hint); the publisher stores
 *           `ready` (release) and never touches the semaphore.
 *   block   the publisher stores `ready` (release) and always sem_post's; the waiter sem_wait's
 *           once per message (so posts and waits pair one to one), then checks `ready`.
 *   hybrid  the waiter spins on `ready` for up to spin_us (default 50) microseconds, then
 *           sleeps; the publisher posts only if the waiter said it is sleeping.
 *
 * Hybrid wake protocol (Dekker-style; every access below is seq_cst):
 *   publisher:  ready = 1;
 *               if (sleeping && exchange(sleeping, 0) == 1) sem_post;
 *   waiter, after the spin budget, in a loop:
 *               sleeping = 1;
 *               if (ready)                               -- re-check after announcing
 *                   { if (exchange(sleeping, 0) == 0) sem_wait; done; }
 *               sem_wait; if (ready) done; else loop.
 *   No lost wake-up: the waiter stores `sleeping` before loading `ready`, the publisher stores
 *   `ready` before loading `sleeping`, so at least one of them sees the other's store. If the
 *   waiter's re-check misses `ready`, the publisher sees `sleeping` and posts. If both see
 *   each other, the exchange on `sleeping` decides: the side that swaps out the 1 owns the
 *   wake-up -- the publisher posts, or the waiter cancels its sleep and no post is made; if
 *   the publisher won, the waiter consumes that post with a sem_wait that returns at once. So
 *   every post is consumed by the wait it was meant for and no stale count is left over for
 *   the next message; and even if one were (the parent's SIGCHLD handler posts one on
 *   purpose), a sem_wait that returns without `ready` set only sends the waiter round the
 *   loop again. `sleeping` is always 0 again when a wait ends.
 *
 * The child exits 0 after the last round trip; the parent waitpid's it and fails (exit 1,
 * no result line) if it did not exit 0, or if it died early (a SIGCHLD handler sets a flag the
 * wait loops check, and posts the reply semaphore so a sleeping parent wakes up to see it).
 * The child has PR_SET_PDEATHSIG = SIGKILL, so it never outlives the parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { BLOCK, SPIN, HYBRID };
static int mode;
static long spin_ns = 50000;

struct mailbox {
    _Alignas(128) _Atomic uint32_t ready; /* 1: a message is in buf and not yet copied out */
    _Atomic uint32_t sleeping;            /* hybrid: the waiter is (about to be) in sem_wait */
    sem_t sem;
    unsigned char *buf;                   /* same address in both processes (mapped pre-fork) */
};

struct shared {
    struct mailbox req, rep;
};

static struct shared *shm;
static volatile sig_atomic_t child_gone; /* set in the parent only */

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Keeps the compiler from eliding or forwarding copies through the local buffers. */
static inline void escape(void *p) { __asm__ __volatile__("" : : "r"(p) : "memory"); }

static void on_sigchld(int sig) {
    (void)sig;
    int saved = errno;
    child_gone = 1;
    sem_post(&shm->rep.sem); /* wake a parent sleeping on the reply; async-signal-safe */
    errno = saved;
}

static void check_gone(void) {
    if (child_gone) { fprintf(stderr, "shm_pingpong: the child exited early\n"); exit(1); }
}

static void sem_wait_once(sem_t *s) {
    while (sem_wait(s)) {
        if (errno != EINTR) { perror("sem_wait"); exit(1); }
        if (child_gone) return; /* let the caller's loop see it */
    }
}

/* Spin until ready (returns 1) or until budget_ns has passed (returns 0); budget_ns < 0: no limit. */
static int spin_for(struct mailbox *m, long budget_ns) {
    if (atomic_load_explicit(&m->ready, memory_order_acquire)) return 1;
    if (budget_ns == 0) return 0;
    long start = budget_ns > 0 ? now_ns() : 0;
    for (unsigned n = 1;; n++) {
        cpu_relax();
        if (atomic_load_explicit(&m->ready, memory_order_acquire)) return 1;
        check_gone();
        if (budget_ns > 0 && (n & 15) == 0 && now_ns() - start >= budget_ns) return 0;
    }
}

/* Returns once m->ready is 1; the message is then visible (acquire). */
static void wait_ready(struct mailbox *m) {
    switch (mode) {
    case SPIN:
        spin_for(m, -1);
        return;
    case BLOCK:
        for (;;) {
            sem_wait_once(&m->sem);
            if (atomic_load_explicit(&m->ready, memory_order_acquire)) return;
            check_gone();
        }
    default: /* HYBRID */
        if (spin_for(m, spin_ns)) return;
        for (;;) {
            atomic_store(&m->sleeping, 1);          /* seq_cst */
            if (atomic_load(&m->ready)) {           /* seq_cst re-check: Dekker with publish() */
                if (atomic_exchange(&m->sleeping, 0) == 0)
                    sem_wait_once(&m->sem);         /* the publisher took the flag: eat its post */
                return;
            }
            sem_wait_once(&m->sem);
            if (atomic_load_explicit(&m->ready, memory_order_acquire)) return;
            check_gone();                           /* spurious: a stray post, or the child died */
        }
    }
}

static void publish(struct mailbox *m) {
    switch (mode) {
    case SPIN:
        atomic_store_explicit(&m->ready, 1, memory_order_release);
        return;
    case BLOCK:
        atomic_store_explicit(&m->ready, 1, memory_order_release);
        if (sem_post(&m->sem)) { perror("sem_post"); exit(1); }
        return;
    default: /* HYBRID */
        atomic_store(&m->ready, 1);                 /* seq_cst */
        if (atomic_load(&m->sleeping) && atomic_exchange(&m->sleeping, 0) == 1)
            if (sem_post(&m->sem)) { perror("sem_post"); exit(1); }
        return;
    }
}

static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void init_mailbox(struct mailbox *m, unsigned char *buf) {
    atomic_init(&m->ready, 0);
    atomic_init(&m->sleeping, 0);
    if (sem_init(&m->sem, 1, 0)) { perror("sem_init"); exit(1); }
    m->buf = buf;
}

static void *alloc_local(size_t bytes) {
    unsigned char *p = malloc(bytes);
    if (!p) { perror("malloc"); exit(1); }
    memset(p, 0, bytes); /* fault the pages in now */
    return p;
}

/* Pins the calling process to one CPU, or exits. */
static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) { perror("sched_setaffinity"); _exit(1); }
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s BYTES ITERS block|spin|hybrid [spin_us [split]]\n", argv[0]); return 2; }
    size_t bytes = strtoul(argv[1], 0, 10);
    long iters = strtol(argv[2], 0, 10);
    if (!strcmp(argv[3], "spin")) mode = SPIN;
    else if (!strcmp(argv[3], "hybrid")) mode = HYBRID;
    else if (!strcmp(argv[3], "block")) mode = BLOCK;
    else { fprintf(stderr, "%s: wait must be block, spin or hybrid\n", argv[0]); return 2; }
    if (argc > 4) spin_ns = strtol(argv[4], 0, 10) * 1000;
    int split = argc > 5 && !strcmp(argv[5], "split");
    if (argc > 5 && !split) { fprintf(stderr, "%s: the 5th argument may only be split\n", argv[0]); return 2; }
    if (split) pin_to(0);
    if (bytes < 1 || iters < 1 || spin_ns < 0) {
        fprintf(stderr, "%s: BYTES and ITERS must be >= 1, spin_us >= 0\n", argv[0]);
        return 2;
    }

    long page = sysconf(_SC_PAGESIZE);
    size_t hdr = (sizeof(struct shared) + page - 1) / page * page;
    size_t slot = (bytes + page - 1) / page * page;
    size_t total = hdr + 2 * slot;
    unsigned char *map = mmap(0, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) { perror("mmap"); return 1; }
    memset(map, 0, total); /* fault the shared pages in before the fork */
    shm = (struct shared *)map;
    init_mailbox(&shm->req, map + hdr);
    init_mailbox(&shm->rep, map + hdr + slot);

    long warm = iters / 10 + 10;
    long total_rounds = warm + iters;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGCHLD, &sa, 0)) { perror("sigaction"); return 1; }

    pid_t parent = getpid();
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    if (child == 0) {
        signal(SIGCHLD, SIG_DFL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(1);
        if (split) pin_to(1);
        unsigned char *local = alloc_local(bytes);
        for (long i = 0; i < total_rounds; i++) {
            wait_ready(&shm->req);
            memcpy(local, shm->req.buf, bytes);
            atomic_store_explicit(&shm->req.ready, 0, memory_order_release);
            escape(local);
            memcpy(shm->rep.buf, local, bytes);
            publish(&shm->rep);
        }
        _exit(0);
    }

    unsigned char *msg = alloc_local(bytes);
    unsigned char *in = alloc_local(bytes);
    long *rtt = malloc(sizeof(long) * iters);
    if (!rtt) { perror("malloc"); return 1; }
    for (long i = 0; i < total_rounds; i++) {
        msg[0] = (unsigned char)i;
        msg[bytes - 1] = (unsigned char)(i * 7 + 3);
        long t0 = now_ns();
        memcpy(shm->req.buf, msg, bytes);
        publish(&shm->req);
        wait_ready(&shm->rep);
        memcpy(in, shm->rep.buf, bytes);
        atomic_store_explicit(&shm->rep.ready, 0, memory_order_release);
        escape(in);
        long t1 = now_ns();
        if (in[0] != msg[0] || in[bytes - 1] != msg[bytes - 1]) {
            fprintf(stderr, "shm_pingpong: round trip %ld: reply bytes %u..%u, sent %u..%u\n", i,
                    in[0], in[bytes - 1], msg[0], msg[bytes - 1]);
            return 1;
        }
        if (i >= warm) rtt[i - warm] = t1 - t0;
    }

    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) { perror("waitpid"); return 1; }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "shm_pingpong: the child was killed by signal %d\n", WTERMSIG(status));
        else
            fprintf(stderr, "shm_pingpong: the child exited with status %d\n", WEXITSTATUS(status));
        return 1;
    }
    qsort(rtt, iters, sizeof(long), cmp);
    printf("bytes=%zu wait=%s iters=%ld p50_ns=%ld p99_ns=%ld min_ns=%ld\n", bytes, argv[3], iters,
           rtt[iters / 2], rtt[iters * 99 / 100], rtt[0]);
    return 0;
}
