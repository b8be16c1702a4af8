/* Reaches every PP_E* code on purpose (PP_EPANIC and PP_EINTR excepted: only a bug in the
 * library can cause the one, no function of the C ABI is interruptible yet for the other; Rust
 * unit tests reach them through the guard and the kind table; PP_ESHAPE and PP_EUNSUPPORTED
 * are reached by tests/c/parts.c) and prints one line per case:
 *   LABEL CODE_NAME message
 * tests/errors.rs checks each line.
 *
 *   errors PEER_EXE SELF_EXE         run every case
 *   errors serve                     be a C server whose handler returns 7 for 1 element,
 *                                    sleeps 500 ms for 2, and echoes anything else
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "code_names.h"
#include "peerpipe.h"

static void report(const char *label, int code) {
    printf("%s %s %s\n", label, name_of(code), pp_last_error());
    fflush(stdout);
}

static int picky(void *user, const double *in, size_t n, double *out) {
    (void)user;
    if (n == 1) return 7;
    if (n == 2) {
        struct timespec pause = {0, 500 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    memcpy(out, in, n * sizeof *in);
    return 0;
}

static int serve(void) {
    pp_options *options = NULL;
    if (pp_options_new(&options) != PP_OK) return 2;
    pp_options_set_handler_name(options, "picky");
    int rc = pp_serve_stdio_f64_with(options, picky, NULL);
    pp_options_free(options);
    if (rc != PP_OK) fprintf(stderr, "errors serve: %s\n", pp_last_error());
    return rc == PP_OK ? 0 : 2;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "serve") == 0) return serve();
    if (argc != 3) {
        fprintf(stderr, "usage: errors PEER_EXE SELF_EXE | errors serve\n");
        return 2;
    }
    const char *peer_exe = argv[1], *self_exe = argv[2];
    pp_peer *peer = (pp_peer *)&peer_exe; /* not NULL: failures must set it to NULL */
    double in[500] = {0}, out[501] = {0};
    pp_timing timing;

    /* PP_EINVAL: NULLs, zero argc, misaligned and overlapping buffers, bad option values. */
    report("spawn-null-argv", pp_spawn(NULL, 1, &peer));
    printf("out-cleared %s\n", peer == NULL ? "yes" : "no");
    const char *no_args[] = {peer_exe};
    report("spawn-argc-0", pp_spawn(no_args, 0, &peer));
    report("spawn-null-out", pp_spawn(no_args, 1, NULL));
    report("call-null-peer", pp_call_f64(NULL, in, 3, out, 3, &timing));
    report("timeout-null-peer", pp_set_timeout_ns(NULL, 1));
    report("serve-null-handler", pp_serve_stdio_f64(NULL, NULL));
    pp_options *options = NULL;
    pp_options_new(&options);
    report("wait-sleepy", pp_options_set_wait(options, "sleepy"));
    report("transport-shm", pp_options_set_transport(options, "shm"));
    report("max-frame-0", pp_options_set_max_frame_bytes(options, 0));
    report("options-null", pp_options_set_timeout_ns(NULL, 5));
    report("wait-ok", pp_options_set_wait(options, "hybrid:20us"));

    const char *echo[] = {peer_exe, "--role", "server", "--handler", "echo"};
    report("spawn-echo", pp_spawn(echo, 5, &peer));
    report("call-null-in", pp_call_f64(peer, NULL, 3, out, 3, NULL));
    report("call-misaligned", pp_call_f64(peer, (const double *)((char *)in + 1), 3, out, 3, NULL));
    report("call-overlap", pp_call_f64(peer, in, 4, in + 2, 4, NULL));
    report("call-ok-after-einval", pp_call_f64(peer, in, 3, out, 3, &timing));
    report("call-empty", pp_call_f64(peer, NULL, 0, NULL, 0, NULL));

    /* PP_EINVAL before anything is sent: a reply buffer of 4 for a request of 3; the peer
       stays usable. */
    report("call-length-mismatch", pp_call_f64(peer, in, 3, out, 4, NULL));
    report("call-ok-after-length-mismatch", pp_call_f64(peer, in, 3, out, 3, NULL));
    report("close-failed", pp_close(peer));
    report("close-null", pp_close(NULL));

    /* PP_ENOTFOUND: no such program. */
    const char *missing[] = {"/nonexistent/peerpipe-server"};
    report("spawn-missing", pp_spawn(missing, 1, &peer));

    /* PP_EIO: a program that exists but cannot be executed. */
    const char *not_executable[] = {"/etc/passwd"};
    report("spawn-not-executable", pp_spawn(not_executable, 1, &peer));

    /* PP_EEXITED: a server that exits at once. */
    report("spawn-exit-3", pp_spawn_shell("exit 3", &peer));

    /* PP_ETIMEDOUT: a server that never says HELLO, with a 200 ms timeout. */
    pp_options_set_timeout_ns(options, 200u * 1000 * 1000);
    report("spawn-silent", pp_spawn_shell_with("exec sleep 5", options, &peer));

    /* PP_EPROTO: a server that sends bytes that are no frame. */
    report("spawn-garbage",
           pp_spawn_shell("printf 'this is not a peerpipe frame at all'; exec sleep 5", &peer));

    /* PP_ETOOLARGE: 500 doubles to a server that takes at most 64 bytes; then a small call. */
    const char *small[] = {peer_exe, "--role", "server", "--max-frame-bytes", "64"};
    report("spawn-small", pp_spawn(small, 5, &peer));
    report("call-too-large", pp_call_f64(peer, in, 500, out, 500, NULL));
    report("call-small-after", pp_call_f64(peer, in, 8, out, 8, NULL));
    report("close-small", pp_close(peer));

    /* PP_EREMOTE from a C handler returning 7, the conversation going on; then
     * PP_ETIMEDOUT from pp_set_timeout_ns on a live peer whose handler sleeps. */
    const char *picky_server[] = {self_exe, "serve"};
    report("spawn-picky", pp_spawn(picky_server, 2, &peer));
    report("call-rejected", pp_call_f64(peer, in, 1, out, 1, NULL));
    in[0] = 42.0;
    report("call-after-rejected", pp_call_f64(peer, in, 3, out, 3, NULL));
    printf("echoed %s\n", out[0] == 42.0 ? "yes" : "no");
    report("set-timeout", pp_set_timeout_ns(peer, 100u * 1000 * 1000));
    report("call-slow", pp_call_f64(peer, in, 2, out, 2, NULL));
    /* PP_ECLOSED: the timeout ended the connection; every later call says why. */
    report("call-after-timeout", pp_call_f64(peer, in, 2, out, 2, NULL));
    report("close-picky", pp_close(peer));

    pp_options_free(options);
    for (int code = 0; code >= -14; code--) printf("strerror %d %s\n", code, pp_strerror(code));
    return 0;
}
