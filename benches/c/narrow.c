/*
 * C reference for the codec benches: f64->f32 narrowing, f32->f64 widening and memcpy over
 * 1 Mi elements (8 MiB of f64), each the median of REPS timed repetitions (clock_gettime,
 * CLOCK_MONOTONIC). GB/s are 10^9 bytes per second of the f64 side (8 MiB / time), the unit of
 * the targets in docs/PERFORMANCE.md.
 *
 *   cc -O3 -o /tmp/narrow benches/c/narrow.c && /tmp/narrow
 *
 * Plain -O3 targets baseline x86-64 (SSE2), as `cargo bench` does without target-cpu flags.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N (1u << 20)
#define REPS 301

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) static void narrow(const double *restrict src, float *restrict dst,
                                             size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = (float)src[i];
}

__attribute__((noinline)) static void widen(const float *restrict src, double *restrict dst,
                                            size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = (double)src[i];
}

/* A plain copy loop, kept a loop (GCC would otherwise turn it into a call to memcpy). */
__attribute__((noinline, optimize("no-tree-loop-distribute-patterns"))) static void
copy_loop(double *restrict dst, const double *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

__attribute__((noinline)) static void copy(void *restrict dst, const void *restrict src,
                                           size_t n) {
    memcpy(dst, src, n);
}

static double t[REPS];

static void report(const char *name, double bytes) {
    qsort(t, REPS, sizeof t[0], cmp);
    double med = t[REPS / 2];
    printf("%-10s median %9.1f us  %6.1f GB/s   (min %9.1f us, %d reps)\n", name, med / 1e3,
           bytes / med, t[0] / 1e3, REPS);
}

int main(void) {
    double *f64 = aligned_alloc(64, N * sizeof(double));
    double *f64_out = aligned_alloc(64, N * sizeof(double));
    float *f32 = aligned_alloc(64, N * sizeof(float));
    if (!f64 || !f64_out || !f32) return 1;
    for (size_t i = 0; i < N; i++) f64[i] = sin((double)i * 0.6180339887498948) * 1e3 + 1e-3;
    memset(f64_out, 0, N * sizeof(double));
    memset(f32, 0, N * sizeof(float));
    const double bytes = (double)N * sizeof(double);

    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        copy(f64_out, f64, N * sizeof(double));
        __asm__ volatile("" ::: "memory");
        t[r] = now_ns() - t0;
    }
    report("memcpy", bytes);

    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        copy_loop(f64_out, f64, N);
        __asm__ volatile("" ::: "memory");
        t[r] = now_ns() - t0;
    }
    report("copy loop", bytes);

    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        narrow(f64, f32, N);
        __asm__ volatile("" ::: "memory");
        t[r] = now_ns() - t0;
    }
    report("narrow", bytes);

    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        widen(f32, f64_out, N);
        __asm__ volatile("" ::: "memory");
        t[r] = now_ns() - t0;
    }
    report("widen", bytes);

    /* Keep the results observable. */
    double check = 0;
    for (size_t i = 0; i < N; i += 4096) check += f32[i] + f64_out[i];
    printf("checksum %g\n", check);
    return 0;
}
