/* compare/cmp_kernel.h — the hot loops of compare.c, included once per instruction
 * set (baseline, and AVX2 on x86-64 chosen at run time), with
 *   PG__K(name)  the per-variant function name,
 *   PG__KATTR    the target attribute (empty for the baseline).
 *
 * A chunk is processed one block at a time: stage 1 widens the block of both tensors
 * to doubles and computes ULP distances with dtype-specialised vector code (no
 * per-element pg_load_f64); stage 2 evaluates the rule and every metric over the
 * block with 4-lane GNU vector extensions (explicit SIMD: reductions stay in a fixed
 * order, so results are exact and deterministic without -ffast-math). Index-carrying
 * metrics (max abs/rel position, first mismatches) are found by a scalar re-scan of
 * the rare blocks that can change them.
 */

/* The staged block: doubles plus ULP (or exact integer) distances, padded to a
 * multiple of 4 with zero pairs that the `valid` lane mask excludes. */
struct PG__K(stage) {
  _Alignas(64) double a[PG__CMP_BLOCK];
  _Alignas(64) double b[PG__CMP_BLOCK];
  _Alignas(64) uint64_t u[PG__CMP_BLOCK];
};

PG__KATTR static void PG__K(stage_f32)(const float *pa, const float *pb, int m,
                                       struct PG__K(stage) *s) {
  int i = 0;
  for (; i + 4 <= m; i += 4) {
    pg__v4f fa, fb;
    pg__v4i ia, ib;
    memcpy(&fa, pa + i, sizeof fa);
    memcpy(&fb, pb + i, sizeof fb);
    memcpy(&ia, pa + i, sizeof ia);
    memcpy(&ib, pb + i, sizeof ib);
    pg__v4d da = __builtin_convertvector(fa, pg__v4d);
    pg__v4d db = __builtin_convertvector(fb, pg__v4d);
    /* ordered integers: +0 and -0 both map to 0, adjacent floats differ by 1 */
    pg__v4i sa = ia >> 31, sb = ib >> 31;
    pg__v4i oa = ((ia & 0x7fffffff) ^ sa) - sa, ob = ((ib & 0x7fffffff) ^ sb) - sb;
    pg__v4l d = __builtin_convertvector(oa, pg__v4l) - __builtin_convertvector(ob, pg__v4l);
    pg__v4l sd = d >> 63;
    pg__v4u u = (pg__v4u)((d ^ sd) - sd);
    memcpy(s->a + i, &da, sizeof da);
    memcpy(s->b + i, &db, sizeof db);
    memcpy(s->u + i, &u, sizeof u);
  }
  for (; i < m; i++) {
    s->a[i] = pa[i];
    s->b[i] = pb[i];
    s->u[i] = pg__ulp32(pg__f32_bits(pa[i]), pg__f32_bits(pb[i]));
  }
}

/* fp16 -> fp32 without branches: shift exponent+mantissa into place, rescale by
 * 2^112 (fp32 handles fp16 subnormals as normals), force Inf/NaN exponents. */
#define PG__F16_TO_F32(h, out)                                                      \
  do {                                                                              \
    pg__v4ui o_ = ((h) & 0x7fffu) << 13;                                            \
    pg__v4f f_;                                                                     \
    memcpy(&f_, &o_, sizeof f_);                                                    \
    f_ = f_ * 0x1p112f;                                                             \
    pg__v4ui big_ = (pg__v4ui)(f_ >= 65536.0f);                                     \
    memcpy(&o_, &f_, sizeof o_);                                                    \
    o_ = o_ | (big_ & 0x7f800000u) | (((h) & 0x8000u) << 16);                       \
    memcpy(&(out), &o_, sizeof(out));                                               \
  } while (0)

PG__KATTR static void PG__K(stage_16)(const uint16_t *pa, const uint16_t *pb, int m, int bf,
                                      struct PG__K(stage) *s) {
  int i = 0;
  for (; i + 4 <= m; i += 4) {
    pg__v4h ha, hb;
    memcpy(&ha, pa + i, sizeof ha);
    memcpy(&hb, pb + i, sizeof hb);
    pg__v4ui wa = __builtin_convertvector(ha, pg__v4ui);
    pg__v4ui wb = __builtin_convertvector(hb, pg__v4ui);
    pg__v4f fa, fb;
    if (bf) {
      pg__v4ui ta = wa << 16, tb = wb << 16;
      memcpy(&fa, &ta, sizeof fa);
      memcpy(&fb, &tb, sizeof fb);
    } else {
      PG__F16_TO_F32(wa, fa);
      PG__F16_TO_F32(wb, fb);
    }
    pg__v4d da = __builtin_convertvector(fa, pg__v4d);
    pg__v4d db = __builtin_convertvector(fb, pg__v4d);
    pg__v4i ia = (pg__v4i)wa, ib = (pg__v4i)wb;
    pg__v4i sa = -(ia >> 15), sb = -(ib >> 15);
    pg__v4i oa = ((ia & 0x7fff) ^ sa) - sa, ob = ((ib & 0x7fff) ^ sb) - sb;
    pg__v4i d = oa - ob, sd = d >> 31;
    pg__v4u u = __builtin_convertvector((pg__v4ui)((d ^ sd) - sd), pg__v4u);
    memcpy(s->a + i, &da, sizeof da);
    memcpy(s->b + i, &db, sizeof db);
    memcpy(s->u + i, &u, sizeof u);
  }
  for (; i < m; i++) {
    s->a[i] = bf ? pg_bf16_to_f32(pa[i]) : pg_f16_to_f32(pa[i]);
    s->b[i] = bf ? pg_bf16_to_f32(pb[i]) : pg_f16_to_f32(pb[i]);
    s->u[i] = pg__ulp16(pa[i], pb[i]);
  }
}

PG__KATTR static void PG__K(stage_f64)(const double *pa, const double *pb, int m,
                                       struct PG__K(stage) *s) {
  int i = 0;
  for (; i + 4 <= m; i += 4) {
    pg__v4d da, db;
    pg__v4l ia, ib;
    memcpy(&da, pa + i, sizeof da);
    memcpy(&db, pb + i, sizeof db);
    memcpy(&ia, pa + i, sizeof ia);
    memcpy(&ib, pb + i, sizeof ib);
    pg__v4l sa = ia >> 63, sb = ib >> 63;
    pg__v4l oa = ((ia & INT64_MAX) ^ sa) - sa, ob = ((ib & INT64_MAX) ^ sb) - sb;
    /* |oa - ob| < 2^64 always: take it in unsigned arithmetic */
    pg__v4u du = (pg__v4u)oa - (pg__v4u)ob;
    pg__v4l neg = oa < ob;
    pg__v4u u = ((-du) & (pg__v4u)neg) | (du & ~(pg__v4u)neg);
    memcpy(s->a + i, &da, sizeof da);
    memcpy(s->b + i, &db, sizeof db);
    memcpy(s->u + i, &u, sizeof u);
  }
  for (; i < m; i++) {
    s->a[i] = pa[i];
    s->b[i] = pb[i];
    s->u[i] = pg__ulp64(pg__f64_bits(pa[i]), pg__f64_bits(pb[i]));
  }
}

#define PG__SEL(mask, x, y) \
  ((__typeof__(x))((((pg__v4l)(x)) & (mask)) | (((pg__v4l)(y)) & ~(mask))))

/* Stage 2: the rule and every metric over one staged block of m elements whose first
 * element has flat index `base`. */
PG__KATTR static void PG__K(block)(const struct pg__kparams *kp, const struct PG__K(stage) *s,
                                   int m, int64_t base, struct pg__partial *p) {
  const pg__v4d zero = {0, 0, 0, 0};
  const pg__v4l lane = {0, 1, 2, 3};
  const pg__v4l absm = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
  const pg__v4l enan = (pg__v4l){0, 0, 0, 0} - (kp->equal_nan ? 1 : 0);
  const double r0 = p->max_rel < 0 ? -1.0 : p->max_rel * (1.0 - 0x1p-40);
  const pg__v4d vatol = zero + kp->atol, vrtol = zero + kp->rtol, vlarge = zero + kp->large;
  const pg__v4d vr100 = zero + kp->rtol100, vr0 = zero + r0;
  const pg__v4u vulp = (pg__v4u){0, 0, 0, 0} + kp->ulp, uzero = {0, 0, 0, 0};
  const pg__v4l vm = (pg__v4l){0, 0, 0, 0} + m;
  pg__v4d s_abs = zero, s_sq = zero, s_ab = zero, s_aa = zero, s_bb = zero;
  pg__v4d mx_abs = zero - 1.0, mn_b = zero + INFINITY, mx_b = zero - INFINITY;
  pg__v4l c_mis = {0}, c_mnf = {0}, c_fin = {0}, c_nana = {0}, c_nanb = {0}, c_infa = {0},
          c_infb = {0}, c_gt = {0}, c_lt = {0}, c_w3 = {0}, c_w53 = {0}, c_zero = {0},
          c_large = {0}, c_lbad = {0}, f_rel = {0};
  pg__v4u mx_u = {0};
  for (int i = 0; i < m; i += 4) {
    pg__v4d va, vb;
    pg__v4u vu;
    memcpy(&va, s->a + i, sizeof va);
    memcpy(&vb, s->b + i, sizeof vb);
    memcpy(&vu, s->u + i, sizeof vu);
    pg__v4l valid = (lane + i) < vm;
    pg__v4l nna = va == va, nnb = vb == vb;
    pg__v4l fa = (va - va) == zero, fb = (vb - vb) == zero;
    pg__v4l both = fa & fb & valid;
    pg__v4d ad = (pg__v4d)((pg__v4l)(va - vb) & absm);
    pg__v4d ab = (pg__v4d)((pg__v4l)vb & absm);
    pg__v4d adm = (pg__v4d)((pg__v4l)ad & both);
    pg__v4d am = (pg__v4d)((pg__v4l)va & both), bm = (pg__v4d)((pg__v4l)vb & both);
    s_abs += adm;
    s_sq += adm * adm;
    s_ab += am * bm;
    s_aa += am * am;
    s_bb += bm * bm;
    pg__v4d admx = PG__SEL(both, ad, zero - 1.0);
    mx_abs = PG__SEL(admx > mx_abs, admx, mx_abs);
    pg__v4l eq = va == vb;
    pg__v4l nanpair = ~nna & ~nnb & enan;
    pg__v4l pass;
    switch (kp->kind) {
      case PG__K_CLOSE: pass = ((ad <= vatol + vrtol * ab) & fa & fb) | eq | nanpair; break;
      case PG__K_EXACT: pass = eq | nanpair; break;
      case PG__K_ULP: pass = ((pg__v4l)(vu <= vulp) & fa & fb) | eq | nanpair; break;
      default: pass = (pg__v4l)(vu == uzero); break;
    }
    pg__v4l mis = ~pass & valid;
    c_mis -= mis;
    c_mnf -= mis & ~both;
    c_fin -= both;
    c_nana -= ~nna & valid;
    c_nanb -= ~nnb & valid;
    c_infa -= nna & ~fa & valid;
    c_infb -= nnb & ~fb & valid;
    c_gt -= (va > vb) & valid;
    c_lt -= (va < vb) & valid;
    pg__v4d den = ab + 1e-8;
    c_w3 -= (((adm <= den * 1e-3) & both) | eq) & valid;
    c_w53 -= (((adm <= den * 5e-3) & both) | eq) & valid;
    c_zero -= (vb == zero) & valid;
    pg__v4l okb = nnb & valid;
    mn_b = PG__SEL((vb < mn_b) & okb, vb, mn_b);
    mx_b = PG__SEL((vb > mx_b) & okb, vb, mx_b);
    /* may this lane raise max_rel? conservative, confirmed by the scalar re-scan */
    f_rel |= both & (ad >= den * vr0);
    pg__v4l lg = both & (ab >= vlarge);
    c_large -= lg;
    c_lbad -= lg & (ad > den * vr100);
    pg__v4u um = vu & (pg__v4u)both;
    mx_u = PG__SEL(um > mx_u, um, mx_u);
  }
#define PG__HSUM(v) (((v)[0] + (v)[1]) + ((v)[2] + (v)[3]))
  int64_t mis = PG__HSUM(c_mis);
  p->mismatches += mis;
  p->mism_nonfinite += PG__HSUM(c_mnf);
  p->n_finite += PG__HSUM(c_fin);
  p->nan_a += PG__HSUM(c_nana);
  p->nan_b += PG__HSUM(c_nanb);
  p->inf_a += PG__HSUM(c_infa);
  p->inf_b += PG__HSUM(c_infb);
  p->gt += PG__HSUM(c_gt);
  p->lt += PG__HSUM(c_lt);
  p->within3 += PG__HSUM(c_w3);
  p->within53 += PG__HSUM(c_w53);
  p->zeros_b += PG__HSUM(c_zero);
  p->large += PG__HSUM(c_large);
  p->large_bad += PG__HSUM(c_lbad);
  p->sum_abs += PG__HSUM(s_abs);
  p->sum_sq += PG__HSUM(s_sq);
  p->sum_ab += PG__HSUM(s_ab);
  p->sum_aa += PG__HSUM(s_aa);
  p->sum_bb += PG__HSUM(s_bb);
#undef PG__HSUM
  for (int l = 0; l < 4; l++) {
    if (mn_b[l] < p->min_b) p->min_b = mn_b[l];
    if (mx_b[l] > p->max_b) p->max_b = mx_b[l];
    if (mx_u[l] > p->max_ulp) p->max_ulp = mx_u[l];
  }
  double hmax = mx_abs[0];
  for (int l = 1; l < 4; l++)
    if (mx_abs[l] > hmax) hmax = mx_abs[l];
  if (hmax > p->max_abs) { /* first index of the new maximum */
    for (int i = 0; i < m; i++)
      if (isfinite(s->a[i]) && isfinite(s->b[i]) && fabs(s->a[i] - s->b[i]) == hmax) {
        p->max_abs = hmax;
        p->max_abs_at = base + i;
        break;
      }
  }
  if (f_rel[0] | f_rel[1] | f_rel[2] | f_rel[3]) {
    for (int i = 0; i < m; i++) {
      if (!isfinite(s->a[i]) || !isfinite(s->b[i])) continue;
      double rel = fabs(s->a[i] - s->b[i]) / (fabs(s->b[i]) + 1e-8);
      if (rel > p->max_rel) {
        p->max_rel = rel;
        p->max_rel_at = base + i;
      }
    }
  }
  if (mis > 0 && p->n_first < PG_CMP_FIRST_MISMATCHES) {
    for (int i = 0; i < m && p->n_first < PG_CMP_FIRST_MISMATCHES; i++)
      if (!pg__elem_pass(kp, s->a[i], s->b[i], s->u[i])) p->first[p->n_first++] = base + i;
  }
}
#undef PG__SEL

/* One chunk [start, start+count) of the flat element range. */
PG__KATTR static void PG__K(chunk)(const struct pg__kparams *kp, const void *impl,
                                   const void *ref, int64_t start, int64_t count,
                                   struct pg__partial *p) {
  struct PG__K(stage) s;
  for (int64_t off = 0; off < count; off += PG__CMP_BLOCK) {
    int m = (int)(count - off < PG__CMP_BLOCK ? count - off : PG__CMP_BLOCK);
    int64_t at = start + off;
    switch (kp->dtype) {
      case PG_DTYPE_F32: PG__K(stage_f32)((const float *)impl + at, (const float *)ref + at, m, &s); break;
      case PG_DTYPE_F16:
      case PG_DTYPE_BF16:
        PG__K(stage_16)((const uint16_t *)impl + at, (const uint16_t *)ref + at, m,
                        kp->dtype == PG_DTYPE_BF16, &s);
        break;
      case PG_DTYPE_F64: PG__K(stage_f64)((const double *)impl + at, (const double *)ref + at, m, &s); break;
      default: pg__stage_int(kp->dtype, impl, ref, at, m, s.a, s.b, s.u); break;
    }
    for (int i = m; i < ((m + 3) & ~3); i++) s.a[i] = s.b[i] = 0.0, s.u[i] = 0;
    PG__K(block)(kp, &s, m, at, p);
  }
}
