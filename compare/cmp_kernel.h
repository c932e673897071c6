/* compare/cmp_kernel.h — the block loops of compare.c, included once per instruction
 * set (baseline with 2-lane vectors; AVX2 with 4, AVX-512 with 8 lanes, chosen at run
 * time on x86-64):
 *   PG__K(name)  the per-variant name,   PG__KATTR  its target attribute,
 *   PG__W        vector lanes (doubles), PG__HOT     the hot kernel (cmp_hot.h), if any,
 *   PG__CVTPD(x) float -> double lanes,  PG__F16LOAD(ptr, w, out)  fp16 -> float lanes;
 * it #undefs them at its end, ready for the next instruction set.
 * Each dtype gets its own general block function (cmp_block.h) that widens both
 * tensors straight from their storage inside the loop and evaluates the rule and every
 * metric with GNU vector extensions: explicit SIMD with reductions in a fixed order,
 * exact without -ffast-math. Where a hot kernel exists, float32/16 and bfloat16 blocks
 * run it first and fold its result in with hot_merge (scalar re-scans for the rare,
 * index-carrying events); the general function takes the blocks with NaN/Inf.
 */

typedef double PG__K(vd) __attribute__((vector_size(8 * PG__W)));
typedef int64_t PG__K(vl) __attribute__((vector_size(8 * PG__W)));
typedef uint64_t PG__K(vu) __attribute__((vector_size(8 * PG__W)));
typedef float PG__K(vf) __attribute__((vector_size(4 * PG__W)));
typedef int32_t PG__K(vi) __attribute__((vector_size(4 * PG__W)));
typedef uint32_t PG__K(vui) __attribute__((vector_size(4 * PG__W)));
typedef uint16_t PG__K(vh) __attribute__((vector_size(2 * PG__W)));
#define VD PG__K(vd)
#define VL PG__K(vl)
#define VU PG__K(vu)
#define VF PG__K(vf)
#define VI PG__K(vi)
#define VUI PG__K(vui)
#define VH PG__K(vh)

/* ULP distance of W float32 bit patterns: ordered integers (+0 == -0) in
 * [-2^31+1, 2^31-1], whose distance (< 2^32 - 1) is taken in unsigned 32-bit lanes. */
#define PG__ULP32(ia, ib, vu)                                                 \
  do {                                                                        \
    VI sa_ = (ia) >> 31, sb_ = (ib) >> 31;                                    \
    VI oa_ = (((ia) & 0x7fffffff) ^ sa_) - sa_;                               \
    VI ob_ = (((ib) & 0x7fffffff) ^ sb_) - sb_;                               \
    VUI du_ = (VUI)oa_ - (VUI)ob_;                                            \
    VUI neg_ = (VUI)(oa_ < ob_);                                              \
    (vu) = ((-du_) & neg_) | (du_ & ~neg_);                                   \
  } while (0)

/* fp16 -> fp32 without branches: shift exponent+mantissa into place, rescale by
 * 2^112 (fp32 holds fp16 subnormals as normals), force Inf/NaN exponents. */
#define PG__F16_TO_F32(w, out)                                                \
  do {                                                                        \
    VUI o_ = ((w) & 0x7fffu) << 13;                                           \
    VF f_;                                                                    \
    memcpy(&f_, &o_, sizeof f_);                                              \
    f_ = f_ * 0x1p112f;                                                       \
    VUI big_ = (VUI)(f_ >= 65536.0f);                                         \
    memcpy(&o_, &f_, sizeof o_);                                              \
    o_ = o_ | (big_ & 0x7f800000u) | (((w) & 0x8000u) << 16);                 \
    memcpy(&(out), &o_, sizeof(out));                                         \
  } while (0)

#define PG__LOAD16(pa, pb, i, va, vb, vu, BF)                                 \
  do {                                                                        \
    VH ha_, hb_;                                                              \
    memcpy(&ha_, (pa) + (i), sizeof ha_);                                     \
    memcpy(&hb_, (pb) + (i), sizeof hb_);                                     \
    VUI wa_ = __builtin_convertvector(ha_, VUI), wb_ = __builtin_convertvector(hb_, VUI); \
    VF fa_, fb_;                                                              \
    if (BF) {                                                                 \
      VUI ta_ = wa_ << 16, tb_ = wb_ << 16;                                   \
      memcpy(&fa_, &ta_, sizeof fa_);                                         \
      memcpy(&fb_, &tb_, sizeof fb_);                                         \
    } else {                                                                  \
      PG__F16LOAD((pa) + (i), wa_, fa_);                                      \
      PG__F16LOAD((pb) + (i), wb_, fb_);                                      \
    }                                                                         \
    (va) = PG__CVTPD(fa_);                                                    \
    (vb) = PG__CVTPD(fb_);                                                    \
    VI ia_ = (VI)wa_, ib_ = (VI)wb_;                                          \
    VI sa_ = -(ia_ >> 15), sb_ = -(ib_ >> 15);                                \
    VI d_ = (((ia_ & 0x7fff) ^ sa_) - sa_) - (((ib_ & 0x7fff) ^ sb_) - sb_);  \
    VI sd_ = d_ >> 31;                                                        \
    (vu) = (VUI)((d_ ^ sd_) - sd_);                                           \
  } while (0)

/* float32 */
#define PG__BNAME block_f32
#define PG__BT float
#define PG__BUT VUI /* ULP distance lanes */
#define PG__BMT VI
#define PG__BLOAD(pa, pb, i, va, vb, vu)                                      \
  do {                                                                        \
    VF fa_, fb_;                                                              \
    VI ia_, ib_;                                                              \
    memcpy(&fa_, (pa) + (i), sizeof fa_);                                     \
    memcpy(&fb_, (pb) + (i), sizeof fb_);                                     \
    memcpy(&ia_, (pa) + (i), sizeof ia_);                                     \
    memcpy(&ib_, (pb) + (i), sizeof ib_);                                     \
    (va) = PG__CVTPD(fa_);                                                    \
    (vb) = PG__CVTPD(fb_);                                                    \
    PG__ULP32(ia_, ib_, vu);                                                  \
  } while (0)
#include "cmp_block.h"

/* float16 */
#define PG__BNAME block_f16
#define PG__BT uint16_t
#define PG__BUT VUI
#define PG__BMT VI
#define PG__BLOAD(pa, pb, i, va, vb, vu) PG__LOAD16(pa, pb, i, va, vb, vu, 0)
#include "cmp_block.h"

/* bfloat16 */
#define PG__BNAME block_bf16
#define PG__BT uint16_t
#define PG__BUT VUI
#define PG__BMT VI
#define PG__BLOAD(pa, pb, i, va, vb, vu) PG__LOAD16(pa, pb, i, va, vb, vu, 1)
#include "cmp_block.h"

/* float64: |oa - ob| < 2^64 always, so take it in unsigned arithmetic */
#define PG__BNAME block_f64
#define PG__BT double
#define PG__BUT VU
#define PG__BMT VL
#define PG__BLOAD(pa, pb, i, va, vb, vu)                                      \
  do {                                                                        \
    VL ia_, ib_;                                                              \
    memcpy(&(va), (pa) + (i), sizeof(va));                                    \
    memcpy(&(vb), (pb) + (i), sizeof(vb));                                    \
    memcpy(&ia_, (pa) + (i), sizeof ia_);                                     \
    memcpy(&ib_, (pb) + (i), sizeof ib_);                                     \
    VL sa_ = ia_ >> 63, sb_ = ib_ >> 63;                                      \
    VL oa_ = ((ia_ & INT64_MAX) ^ sa_) - sa_, ob_ = ((ib_ & INT64_MAX) ^ sb_) - sb_; \
    VU du_ = (VU)oa_ - (VU)ob_;                                               \
    VU neg_ = (VU)(oa_ < ob_);                                                \
    (vu) = ((-du_) & neg_) | (du_ & ~neg_);                                   \
  } while (0)
#include "cmp_block.h"

/* integers and bool, staged by pg__stage_int as doubles + exact distances */
#define PG__BNAME block_staged
#define PG__BT struct pg__staged
#define PG__BUT VU
#define PG__BMT VL
#define PG__BLOAD(pa, pb, i, va, vb, vu)                                      \
  do {                                                                        \
    (void)(pb);                                                               \
    memcpy(&(va), (pa)->a + (i), sizeof(va));                                 \
    memcpy(&(vb), (pa)->b + (i), sizeof(vb));                                 \
    memcpy(&(vu), (pa)->u + (i), sizeof(vu));                                 \
  } while (0)
#define PG__BSTAGED 1
#include "cmp_block.h"

#ifdef PG__HOT
/* Folds one hot block (cmp_hot.h) into the chunk's partial result; the rare,
 * index-carrying events are found by scalar re-scans of the (L1-resident) block. */
PG__KATTR static void PG__K(hot_merge)(const struct pg__kparams *kp, const char *pa, const char *pb,
                                       int m, int64_t base, const struct pg__hot *h,
                                       struct pg__partial *p) {
  p->sum_abs += h->sum[0];
  p->sum_sq += h->sum[1];
  p->sum_ab += h->sum[2];
  p->sum_aa += h->sum[3];
  p->sum_bb += h->sum[4];
  p->mismatches += h->mis;
  p->within3 += h->w3;
  p->within53 += h->w53;
  p->zeros_b += h->zeros;
  p->balance += h->bal;
  p->n_finite += m;
  if (fabs(h->minb) >= kp->large || fabs(h->maxb) >= kp->large) p->large = 1;
  if (h->minb < p->b0 || h->maxb > p->b0) p->nonconst = 1;
  if (h->max_ulp > p->max_ulp) p->max_ulp = h->max_ulp;
  double a, b;
  uint64_t u;
  /* a block maximum below the best any chunk has seen cannot be the answer */
  if (h->max_abs > p->max_abs && h->max_abs >= pg__hint_get(kp->abs_hint)) {
    for (int i = 0; i < m; i++) {
      pg__scalar(kp->dtype, pa, pb, i, &a, &b, &u);
      if (fabs(a - b) == h->max_abs) {
        p->max_abs = h->max_abs;
        p->max_abs_at = base + i;
        pg__hint_raise(kp->abs_hint, h->max_abs);
        break;
      }
    }
  }
  if (h->rel) {
    double before = p->max_rel;
    for (int i = 0; i < m; i++) {
      pg__scalar(kp->dtype, pa, pb, i, &a, &b, &u);
      double rel = fabs(a - b) / (fabs(b) + 1e-8);
      if (rel > p->max_rel) {
        p->max_rel = rel;
        p->max_rel_at = base + i;
      }
    }
    if (p->max_rel > before) pg__hint_raise(kp->rel_hint, p->max_rel);
  }
  if (h->mis > 0 && p->n_first < PG_CMP_FIRST_MISMATCHES) {
    for (int i = 0; i < m && p->n_first < PG_CMP_FIRST_MISMATCHES; i++) {
      pg__scalar(kp->dtype, pa, pb, i, &a, &b, &u);
      if (!pg__elem_pass(kp, a, b, u)) p->first[p->n_first++] = base + i;
    }
  }
}
#endif

/* One chunk [start, start+count) of the flat element range, block by block. The
 * last block of the tensor may not fill a vector: it is copied into a zero-padded
 * buffer so the vector loads never read past the tensor. float32/16 and bfloat16
 * blocks go through the hot kernel first (where built) and fall back to the
 * general one only for NaN/Inf. */
PG__KATTR static void PG__K(chunk)(const struct pg__kparams *kp, const void *impl,
                                   const void *ref, int64_t start, int64_t count,
                                   struct pg__partial *p) {
  size_t es = pg_dtype_size(kp->dtype);
#ifdef PG__HOT
  int full_left = 0; /* blocks to run in PG__HOT_FULL after a tight block was redone */
#endif
  for (int64_t off = 0; off < count; off += PG__CMP_BLOCK) {
    int m = (int)(count - off < PG__CMP_BLOCK ? count - off : PG__CMP_BLOCK);
    int64_t at = start + off;
    const char *pa = (const char *)impl + (size_t)at * es, *pb = (const char *)ref + (size_t)at * es;
    _Alignas(64) char tail_a[PG__W * 8], tail_b[PG__W * 8];
    if (!pg_dtype_is_float(kp->dtype)) {
      struct pg__staged st;
      pg__stage_int(kp->dtype, impl, ref, at, m, &st);
      int sfull = m / PG__W * PG__W;
      PG__K(block_staged)(kp, &st, &st, sfull, m, &st, &st, sfull, at, 0, p);
      continue;
    }
    int general = 0;
#ifdef PG__HOT
    if (kp->dtype != PG_DTYPE_F64 && m % 16 == 0) {
      struct pg__hot h;
      double r0 = pg__rel_r0(kp, p);
      enum pg__hot_mode mode = full_left > 0 ? PG__HOT_FULL : pg__hot_mode(kp, r0);
      PG__HOT(kp, mode, pa, pb, m, r0, &h);
      /* h.nonfin first: with a non-finite pair the kernel stops before setting h.rel */
      if (mode != PG__HOT_FULL && !h.nonfin && h.rel) {
        /* a pair may raise max_rel: the skipped tests are needed after all */
        PG__HOT(kp, PG__HOT_FULL, pa, pb, m, r0, &h);
        full_left = 16;
      } else if (full_left > 0) {
        full_left--;
      }
      if (!h.nonfin) {
        PG__K(hot_merge)(kp, pa, pb, m, at, &h, p);
        continue;
      }
      general = h.nonfin;
    }
#endif
    /* the vector part of the block, then (rarely) the padded remainder */
    int full = m / PG__W * PG__W;
    const char *ta = pa, *tb = pb;
    if (full < m) {
      memset(tail_a, 0, sizeof tail_a);
      memset(tail_b, 0, sizeof tail_b);
      memcpy(tail_a, pa + (size_t)full * es, (size_t)(m - full) * es);
      memcpy(tail_b, pb + (size_t)full * es, (size_t)(m - full) * es);
      ta = tail_a;
      tb = tail_b;
    }
    switch (kp->dtype) {
#define PG__CALL(fn, T)                                                                   \
  PG__K(fn)(kp, (const T *)pa, (const T *)pb, full, m, (const T *)ta, (const T *)tb, 0, at, general, p); \
  break
      case PG_DTYPE_F32: PG__CALL(block_f32, float);
      case PG_DTYPE_F16: PG__CALL(block_f16, uint16_t);
      case PG_DTYPE_BF16: PG__CALL(block_bf16, uint16_t);
      default: PG__CALL(block_f64, double);
#undef PG__CALL
    }
  }
}

#undef VD
#undef VL
#undef VU
#undef VF
#undef VI
#undef VUI
#undef VH
#undef PG__K
#undef PG__HOT
#undef PG__KATTR
#undef PG__W
#undef PG__CVTPD
#undef PG__F16LOAD
