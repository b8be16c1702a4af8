/* decay.c's model as an FMI 3.0 co-simulation FMU for the proxy's tests: x' = -k x + u with
 * Euler sub-steps, Float64, Int32, Boolean and String variables, FMU states, log messages, and
 * only one instance per process. Built by fmu_check.py with the FMI 3.0 headers FMPy ships. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmi3Functions.h"

enum { VR_X, VR_K, VR_U, VR_Y, VR_N, VR_POSITIVE, VR_LABEL, VR_HANG };

typedef struct {
    double time, x, k, u;
    int n, hang;
    char label[64];
} State;

typedef struct {
    State s;
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    fmi3Boolean logging;
} Instance;

static int instances = 0; /* this FMU can be instantiated only once per process */

static void say(Instance *inst, fmi3Status status, const char *category, const char *text) {
    if (inst->logging && inst->log) inst->log(inst->env, status, category, text);
}

const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String c[]) {
    (void)n;
    (void)c;
    ((Instance *)i)->logging = on;
    return fmi3OK;
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                         fmi3Boolean visible, fmi3Boolean logging,
                                         fmi3Boolean event_mode, fmi3Boolean early_return,
                                         const fmi3ValueReference required[], size_t n_required,
                                         fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                         fmi3IntermediateUpdateCallback update) {
    Instance *inst;
    char text[128];
    (void)resources; (void)visible; (void)event_mode; (void)early_return;
    (void)required; (void)n_required; (void)update;
    if (strcmp(token, "{5b0e6c2a-decay3-peerpipe}") != 0) return NULL;
    if (instances > 0) {
        if (log) log(env, fmi3Error, "logStatusError", "decay3 can be instantiated only once per process");
        return NULL;
    }
    inst = calloc(1, sizeof *inst);
    inst->env = env;
    inst->log = log;
    inst->logging = logging;
    inst->s.x = 1.0;
    inst->s.k = 0.5;
    snprintf(inst->s.label, sizeof inst->s.label, "decay3");
    instances++;
    snprintf(text, sizeof text, "instantiated %s in process %d", name, (int)getpid());
    say(inst, fmi3OK, "logEvents", text);
    return inst;
}

void fmi3FreeInstance(fmi3Instance i) {
    if (i) {
        free(i);
        instances--;
    }
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tol_defined, fmi3Float64 tol,
                                       fmi3Float64 start, fmi3Boolean stop_defined, fmi3Float64 stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((Instance *)i)->s.time = start;
    return fmi3OK;
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance i) { (void)i; return fmi3OK; }
fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }

fmi3Status fmi3Reset(fmi3Instance i) {
    Instance *inst = i;
    memset(&inst->s, 0, sizeof inst->s);
    inst->s.x = 1.0;
    inst->s.k = 0.5;
    snprintf(inst->s.label, sizeof inst->s.label, "decay3");
    return fmi3OK;
}

fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
    const State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        switch (vr[k]) {
        case VR_X: v[k] = s->x; break;
        case VR_K: v[k] = s->k; break;
        case VR_U: v[k] = s->u; break;
        case VR_Y: v[k] = sin(s->x) * exp(-s->time); break;
        default: return fmi3Error;
        }
    }
    return fmi3OK;
}

fmi3Status fmi3GetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Int32 v[], size_t nv) {
    const State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == VR_N) v[k] = s->n;
        else if (vr[k] == VR_HANG) v[k] = s->hang;
        else return fmi3Error;
    }
    return fmi3OK;
}

fmi3Status fmi3GetBoolean(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Boolean v[], size_t nv) {
    const State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != VR_POSITIVE) return fmi3Error;
        v[k] = s->x > 0;
    }
    return fmi3OK;
}

fmi3Status fmi3GetString(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3String v[], size_t nv) {
    const State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != VR_LABEL) return fmi3Error;
        v[k] = s->label;
    }
    return fmi3OK;
}

fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[], size_t nv) {
    State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] == VR_K) s->k = v[k];
        else if (vr[k] == VR_U) s->u = v[k];
        else return fmi3Error;
    }
    return fmi3OK;
}

fmi3Status fmi3SetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int32 v[], size_t nv) {
    State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != VR_HANG) return fmi3Error;
        s->hang = v[k];
    }
    return fmi3OK;
}

fmi3Status fmi3SetString(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3String v[], size_t nv) {
    State *s = &((Instance *)i)->s;
    if (nv != n) return fmi3Error;
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != VR_LABEL) return fmi3Error;
        snprintf(s->label, sizeof s->label, "%s", v[k]);
    }
    return fmi3OK;
}

fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_set_prior,
                      fmi3Boolean *event, fmi3Boolean *terminate, fmi3Boolean *early, fmi3Float64 *last) {
    Instance *inst = i;
    State *s = &inst->s;
    (void)no_set_prior;
    while (s->hang) sleep(1);
    for (int k = 0; k < 10; k++) s->x += (h / 10) * (-s->k * s->x + s->u);
    s->time = t + h;
    s->n++;
    if (s->n % 50 == 0) {
        char text[128];
        snprintf(text, sizeof text, "step %d done at t=%g", s->n, s->time);
        say(inst, fmi3OK, "logEvents", text);
    }
    *event = fmi3False;
    *terminate = fmi3False;
    *early = fmi3False;
    *last = s->time;
    return fmi3OK;
}

fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState *state) {
    if (*state == NULL) *state = malloc(sizeof(State));
    memcpy(*state, &((Instance *)i)->s, sizeof(State));
    return fmi3OK;
}

fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState state) {
    memcpy(&((Instance *)i)->s, state, sizeof(State));
    return fmi3OK;
}

fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState *state) {
    (void)i;
    free(*state);
    *state = NULL;
    return fmi3OK;
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance i, fmi3FMUState state, size_t *size) {
    (void)i;
    (void)state;
    *size = sizeof(State);
    return fmi3OK;
}

fmi3Status fmi3SerializeFMUState(fmi3Instance i, fmi3FMUState state, fmi3Byte out[], size_t size) {
    (void)i;
    if (size < sizeof(State)) return fmi3Error;
    memcpy(out, state, sizeof(State));
    return fmi3OK;
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance i, const fmi3Byte in[], size_t size, fmi3FMUState *state) {
    (void)i;
    if (size != sizeof(State)) return fmi3Error;
    *state = malloc(sizeof(State));
    memcpy(*state, in, sizeof(State));
    return fmi3OK;
}
