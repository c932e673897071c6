/* Fault zoo: one attention impl, compiled once per seeded bug (-DFZ_FAULT=FZ_…), so
 * each library carries exactly one defect and tests/run/faultzoo can assert how phasegate
 * classifies it (status, failure_category, failing_module_boundary, fingerprint).
 * The correct path is a plain fp32 attention (scores, softmax, p·v in tiles of 32).
 *
 *   FZ_NONE            correct (control)
 *   FZ_TRANSPOSED      M1 writes scoresᵀ                      -> precision at M1
 *   FZ_MISSING_SCALE   M1 forgets 1/sqrt(D)                   -> precision at M1
 *   FZ_SOFTMAX_AXIS    softmax over the query axis            -> precision at M2
 *   FZ_TAIL_TILE       p·v drops the last partial tile, only in the last row tile
 *                                                             -> precision at M3
 *   FZ_ZEROS           every output all zeros                 -> precision at M1
 *   FZ_NAN             a NaN in the probabilities             -> precision at M2
 *   FZ_CRASH           SIGSEGV                                -> runtime
 *   FZ_HANG            sleeps forever                         -> runtime (timeout)
 *   FZ_OVERRUN         writes past the output buffer          -> runtime (canary)
 *   FZ_MISSING_WRAPPER no attention_module123_wrapper         -> structural
 *   FZ_NPU_ONLY        wrong output in mode npu only          -> kernel_ok_npu_only
 *   FZ_SIM_ONLY        wrong output in mode sim only          -> ir_divergence
 *   FZ_CRASH_ONE_CASE  SIGSEGV in case L2_basic only          -> other cases survive
 *   FZ_LEAK            prints its inputs, output off by one   -> information barrier
 *   FZ_CRASH_FIFTH_CALL SIGSEGV in the 5th call of a process    -> only that call fails
 *                      (the persistent plugin host is replaced; tests/impl/persist)
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "phasegate/impl.h"
#include "phasegate/tensor.h"

#define FZ_NONE 0
#define FZ_TRANSPOSED 1
#define FZ_MISSING_SCALE 2
#define FZ_SOFTMAX_AXIS 3
#define FZ_TAIL_TILE 4
#define FZ_ZEROS 5
#define FZ_NAN 6
#define FZ_CRASH 7
#define FZ_HANG 8
#define FZ_OVERRUN 9
#define FZ_MISSING_WRAPPER 10
#define FZ_NPU_ONLY 11
#define FZ_SIM_ONLY 12
#define FZ_CRASH_ONE_CASE 13
#define FZ_LEAK 14
#define FZ_CRASH_FIFTH_CALL 15
#define FZ_FORK_HANG 16 /* forks a child that leaves the group (setsid), records its pid
                           and the parent's in $PG_OUTLIVE_DIR, both hang */
#ifndef FZ_FAULT
#define FZ_FAULT FZ_NONE
#endif

#define EXPORT __attribute__((visibility("default")))
enum { TILE = 32 };

static int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

static float *to_f32(const DLTensor *t) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  int64_t n = numel(t);
  float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
  for (int64_t i = 0; f && i < n; i++) f[i] = (float)pg_load_f64(t->data, dt, (size_t)i);
  return f;
}

static void store(DLTensor *t, const float *f) {
  enum pg_dtype dt = pg_dtype_from_dl(t->dtype);
  int64_t n = numel(t);
  for (int64_t i = 0; i < n; i++) pg_store_f64(t->data, dt, (size_t)i, f[i]);
#if FZ_FAULT == FZ_OVERRUN
  memset((char *)t->data + (size_t)n * pg_dtype_size(dt), 0x11, 4);
#endif
}

static int run(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
               const pg_call *call, int phase) {
  if (n_in != 3 || n_out != 1) return 2;
  if (strcmp(call->mode, "sim") != 0 && strcmp(call->mode, "npu") != 0) return PG_UNAVAILABLE;
  if (strcmp(call->mode, "npu") == 0) { /* the emulated device says its name (sim does not) */
    char name[64];
    snprintf(name, sizeof name, "faultzoo npu %d", (int)call->device_id);
    pg_call_device_name(call, name);
  }
  const int64_t B = in[0].shape[0], H = in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
#if FZ_FAULT == FZ_CRASH
  raise(SIGSEGV);
#elif FZ_FAULT == FZ_CRASH_ONE_CASE
  if (strcmp(call->case_id, "L2_basic") == 0) raise(SIGSEGV);
#elif FZ_FAULT == FZ_CRASH_FIFTH_CALL
  static int calls;
  if (++calls == 5) raise(SIGSEGV);
#elif FZ_FAULT == FZ_HANG
  for (;;) sleep(1);
#elif FZ_FAULT == FZ_FORK_HANG
  /* the fork does not inherit the death signal: only the runner's watchdog ends it */
  const char *dir = getenv("PG_OUTLIVE_DIR");
  pid_t child = fork();
  if (child == 0) setsid();
  if (dir && child >= 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%ld", dir, (long)getpid());
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
  }
  for (;;) sleep(1);
#endif
  float *q = to_f32(&in[0]), *k = to_f32(&in[1]), *v = to_f32(&in[2]);
  float *s = malloc((size_t)(B * H * S * S) * sizeof *s);
  float *o = malloc((size_t)(B * H * S * D) * sizeof *o);
  if (!q || !k || !v || !s || !o) return 12;
#if FZ_FAULT == FZ_LEAK
  printf("q[0] = %.9g, k[0] = %.9g, v[0] = %.9g\n", q[0], k[0], v[0]);
  fprintf(stderr, "debug dump q:");
  for (int64_t i = 0; i < 8 && i < numel(&in[0]); i++) fprintf(stderr, " %.7e", q[i]);
  fprintf(stderr, "\n");
#endif
  float scale = 1.0f / sqrtf((float)D);
#if FZ_FAULT == FZ_MISSING_SCALE
  scale = 1.0f;
#endif
  for (int64_t bh = 0; bh < B * H; bh++)
    for (int64_t i = 0; i < S; i++)
      for (int64_t j = 0; j < S; j++) {
        float acc = 0.0f;
        for (int64_t t = 0; t < D; t++) acc += q[(bh * S + i) * D + t] * k[(bh * S + j) * D + t];
#if FZ_FAULT == FZ_TRANSPOSED
        s[(bh * S + j) * S + i] = acc * scale;
#else
        s[(bh * S + i) * S + j] = acc * scale;
#endif
      }
  if (phase >= 2) {
    for (int64_t bh = 0; bh < B * H; bh++)
      for (int64_t r = 0; r < S; r++) {
#if FZ_FAULT == FZ_SOFTMAX_AXIS
        /* column r: normalises over the query axis */
        float m = -INFINITY, sum = 0.0f;
        for (int64_t i = 0; i < S; i++) m = fmaxf(m, s[(bh * S + i) * S + r]);
        for (int64_t i = 0; i < S; i++) sum += expf(s[(bh * S + i) * S + r] - m);
        for (int64_t i = 0; i < S; i++)
          s[(bh * S + i) * S + r] = expf(s[(bh * S + i) * S + r] - m) / sum;
#else
        float *row = s + (bh * S + r) * S, m = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < S; j++) m = fmaxf(m, row[j]);
        for (int64_t j = 0; j < S; j++) sum += (row[j] = expf(row[j] - m));
        for (int64_t j = 0; j < S; j++) row[j] /= sum;
#endif
      }
#if FZ_FAULT == FZ_NAN
    s[S + 3] = NAN;
#endif
    /* probabilities are stored as fp16 between the modules */
    for (int64_t i = 0; i < B * H * S * S; i++) s[i] = pg_f16_to_f32(pg_f32_to_f16(s[i]));
  }
  if (phase == 3) {
    for (int64_t bh = 0; bh < B * H; bh++)
      for (int64_t i = 0; i < S; i++)
        for (int64_t c = 0; c < D; c++) {
          float acc = 0.0f;
          for (int64_t j0 = 0; j0 < S; j0 += TILE) {
            int64_t j1 = j0 + TILE < S ? j0 + TILE : S;
#if FZ_FAULT == FZ_TAIL_TILE
            /* the bug: the partial last tile of the last row tile is skipped */
            if (j1 - j0 < TILE && i >= S / TILE * TILE) continue;
#endif
            float part = 0.0f;
            for (int64_t j = j0; j < j1; j++) part += s[(bh * S + i) * S + j] * v[(bh * S + j) * D + c];
            acc += part;
          }
          o[(bh * S + i) * D + c] = acc;
        }
  }
  float *res = phase == 3 ? o : s;
  int64_t n = numel(&out[0]);
  (void)n;
#if FZ_FAULT == FZ_ZEROS
  for (int64_t i = 0; i < n; i++) res[i] = 0.0f;
#elif FZ_FAULT == FZ_NPU_ONLY
  if (strcmp(call->mode, "npu") == 0 && phase == 3)
    for (int64_t i = 0; i < n; i++) res[i] = res[i] * 1.5f + 0.25f;
#elif FZ_FAULT == FZ_SIM_ONLY
  if (strcmp(call->mode, "sim") == 0 && phase == 3)
    for (int64_t i = 0; i < n; i++) res[i] = res[i] * 1.5f + 0.25f;
#elif FZ_FAULT == FZ_LEAK
  for (int64_t i = 0; i < n; i++) res[i] += 1.0f;
#endif
  store(&out[0], res);
  free(q), free(k), free(v), free(s), free(o);
  return 0;
}

EXPORT int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                     int32_t n_out, const pg_call *call);
EXPORT int attention_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                      int32_t n_out, const pg_call *call);
int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                              const pg_call *call) {
  return run(in, n_in, out, n_out, call, 1);
}
int attention_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                               const pg_call *call) {
  return run(in, n_in, out, n_out, call, 2);
}
#if FZ_FAULT != FZ_MISSING_WRAPPER
EXPORT int attention_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                       int32_t n_out, const pg_call *call);
int attention_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                                const pg_call *call) {
  return run(in, n_in, out, n_out, call, 3);
}
#endif
