/* A C client that leaves its peers to the operating system: it spawns `peer --role server`
 * over a pipe and over shared memory (shm-ring), makes a few calls on each, and then ends
 * without pp_close — by returning from main (`exit`), by abort() (`abort`, a crash), or by
 * calling until it is killed (`calls`, for SIGKILL at any moment).
 *
 *   leftover exit|abort|calls PEER
 *
 * Prints `ready` once both peers have answered. Exits 2 on a peerpipe error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerpipe.h"

static int fail(const char *what, int code) {
    fprintf(stderr, "leftover: %s: %s: %s\n", what, pp_strerror(code), pp_last_error());
    return 2;
}

static int spawn(const char *peer_exe, const char *transport, pp_peer **out) {
    const char *argv[] = {peer_exe, "--role", "server", "--handler", "echo", "--transport",
                          transport};
    pp_options *options = NULL;
    int rc = pp_options_new(&options);
    if (rc != PP_OK) return fail("pp_options_new", rc);
    rc = pp_options_set_transport(options, transport);
    if (rc == PP_OK) rc = pp_spawn_with(argv, sizeof argv / sizeof argv[0], options, out);
    pp_options_free(options);
    return rc == PP_OK ? PP_OK : fail(transport, rc);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: leftover exit|abort|calls PEER\n");
        return 2;
    }
    pp_peer *pipe = NULL, *ring = NULL;
    if (spawn(argv[2], "pipe", &pipe) != PP_OK || spawn(argv[2], "shm-ring", &ring) != PP_OK)
        return 2;
    double in[500], out[500];
    for (size_t i = 0; i < 500; i++) in[i] = (double)i;
    for (unsigned long call = 0;; call++) {
        int rc = pp_call_f64(pipe, in, 500, out, 500, NULL);
        if (rc == PP_OK) rc = pp_call_f64(ring, in, 500, out, 500, NULL);
        if (rc != PP_OK) return fail("pp_call_f64", rc);
        if (call == 10) {
            printf("ready\n");
            fflush(stdout);
            if (strcmp(argv[1], "exit") == 0) return 0; /* no pp_close */
            if (strcmp(argv[1], "abort") == 0) abort();
        }
    }
}
