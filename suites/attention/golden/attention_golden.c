/* attention golden library — the op-level golden `attention_fused_golden` for
 * composition verification: out = softmax(q k^T / sqrt(D)) v computed flash-style,
 * one query row at a time over key blocks of 16 with an online (running max,
 * running sum) softmax in double precision and no materialized score matrix. It shares
 * nothing with the module composition it checks (OpenBLAS matmul, a separate softmax
 * pass, fp16 rounding of probs), so `phasegate selftest` compares two different
 * computations. Golden plugin ABI: include/phasegate/golden.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "phasegate/golden.h"

#define KEY_BLOCK 16

static double get(const DLTensor *t, int64_t i, int bits) {
  return bits == 64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
}

__attribute__((visibility("default"))) int attention_fused_golden(
    const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out, const pg_golden_ctx *ctx) {
  if (n_in != 3 || n_out != 1) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "expected inputs q, k, v and output out");
    return 1;
  }
  for (int i = 0; i < 3; i++)
    if (in[i].ndim != 4) {
      snprintf(ctx->errbuf, ctx->errbuf_size, "q, k, v must be [B, H, S, D]");
      return 1;
    }
  int bits = ctx->precision_bits;
  int64_t B = in[0].shape[0], H = in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
  int64_t Sk = in[1].shape[2];
  if (in[1].shape[0] != B || in[1].shape[1] != H || in[1].shape[3] != D || in[2].shape[2] != Sk ||
      out[0].shape[2] != S || out[0].shape[3] != in[2].shape[3]) {
    snprintf(ctx->errbuf, ctx->errbuf_size, "inconsistent shapes");
    return 1;
  }
  int64_t Dv = in[2].shape[3];
  double scale = 1.0 / sqrt((double)pg_golden_dim(ctx, "D", D));
  double *acc = malloc((size_t)(Dv > 0 ? Dv : 1) * sizeof *acc);
  double *s = malloc(KEY_BLOCK * sizeof *s);
  if (!acc || !s) {
    free(acc), free(s);
    snprintf(ctx->errbuf, ctx->errbuf_size, "out of memory");
    return 1;
  }
  for (int64_t bh = 0; bh < B * H; bh++) {
    int64_t qo = bh * S * D, ko = bh * Sk * D, vo = bh * Sk * Dv, oo = bh * S * Dv;
    for (int64_t i = 0; i < S; i++) {
      double m = -INFINITY, l = 0.0;
      int nan_row = 0; /* a NaN score poisons its row, as softmax does */
      for (int64_t c = 0; c < Dv; c++) acc[c] = 0.0;
      for (int64_t j0 = 0; j0 < Sk && !nan_row; j0 += KEY_BLOCK) {
        int64_t nb = Sk - j0 < KEY_BLOCK ? Sk - j0 : KEY_BLOCK;
        double bm = -INFINITY;
        for (int64_t j = 0; j < nb; j++) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; d++)
            dot += get(&in[0], qo + i * D + d, bits) * get(&in[1], ko + (j0 + j) * D + d, bits);
          s[j] = dot * scale;
          if (s[j] != s[j]) nan_row = 1;
          else if (s[j] > bm) bm = s[j];
        }
        double nm = bm > m ? bm : m;
        double corr = m == -INFINITY ? 0.0 : exp(m - nm); /* rescale the running sums */
        l *= corr;
        for (int64_t c = 0; c < Dv; c++) acc[c] *= corr;
        for (int64_t j = 0; j < nb; j++) {
          double p = exp(s[j] - nm);
          l += p;
          for (int64_t c = 0; c < Dv; c++) acc[c] += p * get(&in[2], vo + (j0 + j) * Dv + c, bits);
        }
        m = nm;
      }
      if (nan_row) l = NAN;
      for (int64_t c = 0; c < Dv; c++) {
        double o = acc[c] / l;
        if (bits == 64) ((double *)out[0].data)[oo + i * Dv + c] = o;
        else ((float *)out[0].data)[oo + i * Dv + c] = (float)o;
      }
    }
  }
  free(acc), free(s);
  return 0;
}
