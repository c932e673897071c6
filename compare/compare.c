/* compare/compare.c — pg_tensor_compare(): one streaming, multithreaded pass that
 * gives a rule's verdict and every metric of docs/design.md §7 (definitions in
 * docs/compare.md).
 *
 * The flat element range is cut into chunks whose size depends only on the element
 * count, never on the thread count; threads claim chunks from an atomic counter and
 * write one partial result per chunk, which are merged in chunk order. Sums, maxima,
 * their first indices and the first-mismatch list are therefore bit-identical for
 * any thread count. No allocation scales with the tensor beyond that partial array
 * (at most PG__CMP_MAX_CHUNKS entries). The block loops live in cmp_kernel.h,
 * cmp_block.h (general) and cmp_hot.h (lean AVX2 / AVX-512 kernels for 16/32-bit
 * floats), built once per SIMD level and picked at run time.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmp_internal.h"
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#endif
#include "phasegate/compare.h"

#define PG__CMP_MIN_CHUNK (64 * PG__CMP_BLOCK) /* 65 536 elements */
#define PG__CMP_MAX_CHUNKS 4096
#define PG__CMP_MAX_THREADS 64

#include "cmp_elem.h"

/* Element i of two float tensors, widened, without the ULP distance (NaN/Inf scan). */
static inline void pg__scalar_ab(enum pg_dtype t, const void *pa, const void *pb, int64_t i,
                                 double *a, double *b) {
  switch (t) {
    case PG_DTYPE_F32: *a = ((const float *)pa)[i], *b = ((const float *)pb)[i]; return;
    case PG_DTYPE_F16:
      *a = pg_f16_to_f32(((const uint16_t *)pa)[i]), *b = pg_f16_to_f32(((const uint16_t *)pb)[i]);
      return;
    case PG_DTYPE_BF16:
      *a = pg_bf16_to_f32(((const uint16_t *)pa)[i]), *b = pg_bf16_to_f32(((const uint16_t *)pb)[i]);
      return;
    default: *a = ((const double *)pa)[i], *b = ((const double *)pb)[i]; return;
  }
}

#define PG__CAT2(a, b) a##b
#define PG__CAT(a, b) PG__CAT2(a, b)
#define PG__K(name) PG__CAT(name, _base)
#define PG__KATTR
#define PG__W 2
#define PG__CVTPD(x) __builtin_convertvector((x), VD)
#define PG__F16LOAD(ptr, w, out) PG__F16_TO_F32(w, out)
#include "cmp_kernel.h" /* it #undefs its parameters */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PG__HAVE_AVX2 1
#include "cmp_hot.h"
#define PG__K(name) PG__CAT(name, _avx2)
#define PG__HOT pg__hot_avx2
#define PG__KATTR __attribute__((target("avx2,fma,f16c")))
#define PG__W 4
/* float -> double: one instruction (generic conversions get split by GCC 12) */
#define PG__CVTPD(x) ((VD)_mm256_cvtps_pd((__m128)(x)))
/* F16C: exact fp16 -> fp32 in hardware (every AVX2 CPU has it) */
#define PG__F16LOAD(ptr, w, out) \
  ((void)(w), (out) = (VF)_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(const void *)(ptr))))
#include "cmp_kernel.h"

#define PG__K(name) PG__CAT(name, _avx512)
#define PG__HOT pg__hot_avx512
#define PG__KATTR __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,f16c,fma")))
#define PG__W 8
#define PG__CVTPD(x) ((VD)_mm512_cvtps_pd((__m256)(x)))
#define PG__F16LOAD(ptr, w, out) \
  ((void)(w), (out) = (VF)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(ptr))))
#include "cmp_kernel.h"
#endif

typedef void (*pg__chunk_fn)(const struct pg__kparams *, const void *, const void *, int64_t,
                             int64_t, struct pg__partial *);

/* The widest kernel this CPU runs. PHASEGATE_SIMD=base|avx2|avx512 caps the choice
 * (tests and benchmarks compare the variants). Nothing is cached: no global state. */
static pg__chunk_fn pick_kernel(void) {
#ifdef PG__HAVE_AVX2
  const char *cap = getenv("PHASEGATE_SIMD");
  int allow = 2;
  if (cap && strcmp(cap, "base") == 0) allow = 0;
  else if (cap && strcmp(cap, "avx2") == 0) allow = 1;
  __builtin_cpu_init();
  unsigned eax, ebx, ecx = 0, edx; /* F16C: CPUID.1:ECX bit 29 (clang 14 has no "f16c" name) */
  /* F16C and FMA (CPUID.1:ECX bits 29, 12): every AVX2 CPU has them, but check */
  int f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) && (ecx & (1u << 12));
  if (allow >= 2 && f16c && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw"))
    return chunk_avx512;
  if (allow >= 1 && f16c && __builtin_cpu_supports("avx2")) return chunk_avx2;
#endif
  return chunk_base;
}

static void partial_init(struct pg__partial *p) {
  memset(p, 0, sizeof *p);
  p->max_abs = p->max_rel = -1.0;
  p->max_abs_at = p->max_rel_at = -1;
}

/* Does a finite pair in [start, start+count) have |b| >= atol/rtol (rtol governs)
 * and |a-b| > (rtol/100)(|b| + 1e-8)? That is the "large_bad" half of
 * cpu_reproducer_candidate. The hot kernels leave it out (it matters only for a
 * failed comparison), so it is answered afterwards, only when the flag is still
 * possible, stopping at the first such pair. */
static int lbad_range(const struct pg__kparams *kp, const void *impl, const void *ref,
                      int64_t start, int64_t count, atomic_int *found) {
  for (int64_t off = 0; off < count; off += PG__CMP_BLOCK) {
    if (atomic_load_explicit(found, memory_order_relaxed)) return 0;
    int64_t at = start + off;
    int m = (int)(count - off < PG__CMP_BLOCK ? count - off : PG__CMP_BLOCK);
    int bad = 0;
#define PG__LBAD(T, CONV)                                                                  \
  for (int i = 0; i < m; i++) {                                                           \
    double a = CONV(((const T *)impl)[at + i]), b = CONV(((const T *)ref)[at + i]);       \
    double ab = fabs(b);                                                                  \
    bad |= (isfinite(a) != 0) & (isfinite(b) != 0) & (ab >= kp->large) &                  \
           (fabs(a - b) > (ab + 1e-8) * kp->rtol100);                                     \
  }                                                                                       \
  break
#define PG__ID(x) (x)
    switch (kp->dtype) {
      case PG_DTYPE_F32: PG__LBAD(float, PG__ID);
      case PG_DTYPE_F16: PG__LBAD(uint16_t, pg_f16_to_f32);
      case PG_DTYPE_BF16: PG__LBAD(uint16_t, pg_bf16_to_f32);
      default: PG__LBAD(double, PG__ID);
    }
#undef PG__ID
#undef PG__LBAD
    if (bad) return 1;
  }
  return 0;
}

struct work {
  const struct pg__kparams *kp;
  pg__chunk_fn fn;
  const void *impl, *ref;
  int64_t n, chunk, nchunks;
  atomic_llong next;
  struct pg__partial *parts; /* NULL: the large_bad pass (lbad_range) */
  atomic_int found;
};

static void *worker(void *arg) {
  struct work *w = arg;
  for (;;) {
    long long c = atomic_fetch_add(&w->next, 1);
    if (c >= w->nchunks) break;
    int64_t start = (int64_t)c * w->chunk;
    int64_t count = w->n - start < w->chunk ? w->n - start : w->chunk;
    if (!w->parts) {
      if (lbad_range(w->kp, w->impl, w->ref, start, count, &w->found))
        atomic_store_explicit(&w->found, 1, memory_order_relaxed);
      continue;
    }
    partial_init(&w->parts[c]);
    w->parts[c].b0 = pg_load_f64(w->ref, w->kp->dtype, (size_t)start);
    w->fn(w->kp, w->impl, w->ref, start, count, &w->parts[c]);
  }
  return NULL;
}

/* Runs worker() on nt threads (the caller is one of them). */
static void run_workers(struct work *w, int nt) {
  pthread_t tids[PG__CMP_MAX_THREADS];
  int started = 0;
  for (int t = 1; t < nt; t++) { /* the calling thread is worker 0 */
    if (pthread_create(&tids[started], NULL, worker, w) != 0) break; /* fewer is fine */
    started++;
  }
  worker(w);
  for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
}

/* Folds chunk partial q (later in index order) into p. */
static void partial_merge(struct pg__partial *p, const struct pg__partial *q) {
  p->mismatches += q->mismatches;
  p->mism_nonfinite += q->mism_nonfinite;
  p->n_finite += q->n_finite;
  p->nan_a += q->nan_a;
  p->nan_b += q->nan_b;
  p->inf_a += q->inf_a;
  p->inf_b += q->inf_b;
  p->balance += q->balance;
  p->within3 += q->within3;
  p->within53 += q->within53;
  p->zeros_b += q->zeros_b;
  p->sum_abs += q->sum_abs;
  p->sum_sq += q->sum_sq;
  p->sum_ab += q->sum_ab;
  p->sum_aa += q->sum_aa;
  p->sum_bb += q->sum_bb;
  if (q->max_abs > p->max_abs) p->max_abs = q->max_abs, p->max_abs_at = q->max_abs_at;
  if (q->max_rel > p->max_rel) p->max_rel = q->max_rel, p->max_rel_at = q->max_rel_at;
  p->large |= q->large;
  p->large_bad |= q->large_bad;
  p->nonconst |= q->nonconst || !(q->b0 == p->b0);
  if (q->max_ulp > p->max_ulp) p->max_ulp = q->max_ulp;
  for (int i = 0; i < q->n_first && p->n_first < PG_CMP_FIRST_MISMATCHES; i++)
    p->first[p->n_first++] = q->first[i];
}

static void unravel(int64_t flat, int ndim, const int64_t *shape, int64_t *index) {
  for (int i = PG_MAX_NDIM - 1; i >= 0; i--) index[i] = 0;
  for (int i = ndim - 1; i >= 0; i--) {
    if (shape[i] > 0) {
      index[i] = flat % shape[i];
      flat /= shape[i];
    }
  }
}

static void format_shape(const DLTensor *t, char *buf, size_t size) {
  pg_cmp_format_index(t->shape, t->ndim, buf, size);
}

/* Checks that t is a compact CPU tensor we can read; fills dtype and numel. */
static int check_tensor(const DLTensor *t, const char *which, enum pg_dtype *dtype,
                        int64_t *numel, struct pg_error *err) {
  if (!t) return pg_error_set(err, PG_EINVAL, "compare: %s tensor is NULL", which);
  if (t->ndim < 0 || t->ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_EINVAL, "compare: %s tensor has rank %d (0..%d supported)",
                        which, t->ndim, PG_MAX_NDIM);
  if (t->ndim > 0 && !t->shape)
    return pg_error_set(err, PG_EINVAL, "compare: %s tensor has no shape", which);
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost)
    return pg_error_set(err, PG_ENOTSUP, "compare: %s tensor is not in host memory", which);
  *dtype = pg_dtype_from_dl(t->dtype);
  if (*dtype == PG_DTYPE_INVALID)
    return pg_error_set(err, PG_EDTYPE,
                        "compare: %s tensor has an unsupported dtype (code %d, %d bits, %d lanes)",
                        which, t->dtype.code, t->dtype.bits, t->dtype.lanes);
  PG_RETURN_IF_ERROR(pg_shape_numel(t->ndim, t->shape, numel, err));
  if (t->strides) { /* accept explicit strides only when they describe C order */
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
      if (t->shape[i] != 1 && t->strides[i] != expect)
        return pg_error_set(err, PG_ENOTSUP,
                            "compare: %s tensor is not contiguous in C order (axis %d stride %lld)",
                            which, i, (long long)t->strides[i]);
      expect *= t->shape[i];
    }
  }
  if (*numel > 0 && !t->data)
    return pg_error_set(err, PG_EINVAL, "compare: %s tensor has no data", which);
  return PG_OK;
}

static int check_rule(const struct pg_cmp_rule *r, struct pg_error *err) {
  if (!r) return pg_error_set(err, PG_EINVAL, "compare: rule is NULL");
  if (!(r->atol >= 0.0) || !(r->rtol >= 0.0) || isinf(r->atol) || isinf(r->rtol))
    return pg_error_set(err, PG_EINVAL, "compare: atol and rtol must be finite and >= 0 (got %g, %g)",
                        r->atol, r->rtol);
  switch (r->kind) {
    case PG_RULE_ALLCLOSE: case PG_RULE_EXACT: return PG_OK;
    case PG_RULE_ULP:
      if (r->ulp < 0) return pg_error_set(err, PG_EINVAL, "compare: ulp must be >= 0");
      return PG_OK;
    case PG_RULE_RATIO:
      if (!(r->ratio >= 0.0 && r->ratio <= 1.0))
        return pg_error_set(err, PG_EINVAL, "compare: ratio must be in [0, 1] (got %g)", r->ratio);
      return PG_OK;
    default: return pg_error_set(err, PG_EINVAL, "compare: unknown rule kind %d", (int)r->kind);
  }
}

static int thread_budget(int n_threads) {
  if (n_threads > 0) return n_threads;
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c > 0 ? (int)c : 1;
}

/* Describes both tensors in out; on a shape or dtype mismatch, says which in out
 * (structural) and returns 1: nothing is compared then. */
static int structural_mismatch(const DLTensor *impl, const DLTensor *ref, enum pg_dtype ti,
                               enum pg_dtype tr, struct pg_cmp_result *out) {
  out->ndim = ref->ndim;
  out->impl_ndim = impl->ndim;
  for (int i = 0; i < ref->ndim; i++) out->ref_shape[i] = ref->shape[i];
  for (int i = 0; i < impl->ndim; i++) out->impl_shape[i] = impl->shape[i];
  out->impl_dtype = ti;
  out->ref_dtype = tr;

  int same_shape = impl->ndim == ref->ndim;
  for (int i = 0; same_shape && i < ref->ndim; i++) same_shape = impl->shape[i] == ref->shape[i];
  if (same_shape && ti == tr) return 0;
  char si[96], sr[96]; /* long shapes are truncated, never overrun */
  format_shape(impl, si, sizeof si);
  format_shape(ref, sr, sizeof sr);
  out->structural = 1;
  if (!same_shape && ti != tr)
    snprintf(out->structural_reason, sizeof out->structural_reason,
             "shape and dtype mismatch: impl %s %s, reference %s %s", si, pg_dtype_name(ti), sr,
             pg_dtype_name(tr));
  else if (!same_shape)
    snprintf(out->structural_reason, sizeof out->structural_reason,
             "shape mismatch: impl %s, reference %s", si, sr);
  else
    snprintf(out->structural_reason, sizeof out->structural_reason,
             "dtype mismatch: impl %s, reference %s", pg_dtype_name(ti), pg_dtype_name(tr));
  return 1;
}

/* The loop-invariant parameters of the kernels for a rule on reference dtype tr. */
static void kparams_init(struct pg__kparams *kp, const struct pg_cmp_rule *rule, enum pg_dtype tr,
                         _Atomic uint64_t *rel_hint, _Atomic uint64_t *abs_hint) {
  memset(kp, 0, sizeof *kp);
  kp->dtype = tr;
  kp->atol = rule->atol;
  kp->rtol = rule->rtol;
  kp->equal_nan = rule->equal_nan != 0;
  kp->ulp = (uint64_t)(rule->ulp > 0 ? rule->ulp : 0);
  kp->large = rule->rtol > 0 ? rule->atol / rule->rtol : INFINITY;
  kp->rtol100 = rule->rtol / 100.0;
  kp->rel_hint = rel_hint;
  kp->abs_hint = abs_hint;
  if (!pg_dtype_is_float(tr)) kp->kind = PG__K_INT;
  else if (rule->kind == PG_RULE_EXACT) kp->kind = PG__K_EXACT;
  else if (rule->kind == PG_RULE_ULP) kp->kind = PG__K_ULP;
  else kp->kind = PG__K_CLOSE;
}

/* The rule's verdict on `mismatches` of n elements. */
static int rule_passes(const struct pg_cmp_rule *rule, int64_t mismatches, int64_t n) {
  if (rule->kind == PG_RULE_RATIO) return (double)mismatches <= rule->ratio * (double)n;
  return mismatches == 0;
}

/* Every condition of cpu_reproducer_candidate but "no large_bad cell": a failed
 * allclose/ratio comparison of floats, all mismatches finite, some |b| >= atol/rtol. */
static int reproducer_possible(const struct pg_cmp_rule *rule, enum pg_dtype tr,
                               const struct pg__partial *t, int passed) {
  return !passed && pg_dtype_is_float(tr) &&
         (rule->kind == PG_RULE_ALLCLOSE || rule->kind == PG_RULE_RATIO) && rule->rtol > 0 &&
         t->mismatches > 0 && t->mism_nonfinite == 0 && t->large;
}

/* Compares the n elements in chunks on up to n_threads threads and merges the chunk
 * results, in chunk order, into *total (partial_init'ed by the caller). */
static int run_chunks(const struct pg__kparams *kp, const struct pg_cmp_rule *rule,
                      const char *pi, const char *pr, int64_t n, int n_threads,
                      struct pg__partial *total, struct pg_error *err) {
  /* Chunk size depends on n only (determinism); a multiple of the block size. */
  int64_t chunk = PG__CMP_MIN_CHUNK;
  if (n / PG__CMP_MAX_CHUNKS + 1 > chunk)
    chunk = (n / PG__CMP_MAX_CHUNKS + PG__CMP_BLOCK) / PG__CMP_BLOCK * PG__CMP_BLOCK;
  int64_t nchunks = n == 0 ? 0 : (n + chunk - 1) / chunk;
  if (nchunks == 0) return PG_OK;
  total->b0 = pg_load_f64(pr, kp->dtype, 0);
  struct work w;
  w.kp = kp;
  w.fn = pick_kernel();
  w.impl = pi;
  w.ref = pr;
  w.n = n;
  w.chunk = chunk;
  w.nchunks = nchunks;
  atomic_init(&w.next, 0);
  w.parts = malloc((size_t)nchunks * sizeof *w.parts);
  if (!w.parts)
    return pg_error_set(err, PG_ENOMEM, "compare: cannot allocate %lld chunk results",
                        (long long)nchunks);
  atomic_init(&w.found, 0);
  int nt = thread_budget(n_threads);
  if (nt > PG__CMP_MAX_THREADS) nt = PG__CMP_MAX_THREADS;
  if (nt > nchunks) nt = (int)nchunks;
  run_workers(&w, nt);
  for (int64_t c = 0; c < nchunks; c++) partial_merge(total, &w.parts[c]);
  free(w.parts);
  /* large_bad decides only cpu_reproducer_candidate: look for it only when every
   * other condition of that flag holds */
  if (!total->large_bad &&
      reproducer_possible(rule, kp->dtype, total, rule_passes(rule, total->mismatches, n))) {
    w.parts = NULL;
    atomic_store(&w.next, 0);
    run_workers(&w, nt);
    total->large_bad = atomic_load(&w.found);
  }
  return PG_OK;
}

/* The verdict and the metrics of docs/design.md §7 from the merged result. */
static void set_metrics(struct pg_cmp_result *out, const struct pg_cmp_rule *rule,
                        const DLTensor *impl, const DLTensor *ref, enum pg_dtype tr, int64_t n,
                        struct pg__partial *total) {
  out->n = n;
  out->n_finite = total->n_finite;
  out->mismatches = total->mismatches;
  out->mismatches_nonfinite = total->mism_nonfinite;
  out->mismatch_ratio = n ? (double)total->mismatches / (double)n : 0.0;
  out->passed = rule_passes(rule, total->mismatches, n);

  if (total->max_abs_at >= 0) {
    out->max_abs_diff = total->max_abs;
    out->max_abs_flat = total->max_abs_at;
    unravel(total->max_abs_at, ref->ndim, ref->shape, out->max_abs_index);
    /* the sign of the worst element: one load of each side, no per-element cost */
    const char *pi = (const char *)impl->data + impl->byte_offset;
    const char *pr = (const char *)ref->data + ref->byte_offset;
    out->max_signed_diff = pg_load_f64(pi, tr, (size_t)total->max_abs_at) -
                           pg_load_f64(pr, tr, (size_t)total->max_abs_at);
  }
  if (total->max_rel_at < 0 && total->max_abs_at >= 0) {
    /* no block was re-scanned: every finite pair has a == b, so max_rel is 0 at the
     * first finite pair, which is also where max_abs (0) was first seen */
    total->max_rel = 0.0;
    total->max_rel_at = total->max_abs_at;
  }
  if (total->max_rel_at >= 0) {
    out->max_rel_diff = total->max_rel;
    out->max_rel_flat = total->max_rel_at;
    unravel(total->max_rel_at, ref->ndim, ref->shape, out->max_rel_index);
  }
  if (total->n_finite > 0) {
    double nf = (double)total->n_finite;
    out->mean_abs_diff = total->sum_abs / nf;
    out->rmse = sqrt(total->sum_sq / nf);
    double na = sqrt(total->sum_aa), nb = sqrt(total->sum_bb);
    if (na == 0.0 && nb == 0.0) out->cosine_similarity = 1.0; /* both all-zero: identical */
    else if (na == 0.0 || nb == 0.0) out->cosine_similarity = 0.0;
    else out->cosine_similarity = total->sum_ab / na / nb;
  }
  out->nan_impl = total->nan_a;
  out->nan_ref = total->nan_b;
  out->inf_impl = total->inf_a;
  out->inf_ref = total->inf_b;
  out->max_ulp = (double)total->max_ulp;
  if (n > 0) {
    out->error_balance = (double)total->balance / (double)n;
    out->share_within_1e3 = (double)total->within3 / (double)n;
    out->share_within_5e3 = (double)total->within53 / (double)n;
    out->zero_share_ref = (double)total->zeros_b / (double)n;
  }
  out->zeros_ref = total->zeros_b;
}

/* The flags that say the case or the golden may be at fault, not the impl. */
static void set_trust(struct pg_cmp_result *out, const struct pg_cmp_rule *rule, enum pg_dtype tr,
                      int64_t n, const struct pg__partial *total) {
  /* A reference that is mostly zeros, or constant, cannot tell a good impl from a
   * bad one: the case is too weak to trust (docs/design.md §7). */
  if (n >= 10 && total->zeros_b * 10 >= n * 3) {
    out->mistrusted = 1;
    snprintf(out->mistrust_reason, sizeof out->mistrust_reason,
             "%.1f%% of the reference elements are exactly zero (>= 30%%)",
             100.0 * out->zero_share_ref);
  } else if (n >= 10 && total->nan_b == 0 && !total->nonconst) {
    out->mistrusted = 1;
    snprintf(out->mistrust_reason, sizeof out->mistrust_reason,
             "all %lld reference elements are equal", (long long)n);
  }

  /* Failed only where |golden| is small enough for atol to govern, while every cell
   * where rtol governs is 100x inside rtol, and no difference exceeds rtol times the
   * golden's RMS (accumulation-order noise scales with the tensor, not the cell; a
   * mismatch larger than that is a real error however small its cell): the golden
   * itself is suspect. */
  double rms_b = total->n_finite > 0 ? sqrt(total->sum_bb / (double)total->n_finite) : 0.0;
  out->cpu_reproducer_candidate = reproducer_possible(rule, tr, total, out->passed) &&
                                  total->large_bad == 0 && total->max_abs <= rule->rtol * rms_b;
}

/* The first mismatches: flat and N-d index, values and differences. */
static void set_first(struct pg_cmp_result *out, const struct pg__partial *total, const char *pi,
                      enum pg_dtype ti, const char *pr, enum pg_dtype tr, const DLTensor *ref) {
  out->n_first = total->n_first;
  for (int i = 0; i < total->n_first; i++) {
    int64_t at = total->first[i];
    struct pg_cmp_mismatch *mm = &out->first[i];
    double a = pg_load_f64(pi, ti, (size_t)at), b = pg_load_f64(pr, tr, (size_t)at);
    out->first_flat[i] = at;
    unravel(at, ref->ndim, ref->shape, mm->index);
    mm->impl_value = a;
    mm->abs_diff = fabs(a - b);
    mm->rel_diff = mm->abs_diff / (fabs(b) + 1e-8);
  }
}

int pg_tensor_compare(const DLTensor *impl, const DLTensor *ref, const struct pg_cmp_rule *rule,
                      int n_threads, struct pg_cmp_result *out, struct pg_error *err) {
  if (!out) return pg_error_set(err, PG_EINVAL, "compare: result is NULL");
  memset(out, 0, sizeof *out);
  out->max_abs_flat = out->max_rel_flat = -1;
  enum pg_dtype ti, tr;
  int64_t ni, nr;
  PG_RETURN_IF_ERROR(check_tensor(impl, "impl", &ti, &ni, err));
  PG_RETURN_IF_ERROR(check_tensor(ref, "reference", &tr, &nr, err));
  PG_RETURN_IF_ERROR(check_rule(rule, err));
  if (structural_mismatch(impl, ref, ti, tr, out)) return PG_OK;

  struct pg__kparams kp;
  _Atomic uint64_t rel_hint = 0, abs_hint = 0; /* +0.0 */
  kparams_init(&kp, rule, tr, &rel_hint, &abs_hint);
  const char *pi = (const char *)impl->data + impl->byte_offset;
  const char *pr = (const char *)ref->data + ref->byte_offset;
  struct pg__partial total;
  partial_init(&total);
  PG_RETURN_IF_ERROR(run_chunks(&kp, rule, pi, pr, nr, n_threads, &total, err));
  set_metrics(out, rule, impl, ref, tr, nr, &total);
  set_trust(out, rule, tr, nr, &total);
  set_first(out, &total, pi, ti, pr, tr, ref);
  return PG_OK;
}
