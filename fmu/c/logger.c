/* The logger callback `peer fmu serve` gives an FMI 2.0 FMU: it formats the message (a printf
 * format and its arguments, which Rust cannot take) and hands the text to the sink in the
 * component environment, which keeps it for the reply. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*peerpipe_fmu_sink)(void *context, int status, const char *category,
                                  const char *message);

typedef struct {
    peerpipe_fmu_sink sink;
    void *context;
} peerpipe_fmu_log_environment;

void peerpipe_fmu_logger(void *environment, const char *instance, int status,
                         const char *category, const char *format, ...) {
    peerpipe_fmu_log_environment *env = environment;
    char small[1024];
    va_list args, again;
    int length;
    (void)instance;
    if (env == NULL || env->sink == NULL) {
        return;
    }
    if (format == NULL) {
        env->sink(env->context, status, category, "");
        return;
    }
    va_start(args, format);
    va_copy(again, args);
    length = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (length < 0) {
        env->sink(env->context, status, category, format);
    } else if ((size_t)length < sizeof small) {
        env->sink(env->context, status, category, small);
    } else {
        char *large = malloc((size_t)length + 1);
        if (large != NULL) {
            vsnprintf(large, (size_t)length + 1, format, again);
            env->sink(env->context, status, category, large);
            free(large);
        } else {
            env->sink(env->context, status, category, small);
        }
    }
    va_end(again);
}
