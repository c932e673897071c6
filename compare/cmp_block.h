/* compare/cmp_block.h — the block function, instantiated by cmp_kernel.h once per
 * dtype with PG__BNAME (name), PG__BT (storage type), PG__BLOAD (widen W elements of
 * both tensors to doubles + ULP distances) and, for staged integers, PG__BSTAGED.
 *
 * Elements [0, full) are read from pa/pb in groups of W; when m > full one more,
 * zero-padded group is read from ta/tb at offset toff and masked by `valid`. The
 * loop keeps few registers live: six counts are packed in each lane (10-bit fields),
 * rare events are one OR'd
 * flag word, and the blocks that can change an index-carrying metric (max abs/rel,
 * first mismatches) or hold NaN/Inf are re-scanned in scalar code.
 */

#ifdef PG__BSTAGED
#define PG__BSCALAR(i, a, b, u) ((a) = pa->a[i], (b) = pa->b[i], (u) = pa->u[i])
#define PG__BSCALAR_AB(i, a, b) ((a) = pa->a[i], (b) = pa->b[i])
#else
#define PG__BSCALAR(i, a, b, u) pg__scalar(kp->dtype, pa, pb, (i), &(a), &(b), &(u))
#define PG__BSCALAR_AB(i, a, b) pg__scalar_ab(kp->dtype, pa, pb, (i), &(a), &(b))
#endif

/* Six per-lane counts packed in one 64-bit lane, 10 bits each: a lane sees at most
 * PG__CMP_BLOCK / 2 = 512 elements of a block. */
#define PG__C_MIS INT64_C(1)
#define PG__C_W3 (INT64_C(1) << 10)
#define PG__C_W53 (INT64_C(1) << 20)
#define PG__C_ZERO (INT64_C(1) << 30)
#define PG__C_GT (INT64_C(1) << 40)
#define PG__C_LT (INT64_C(1) << 50)
_Static_assert(PG__CMP_BLOCK / 2 < 1024, "packed block counts need 10 bits per field");

/* pk += one per set lane in each field. With AVX-512 masked moves + ternary logic do
 * it best; with fewer registers shifts of the -1 masks avoid six live constants. */
#if PG__W >= 8
#define PG__PACK(m0, m1, m2, m3, m4, m5)                                               \
  pk += (VU)(((m0) & PG__C_MIS) | ((m1) & PG__C_W3) | ((m2) & PG__C_W53) |             \
             ((m3) & PG__C_ZERO) | ((m4) & PG__C_GT) | ((m5) & PG__C_LT))
#else
#define PG__PACK(m0, m1, m2, m3, m4, m5)                                               \
  pk -= (VU)(m0) + ((VU)(m1) << 10) + ((VU)(m2) << 20) + ((VU)(m3) << 30) +            \
        ((VU)(m4) << 40) + ((VU)(m5) << 50)
#endif

#define PG__F_NONFIN 1
#define PG__F_LARGE 2
#define PG__F_LBAD 4
#define PG__F_NONCONST 8
#define PG__F_REL 16

#define PG__BODY(LA, LB, LI, VALID, AT)                                               \
  do {                                                                                \
    VD va, vb;                                                                        \
    PG__BUT vu;                                                                       \
    PG__BLOAD(LA, LB, LI, va, vb, vu);                                                \
    VL fa = (va - va) == zero, fb = (vb - vb) == zero;                                \
    VL both = fa & fb & (VALID);                                                      \
    VD ad = (VD)((VL)(va - vb) & absm);                                               \
    VD ab = (VD)((VL)vb & absm);                                                      \
    VD adm = (VD)((VL)ad & both);                                                     \
    VD am = (VD)((VL)va & both), bm = (VD)((VL)vb & both);                            \
    s_abs += adm;                                                                     \
    s_sq += adm * adm;                                                                \
    s_ab += am * bm;                                                                  \
    s_aa += am * am;                                                                  \
    s_bb += bm * bm;                                                                  \
    VD admx = (VD)(((VL)ad & both) | (negone & ~both));                               \
    VL up = admx > mx_abs;                                                            \
    mx_abs = (VD)(((VL)admx & up) | ((VL)mx_abs & ~up));                              \
    mx_at = ((lane + (AT)) & up) | (mx_at & ~up);                                     \
    VL eq = va == vb;                                                                 \
    VL nanpair = (va != va) & (vb != vb) & enan;                                      \
    VL pass;                                                                          \
    switch (kind) {                                                                   \
      case PG__K_CLOSE: pass = ((ad <= vatol + vrtol * ab) & fa & fb) | eq | nanpair; break; \
      case PG__K_EXACT: pass = eq | nanpair; break;                                   \
      case PG__K_ULP: pass = (PG__WIDE(vu <= vulp) & fa & fb) | eq | nanpair; break;  \
      default: pass = PG__WIDE(vu == uzero); break;                                   \
    }                                                                                 \
    VD den = ab + 1e-8;                                                               \
    VL w3 = ((adm <= den * 1e-3) & both) | eq;                                        \
    VL w53 = ((adm <= den * 5e-3) & both) | eq;                                       \
    PG__PACK(~pass & (VALID), w3 & (VALID), w53 & (VALID), (vb == zero) & (VALID),      \
             (va > vb) & (VALID), (va < vb) & (VALID));                               \
    VL lg = both & (ab >= vlarge);                                                    \
    flags |= (~both & (VALID) & PG__F_NONFIN) | (lg & PG__F_LARGE) |                  \
             (lg & (ad > den * vr100) & PG__F_LBAD) |                                 \
             ((vb != vb0) & (VALID) & PG__F_NONCONST) |                               \
             (both & (ad > den * vr0) & PG__F_REL);                                  \
    PG__BUT um = vu & (PG__BUT)__builtin_convertvector(both, PG__BMT);                \
    PG__BUT uup = (PG__BUT)(um > mx_u);                                               \
    mx_u = (um & uup) | (mx_u & ~uup);                                                \
  } while (0)

/* A lane mask of the ULP lanes' type, as a 64-bit lane mask. */
#define PG__WIDE(m) __builtin_convertvector((m), VL)

/* The lean loop for blocks whose pairs are all finite (the common case): no lane
 * masks, the rule's predicate fixed at compile time. It only records whether some
 * pair was not finite, in which case the block is redone by the general loop. */
#define PG__FAST(LA, LB, LI, KIND)                                                    \
  do {                                                                                \
    VD va, vb;                                                                        \
    PG__BUT vu;                                                                       \
    PG__BLOAD(LA, LB, LI, va, vb, vu);                                                \
    VD d = va - vb;                                                                   \
    VD ad = (VD)((VL)d & absm);                                                       \
    VD ab = (VD)((VL)vb & absm);                                                      \
    flags |= ~(ad < vinf) & PG__F_NONFIN;                                             \
    s_abs += ad;                                                                      \
    s_sq += ad * ad;                                                                  \
    s_ab += va * vb;                                                                  \
    s_aa += va * va;                                                                  \
    s_bb += vb * vb;                                                                  \
    VL up = ad > mx_abs;                                                              \
    mx_abs = (VD)(((VL)ad & up) | ((VL)mx_abs & ~up));                                \
    mx_at = (cur & up) | (mx_at & ~up);                                               \
    cur += PG__W;                                                                     \
    VL mis;                                                                           \
    if ((KIND) == PG__K_CLOSE) mis = ad > vatol + vrtol * ab;                         \
    else if ((KIND) == PG__K_EXACT) mis = ad != zero;                                 \
    else if ((KIND) == PG__K_ULP) mis = PG__WIDE(vu > vulp);                          \
    else mis = PG__WIDE(vu != uzero);                                                 \
    VD den = ab + 1e-8;                                                               \
    PG__PACK(mis, ad <= den * 1e-3, ad <= den * 5e-3, vb == zero, d > zero, d < zero); \
    VL lg = ab >= vlarge;                                                             \
    flags |= (lg & PG__F_LARGE) | (lg & (ad > den * vr100) & PG__F_LBAD) |            \
             ((vb != vb0) & PG__F_NONCONST) | ((ad > den * vr0) & PG__F_REL);        \
    PG__BUT uup = (PG__BUT)(vu > mx_u);                                               \
    mx_u = (vu & uup) | (mx_u & ~uup);                                                \
  } while (0)

/* NaN and Inf pairs of a block the vector loop flagged (PG__F_NONFIN), counted
 * exactly; every other pair is finite. */
PG__KATTR __attribute__((always_inline)) static inline void PG__K(PG__CAT(PG__BNAME, _nonfinite))(
    const struct pg__kparams *kp, const PG__BT *pa, const PG__BT *pb, int m, int64_t fl,
    struct pg__partial *p) {
  double a, b;
  uint64_t u;
  int64_t nonfin = 0;
  if (fl & PG__F_NONFIN) { /* NaN / Inf present: count them exactly */
    for (int i = 0; i < m; i++) {
      PG__BSCALAR_AB(i, a, b);
      if (isfinite(a) && isfinite(b)) continue;
      PG__BSCALAR(i, a, b, u); /* the ULP distance only where the rule needs it */
      nonfin++;
      p->nan_a += isnan(a) != 0;
      p->nan_b += isnan(b) != 0;
      p->inf_a += isinf(a) != 0;
      p->inf_b += isinf(b) != 0;
      if (!pg__elem_pass(kp, a, b, u)) p->mism_nonfinite++;
    }
  }
  p->n_finite += m - nonfin;

  (void)pb;
}

/* The block's scalar re-scans for what the vector loop only flags: max_rel with the
 * exact division (PG__F_REL), the first mismatches (c_mis > 0). */
PG__KATTR __attribute__((always_inline)) static inline void PG__K(PG__CAT(PG__BNAME, _rescan))(
    const struct pg__kparams *kp, const PG__BT *pa, const PG__BT *pb, int m, int64_t base,
    int64_t fl, int64_t c_mis, struct pg__partial *p) {
  double a, b;
  uint64_t u;
  if (fl & PG__F_REL) {
    double before = p->max_rel;
    for (int i = 0; i < m; i++) {
      PG__BSCALAR(i, a, b, u);
      if (!isfinite(a) || !isfinite(b)) continue;
      double rel = fabs(a - b) / (fabs(b) + 1e-8);
      if (rel > p->max_rel) {
        p->max_rel = rel;
        p->max_rel_at = base + i;
      }
    }
    if (p->max_rel > before) pg__hint_raise(kp->rel_hint, p->max_rel);
  }
  if (c_mis > 0 && p->n_first < PG_CMP_FIRST_MISMATCHES) {
    for (int i = 0; i < m && p->n_first < PG_CMP_FIRST_MISMATCHES; i++) {
      PG__BSCALAR(i, a, b, u);
      if (!pg__elem_pass(kp, a, b, u)) p->first[p->n_first++] = base + i;
    }
  }
  (void)u;
  (void)pb;
}

PG__KATTR static void PG__K(PG__BNAME)(const struct pg__kparams *kp, const PG__BT *pa,
                                       const PG__BT *pb, int full, int m, const PG__BT *ta,
                                       const PG__BT *tb, int toff, int64_t base, int general,
                                       struct pg__partial *p) {
  const enum pg__kind kind = kp->kind;
  const VD zero = (VD){0} + 0.0;
  const PG__BUT uzero = (PG__BUT){0} + 0;
  const VL absm = (VL){0} + INT64_MAX;
  const VL negone = (VL)(zero - 1.0);
  const VD vatol = zero + kp->atol, vrtol = zero + kp->rtol;
  const VD vlarge = zero + kp->large, vr100 = zero + kp->rtol100;
  const VD vr0 = zero + pg__rel_r0(kp, p); /* may a lane raise max_rel? */
  const VD vb0 = zero + p->b0;
  /* distances fit the lane type (32-bit lanes: < 2^32 - 1), so clamping N is exact */
  const PG__BUT vulp = (PG__BUT){0} + (kp->ulp > (uint64_t)(__typeof__(uzero[0]))-1
                                            ? (__typeof__(uzero[0]))-1
                                            : (__typeof__(uzero[0]))kp->ulp);
  const VL enan = (VL){0} - (kp->equal_nan ? 1 : 0);
  const VL allv = (VL){0} - 1;
  const VD vinf = zero + INFINITY;
  VD s_abs = zero, s_sq = zero, s_ab = zero, s_aa = zero, s_bb = zero;
  VD mx_abs = zero - 1.0;
  VU pk = (VU){0} + 0; /* six packed counts, see PG__C_* */
  VL flags = (VL){0} + 0;
  PG__BUT mx_u = uzero;
  VL lane, mx_at = (VL){0} + 0;
  for (int l = 0; l < PG__W; l++) lane[l] = l;

  /* software prefetch PG__PF bytes ahead on both streams (hides memory latency the
   * hardware prefetcher leaves when the core is shared) */
#define PG__PF 2048
#define PG__LOOP(KIND)                                                           \
  for (int i = 0; i < full; i += PG__W) {                                        \
    __builtin_prefetch((const char *)(pa + i) + PG__PF);                         \
    __builtin_prefetch((const char *)(pb + i) + PG__PF);                         \
    PG__FAST(pa, pb, i, KIND);                                                   \
  }
  VL cur = lane; /* the element indices of the lanes, for max_abs's position */
  int redo = general; /* the caller knows the block holds NaN/Inf */
  if (!general) {
    switch (kind) {
      case PG__K_CLOSE: PG__LOOP(PG__K_CLOSE); break;
      case PG__K_EXACT: PG__LOOP(PG__K_EXACT); break;
      case PG__K_ULP: PG__LOOP(PG__K_ULP); break;
      default: PG__LOOP(PG__K_INT); break;
    }
    for (int l = 0; l < PG__W; l++) redo |= (int)(flags[l] & PG__F_NONFIN);
  }
#undef PG__LOOP
#undef PG__PF
  if (redo) { /* NaN/Inf in the block: start over with the general, masked loop */
    s_abs = s_sq = s_ab = s_aa = s_bb = zero;
    mx_abs = zero - 1.0;
    pk = (VU){0} + 0;
    flags = (VL){0} + 0;
    mx_u = uzero;
    mx_at = (VL){0} + 0;
    for (int i = 0; i < full; i += PG__W) PG__BODY(pa, pb, i, allv, i);
  }
  if (m > full) {
    VL valid = lane < ((VL){0} + (m - full));
    PG__BODY(ta, tb, toff, valid, full);
  }

  /* fold the lanes: fixed order, so sums are deterministic */
  int64_t c_mis = 0, c_w3 = 0, c_w53 = 0, c_zero = 0, c_gt = 0, c_lt = 0;
  int64_t fl = 0;
  for (int l = 0; l < PG__W; l++) {
    uint64_t v = pk[l];
    c_mis += v & 0x3ff;
    c_w3 += (v >> 10) & 0x3ff;
    c_w53 += (v >> 20) & 0x3ff;
    c_zero += (v >> 30) & 0x3ff;
    c_gt += (v >> 40) & 0x3ff;
    c_lt += (v >> 50) & 0x3ff;
    fl |= flags[l];
    if (mx_u[l] > p->max_ulp) p->max_ulp = mx_u[l];
  }
  double h[5] = {0, 0, 0, 0, 0};
  for (int l = 0; l < PG__W; l += 2) {
    h[0] += s_abs[l] + s_abs[l + 1];
    h[1] += s_sq[l] + s_sq[l + 1];
    h[2] += s_ab[l] + s_ab[l + 1];
    h[3] += s_aa[l] + s_aa[l + 1];
    h[4] += s_bb[l] + s_bb[l + 1];
  }
  p->sum_abs += h[0];
  p->sum_sq += h[1];
  p->sum_ab += h[2];
  p->sum_aa += h[3];
  p->sum_bb += h[4];
  p->mismatches += c_mis;
  p->within3 += c_w3;
  p->within53 += c_w53;
  p->zeros_b += c_zero;
  p->balance += c_gt - c_lt;
  if (fl & PG__F_LARGE) p->large = 1;
  if (fl & PG__F_LBAD) p->large_bad = 1;
  if (fl & PG__F_NONCONST) p->nonconst = 1;

  PG__K(PG__CAT(PG__BNAME, _nonfinite))(kp, pa, pb, m, fl, p);

  /* each lane kept the first index of its maximum: the block's first is the
   * smallest index among the lanes holding the block maximum */
  double hmax = mx_abs[0];
  int64_t hat = mx_at[0];
  for (int l = 1; l < PG__W; l++)
    if (mx_abs[l] > hmax || (mx_abs[l] == hmax && mx_at[l] < hat)) hmax = mx_abs[l], hat = mx_at[l];
  if (hmax > p->max_abs) {
    p->max_abs = hmax;
    p->max_abs_at = base + hat;
  }
  PG__K(PG__CAT(PG__BNAME, _rescan))(kp, pa, pb, m, base, fl, c_mis, p);
}

#undef PG__BODY
#undef PG__PACK
#undef PG__FAST
#undef PG__BSCALAR
#undef PG__BSCALAR_AB
#undef PG__F_NONFIN
#undef PG__C_LT
#undef PG__C_GT
#undef PG__C_ZERO
#undef PG__C_W53
#undef PG__C_W3
#undef PG__C_MIS
#undef PG__F_LARGE
#undef PG__F_LBAD
#undef PG__F_NONCONST
#undef PG__F_REL
#undef PG__BNAME
#undef PG__BT
#undef PG__BLOAD
#undef PG__BUT
#undef PG__BMT
#undef PG__WIDE
#ifdef PG__BSTAGED
#undef PG__BSTAGED
#endif
