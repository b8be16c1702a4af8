/* A C server with a loop of its own (pp_session_*), for tests/session.rs. It serves:
 *   exchange(x)  -> its value v (starting at 10), answered first; then v += x
 *   state()      -> v
 *   twice()      -> receives again before answering (refused: PP_EINVAL), then rejects the
 *                   call with that refusal's message
 *   bad()        -> an ERROR made in the reply (pp_reply_error), sent with pp_session_send,
 *                   which returns PP_EREMOTE; it then exits 3 unless that was so
 * and exits 0 after the client's BYE, 1 on any other failure.
 */
#include <stdio.h>
#include <string.h>

#include "peerpipe.h"

int main(void) {
    const char *functions[] = {"exchange", "state", "twice", "bad"};
    pp_session *session = NULL;
    if (pp_session_open("c-session", functions, 4, NULL, &session) != PP_OK) {
        fprintf(stderr, "open: %s\n", pp_last_error());
        return 1;
    }
    double v = 10.0;
    for (;;) {
        const pp_call *call = NULL;
        if (pp_session_recv(session, &call) != PP_OK) {
            fprintf(stderr, "recv: %s\n", pp_last_error());
            pp_session_free(session);
            return 1;
        }
        if (call == NULL) {
            break;
        }
        const char *function = pp_session_function(session);
        if (strcmp(function, "exchange") == 0) {
            uint64_t n = 0;
            const double *x = pp_call_part_f64(call, 0, &n);
            double theirs = (x != NULL && n == 1) ? x[0] : 0.0;
            double *out = pp_reply_f64(pp_session_reply(session), 1);
            out[0] = v;
            if (pp_session_send(session) != PP_OK) {
                fprintf(stderr, "send: %s\n", pp_last_error());
                pp_session_free(session);
                return 1;
            }
            v += theirs; /* after the answer: the client computes meanwhile */
        } else if (strcmp(function, "state") == 0) {
            pp_reply_f64(pp_session_reply(session), 1)[0] = v;
            pp_session_send(session);
        } else if (strcmp(function, "twice") == 0) {
            const pp_call *again = NULL;
            int code = pp_session_recv(session, &again);
            char message[512];
            snprintf(message, sizeof message, "%s %s", code == PP_EINVAL ? "EINVAL" : "other",
                     pp_last_error());
            pp_session_reject(session, message);
        } else {
            pp_reply_error(pp_session_reply(session), "bad on purpose");
            if (pp_session_send(session) != PP_EREMOTE) {
                pp_session_free(session);
                return 3;
            }
        }
    }
    pp_session_free(session);
    return 0;
}
