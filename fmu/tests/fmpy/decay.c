/* A small FMI 2.0 co-simulation FMU for the proxy's tests: x' = -k x + u, integrated with
 * explicit Euler sub-steps in fmi2DoStep, with outputs of every type, FMU states (get, set,
 * serialize), log messages with printf arguments, a parameter that makes the next step hang,
 * and — like many FMUs — only one instance per process. Built by fmu_check.py with the FMI
 * headers FMPy ships. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmi2Functions.h"

#define VR_X 0
#define VR_K 1
#define VR_U 2
#define VR_Y 3
#define VR_N 4
#define VR_POSITIVE 5
#define VR_LABEL 6
#define VR_HANG 7

typedef struct {
    double time, x, k, u;
    int n, hang;
    char label[64];
} State;

typedef struct {
    State s;
    fmi2CallbackFunctions cb;
    fmi2Boolean logging;
    char name[64];
} Instance;

static int instances = 0; /* this FMU can be instantiated only once per process */

#define LOG(inst, status, category, ...)                                                       \
    do {                                                                                       \
        if ((inst)->logging)                                                                   \
            (inst)->cb.logger((inst)->cb.componentEnvironment, (inst)->name, status, category, \
                              __VA_ARGS__);                                                    \
    } while (0)

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cat[]) {
    (void)n;
    (void)cat;
    ((Instance *)c)->logging = on;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                              fmi2String resources, const fmi2CallbackFunctions *cb,
                              fmi2Boolean visible, fmi2Boolean logging) {
    Instance *inst;
    char host[256] = "";
    (void)resources;
    (void)visible;
    if (type != fmi2CoSimulation || strcmp(guid, "{3f1b4b36-decay-peerpipe}") != 0) return NULL;
    if (instances > 0) {
        cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError",
                   "decay can be instantiated only once per process (%d instance alive)",
                   instances);
        return NULL;
    }
    inst = calloc(1, sizeof *inst);
    inst->cb = *cb;
    inst->logging = logging;
    snprintf(inst->name, sizeof inst->name, "%s", name);
    inst->s.x = 1.0;
    inst->s.k = 0.5;
    snprintf(inst->s.label, sizeof inst->s.label, "decay");
    instances++;
    gethostname(host, sizeof host - 1);
    LOG(inst, fmi2OK, "logAll", "instantiated %s in process %d on %s", name, (int)getpid(), host);
    return inst;
}

void fmi2FreeInstance(fmi2Component c) {
    if (c) {
        free(c);
        instances--;
    }
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol,
                               fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined;
    (void)tol;
    (void)stop_defined;
    (void)stop;
    ((Instance *)c)->s.time = start;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

fmi2Status fmi2Reset(fmi2Component c) {
    Instance *inst = c;
    inst->s.time = 0;
    inst->s.x = 1.0;
    inst->s.k = 0.5;
    inst->s.u = 0;
    inst->s.n = 0;
    inst->s.hang = 0;
    return fmi2OK;
}

static double output_y(const State *s) { return sin(s->x) * exp(-s->time); }

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
    const State *s = &((Instance *)c)->s;
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case VR_X: v[i] = s->x; break;
        case VR_K: v[i] = s->k; break;
        case VR_U: v[i] = s->u; break;
        case VR_Y: v[i] = output_y(s); break;
        default: return fmi2Error;
        }
    }
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
    const State *s = &((Instance *)c)->s;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == VR_N) v[i] = s->n;
        else if (vr[i] == VR_HANG) v[i] = s->hang;
        else return fmi2Error;
    }
    return fmi2OK;
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
    const State *s = &((Instance *)c)->s;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] != VR_POSITIVE) return fmi2Error;
        v[i] = s->x > 0;
    }
    return fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[]) {
    const State *s = &((Instance *)c)->s;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] != VR_LABEL) return fmi2Error;
        v[i] = s->label;
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
    Instance *inst = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == VR_K) inst->s.k = v[i];
        else if (vr[i] == VR_U) inst->s.u = v[i];
        else {
            LOG(inst, fmi2Error, "logStatusError", "variable %u cannot be set", vr[i]);
            return fmi2Error;
        }
    }
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
    Instance *inst = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] != VR_HANG) return fmi2Error;
        inst->s.hang = v[i];
    }
    return fmi2OK;
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
    (void)c;
    (void)vr;
    (void)v;
    return n == 0 ? fmi2OK : fmi2Error;
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[]) {
    Instance *inst = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] != VR_LABEL) return fmi2Error;
        snprintf(inst->s.label, sizeof inst->s.label, "%s", v[i]);
    }
    return fmi2OK;
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_set_prior) {
    Instance *inst = c;
    State *s = &inst->s;
    const int sub = 10;
    (void)no_set_prior;
    while (s->hang) {
        sleep(1);
    }
    for (int i = 0; i < sub; i++) {
        s->x += (h / sub) * (-s->k * s->x + s->u);
    }
    s->time = t + h;
    s->n++;
    if (s->n % 50 == 0) {
        LOG(inst, fmi2OK, "logAll", "step %d done at t=%g (x=%.3f, 100%% fine)", s->n, s->time, s->x);
    }
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    if (*state == NULL) *state = malloc(sizeof(State));
    memcpy(*state, &((Instance *)c)->s, sizeof(State));
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    memcpy(&((Instance *)c)->s, state, sizeof(State));
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    (void)c;
    free(*state);
    *state = NULL;
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
    (void)c;
    (void)state;
    *size = sizeof(State);
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte out[], size_t size) {
    (void)c;
    if (size < sizeof(State)) return fmi2Error;
    memcpy(out, state, sizeof(State));
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte in[], size_t size, fmi2FMUstate *state) {
    (void)c;
    if (size != sizeof(State)) return fmi2Error;
    *state = malloc(sizeof(State));
    memcpy(*state, in, sizeof(State));
    return fmi2OK;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                        const fmi2ValueReference z[], size_t nz,
                                        const fmi2Real dz[], fmi2Real du[]) {
    (void)c; (void)u; (void)nu; (void)z; (void)nz; (void)dz; (void)du;
    return fmi2Error;
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real v[]) {
    (void)c; (void)vr; (void)order; (void)v;
    return n == 0 ? fmi2OK : fmi2Error;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real v[]) {
    (void)c; (void)vr; (void)order; (void)v;
    return n == 0 ? fmi2OK : fmi2Error;
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v) { (void)c; (void)k; (void)v; return fmi2Discard; }
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, fmi2Real *v) {
    if (k != fmi2LastSuccessfulTime) return fmi2Discard;
    *v = ((Instance *)c)->s.time;
    return fmi2OK;
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, fmi2Integer *v) { (void)c; (void)k; (void)v; return fmi2Discard; }
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v) { (void)c; (void)k; (void)v; return fmi2Discard; }
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind k, fmi2String *v) { (void)c; (void)k; (void)v; return fmi2Discard; }
