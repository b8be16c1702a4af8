/* The C half of the paired benchmark (benches/c_vs_rust.rs): a long-lived C client that
 * times round trips on request, so the driver can interleave it with the Rust client.
 *
 *   bench_client ELEMENTS PROGRAM [ARGS...]
 *
 * Spawns PROGRAM with pp_spawn; then, for each line "K" on stdin, makes K calls of ELEMENTS
 * doubles, timing each around pp_call_f64 with CLOCK_MONOTONIC, and answers one line: the
 * median round trip in ns. At end of input it closes the peer and exits 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peerpipe.h"

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_client ELEMENTS PROGRAM [ARGS...]\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10);
    double *in = calloc(n, sizeof *in), *out = calloc(n, sizeof *out);
    pp_peer *peer = NULL;
    if (in == NULL || out == NULL) return 2;
    for (size_t i = 0; i < n; i++) in[i] = 0.5 * (double)i;
    int rc = pp_spawn((const char *const *)&argv[2], (size_t)(argc - 2), &peer);
    if (rc != PP_OK) {
        fprintf(stderr, "bench_client: pp_spawn: %s\n", pp_last_error());
        return 2;
    }
    char line[64];
    while (fgets(line, sizeof line, stdin) != NULL) {
        size_t calls = strtoul(line, NULL, 10);
        uint64_t *rtt = calloc(calls ? calls : 1, sizeof *rtt);
        if (rtt == NULL) return 2;
        for (size_t c = 0; c < calls; c++) {
            uint64_t start = now_ns();
            rc = pp_call_f64(peer, in, n, out, n, NULL);
            rtt[c] = now_ns() - start;
            if (rc != PP_OK) {
                fprintf(stderr, "bench_client: pp_call_f64: %s\n", pp_last_error());
                return 2;
            }
        }
        qsort(rtt, calls, sizeof *rtt, by_value);
        printf("%" PRIu64 "\n", calls ? rtt[calls / 2] : 0);
        fflush(stdout);
        free(rtt);
    }
    rc = pp_close(peer);
    free(in);
    free(out);
    return rc == PP_OK ? 0 : 2;
}
