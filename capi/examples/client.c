/* A C client of peerpipe: spawns a server, echoes the awkward floating-point values (NaN
 * payloads, -0.0, subnormals, infinities) bit for bit in f64 and f32, then times round trips
 * of 500 doubles.
 *
 *   client [--transport pipe|shm-sem|shm-ring|tcp] [--dtype f64|f32|both] [--calls N] PROGRAM [ARGS...]
 *   client peer --role server --handler echo     (peer on PATH: cargo install --path cli)
 *
 * Exits 0 when every echo came back bit-exact, 1 when one did not, 2 on a peerpipe error
 * (its message on stderr).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peerpipe.h"

static int fail(const char *what, int code) {
    fprintf(stderr, "client: %s: %s (%d): %s\n", what, pp_strerror(code), code, pp_last_error());
    return 2;
}

static double f64_of(uint64_t bits) { double d; memcpy(&d, &bits, sizeof d); return d; }
static float f32_of(uint32_t bits) { float f; memcpy(&f, &bits, sizeof f); return f; }

static const uint64_t F64_EDGES[] = {
    0x7ff8000000000000u, /* quiet NaN */
    0x7ff8dead0000beefu, /* quiet NaN with a payload */
    0xfff0000000000001u, /* negative signalling NaN */
    0x8000000000000000u, /* -0.0 */
    0x0000000000000001u, /* smallest subnormal */
    0x800fffffffffffffu, /* largest negative subnormal */
    0x7ff0000000000000u, /* +inf */
    0xfff0000000000000u, /* -inf */
    0x7fefffffffffffffu, /* largest finite */
    0x3ff0000000000000u, /* 1.0 */
};
static const uint32_t F32_EDGES[] = {
    0x7fc00000u, 0x7fc0beefu, 0xff800001u, 0x80000000u, 0x00000001u,
    0x807fffffu, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x3f800000u,
};
#define EDGES (sizeof F64_EDGES / sizeof F64_EDGES[0])

static int echo_edges_f64(pp_peer *peer) {
    double in[EDGES], out[EDGES];
    for (size_t i = 0; i < EDGES; i++) in[i] = f64_of(F64_EDGES[i]);
    int rc = pp_call_f64(peer, in, EDGES, out, EDGES, NULL);
    if (rc != PP_OK) return fail("pp_call_f64 (edge values)", rc);
    for (size_t i = 0; i < EDGES; i++) {
        uint64_t bits;
        memcpy(&bits, &out[i], sizeof bits);
        if (bits != F64_EDGES[i]) {
            fprintf(stderr, "client: f64 value %zu: sent %016" PRIx64 ", got %016" PRIx64 "\n",
                    i, F64_EDGES[i], bits);
            return 1;
        }
    }
    printf("f64 edge values: %zu bit-exact\n", EDGES);
    return 0;
}

static int echo_edges_f32(pp_peer *peer) {
    float in[EDGES], out[EDGES];
    for (size_t i = 0; i < EDGES; i++) in[i] = f32_of(F32_EDGES[i]);
    int rc = pp_call_f32(peer, in, EDGES, out, EDGES, NULL);
    if (rc != PP_OK) return fail("pp_call_f32 (edge values)", rc);
    for (size_t i = 0; i < EDGES; i++) {
        uint32_t bits;
        memcpy(&bits, &out[i], sizeof bits);
        if (bits != F32_EDGES[i]) {
            fprintf(stderr, "client: f32 value %zu: sent %08" PRIx32 ", got %08" PRIx32 "\n",
                    i, F32_EDGES[i], bits);
            return 1;
        }
    }
    printf("f32 edge values: %zu bit-exact\n", EDGES);
    return 0;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* `calls` round trips of 500 doubles; prints the p50 of the round trip and of the server. */
static int time_calls(pp_peer *peer, size_t calls) {
    enum { N = 500 };
    double in[N], out[N];
    uint64_t *round_trip = calloc(calls, sizeof *round_trip);
    uint64_t *server = calloc(calls, sizeof *server);
    int status = 0;
    if (round_trip == NULL || server == NULL) {
        fprintf(stderr, "client: out of memory\n");
        status = 2;
        goto done;
    }
    for (size_t i = 0; i < N; i++) in[i] = 0.5 * (double)i;
    for (size_t c = 0; c < calls; c++) {
        pp_timing timing;
        in[0] = (double)c;
        uint64_t start = now_ns();
        int rc = pp_call_f64(peer, in, N, out, N, &timing);
        round_trip[c] = now_ns() - start;
        if (rc != PP_OK) {
            status = fail("pp_call_f64", rc);
            goto done;
        }
        if (memcmp(in, out, sizeof in) != 0) {
            fprintf(stderr, "client: reply %zu differs from its request\n", c);
            status = 1;
            goto done;
        }
        server[c] = timing.server_ns;
    }
    if (calls > 0) {
        qsort(round_trip, calls, sizeof *round_trip, by_value);
        qsort(server, calls, sizeof *server, by_value);
        printf("%zu calls of %d f64: round trip p50 %" PRIu64 " ns, server p50 %" PRIu64 " ns\n",
               calls, N, round_trip[calls / 2], server[calls / 2]);
    }
done:
    free(round_trip);
    free(server);
    return status;
}

int main(int argc, char **argv) {
    const char *transport = "pipe", *dtype = "both";
    size_t calls = 1000;
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--transport") == 0) transport = argv[i + 1];
        else if (strcmp(argv[i], "--dtype") == 0) dtype = argv[i + 1];
        else if (strcmp(argv[i], "--calls") == 0) calls = strtoul(argv[i + 1], NULL, 10);
        else break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: client [--transport T] [--dtype f64|f32|both] [--calls N] "
                        "PROGRAM [ARGS...]\n");
        return 2;
    }

    pp_options *options = NULL;
    int rc = pp_options_new(&options);
    if (rc != PP_OK) return fail("pp_options_new", rc);
    rc = pp_options_set_transport(options, transport);
    if (rc != PP_OK) {
        pp_options_free(options);
        return fail("pp_options_set_transport", rc);
    }
    pp_peer *peer = NULL;
    rc = pp_spawn_with((const char *const *)&argv[i], (size_t)(argc - i), options, &peer);
    pp_options_free(options); /* the peer keeps a copy of what it needs */
    if (rc != PP_OK) return fail("pp_spawn_with", rc);

    int f64 = strcmp(dtype, "f32") != 0, f32 = strcmp(dtype, "f64") != 0;
    int status = 0;
    if (status == 0 && f64) status = echo_edges_f64(peer);
    if (status == 0 && f32) status = echo_edges_f32(peer);
    if (status == 0 && f64) status = time_calls(peer, calls);

    rc = pp_close(peer); /* always frees the peer and reaps the server */
    if (status == 0 && rc != PP_OK) return fail("pp_close", rc);
    if (status == 0) printf("ok\n");
    return status;
}
