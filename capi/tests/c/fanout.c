/* One client calling several servers together from C, printing one line per case:
 *   LABEL CODE_NAME [details]
 * which tests/fanout.rs checks.
 *
 *   fanout PEER_EXE   three echo servers (`PEER --role server --handler echo`), the third run
 *                     under `timeout -s KILL 2`, so that it is killed after two seconds: a
 *                     gather to all three, bit for bit; argument errors; then, once the third
 *                     is dead, a gather whose first two replies stand and whose third is named
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "code_names.h"
#include "peerpipe.h"

#define SERVERS 3
#define N 500

/* Whether reply `i` equals request `i`, bit for bit. */
static int same(double *const *in, double *const *out, int i) {
    return memcmp(in[i], out[i], N * sizeof(double)) == 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fanout PEER_EXE\n");
        return 2;
    }
    char lines[SERVERS][4096];
    const char *line_ptrs[SERVERS];
    for (int i = 0; i < SERVERS; i++) {
        snprintf(lines[i], sizeof lines[i], "%s%s --role server --handler echo",
                 i == SERVERS - 1 ? "timeout -s KILL 2 " : "", argv[1]);
        line_ptrs[i] = lines[i];
    }
    pp_fanout *fanout = NULL;
    int rc = pp_fanout_spawn_shell(line_ptrs, 0, NULL, &fanout);
    printf("no-servers %s null-out %s\n", name_of(rc), fanout == NULL ? "yes" : "no");
    rc = pp_fanout_spawn_shell(line_ptrs, SERVERS, NULL, &fanout);
    printf("spawn %s %zu\n", name_of(rc), pp_fanout_len(fanout));
    if (rc != PP_OK) {
        printf("error %s\n", pp_last_error());
        return 1;
    }

    static double in_store[SERVERS][N], out_store[SERVERS][N];
    double *in[SERVERS], *out[SERVERS];
    size_t n_in[SERVERS], out_len[SERVERS];
    for (int i = 0; i < SERVERS; i++) {
        for (int k = 0; k < N; k++) in_store[i][k] = (double)(i + 1) * 0.25 - (double)k / 7.0;
        in[i] = in_store[i];
        out[i] = out_store[i];
        n_in[i] = N;
        out_len[i] = N;
    }
    const double *const *ins = (const double *const *)in;
    int results[SERVERS] = {-99, -99, -99};
    rc = pp_fanout_call_each_f64(fanout, ins, n_in, out, out_len, results);
    printf("gather %s results %d %d %d bit-for-bit %s\n", name_of(rc), results[0], results[1],
           results[2], same(in, out, 0) && same(in, out, 1) && same(in, out, 2) ? "yes" : "no");

    rc = pp_fanout_call_each_f64(fanout, NULL, n_in, out, out_len, NULL);
    printf("null-in %s %s\n", name_of(rc), pp_last_error());
    double *overlapping[SERVERS] = {out[0], out[0] + 10, out[2]};
    rc = pp_fanout_call_each_f64(fanout, ins, n_in, overlapping, out_len, NULL);
    printf("overlap %s %s\n", name_of(rc), pp_last_error());
    /* Still usable after the refusals. */
    rc = pp_fanout_call_each_f64(fanout, ins, n_in, out, out_len, NULL);
    printf("again %s\n", name_of(rc));

    sleep(3); /* the third server is killed meanwhile */
    memset(out_store, 0, sizeof out_store);
    rc = pp_fanout_call_each_f64(fanout, ins, n_in, out, out_len, results);
    printf("after-kill %s results %s %s %s others-bit-for-bit %s\n", name_of(rc),
           name_of(results[0]), name_of(results[1]), name_of(results[2]),
           same(in, out, 0) && same(in, out, 1) ? "yes" : "no");
    printf("error %s\n", pp_last_error());
    rc = pp_fanout_close(fanout);
    printf("close %s\n", name_of(rc));
    printf("close-null %s\n", name_of(pp_fanout_close(NULL)));
    return 0;
}
