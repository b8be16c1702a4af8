/* A server started by a launcher's command line over tcp, seen from C: the server announces
 * its own address (no --listen), and the frames go straight to it.
 *
 *   tcp_spawn LINE   spawns the shell line LINE (e.g. `srun -w n1 -N1 -n1 peer --role server
 *                    --transport tcp`) with the tcp transport, prints "spawned", waits for a
 *                    line on stdin (the caller looks where the server runs meanwhile), then
 *                    sends 500 and 65,536 f64 to it 20 times each and prints "bit for bit"
 *                    when every reply of its echo handler equals its request
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerpipe.h"

static int fail(const char *what, int rc) {
    fprintf(stderr, "%s: %s: %s\n", what, pp_strerror(rc), pp_last_error());
    return 1;
}

/* Sends `n` f64 20 times; 1 when every reply equals the request, 0 when one differs, -1 (the
 * error printed) when a call fails. */
static int echoes(pp_peer *peer, size_t n) {
    double *x = malloc(n * sizeof *x);
    double *y = malloc(n * sizeof *y);
    int same = -1;
    if (x != NULL && y != NULL) {
        for (size_t i = 0; i < n; i++) x[i] = (double)i * 0.37 - 1e3 / (double)(i + 1);
        same = 1;
        for (int round = 0; round < 20 && same == 1; round++) {
            int rc = pp_call_f64(peer, x, n, y, n, NULL);
            if (rc != PP_OK) {
                fail("pp_call_f64", rc);
                same = -1;
            } else if (memcmp(x, y, n * sizeof *x) != 0) {
                same = 0;
            }
        }
    }
    free(x);
    free(y);
    return same;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: tcp_spawn LINE\n");
        return 2;
    }
    pp_options *options = NULL;
    int rc = pp_options_new(&options);
    if (rc != PP_OK) return fail("pp_options_new", rc);
    rc = pp_options_set_transport(options, "tcp");
    if (rc == PP_OK) rc = pp_options_set_timeout_ns(options, 20000000000ull);
    if (rc != PP_OK) {
        pp_options_free(options);
        return fail("pp_options_set_*", rc);
    }
    pp_peer *peer = NULL;
    rc = pp_spawn_shell_with(argv[1], options, &peer);
    pp_options_free(options);
    if (rc != PP_OK) return fail("pp_spawn_shell_with", rc);
    printf("spawned\n");
    fflush(stdout);
    char go[8];
    if (fgets(go, sizeof go, stdin) == NULL) {
        pp_close(peer);
        return 1;
    }
    int same = 1;
    static const size_t sizes[] = {500, 65536};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && same == 1; s++) {
        same = echoes(peer, sizes[s]);
    }
    rc = pp_close(peer);
    if (rc != PP_OK) return fail("pp_close", rc);
    if (same != 1) return 1;
    printf("bit for bit\n");
    return 0;
}
