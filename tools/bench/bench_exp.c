/* phasegate bench — the exp-heavy reference kernels of the fp32 mode (softmax,
 * log_softmax, exp, sigmoid, silu, gelu-tanh) through pg_kernel_invoke, against a peer
 * measured in the same run: the same math as a plain libm loop in double (one `exp`
 * per element, the textbook branchy sigmoid, max / sum / normalise for softmax) into a
 * preallocated output. Shape [8, 128, 128] float32 (attention phase 2's scores), one
 * thread, best of R runs, process CPU time. The kernel figure includes what a golden
 * step pays besides the math (argument checks, output allocation).
 *
 *   bench_exp [REPS]          (tools/bench/bench_exp.sh builds and runs it)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "phasegate/kernels.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double sig(double v) {
  if (v >= 0) return 1.0 / (1.0 + exp(-v));
  double e = exp(v);
  return e / (1.0 + e);
}

/* the libm peer: op index as in ops[] below */
static void peer(int op, const float *x, float *y, int64_t rows, int64_t len) {
  int64_t n = rows * len;
  switch (op) {
    case 0:
    case 1:
      for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < len; j++) m = xr[j] > m ? xr[j] : m;
        for (int64_t j = 0; j < len; j++) s += exp((double)xr[j] - m);
        if (op == 0)
          for (int64_t j = 0; j < len; j++) yr[j] = (float)(exp((double)xr[j] - m) / s);
        else
          for (int64_t j = 0; j < len; j++) yr[j] = (float)((double)xr[j] - m - log(s));
      }
      break;
    case 2: for (int64_t i = 0; i < n; i++) y[i] = (float)exp((double)x[i]); break;
    case 3: for (int64_t i = 0; i < n; i++) y[i] = (float)sig((double)x[i]); break;
    case 4: for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * sig((double)x[i])); break;
    default:
      for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(v * sig(2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v)));
      }
  }
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 40;
  if (reps < 1) reps = 1;
  static const char *const ops[] = {"softmax", "log_softmax", "exp", "sigmoid", "silu", "gelu"};
  int64_t s[3] = {8, 128, 128};
  struct pg_tensor x;
  pg_tensor_init(&x);
  if (pg_tensor_alloc(&x, PG_DTYPE_F32, 3, s, NULL) != PG_OK) return 1;
  float *xv = x.dl.data, *yv = malloc(sizeof(float) * (size_t)x.numel);
  if (!yv) return 1;
  unsigned u = 1;
  for (int64_t i = 0; i < x.numel; i++) {
    u = u * 1103515245u + 12345u;
    xv[i] = ((float)(u >> 8) / 16777216.0f - 0.5f) * 8.0f; /* uniform(-4, 4) */
  }
  const struct pg_tensor *in[1] = {&x};
  printf("fp32 reference kernels, [8,128,128] float32 (131072 elements), 1 thread, best of %d,"
         " process CPU ms\n", reps);
  printf("  %-12s %10s %12s %8s\n", "op", "phasegate", "libm loop", "ratio");
  for (int o = 0; o < 6; o++) {
    struct pg_attr_value at[1];
    memset(at, 0, sizeof at);
    int na = 0;
    if (o == 5) {
      at[0].type = PG_ATTR_STRING;
      strcpy(at[0].s, "tanh");
      na = 1;
    }
    double best_k = 1e9, best_p = 1e9;
    for (int r = 0; r < reps; r++) {
      struct pg_tensor out;
      pg_tensor_init(&out);
      struct pg_error e;
      double t0 = now();
      int rc = pg_kernel_invoke(pg_kernel_find(ops[o]), in, 1, na ? at : NULL, na, 1, &out, &e);
      double t1 = now();
      if (rc != PG_OK) {
        fprintf(stderr, "%s: %s\n", ops[o], e.message);
        return 1;
      }
      pg_tensor_reset(&out);
      peer(o, xv, yv, 8 * 128, 128);
      double t2 = now();
      if (t1 - t0 < best_k) best_k = t1 - t0;
      if (t2 - t1 < best_p) best_p = t2 - t1;
    }
    printf("  %-12s %10.3f %12.3f %7.2fx\n", o == 5 ? "gelu(tanh)" : ops[o], best_k * 1e3,
           best_p * 1e3, best_p / best_k);
  }
  pg_tensor_reset(&x);
  free(yv);
  return 0;
}
