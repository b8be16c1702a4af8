/* Several typed parts per call: a non-autonomous right-hand side rhs(t, y, p) and its
 * Jacobian jac(t, y, p), served by name from one C server and called from a C client.
 *
 *   parts [--n N] [--steps K] [--transport T]      spawn "parts serve" (this program) and
 *                                                   call it: rhs and jac, then K Euler steps
 *   parts serve [--transport T]                     be the server of rhs and jac
 *
 * The model, n >= 4 components and 8 parameters p:
 *   dy_i/dt = p4 (y_{i+1} - y_{i-2}) y_{i-1} - (p0 + p3 t) y_i + p1 + p2 t + p_{5 + i mod 3}
 * (indices mod n). The client checks every reply bit for bit against the same functions
 * computed locally. Exits 0 when all match, 1 when one does not, 2 on a peerpipe error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerpipe.h"

#define N_PARAMS 8

static void rhs(double t, const double *y, size_t n, const double *p, double *dy) {
    double damping = p[0] + p[3] * t, forcing = p[1] + p[2] * t;
    for (size_t i = 0; i < n; i++) {
        size_t next = (i + 1) % n, before = (i + n - 2) % n, prev = (i + n - 1) % n;
        dy[i] = p[4] * (y[next] - y[before]) * y[prev] - damping * y[i] + forcing + p[5 + i % 3];
    }
}

/* The Jacobian d(dy_i)/d(y_j), row-major n x n, into a zeroed J. */
static void jac(double t, const double *y, size_t n, const double *p, double *J) {
    double damping = p[0] + p[3] * t;
    for (size_t i = 0; i < n; i++) {
        size_t next = (i + 1) % n, before = (i + n - 2) % n, prev = (i + n - 1) % n;
        double *row = J + i * n;
        row[next] += p[4] * y[prev];
        row[before] -= p[4] * y[prev];
        row[prev] += p[4] * (y[next] - y[before]);
        row[i] -= damping;
    }
}

/* ---- the server ---------------------------------------------------------------------- */

/* Reads t, y and p from the call; on a wrong shape makes the reply an ERROR saying so. */
static int arguments(const pp_call *call, pp_reply *reply, const char *name, double *t,
                     const double **y, uint64_t *n, const double **p) {
    uint64_t nt = 0, np = 0;
    const double *tp;
    if (pp_call_count(call) != 3) {
        char message[128];
        snprintf(message, sizeof message, "%s(t, y, p): expected 3 parts, found %zu", name,
                 pp_call_count(call));
        pp_reply_error(reply, message);
        return 1;
    }
    /* pp_call_part_f64 names the part and what it found; the ERROR carries that message. */
    if (!(tp = pp_call_part_f64(call, 0, &nt)) || !(*y = pp_call_part_f64(call, 1, n)) ||
        !(*p = pp_call_part_f64(call, 2, &np)))
        return 1;
    if (nt != 1 || *n < 4 || np != N_PARAMS) {
        char message[160];
        snprintf(message, sizeof message,
                 "%s(t, y, p): expected t of 1 value, y of at least 4 and p of %d; found %llu, "
                 "%llu and %llu",
                 name, N_PARAMS, (unsigned long long)nt, (unsigned long long)*n,
                 (unsigned long long)np);
        pp_reply_error(reply, message);
        return 1;
    }
    *t = tp[0];
    return 0;
}

static int serve_rhs(void *user, const pp_call *call, pp_reply *reply) {
    (void)user;
    double t;
    const double *y, *p;
    uint64_t n;
    if (arguments(call, reply, "rhs", &t, &y, &n, &p) != 0) return 1;
    double *dy = pp_reply_f64(reply, n);
    if (dy == NULL) return 1;
    rhs(t, y, n, p, dy);
    return 0;
}

static int serve_jac(void *user, const pp_call *call, pp_reply *reply) {
    (void)user;
    double t;
    const double *y, *p;
    uint64_t n;
    if (arguments(call, reply, "jac", &t, &y, &n, &p) != 0) return 1;
    double *J = pp_reply_f64_matrix(reply, n, n); /* zeroed */
    if (J == NULL) return 1;
    jac(t, y, n, p, J);
    return 0;
}

static int fail(const char *what, int code) {
    fprintf(stderr, "parts: %s: %s (%d): %s\n", what, pp_strerror(code), code, pp_last_error());
    return 2;
}

static int serve(const char *transport) {
    pp_functions *functions = NULL;
    pp_options *options = NULL;
    int rc = pp_functions_new("c-ode", &functions);
    if (rc == PP_OK) rc = pp_functions_add(functions, "rhs", serve_rhs, NULL);
    if (rc == PP_OK) rc = pp_functions_add(functions, "jac", serve_jac, NULL);
    if (rc == PP_OK) rc = pp_options_new(&options);
    if (rc == PP_OK && transport != NULL) rc = pp_options_set_transport(options, transport);
    if (rc == PP_OK) rc = pp_serve_stdio_functions(functions, options);
    if (rc != PP_OK) fail("serving", rc);
    pp_options_free(options);
    pp_functions_free(functions);
    return rc == PP_OK ? 0 : 2;
}

/* ---- the client ---------------------------------------------------------------------- */

static int same(const double *a, const double *b, size_t n, const char *what) {
    if (memcmp(a, b, n * sizeof *a) == 0) return 1;
    fprintf(stderr, "parts: %s differs from the local computation\n", what);
    return 0;
}

static int client(const char *self, size_t n, int steps, const char *transport) {
    pp_options *options = NULL;
    pp_peer *peer = NULL;
    int rc = pp_options_new(&options);
    const char *argv[] = {self, "serve", "--transport", transport};
    if (rc == PP_OK && transport != NULL) rc = pp_options_set_transport(options, transport);
    if (rc == PP_OK) rc = pp_spawn_with(argv, transport != NULL ? 4 : 2, options, &peer);
    pp_options_free(options);
    if (rc != PP_OK) return fail("pp_spawn_with", rc);

    double t = 0.25, p[N_PARAMS] = {0.5, 8.0, 0.75, -0.125, 1.0, 0.01, -0.02, 0.03};
    double *y = malloc(n * sizeof *y), *dy = malloc(n * sizeof *dy),
           *local = calloc(n * n, sizeof *local), *J = malloc(n * n * sizeof *J);
    int ok = y != NULL && dy != NULL && local != NULL && J != NULL, status = 0;
    for (size_t i = 0; ok && i < n; i++) y[i] = 8.0 + (double)(i % 7) * 0.125 - (double)i / n;

    /* rhs(t, y, p): three parts out, one back, its shape fixed by the caller. */
    pp_part args[3] = {
        {PP_DTYPE_F64, 0, 1, &t},
        {PP_DTYPE_F64, 0, n, y},
        {PP_DTYPE_F64, 0, N_PARAMS, p},
    };
    pp_part_out dy_out = {PP_DTYPE_F64, 0, n, dy};
    if (ok && (rc = pp_call_parts(peer, "rhs", args, 3, &dy_out, 1, NULL)) != PP_OK)
        status = fail("pp_call_parts rhs", rc);
    if (ok && status == 0) {
        rhs(t, y, n, p, local);
        if (!same(dy, local, n, "rhs")) status = 1;
        else printf("rhs: %zu values bit-exact\n", n);
    }

    /* jac(t, y, p): the same arguments, an n x n matrix back. */
    pp_part_out jac_out = {PP_DTYPE_F64, (uint32_t)n, n * n, J};
    if (ok && status == 0 && (rc = pp_call_parts(peer, "jac", args, 3, &jac_out, 1, NULL)) != PP_OK)
        status = fail("pp_call_parts jac", rc);
    if (ok && status == 0) {
        memset(local, 0, n * n * sizeof *local);
        jac(t, y, n, p, local);
        if (!same(J, local, n * n, "jac")) status = 1;
        else printf("jac: %zux%zu bit-exact\n", n, n);
    }

    /* Explicit Euler steps with the remote rhs, next to the same steps done locally. */
    double h = 1.0 / 1024, *mine = local; /* reused: n values */
    if (ok && status == 0) memcpy(mine, y, n * sizeof *y);
    for (int step = 0; ok && status == 0 && step < steps; step++) {
        double now = t + step * h;
        args[0].data = &now;
        if ((rc = pp_call_parts(peer, "rhs", args, 3, &dy_out, 1, NULL)) != PP_OK) {
            status = fail("pp_call_parts rhs (Euler step)", rc);
            break;
        }
        for (size_t i = 0; i < n; i++) y[i] += h * dy[i];
        rhs(now, mine, n, p, J); /* J: scratch for the local derivative */
        for (size_t i = 0; i < n; i++) mine[i] += h * J[i];
    }
    if (ok && status == 0 && steps > 0) {
        if (!same(y, mine, n, "the Euler trajectory")) status = 1;
        else printf("euler: %d steps bit-exact\n", steps);
    }
    if (!ok) {
        fprintf(stderr, "parts: out of memory\n");
        status = 2;
    }
    free(y), free(dy), free(local), free(J);
    rc = pp_close(peer);
    if (rc != PP_OK && status == 0) status = fail("pp_close", rc);
    return status;
}

int main(int argc, char **argv) {
    const char *transport = NULL;
    size_t n = 500;
    int steps = 20, serving = argc > 1 && strcmp(argv[1], "serve") == 0;
    for (int i = 1 + serving; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "parts: %s needs a value\n", argv[i]);
            return 2;
        }
        if (strcmp(argv[i], "--transport") == 0) transport = argv[i + 1];
        else if (!serving && strcmp(argv[i], "--n") == 0) n = strtoul(argv[i + 1], NULL, 10);
        else if (!serving && strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "parts: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    if (serving) return serve(transport);
    if (n < 4 || n > 2048) { /* the n x n Jacobian stays below the 64 MiB frame limit */
        fprintf(stderr, "parts: --n must be 4 to 2048\n");
        return 2;
    }
    return client(argv[0], n, steps, transport);
}
