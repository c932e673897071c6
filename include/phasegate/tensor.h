/* phasegate — the tensor ABI: dtypes, exact fp16/bf16 conversions, and an owning
 * tensor built around DLPack's DLTensor.
 *
 * Everything that crosses a component or plugin boundary is a DLTensor (CPU, C order,
 * strides NULL). struct pg_tensor adds ownership and a name; its `dl` member can be
 * handed to any DLPack consumer. Header-only so that plugins need no library.
 * Not for: file formats (runner/), comparison (compare/), kernels (goldens/).
 */
#ifndef PHASEGATE_TENSOR_H
#define PHASEGATE_TENSOR_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PG_MAX_NDIM 8
#define PG_NAME_MAX 128
#define PG_TENSOR_ALIGN 64

/* DLPack 0.8 added kDLBool = 6; Debian 12 ships 0.6. We use the 0.8 code either way
 * so tensors we hand out mean the same thing to newer consumers. */
#define PG_DL_BOOL_CODE 6

enum pg_dtype {
  PG_DTYPE_INVALID = 0,
  PG_DTYPE_F32,
  PG_DTYPE_F16,
  PG_DTYPE_BF16,
  PG_DTYPE_F64,
  PG_DTYPE_I8,
  PG_DTYPE_U8,
  PG_DTYPE_I32,
  PG_DTYPE_I64,
  PG_DTYPE_BOOL,
  PG_DTYPE_COUNT
};

static inline size_t pg_dtype_size(enum pg_dtype t) {
  switch (t) {
    case PG_DTYPE_F32: case PG_DTYPE_I32: return 4;
    case PG_DTYPE_F16: case PG_DTYPE_BF16: return 2;
    case PG_DTYPE_F64: case PG_DTYPE_I64: return 8;
    case PG_DTYPE_I8: case PG_DTYPE_U8: case PG_DTYPE_BOOL: return 1;
    default: return 0;
  }
}

/* Canonical names, as the contract vocabulary spells them. */
static inline const char *pg_dtype_name(enum pg_dtype t) {
  switch (t) {
    case PG_DTYPE_F32: return "float32";
    case PG_DTYPE_F16: return "float16";
    case PG_DTYPE_BF16: return "bfloat16";
    case PG_DTYPE_F64: return "float64";
    case PG_DTYPE_I8: return "int8";
    case PG_DTYPE_U8: return "uint8";
    case PG_DTYPE_I32: return "int32";
    case PG_DTYPE_I64: return "int64";
    case PG_DTYPE_BOOL: return "bool";
    default: return "invalid";
  }
}

/* Parses the contract vocabulary (docs/design.md §3 rule 6) and the aliases real pypto
 * contracts, suites and lint fixtures use — the one alias table ("int" is int64).
 * Returns PG_DTYPE_INVALID for anything else. */
static inline enum pg_dtype pg_dtype_parse(const char *s) {
  static const struct {
    const char *name;
    enum pg_dtype type;
  } aliases[] = {{"fp16", PG_DTYPE_F16},  {"half", PG_DTYPE_F16},   {"bf16", PG_DTYPE_BF16},
                 {"fp32", PG_DTYPE_F32},  {"float", PG_DTYPE_F32},  {"fp64", PG_DTYPE_F64},
                 {"double", PG_DTYPE_F64}, {"i32", PG_DTYPE_I32},   {"i64", PG_DTYPE_I64},
                 {"int", PG_DTYPE_I64}};
  if (!s) return PG_DTYPE_INVALID;
  for (int t = PG_DTYPE_F32; t < PG_DTYPE_COUNT; t++)
    if (strcmp(s, pg_dtype_name((enum pg_dtype)t)) == 0) return (enum pg_dtype)t;
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (strcmp(s, aliases[i].name) == 0) return aliases[i].type;
  return PG_DTYPE_INVALID;
}

static inline int pg_dtype_is_float(enum pg_dtype t) {
  return t == PG_DTYPE_F32 || t == PG_DTYPE_F16 || t == PG_DTYPE_BF16 || t == PG_DTYPE_F64;
}

static inline DLDataType pg_dtype_to_dl(enum pg_dtype t) {
  DLDataType d = {0, 0, 1};
  switch (t) {
    case PG_DTYPE_F32: d.code = kDLFloat; d.bits = 32; break;
    case PG_DTYPE_F16: d.code = kDLFloat; d.bits = 16; break;
    case PG_DTYPE_BF16: d.code = kDLBfloat; d.bits = 16; break;
    case PG_DTYPE_F64: d.code = kDLFloat; d.bits = 64; break;
    case PG_DTYPE_I8: d.code = kDLInt; d.bits = 8; break;
    case PG_DTYPE_U8: d.code = kDLUInt; d.bits = 8; break;
    case PG_DTYPE_I32: d.code = kDLInt; d.bits = 32; break;
    case PG_DTYPE_I64: d.code = kDLInt; d.bits = 64; break;
    case PG_DTYPE_BOOL: d.code = PG_DL_BOOL_CODE; d.bits = 8; break;
    default: d.lanes = 0; break;
  }
  return d;
}

static inline enum pg_dtype pg_dtype_from_dl(DLDataType d) {
  if (d.lanes != 1) return PG_DTYPE_INVALID;
  for (int t = PG_DTYPE_F32; t < PG_DTYPE_COUNT; t++) {
    DLDataType c = pg_dtype_to_dl((enum pg_dtype)t);
    if (c.code == d.code && c.bits == d.bits) return (enum pg_dtype)t;
  }
  return PG_DTYPE_INVALID;
}

/* ---- fp16 / bf16 <-> fp32 / fp64, IEEE round-to-nearest-even, NaN/Inf/denormal/-0
 * exact. Tested exhaustively over all 65 536 bit patterns (tests/abi). ---- */

static inline uint32_t pg__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float pg__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float pg_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return pg__bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, nan */
  if (exp == 0) {
    if (man == 0) return pg__bits_f32(sign);
    /* subnormal: value = man * 2^-24, exact in fp32 */
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return pg__bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t pg_f32_to_f16(float f) {
  uint32_t x = pg__f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) /* NaN: keep it quiet, keep the top payload bits */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (and inf) -> inf */
  if (a < 0x38800000u) {                                     /* below 2^-14: subnormal */
    if (a < 0x33000000u) return sign;                        /* < 2^-25 -> +-0 */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14..24 */
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t h = (a >> 13) - (112u << 10), rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static inline float pg_bf16_to_f32(uint16_t b) { return pg__bits_f32((uint32_t)b << 16); }

static inline uint16_t pg_f32_to_bf16(float f) {
  uint32_t x = pg__f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* double -> float rounding to odd: a second rounding to a format with at least two
 * fewer significand bits (fp16, bf16) is then correctly rounded, avoiding the
 * double-rounding error of (half)(float)d. */
static inline float pg__f64_to_f32_odd(double d) {
  float t = (float)d;
  if ((double)t != d && d == d && t - t == 0.0f) {
    uint32_t u = pg__f32_bits(t);
    double at = t < 0 ? -(double)t : (double)t, ad = d < 0 ? -d : d;
    if (at > ad) u -= 1u; /* step toward zero: truncation */
    u |= 1u;              /* sticky */
    t = pg__bits_f32(u);
  }
  return t;
}

static inline uint16_t pg_f64_to_f16(double d) { return pg_f32_to_f16(pg__f64_to_f32_odd(d)); }
static inline uint16_t pg_f64_to_bf16(double d) { return pg_f32_to_bf16(pg__f64_to_f32_odd(d)); }

/* Element i of a buffer of dtype t, widened to double (exact for every dtype but
 * int64 beyond 2^53). */
static inline double pg_load_f64(const void *data, enum pg_dtype t, size_t i) {
  switch (t) {
    case PG_DTYPE_F32: return ((const float *)data)[i];
    case PG_DTYPE_F16: return pg_f16_to_f32(((const uint16_t *)data)[i]);
    case PG_DTYPE_BF16: return pg_bf16_to_f32(((const uint16_t *)data)[i]);
    case PG_DTYPE_F64: return ((const double *)data)[i];
    case PG_DTYPE_I8: return ((const int8_t *)data)[i];
    case PG_DTYPE_U8: return ((const uint8_t *)data)[i];
    case PG_DTYPE_I32: return ((const int32_t *)data)[i];
    case PG_DTYPE_I64: return (double)((const int64_t *)data)[i];
    case PG_DTYPE_BOOL: return ((const uint8_t *)data)[i] ? 1.0 : 0.0;
    default: return 0.0;
  }
}

/* Stores v as dtype t: floats round to nearest even; integers truncate toward zero
 * and saturate (NaN -> 0), as a cast in torch would for in-range values. */
static inline void pg_store_f64(void *data, enum pg_dtype t, size_t i, double v) {
  switch (t) {
    case PG_DTYPE_F32: ((float *)data)[i] = (float)v; return;
    case PG_DTYPE_F16: ((uint16_t *)data)[i] = pg_f64_to_f16(v); return;
    case PG_DTYPE_BF16: ((uint16_t *)data)[i] = pg_f64_to_bf16(v); return;
    case PG_DTYPE_F64: ((double *)data)[i] = v; return;
    case PG_DTYPE_BOOL: ((uint8_t *)data)[i] = (v != 0.0 && v == v) ? 1 : 0; return;
    default: break;
  }
  double lo, hi;
  switch (t) {
    case PG_DTYPE_I8: lo = -128.0; hi = 127.0; break;
    case PG_DTYPE_U8: lo = 0.0; hi = 255.0; break;
    case PG_DTYPE_I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case PG_DTYPE_I64: lo = -9223372036854775808.0; hi = 9223372036854774784.0; break;
    default: return;
  }
  if (v != v) v = 0.0;
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  switch (t) {
    case PG_DTYPE_I8: ((int8_t *)data)[i] = (int8_t)v; return;
    case PG_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)v; return;
    case PG_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)v; return;
    case PG_DTYPE_I64: ((int64_t *)data)[i] = (int64_t)v; return;
    default: return;
  }
}

/* ---- shapes ---- */

/* Product of dims with overflow and negativity checks. Returns PG_OK or
 * PG_EOVERFLOW / PG_EINVAL. */
static inline int pg_shape_numel(int ndim, const int64_t *shape, int64_t *out,
                                 struct pg_error *err) {
  if (ndim < 0 || ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_EINVAL, "rank %d outside 0..%d", ndim, PG_MAX_NDIM);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return pg_error_set(err, PG_EINVAL, "negative dimension %lld at axis %d",
                                          (long long)shape[i], i);
    if (shape[i] != 0 && n > INT64_MAX / shape[i])
      return pg_error_set(err, PG_EOVERFLOW, "shape element count overflows int64");
    n *= shape[i];
  }
  *out = n;
  return PG_OK;
}

/* ---- the owning tensor ---- */

/* An owning tensor. `dl.shape` points into `shape`, so a pg_tensor must not be copied
 * by value: use pg_tensor_move(). `release` (if set) frees the data instead of free():
 * mmap-backed tensors from the .npy reader use it. */
struct pg_tensor {
  DLTensor dl;
  int64_t shape[PG_MAX_NDIM];
  enum pg_dtype dtype;
  int64_t numel;
  size_t nbytes;
  void *owned;                               /* what to release, NULL for a view */
  void (*release)(struct pg_tensor *);       /* NULL: free(owned) */
  void *release_ctx;
  char name[PG_NAME_MAX];
};

static inline void pg_tensor_init(struct pg_tensor *t) {
  memset(t, 0, sizeof *t);
  t->dl.shape = t->shape;
  t->dl.device.device_type = kDLCPU;
}

static inline void pg_tensor_set_name(struct pg_tensor *t, const char *name) {
  snprintf(t->name, sizeof t->name, "%s", name ? name : "");
}

/* Describes (without allocating) a tensor of the given dtype and shape. */
static inline int pg_tensor_describe(struct pg_tensor *t, enum pg_dtype dtype, int ndim,
                                     const int64_t *shape, struct pg_error *err) {
  int64_t n = 0; /* gcc -O1+ cannot see that pg_shape_numel sets it on PG_OK */
  if (pg_dtype_size(dtype) == 0) return pg_error_set(err, PG_EDTYPE, "invalid dtype");
  PG_RETURN_IF_ERROR(pg_shape_numel(ndim, shape, &n, err));
  if ((uint64_t)n > (uint64_t)(SIZE_MAX / 2) / pg_dtype_size(dtype))
    return pg_error_set(err, PG_EOVERFLOW, "tensor byte size overflows size_t");
  t->dtype = dtype;
  t->numel = n;
  t->nbytes = (size_t)n * pg_dtype_size(dtype);
  t->dl.ndim = ndim;
  t->dl.shape = t->shape;
  t->dl.strides = NULL;
  t->dl.byte_offset = 0;
  t->dl.dtype = pg_dtype_to_dl(dtype);
  t->dl.device.device_type = kDLCPU;
  t->dl.device.device_id = 0;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  return PG_OK;
}

/* Allocates an uninitialised, PG_TENSOR_ALIGN-aligned buffer (at least 1 byte, so
 * empty tensors have a valid pointer). On PG_OK the tensor owns its data; release it
 * with pg_tensor_reset(). On error the tensor stays reset-safe. */
static inline int pg_tensor_alloc(struct pg_tensor *t, enum pg_dtype dtype, int ndim,
                                  const int64_t *shape, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_tensor_describe(t, dtype, ndim, shape, err));
  size_t bytes = t->nbytes ? t->nbytes : 1;
  bytes = (bytes + PG_TENSOR_ALIGN - 1) / PG_TENSOR_ALIGN * PG_TENSOR_ALIGN;
  void *p = aligned_alloc(PG_TENSOR_ALIGN, bytes);
  if (!p)
    return pg_error_set(err, PG_ENOMEM, "cannot allocate %zu bytes for tensor '%s'", bytes,
                        t->name);
  t->owned = p;
  t->release = NULL;
  t->dl.data = p;
  return PG_OK;
}

/* Frees owned data and leaves an empty tensor (name kept). Safe on NULL and twice. */
static inline void pg_tensor_reset(struct pg_tensor *t) {
  if (!t) return;
  if (t->release) t->release(t);
  else free(t->owned);
  t->owned = NULL;
  t->release = NULL;
  t->release_ctx = NULL;
  t->dl.data = NULL;
  t->dl.ndim = 0;
  t->numel = 0;
  t->nbytes = 0;
  t->dl.shape = t->shape;
}

/* Moves src into dst (dst must be reset or fresh); src is left empty. */
static inline void pg_tensor_move(struct pg_tensor *dst, struct pg_tensor *src) {
  memcpy(dst, src, sizeof *dst);
  dst->dl.shape = dst->shape;
  pg_tensor_init(src);
}

/* A non-owning DLTensor view of t (shape pointer stays inside t). */
static inline DLTensor pg_tensor_dl(const struct pg_tensor *t) {
  DLTensor d = t->dl;
  d.shape = (int64_t *)t->shape;
  return d;
}

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_TENSOR_H */
