/* A C program whose model is a Python function: spawns `PYTHON model.py` (capi/examples/
 * model.py: peerpipe.serve(lambda y: -K * y), K = 2) and integrates dy/dt = -K y with 1000
 * explicit Euler steps of 200 doubles, one call per step, then repeats the integration with
 * the same model in C and checks the two trajectories are bit for bit the same.
 *
 *   python_model PYTHON MODEL_PY       e.g. python_model ~/venv/bin/python model.py
 *
 * PYTHON is the interpreter that has the peerpipe package (a venv's bin/python, by path: a
 * bare name is looked up on PATH). Prints the first and the second call's round trip, then the
 * median one. Exits 0 when the trajectories agree, 1 when they do not, 2 on a peerpipe error
 * (its message on stderr).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerpipe.h"

#define N 200
#define STEPS 1000
#define K 2.0
#define H 0.001

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: python_model PYTHON MODEL_PY\n");
        return 2;
    }
    const char *server[] = {argv[1], argv[2]};
    pp_peer *peer;
    int rc = pp_spawn(server, 2, &peer); /* returns after the server's HELLO */
    if (rc != PP_OK) {
        fprintf(stderr, "python_model: spawn: %s: %s\n", pp_strerror(rc), pp_last_error());
        return 2;
    }
    static double y[N], dy[N], local[N];
    static uint64_t round_trips[STEPS];
    for (int i = 0; i < N; i++)
        y[i] = local[i] = (double)i / N;
    for (int step = 0; step < STEPS; step++) {
        pp_timing timing;
        rc = pp_call_f64(peer, y, N, dy, N, &timing); /* dy = model(y), in Python */
        if (rc != PP_OK) {
            fprintf(stderr, "python_model: step %d: %s: %s\n", step, pp_strerror(rc),
                    pp_last_error());
            pp_close(peer);
            return 2;
        }
        round_trips[step] = timing.round_trip_ns;
        for (int i = 0; i < N; i++)
            y[i] += H * dy[i];
    }
    rc = pp_close(peer); /* BYE, reap, free */
    if (rc != PP_OK) {
        fprintf(stderr, "python_model: close: %s: %s\n", pp_strerror(rc), pp_last_error());
        return 2;
    }
    printf("first call %" PRIu64 " ns\n", round_trips[0]);
    printf("second call %" PRIu64 " ns\n", round_trips[1]);
    qsort(round_trips, STEPS, sizeof round_trips[0], cmp_u64);
    printf("median call %" PRIu64 " ns over %d steps\n", round_trips[STEPS / 2], STEPS);

    for (int step = 0; step < STEPS; step++)
        for (int i = 0; i < N; i++)
            local[i] += H * (-K * local[i]); /* the same model, in this process */
    if (memcmp(y, local, sizeof y) != 0) {
        fprintf(stderr, "python_model: the trajectory differs from the local one\n");
        return 1;
    }
    printf("y[%d] = %.17g after %d steps, bit for bit the local solve\n", N - 1, y[N - 1], STEPS);
    return 0;
}
