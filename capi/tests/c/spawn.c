/* One spawn rule, seen from C: a shell line that is a simple command runs as `exec LINE`, so
 * the spawned process is the server itself; a program that is not there is named.
 *
 *   spawn PEER_EXE      prints "pid PID" (the server's pid, from pp_server_pid) and
 *                       "missing CODE MESSAGE" for a shell line naming a missing program
 */
#include <stdio.h>
#include <string.h>

#include "peerpipe.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: spawn PEER_EXE\n");
        return 2;
    }
    char line[4096];
    snprintf(line, sizeof line, "%s --role server --handler echo", argv[1]);
    pp_peer *peer = NULL;
    int rc = pp_spawn_shell(line, &peer);
    if (rc != PP_OK) {
        fprintf(stderr, "pp_spawn_shell: %s: %s\n", pp_strerror(rc), pp_last_error());
        return 1;
    }
    uint32_t pid = 0;
    rc = pp_server_pid(peer, &pid);
    if (rc != PP_OK) {
        fprintf(stderr, "pp_server_pid: %s: %s\n", pp_strerror(rc), pp_last_error());
        return 1;
    }
    printf("pid %u\n", (unsigned)pid);
    fflush(stdout);
    /* The test reads /proc/PID while the peer lives: wait for its go-ahead on stdin. */
    char go[8];
    if (fgets(go, sizeof go, stdin) == NULL) return 1;
    if (pp_close(peer) != PP_OK) {
        fprintf(stderr, "pp_close: %s\n", pp_last_error());
        return 1;
    }
    rc = pp_spawn_shell("target/release/pear --role server", &peer);
    printf("missing %s %s\n", rc == PP_ENOTFOUND ? "PP_ENOTFOUND" : pp_strerror(rc),
           pp_last_error());
    printf("null-out %s\n", peer == NULL ? "yes" : "no");
    return 0;
}
