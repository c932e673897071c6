/* phasegate runner — the SIMD fill kernels, written once and included once per
 * instruction set (fill_avx2.c, fill_avx512.c), which first define:
 *   VW                 blocks per vector (one Philox block per 64-bit lane);
 *   VD, VI, VM         the double vector, the integer vector, a lane mask;
 *   FN(name)           a static name of this set, FN_EXPORT(name) the exported one;
 *   VATTR, VINLINE     the target attribute of a function / of an inlined helper;
 *   the lane operations v_*() (always-inline functions over VD / VI / VM), the shift
 *   V_SRLI64(a, n) (a macro, so n stays an immediate) and the group stores
 *   FN(store_f32 / store_f64 / store_f16 / store_i32).
 * A group is 2 x VW blocks = 8 * VW elements: w[h][k] / v[h][k] hold word / value
 * slot k of blocks h*VW .. h*VW + VW-1. Every operation is the one the scalar
 * definition (fill.c) does, in the same order (see fill_x86.h). No include guard:
 * this is a template. */

/* Philox state of a stream: the round keys and the counter's tag words, broadcast. */
struct FN(philox) {
  VI k0[10], k1[10], tag0, tag1;
};

VATTR static void FN(philox_init)(struct FN(philox) *p, const struct pg_rng_stream *s) {
  uint32_t k0[10], k1[10];
  philox_round_keys(s->key, k0, k1);
  for (int r = 0; r < 10; r++) {
    p->k0[r] = v_set1_64(k0[r]);
    p->k1[r] = v_set1_64(k1[r]);
  }
  p->tag0 = v_set1_64(s->tag[0]);
  p->tag1 = v_set1_64(s->tag[1]);
}

/* Blocks b .. b+VW-1, one per 64-bit lane: word k of block b+l is the low half of
 * lane l of w[k]. The high halves are don't-care (vpmuludq reads only the low
 * halves), which spares the shuffles a packed 32-bit layout needs. These are the
 * rounds of rng.h's scalar pg__philox4x32_10_inline, lane-parallel with precomputed
 * round keys: a separate body because its operands are vectors. */
VINLINE void FN(philox)(const struct FN(philox) *p, uint64_t b, VI w[4]) {
  const VI m0 = v_set1_64(0xD2511F53), m1 = v_set1_64(0xCD9E8D57);
  VI ctr = v_add64(v_set1_64(b), v_lanes());
  VI c0 = ctr, c1 = V_SRLI64(ctr, 32), c2 = p->tag0, c3 = p->tag1;
  for (int r = 0; r < 10; r++) {
    VI p0 = v_mul_epu32(c0, m0), p1 = v_mul_epu32(c2, m1);
    c0 = v_xor3(V_SRLI64(p1, 32), c1, p->k0[r]);
    c2 = v_xor3(V_SRLI64(p0, 32), c3, p->k1[r]);
    c1 = p1;
    c3 = p0;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

/* pg_rng_u01 of the low halves: the bits 0x43300000:w are the double 2^52 + w, and
 * subtracting 2^52 - 0.5 leaves w + 0.5 exactly. */
VINLINE VD FN(u01)(VI w) {
  VD x = v_sub(v_lo_magic(w), v_set1(4503599627370495.5));
  return v_mul(x, v_set1(1.0 / 4294967296.0));
}

/* Box–Muller on words (wa, wb): r * cos and r * sin, as block_values computes them. */
VINLINE void FN(boxmuller)(VI wa, VI wb, VD *rc, VD *rs) {
  const VD one = v_set1(1.0);
  VD u1 = FN(u01)(wa), u2 = FN(u01)(wb);
  /* log_normal(u1): exponent and mantissa fields; (double)e via the 2^52 trick */
  VI bits = v_d2i(u1);
  VD e = v_i2d(v_or_i(V_SRLI64(bits, 52), v_set1_64(0x4330000000000000ull)));
  e = v_sub(e, v_set1(4503599627370496.0 + 1022.0));
  VD m = v_i2d(v_or_i(v_and_i(bits, v_set1_64(0x000fffffffffffffull)),
                      v_set1_64(0x3fe0000000000000ull)));
  VM lt = v_cmplt(m, v_set1(PG_SQRT1_2));
  m = v_add_if(lt, m, m); /* m + m == m * 2.0, exactly */
  e = v_sub_if(lt, e, one);
  VD s = v_div(v_sub(m, one), v_add(m, one));
  VD s2 = v_mul(s, s), p = v_set1(log_k[0]);
  for (size_t i = 1; i < sizeof log_k / sizeof *log_k; i++)
    p = v_add(v_mul(p, s2), v_set1(log_k[i]));
  VD lg = v_add(v_mul(e, v_set1(PG_LN2)), v_mul(v_mul(v_set1(2.0), s), p));
  VD r = v_sqrt(v_mul(v_set1(-2.0), lg));
  /* sincos_core(u2) */
  VD q = v_trunc(v_add(v_mul(u2, v_set1(4.0)), v_set1(0.5)));
  VD t = v_mul(v_sub(u2, v_mul(q, v_set1(0.25))), v_set1(PG_2PI));
  VD t2 = v_mul(t, t), sp = v_set1(PG_INV_FACT17), cp = v_set1(PG_INV_FACT18);
  for (size_t i = 0; i < sizeof sin_k / sizeof *sin_k; i++) {
    sp = v_add(v_mul(sp, t2), v_set1(sin_k[i]));
    cp = v_add(v_mul(cp, t2), v_set1(cos_k[i]));
  }
  VD sn = v_mul(sp, t), cs = v_sub(one, v_mul(cp, t2));
  VM q1 = v_cmpeq(q, one), q2 = v_cmpeq(q, v_set1(2.0)), q3 = v_cmpeq(q, v_set1(3.0));
  VM odd = v_mor(q1, q3);
  VD a = v_select(odd, sn, cs), c = v_select(odd, cs, sn);
  a = v_negate_if(a, v_mor(q2, q3)); /* == a * -1.0 */
  c = v_negate_if(c, v_mor(q1, q2));
  *rc = v_mul(r, c);
  *rs = v_mul(r, a);
}

/* The words of 2 x VW blocks -> their values in double, v[h][k] = element slot k of
 * blocks h*VW .. h*VW + VW-1, as block_values computes them. */
VINLINE void FN(values)(const struct pg_fill *f, VI w[2][4], VD v[2][4]) {
  const VD a = v_set1(f->a);
  if (f->kind == PG_FILL_UNIFORM) {
    const VD d = v_set1(f->b - f->a);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) v[h][k] = v_add(a, v_mul(d, FN(u01)(w[h][k])));
  } else if (f->kind == PG_FILL_INT) {
    /* lo + ((w * range) >> 32); range = 2^32 is w itself (vpmuludq takes 32-bit operands) */
    const uint64_t range = (uint64_t)(f->b - f->a) + 1u;
    const VI rv = v_set1_64(range);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) {
        VI x = range >> 32 ? w[h][k] : V_SRLI64(v_mul_epu32(w[h][k], rv), 32);
        VD xd = v_sub(v_lo_magic(x), v_set1(4503599627370496.0)); /* (double)x, exact */
        v[h][k] = v_add(a, xd);
      }
  } else {
    const VD sigma = v_set1(f->b);
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k += 2) {
        VD rc, rs;
        FN(boxmuller)(w[h][k], w[h][k + 1], &rc, &rs);
        v[h][k] = v_add(a, v_mul(sigma, rc));
        v[h][k + 1] = v_add(a, v_mul(sigma, rs));
      }
  }
}

/* Normal/uniform/int elements [i0, end) of the job in whole groups, written in its
 * dtype; returns where it stopped. i0 is a multiple of 4 (a block boundary). Specials
 * are blended in the registers, as special_value picks them, from the specials
 * stream's same blocks; float32/64, fp16/bf16 and int32 are stored straight from the
 * registers, other dtypes through the scalar rounding. */
VATTR size_t FN_EXPORT(range)(const struct fill_job *j, size_t i0) {
  struct FN(philox) p, ps;
  struct special_table st;
  FN(philox_init)(&p, &j->values);
  FN(philox_init)(&ps, &j->specials);
  special_table_init(j, &st);
  const enum fill_store how = fill_store_of(j);
  for (; i0 + 8 * VW <= j->end; i0 += 8 * VW) {
    VI w[2][4];
    VD v[2][4];
    FN(philox)(&p, i0 / 4, w[0]);
    FN(philox)(&p, i0 / 4 + VW, w[1]);
    FN(values)(j->fill, w, v);
    if (j->has_specials) {
      FN(philox)(&ps, i0 / 4, w[0]);
      FN(philox)(&ps, i0 / 4 + VW, w[1]);
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) {
          VD u = FN(u01)(w[h][k]);
          for (int q = st.n - 1; q >= 0; q--)
            v[h][k] = v_select(v_cmplt(u, v_set1(st.acc[q])), v[h][k], v_set1(st.val[q]));
        }
    }
    if (how == FILL_STORE_F32) FN(store_f32)((float *)j->data + i0, v);
    else if (how == FILL_STORE_F64) FN(store_f64)((double *)j->data + i0, v);
    else if (how == FILL_STORE_I32) FN(store_i32)((int32_t *)j->data + i0, v);
    else if (how != FILL_STORE_SCALAR)
      FN(store_f16)((uint16_t *)j->data + i0, v, how == FILL_STORE_BF16);
    else {
      double tmp[8 * VW];
      FN(store_f64)(tmp, v);
      for (size_t k = 0; k < 8 * VW; k++) pg__fill_store(j->data, j->dtype, i0 + k, tmp[k]);
    }
  }
  return i0;
}

VATTR void FN_EXPORT(blocks)(const struct pg_rng_stream *s, uint64_t b0, size_t n_blocks,
                             uint32_t *out) {
  struct FN(philox) p;
  FN(philox_init)(&p, s);
  for (size_t b = 0; b < n_blocks; b += VW) {
    VI w[4];
    uint64_t lanes[VW];
    FN(philox)(&p, b0 + b, w);
    for (int k = 0; k < 4; k++) {
      v_storeu_i(lanes, w[k]);
      for (int l = 0; l < VW; l++) out[4 * (b + (size_t)l) + (size_t)k] = (uint32_t)lanes[l];
    }
  }
}

VATTR void FN_EXPORT(from_words)(const struct pg_fill *f, const uint32_t *words, size_t n_blocks,
                                 double *out) {
  for (size_t b = 0; b < n_blocks; b += 2 * VW) {
    VI w[2][4];
    VD v[2][4];
    const uint32_t *x = words + 4 * b;
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 4; k++) w[h][k] = v_gather4(x + 4 * VW * h + k);
    FN(values)(f, w, v);
    FN(store_f64)(out + 4 * b, v);
  }
}
