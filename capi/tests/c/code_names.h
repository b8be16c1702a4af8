/* The name of each return code, for the test programs' output (the tests in capi/tests match on it). */
#ifndef PEERPIPE_TEST_CODE_NAMES_H
#define PEERPIPE_TEST_CODE_NAMES_H

#include "peerpipe.h"

static const char *name_of(int code) {
    switch (code) {
    case PP_OK: return "PP_OK";
    case PP_EINVAL: return "PP_EINVAL";
    case PP_ETIMEDOUT: return "PP_ETIMEDOUT";
    case PP_EEXITED: return "PP_EEXITED";
    case PP_ECLOSED: return "PP_ECLOSED";
    case PP_EPROTO: return "PP_EPROTO";
    case PP_EIO: return "PP_EIO";
    case PP_EREMOTE: return "PP_EREMOTE";
    case PP_ETOOLARGE: return "PP_ETOOLARGE";
    case PP_EPANIC: return "PP_EPANIC";
    case PP_ENOTFOUND: return "PP_ENOTFOUND";
    case PP_EINTR: return "PP_EINTR";
    case PP_ESHAPE: return "PP_ESHAPE";
    case PP_EUNSUPPORTED: return "PP_EUNSUPPORTED";
    default: return "UNKNOWN";
    }
}

#endif
