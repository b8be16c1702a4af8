/* Calls of several typed parts from C, case by case, printing one line per case:
 *   LABEL CODE_NAME message
 * and a few `NAME yes|no` checks; tests/parts.rs checks each line.
 *
 *   parts SELF_EXE              run every case (the servers are this program)
 *   parts serve [NAME]          be a C server of the functions below, announcing NAME (set in
 *                               its options) instead of "c-cases"
 *   parts v1                    be a server of wire format v1 without PARTS, written with raw
 *                               reads and writes: it echoes DATA, except that a request of 5
 *                               elements gets 4 back (a reply of another shape)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "code_names.h"
#include "peerpipe.h"

static void report(const char *label, int code) {
    printf("%s %s %s\n", label, name_of(code), pp_last_error());
    fflush(stdout);
}

static void check(const char *label, int ok) {
    printf("%s %s\n", label, ok ? "yes" : "no");
    fflush(stdout);
}

static size_t width_of(int dtype) {
    return dtype == PP_DTYPE_F32 ? 4 : dtype == PP_DTYPE_BYTES ? 1 : 8;
}

/* ---- the server of functions ------------------------------------------------------------ */

/* observe(x): 100 values in, 3 out: their sum, least and greatest. */
static int observe(void *user, const pp_call *call, pp_reply *reply) {
    (void)user;
    uint64_t n = 0;
    const double *x = pp_call_part_f64(call, 0, &n);
    if (x == NULL) return 1;
    if (n == 0) {
        pp_reply_error(reply, "observe: expected at least 1 value");
        return 1;
    }
    double *out = pp_reply_f64(reply, 3);
    if (out == NULL) return 1;
    out[0] = 0.0, out[1] = x[0], out[2] = x[0];
    for (uint64_t i = 0; i < n; i++) {
        out[0] += x[i];
        if (x[i] < out[1]) out[1] = x[i];
        if (x[i] > out[2]) out[2] = x[i];
    }
    return 0;
}

/* wrong: always 3 values back, whatever the caller expects. */
static int wrong(void *user, const pp_call *call, pp_reply *reply) {
    (void)user, (void)call;
    return pp_reply_f64(reply, 3) == NULL;
}

static int refuse(void *user, const pp_call *call, pp_reply *reply) {
    (void)user, (void)call;
    pp_reply_error(reply, "refuse: no, thank you");
    return 1;
}

static int code(void *user, const pp_call *call, pp_reply *reply) {
    (void)user, (void)call, (void)reply;
    return 5;
}

/* typed: insists on f64 and gives up, without a message of its own, when it is not. */
static int typed(void *user, const pp_call *call, pp_reply *reply) {
    (void)user;
    const double *x = pp_call_part_f64(call, 0, NULL);
    if (x == NULL) return 1;
    double *out = pp_reply_f64(reply, 1);
    if (out == NULL) return 1;
    out[0] = x[0];
    return 0;
}

/* echo: every part back as it came, whatever its dtype and shape. */
static int echo(void *user, const pp_call *call, pp_reply *reply) {
    (void)user;
    for (size_t i = 0; i < pp_call_count(call); i++) {
        pp_part part;
        if (pp_call_part(call, i, &part) != PP_OK) return 1;
        void *out = pp_reply_part(reply, part.dtype, part.cols, part.count);
        if (out == NULL) return 1;
        if (part.count > 0) memcpy(out, part.data, part.count * width_of(part.dtype));
    }
    return 0;
}

/* many: asks for 65 parts and returns 0 anyway: the reply must still be an ERROR. */
static int many(void *user, const pp_call *call, pp_reply *reply) {
    (void)user, (void)call;
    for (int i = 0; i < 65; i++) pp_reply_f64(reply, 1);
    return 0;
}

/* badpart: a part of an unknown dtype, then 0: an ERROR too. */
static int badpart(void *user, const pp_call *call, pp_reply *reply) {
    (void)user, (void)call;
    pp_reply_part(reply, 9, 0, 1);
    return 0;
}

/* zerocols: a matrix of no columns, then 0: an ERROR. */
static int zerocols(void *user, const pp_call *call, pp_reply *reply) {
    (void)user, (void)call;
    pp_reply_f64_matrix(reply, 2, 0);
    return 0;
}

/* probe: the accessors' refusals, as codes (i64) and messages (bytes, one per line); a
 * refused look-up that the function recovers from does not spoil its reply. */
static int probe(void *user, const pp_call *call, pp_reply *reply) {
    (void)user;
    char text[2048] = "";
    int64_t codes[8];
    pp_part part;
#define NOTE(i, expr)                                                                     \
    do {                                                                                  \
        codes[i] = (int64_t)(expr);                                                       \
        strncat(text, pp_last_error(), sizeof text - strlen(text) - 2);                   \
        strcat(text, "\n");                                                               \
    } while (0)
    NOTE(0, pp_call_part(NULL, 0, &part));
    NOTE(1, pp_call_part(call, 7, &part));
    NOTE(2, pp_call_part(call, 0, NULL));
    NOTE(3, pp_call_count(NULL));
    NOTE(4, pp_call_part_f64(call, 1, NULL) == NULL);
    NOTE(5, pp_reply_f64(NULL, 1) == NULL);
    NOTE(6, pp_reply_error(NULL, "x"));
    NOTE(7, pp_reply_f64_matrix(NULL, 2, 0) == NULL);
#undef NOTE
    int64_t *out = pp_reply_i64(reply, 8);
    uint8_t *bytes = pp_reply_bytes(reply, strlen(text));
    if (out == NULL || bytes == NULL) return 1;
    memcpy(out, codes, sizeof codes);
    memcpy(bytes, text, strlen(text));
    return 0;
}

static int serve(const char *name) {
    static const struct {
        const char *name;
        pp_function function;
    } table[] = {
        {"observe", observe}, {"wrong", wrong}, {"refuse", refuse}, {"code", code},
        {"typed", typed},     {"echo", echo},   {"many", many},     {"badpart", badpart},
        {"zerocols", zerocols}, {"probe", probe},
    };
    pp_functions *functions = NULL;
    pp_options *options = NULL;
    int rc = pp_functions_new("c-cases", &functions);
    for (size_t i = 0; rc == PP_OK && i < sizeof table / sizeof table[0]; i++)
        rc = pp_functions_add(functions, table[i].name, table[i].function, NULL);
    if (rc == PP_OK) rc = pp_options_new(&options);
    if (rc == PP_OK && name != NULL) rc = pp_options_set_handler_name(options, name);
    if (rc == PP_OK) rc = pp_serve_stdio_functions(functions, options);
    if (rc != PP_OK) fprintf(stderr, "parts serve: %s\n", pp_last_error());
    pp_options_free(options);
    pp_functions_free(functions);
    return rc == PP_OK ? 0 : 2;
}

/* ---- a server of v1 without PARTS: raw frames ------------------------------------------- */

static int read_all(int fd, void *buffer, size_t n) {
    for (size_t done = 0; done < n;) {
        ssize_t got = read(fd, (char *)buffer + done, n - done);
        if (got <= 0) return -1;
        done += (size_t)got;
    }
    return 0;
}

static int write_all(int fd, const void *buffer, size_t n) {
    for (size_t done = 0; done < n;) {
        ssize_t put = write(fd, (const char *)buffer + done, n - done);
        if (put <= 0) return -1;
        done += (size_t)put;
    }
    return 0;
}

static void put_u64(uint8_t *at, uint64_t value) {
    for (int i = 0; i < 8; i++) at[i] = (uint8_t)(value >> (8 * i));
}

static uint64_t get_u64(const uint8_t *at) {
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) value |= (uint64_t)at[i] << (8 * i);
    return value;
}

/* Writes a frame: header (kind, dtype, seq, count), payload, zero padding to 8 bytes. */
static int send_frame(uint8_t kind, uint8_t dtype, uint64_t seq, uint64_t count,
                      const void *payload, size_t len) {
    static const uint8_t zeros[8] = {0};
    uint8_t header[32] = {'P', 'E', 'E', 'R', 1, kind, dtype, 0};
    put_u64(header + 8, seq), put_u64(header + 16, count), put_u64(header + 24, 0);
    return write_all(1, header, 32) || write_all(1, payload, len) ||
           write_all(1, zeros, (8 - len % 8) % 8);
}

static int v1_server(void) {
    static uint8_t payload[1 << 20];
    const char *hello = "version=1\nmax_frame_bytes=1048576\nrole=server\nhandler=v1-echo\n"
                        "impl=v1-cases 1.0\n";
    if (send_frame(1, 0, 0, strlen(hello), hello, strlen(hello))) return 3;
    for (;;) {
        uint8_t header[32];
        if (read_all(0, header, 32) != 0) return 0; /* end of stream */
        uint8_t kind = header[5], dtype = header[6];
        uint64_t seq = get_u64(header + 8), count = get_u64(header + 16);
        size_t width = kind == 2 ? width_of(dtype) : 1, len = count * width;
        if (len > sizeof payload) return 4;
        if (read_all(0, payload, len + (8 - len % 8) % 8) != 0) return 5;
        if (kind == 1) continue; /* the client's HELLO */
        if (kind == 4) return send_frame(4, 0, seq, 0, payload, 0) ? 6 : 0; /* BYE */
        if (kind != 2) return 7;
        uint64_t back = count == 5 ? 4 : count;
        if (send_frame(2, dtype, seq, back, payload, back * width)) return 8;
    }
}

/* ---- the client ------------------------------------------------------------------------- */

static double in100[100], out3[3], out500[500];

/* observe(in100) into out3: the call that must work after every refusal. */
static int observe_call(pp_peer *peer) {
    pp_part in = {PP_DTYPE_F64, 0, 100, in100};
    pp_part_out out = {PP_DTYPE_F64, 0, 3, out3};
    return pp_call_parts(peer, "observe", &in, 1, &out, 1, NULL);
}

static void refusals(pp_peer *peer) {
    static pp_part lots[65];
    double buffer[8] = {0};
    pp_part in = {PP_DTYPE_F64, 0, 100, in100};
    pp_part_out out = {PP_DTYPE_F64, 0, 3, out3};
    report("null-peer", pp_call_parts(NULL, "observe", &in, 1, &out, 1, NULL));
    report("null-function", pp_call_parts(peer, NULL, &in, 1, &out, 1, NULL));
    report("null-in", pp_call_parts(peer, "observe", NULL, 1, &out, 1, NULL));
    report("null-out", pp_call_parts(peer, "observe", &in, 1, NULL, 1, NULL));
    for (int i = 0; i < 65; i++) lots[i] = in;
    report("too-many-parts", pp_call_parts(peer, "observe", lots, 65, &out, 1, NULL));
    report("too-many-out", pp_call_parts(peer, "observe", &in, 1, (pp_part_out *)lots, 65, NULL));
    pp_part bad = {9, 0, 3, buffer};
    report("unknown-dtype", pp_call_parts(peer, "observe", &bad, 1, &out, 1, NULL));
    pp_part rows = {PP_DTYPE_F64, 3, 7, buffer};
    report("not-whole-rows", pp_call_parts(peer, "observe", &rows, 1, &out, 1, NULL));
    pp_part null_data = {PP_DTYPE_F64, 0, 3, NULL};
    report("null-data", pp_call_parts(peer, "observe", &null_data, 1, &out, 1, NULL));
    pp_part misaligned = {PP_DTYPE_F64, 0, 3, (char *)buffer + 1};
    report("misaligned", pp_call_parts(peer, "observe", &misaligned, 1, &out, 1, NULL));
    pp_part_out onto_in = {PP_DTYPE_F64, 0, 3, in100 + 2};
    report("out-overlaps-in", pp_call_parts(peer, "observe", &in, 1, &onto_in, 1, NULL));
    pp_part_out twice[2] = {{PP_DTYPE_F64, 0, 3, out3}, {PP_DTYPE_BYTES, 0, 4, (char *)out3 + 20}};
    report("out-overlaps-out", pp_call_parts(peer, "observe", &in, 1, twice, 2, NULL));
    pp_part_out misaligned_out = {PP_DTYPE_I64, 0, 1, (char *)buffer + 4};
    report("misaligned-out", pp_call_parts(peer, "observe", &in, 1, &misaligned_out, 1, NULL));
    report("bad-name", pp_call_parts(peer, "no such", &in, 1, &out, 1, NULL));
    report("ok-after-refusals", observe_call(peer));
}

static void echoes(pp_peer *peer) {
    /* Every dtype, a matrix, an empty part; awkward values crossing bit for bit. */
    static const uint64_t f64_bits[4] = {0x7ff8dead0000beefu, 0x8000000000000000u, 1u,
                                         0xfff0000000000000u};
    static const uint32_t f32_bits[3] = {0x7fc0beefu, 0x80000000u, 0x00000001u};
    double m[6], m_back[6];
    float f[3], f_back[3];
    int64_t k[2] = {INT64_MIN, -1}, k_back[2];
    uint8_t b[5] = {0, 1, 0xfe, 0xff, 7}, b_back[5];
    memcpy(m, f64_bits, sizeof f64_bits), m[4] = 0.5, m[5] = -2.0;
    memcpy(f, f32_bits, sizeof f32_bits);
    pp_part in[5] = {
        {PP_DTYPE_F64, 3, 6, m},        {PP_DTYPE_F32, 0, 3, f}, {PP_DTYPE_I64, 0, 2, k},
        {PP_DTYPE_BYTES, 0, 5, b},      {PP_DTYPE_F64, 0, 0, NULL},
    };
    pp_part_out out[5] = {
        {PP_DTYPE_F64, 3, 6, m_back},   {PP_DTYPE_F32, 0, 3, f_back}, {PP_DTYPE_I64, 0, 2, k_back},
        {PP_DTYPE_BYTES, 0, 5, b_back}, {PP_DTYPE_F64, 0, 0, NULL},
    };
    report("echo", pp_call_parts(peer, "echo", in, 5, out, 5, NULL));
    check("echoed", memcmp(m, m_back, sizeof m) == 0 && memcmp(f, f_back, sizeof f) == 0 &&
                        memcmp(k, k_back, sizeof k) == 0 && memcmp(b, b_back, sizeof b) == 0);
    out[0].cols = 2; /* the same values as 3 rows of 2: another shape */
    report("echo-other-cols", pp_call_parts(peer, "echo", in, 5, out, 5, NULL));
    out[0].cols = 3;
    report("echo-other-parts", pp_call_parts(peer, "echo", in, 5, out, 4, NULL));

    /* A reply of any shape. */
    pp_parts_reply *reply = NULL;
    report("reply-new", pp_parts_reply_new(&reply));
    report("echo-any", pp_call_parts_any(peer, "echo", in, 5, reply, NULL));
    int same = pp_parts_reply_count(reply) == 5;
    for (size_t i = 0; same && i < 5; i++) {
        pp_part part;
        same = pp_parts_reply_part(reply, i, &part) == PP_OK && part.dtype == in[i].dtype &&
               part.cols == in[i].cols && part.count == in[i].count &&
               (part.count == 0 ||
                memcmp(part.data, in[i].data, part.count * width_of(part.dtype)) == 0);
    }
    check("any-shapes", same);
    pp_part part;
    report("reply-part-past-end", pp_parts_reply_part(reply, 5, &part));
    report("reply-part-null", pp_parts_reply_part(reply, 0, NULL));
    size_t none = pp_parts_reply_count(NULL);
    printf("reply-count-null %zu %s\n", none, pp_last_error());
    report("any-unknown", pp_call_parts_any(peer, "rhs2", in, 5, reply, NULL));
    check("any-unknown-empty", pp_parts_reply_count(reply) == 0);
    report("any-null-reply", pp_call_parts_any(peer, "echo", in, 5, NULL, NULL));
    pp_parts_reply_free(reply);
    pp_parts_reply_free(NULL);
}

static void remote_errors(pp_peer *peer) {
    pp_part in = {PP_DTYPE_F64, 0, 100, in100};
    pp_part_out out = {PP_DTYPE_F64, 0, 3, out3};
    pp_part_out five_hundred = {PP_DTYPE_F64, 0, 500, out500};
    report("wrong-shape", pp_call_parts(peer, "wrong", &in, 1, &five_hundred, 1, NULL));
    report("ok-after-wrong-shape", observe_call(peer));
    report("unknown-function", pp_call_parts(peer, "rhs2", &in, 1, &out, 1, NULL));
    report("ok-after-unknown", observe_call(peer));
    report("refuse", pp_call_parts(peer, "refuse", &in, 1, &out, 1, NULL));
    report("code", pp_call_parts(peer, "code", &in, 1, &out, 1, NULL));
    int64_t k[2] = {1, 2};
    pp_part ints = {PP_DTYPE_I64, 0, 2, k};
    report("typed", pp_call_parts(peer, "typed", &ints, 1, &out, 1, NULL));
    report("many", pp_call_parts(peer, "many", &in, 1, &out, 1, NULL));
    report("badpart", pp_call_parts(peer, "badpart", &in, 1, &out, 1, NULL));
    report("zerocols", pp_call_parts(peer, "zerocols", &in, 1, &out, 1, NULL));
    report("default-function", pp_call_parts(peer, "", &in, 1, &out, 1, NULL));
    report("data-request", pp_call_f64(peer, in100, 3, out3, 3, NULL));
    report("ok-after-remote-errors", observe_call(peer));

    /* probe: the accessors' refusals, seen from inside the server. */
    int64_t codes[8];
    char text[2048] = "";
    pp_part probe_in = {PP_DTYPE_F64, 0, 1, in100};
    pp_parts_reply *reply = NULL;
    pp_parts_reply_new(&reply);
    report("probe", pp_call_parts_any(peer, "probe", &probe_in, 1, reply, NULL));
    pp_part part;
    if (pp_parts_reply_part(reply, 0, &part) == PP_OK && part.count == 8)
        memcpy(codes, part.data, sizeof codes);
    if (pp_parts_reply_part(reply, 1, &part) == PP_OK && part.count < sizeof text)
        memcpy(text, part.data, part.count);
    pp_parts_reply_free(reply);
    for (int i = 0; i < 8; i++) {
        char *end = strchr(text, '\n'), *line = text;
        if (end == NULL) break;
        *end = '\0';
        printf("probe-%d %lld %s\n", i, (long long)codes[i], line);
        memmove(text, end + 1, strlen(end + 1) + 1);
    }
}

static void registration(void) {
    pp_functions *functions = (pp_functions *)&functions; /* must stay as it is on failure */
    report("functions-null-name", pp_functions_new(NULL, &functions));
    check("functions-out-unchanged", functions == (pp_functions *)&functions);
    report("functions-null-out", pp_functions_new("x", NULL));
    report("functions-new", pp_functions_new("c-cases", &functions));
    report("add-null-functions", pp_functions_add(NULL, "f", observe, NULL));
    report("add-null-name", pp_functions_add(functions, NULL, observe, NULL));
    report("add-null-function", pp_functions_add(functions, "f", NULL, NULL));
    report("add-bad-name", pp_functions_add(functions, "f g", observe, NULL));
    report("add-ok", pp_functions_add(functions, "f", observe, NULL));
    report("add-taken", pp_functions_add(functions, "f", observe, NULL));
    report("serve-null", pp_serve_stdio_functions(NULL, NULL));
    pp_functions *empty = NULL;
    pp_functions_new("empty", &empty);
    report("serve-empty", pp_serve_stdio_functions(empty, NULL));
    pp_functions_free(empty);
    pp_functions_free(functions);
    pp_functions_free(NULL);
}

static void v1(const char *self) {
    const char *argv[] = {self, "v1"};
    pp_peer *peer = NULL;
    double in[5] = {1, 2, 3, 4, 5}, out[5];
    pp_part part = {PP_DTYPE_F64, 0, 5, in};
    pp_part_out back = {PP_DTYPE_F64, 0, 5, out};
    report("v1-spawn", pp_spawn(argv, 2, &peer));
    report("v1-parts", pp_call_parts(peer, "rhs", &part, 1, &back, 1, NULL));
    pp_parts_reply *reply = NULL;
    pp_parts_reply_new(&reply);
    report("v1-parts-any", pp_call_parts_any(peer, "rhs", &part, 1, reply, NULL));
    pp_parts_reply_free(reply);
    report("v1-data", pp_call_f64(peer, in, 3, out, 3, NULL));
    check("v1-echoed", memcmp(in, out, 3 * sizeof *in) == 0);
    report("v1-shape", pp_call_f64(peer, in, 5, out, 5, NULL));
    report("v1-after-shape", pp_call_f64(peer, in, 4, out, 4, NULL));
    report("v1-close", pp_close(peer));
}

int main(int argc, char **argv) {
    if (argc >= 2 && argc <= 3 && strcmp(argv[1], "serve") == 0)
        return serve(argc == 3 ? argv[2] : NULL);
    if (argc == 2 && strcmp(argv[1], "v1") == 0) return v1_server();
    if (argc != 2) {
        fprintf(stderr, "usage: parts SELF_EXE | parts serve | parts v1\n");
        return 2;
    }
    const char *self = argv[1];
    for (int i = 0; i < 100; i++) in100[i] = (double)(i - 30) * 0.5;
    const char *server[] = {self, "serve"};
    pp_peer *peer = NULL;
    report("spawn", pp_spawn(server, 2, &peer));
    refusals(peer);
    check("observed", out3[0] == 975.0 && out3[1] == -15.0 && out3[2] == 34.5);
    remote_errors(peer);
    echoes(peer);
    report("ok-at-the-end", observe_call(peer));
    report("close", pp_close(peer));
    registration();
    v1(self);
    for (int code = -12; code >= -14; code--) printf("strerror %d %s\n", code, pp_strerror(code));
    return 0;
}
