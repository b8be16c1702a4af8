/* A C server of peerpipe: echoes every request back, bit for bit, from a C handler.
 *
 *   server [--transport pipe|shm-sem|shm-ring|tcp] [--wait W] [--dtype f64|f32] [--name NAME]
 *
 * It must be started by a peerpipe client, which speaks to it on its stdin and stdout:
 *   peer --spawn "path/to/server" --sizes 500 --dtype f64
 *   peer --spawn "path/to/server --transport shm-ring" --transport shm-ring --sizes 500
 * Told no transport, it serves the client's: a pipe, or the shared region the client hands it
 * as its stdin. Over tcp it must be told (its stdin is then a pipe): it listens and announces
 * its port on stdout. Exits 0 after the client's BYE, 2 on an error (message on stderr).
 */
#include <stdio.h>
#include <string.h>

#include "peerpipe.h"

static int echo_f64(void *user, const double *in, size_t n, double *out) {
    (void)user;
    if (n > 0) memcpy(out, in, n * sizeof *in);
    return 0;
}

static int echo_f32(void *user, const float *in, size_t n, float *out) {
    (void)user;
    if (n > 0) memcpy(out, in, n * sizeof *in);
    return 0;
}

static int fail(const char *what, int code) {
    fprintf(stderr, "server: %s: %s (%d): %s\n", what, pp_strerror(code), code, pp_last_error());
    return 2;
}

int main(int argc, char **argv) {
    pp_options *options = NULL;
    int rc = pp_options_new(&options);
    if (rc != PP_OK) return fail("pp_options_new", rc);
    const char *dtype = "f64";
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (value == NULL) {
            fprintf(stderr, "server: %s needs a value\n", flag);
            pp_options_free(options);
            return 2;
        }
        i++;
        if (strcmp(flag, "--transport") == 0) rc = pp_options_set_transport(options, value);
        else if (strcmp(flag, "--wait") == 0) rc = pp_options_set_wait(options, value);
        else if (strcmp(flag, "--name") == 0) rc = pp_options_set_handler_name(options, value);
        else if (strcmp(flag, "--dtype") == 0) dtype = value;
        else {
            fprintf(stderr, "server: unknown flag %s\n", flag);
            pp_options_free(options);
            return 2;
        }
        if (rc != PP_OK) {
            pp_options_free(options);
            return fail(flag, rc);
        }
    }
    if (strcmp(dtype, "f32") == 0) rc = pp_serve_stdio_f32_with(options, echo_f32, NULL);
    else rc = pp_serve_stdio_f64_with(options, echo_f64, NULL);
    pp_options_free(options);
    return rc == PP_OK ? 0 : fail("pp_serve_stdio", rc);
}
