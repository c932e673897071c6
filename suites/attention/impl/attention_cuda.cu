/* attention_cuda — the bundled `attention` op as CUDA kernels, a phasegate plugin
 * (ABI: include/phasegate/impl.h; contract: suites/attention/module_interfaces.yaml).
 *
 *   M1 scores = q kᵀ / sqrt(D)   fp32      bmm_kernel<_, _, B_TRANS=true>
 *   M2 probs  = softmax(scores)  fp16      softmax_rows_kernel (max-subtracted, per row)
 *   M3 out    = probs v          fp16      bmm_kernel<_, _, B_TRANS=false>
 *
 * Exports attention_module1_wrapper, attention_module12_wrapper and
 * attention_module123_wrapper. phasegate hands the wrappers host tensors (kDLCPU): each
 * call copies the inputs to device `call->device_id`, runs M1..Mk there and copies the
 * boundary output back, so one call is one self-contained device round trip.
 *
 * Kernels: inputs are read in their own dtype (fp16, or fp32 / bf16 when a case says
 * so) and every product is accumulated in fp32. The matmul tiles its output 32 x 32 per
 * block and its reduction axis (D for q kᵀ, S for probs v) in tiles of 32 staged through
 * shared memory; the last, partial tile of the reduction axis is zero-padded on load and
 * its loop stops at the tail, so D = 80 or S = 17 are computed exactly like D = 64.
 * Probabilities are stored in their declared dtype (fp16) and M3 reads them back from
 * that storage, as the cumulative golden composes M2 and M3.
 *
 * Modes: `cuda` only; any other mode returns PG_UNAVAILABLE (phasegate: SKIPPED). With no
 * usable CUDA device (no driver, no GPU, device id out of range) the call is
 * PG_UNAVAILABLE too, with the reason through call->log. A CUDA error during a call is a
 * runtime error (return 1) naming the failing call; the plugin keeps no state between
 * calls, so a later call in a fresh process starts clean.
 * Built only when CMake finds the CUDA toolkit (PHASEGATE_WITH_CUDA, docs/cuda.md).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "phasegate/impl.h"

PG_IMPL_EXPORT int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                             int32_t n_out, const pg_call *call);
PG_IMPL_EXPORT int attention_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                              int32_t n_out, const pg_call *call);
PG_IMPL_EXPORT int attention_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out,
                                               int32_t n_out, const pg_call *call);

namespace {

constexpr int TILE = 32;       /* output tile (rows and columns) per block */
constexpr int TILE_K = 32;     /* reduction tile staged through shared memory */
constexpr int BLOCK_ROWS = 8;  /* block = 32 x 8 threads, 4 output rows per thread */
constexpr int SOFTMAX_THREADS = 128;

/* ---- element types ---- */

enum class Dt { F32, F16, BF16, Other };

Dt dt_of(DLDataType t) {
  if (t.lanes != 1) return Dt::Other;
  if (t.code == kDLFloat && t.bits == 32) return Dt::F32;
  if (t.code == kDLFloat && t.bits == 16) return Dt::F16;
  if (t.code == kDLBfloat && t.bits == 16) return Dt::BF16;
  return Dt::Other;
}

size_t dt_size(Dt d) { return d == Dt::F32 ? 4 : 2; }

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

/* ---- kernels ---- */

/* Batched C[b] = alpha · A[b] · op(B[b]) with fp32 accumulation, for b = blockIdx.z.
 * A is M x K row-major. B_TRANS: B is N x K (k of q kᵀ), else K x N (v of probs v).
 * C is M x N fp32. Each block computes a TILE x TILE tile of C; each thread 4 rows of
 * one column. The reduction runs over tiles of TILE_K: both operand tiles are staged in
 * shared memory (out-of-range elements as 0), and the inner loop stops at the tail
 * kn = min(TILE_K, K - k0), so a K that is no multiple of TILE_K is handled exactly. */
template <typename TA, typename TB, bool B_TRANS>
__global__ void bmm_kernel(const TA *__restrict__ A, const TB *__restrict__ B,
                           float *__restrict__ C, int M, int N, int K, float alpha) {
  __shared__ float As[TILE][TILE_K + 1]; /* [m][k]; +1 column: no bank conflicts */
  __shared__ float Bs[TILE_K][TILE + 1]; /* [k][n] */
  const size_t b = blockIdx.z;
  A += b * (size_t)M * K;
  B += b * (size_t)N * K;
  C += b * (size_t)M * N;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
  float acc[TILE / BLOCK_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};

  for (int k0 = 0; k0 < K; k0 += TILE_K) {
    for (int r = ty; r < TILE; r += BLOCK_ROWS) { /* coalesced along k */
      const int m = m0 + r, k = k0 + tx;
      As[r][tx] = (m < M && k < K) ? to_f(A[(size_t)m * K + k]) : 0.0f;
    }
    if (B_TRANS) {
      for (int r = ty; r < TILE; r += BLOCK_ROWS) { /* row n of B, coalesced along k */
        const int n = n0 + r, k = k0 + tx;
        Bs[tx][r] = (n < N && k < K) ? to_f(B[(size_t)n * K + k]) : 0.0f;
      }
    } else {
      for (int r = ty; r < TILE_K; r += BLOCK_ROWS) { /* row k of B, coalesced along n */
        const int k = k0 + r, n = n0 + tx;
        Bs[r][tx] = (k < K && n < N) ? to_f(B[(size_t)k * N + n]) : 0.0f;
      }
    }
    __syncthreads();
    const int kn = min(TILE_K, K - k0); /* the tail tile is shorter */
    for (int kk = 0; kk < kn; ++kk) {
      const float bv = Bs[kk][tx];
#pragma unroll
      for (int i = 0; i < TILE / BLOCK_ROWS; ++i)
        acc[i] = fmaf(As[ty + i * BLOCK_ROWS][kk], bv, acc[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TILE / BLOCK_ROWS; ++i) {
    const int m = m0 + ty + i * BLOCK_ROWS, n = n0 + tx;
    if (m < M && n < N) C[(size_t)m * N + n] = acc[i] * alpha;
  }
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* Reduces v over the block (max or sum); every thread gets the result. */
template <bool MAX>
__device__ float block_reduce(float v, float *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
  v = MAX ? warp_max(v) : warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = MAX ? -INFINITY : 0.0f;
  for (int w = 0; w < nw; ++w) r = MAX ? fmaxf(r, scratch[w]) : r + scratch[w];
  __syncthreads(); /* scratch is reused by the next reduction */
  return r;
}

/* One block per row of n scores: P = exp(x - max) / sum exp(x - max), in fp32, stored
 * as TP (rounded to nearest even). */
template <typename TP>
__global__ void softmax_rows_kernel(const float *__restrict__ S, TP *__restrict__ P, int n) {
  __shared__ float scratch[32];
  const float *x = S + (size_t)blockIdx.x * n;
  TP *y = P + (size_t)blockIdx.x * n;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, x[j]);
  m = block_reduce<true>(m, scratch);
  float s = 0.0f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) s += expf(x[j] - m);
  s = block_reduce<false>(s, scratch);
  const float inv = 1.0f / s;
  for (int j = threadIdx.x; j < n; j += blockDim.x) y[j] = from_f<TP>(expf(x[j] - m) * inv);
}

template <typename TI, typename TO>
__global__ void cast_kernel(const TI *__restrict__ in, TO *__restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    out[i] = from_f<TO>(to_f(in[i]));
}

/* ---- host side ---- */

void logf_(const pg_call *call, int level, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  call->log(call, level, msg);
}

/* A device buffer freed when it goes out of scope. */
struct DevBuf {
  void *p = nullptr;
  DevBuf() = default;
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  template <typename T> T *as() const { return static_cast<T *>(p); }
};

/* Fails the call (return 1) with the CUDA call, where, and the error text. */
#define CK(expr)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (expr);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      logf_(call, PG_LOG_ERROR, "attention_cuda: %s failed at %s:%d: %s (%s)", #expr, \
            __FILE__, __LINE__, cudaGetErrorString(e_), cudaGetErrorName(e_));      \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

/* Row-major and dense (strides NULL or the compact ones). */
bool compact(const DLTensor *t) {
  if (!t->strides) return true;
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != s) return false;
    s *= t->shape[i];
  }
  return true;
}

const char *host_ptr(const DLTensor *t) {
  return static_cast<const char *>(t->data) + t->byte_offset;
}

int check_host_tensor(const DLTensor *t, const char *what, const pg_call *call) {
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost) {
    logf_(call, PG_LOG_ERROR, "attention_cuda: %s is not a host tensor (device type %d)", what,
          (int)t->device.device_type);
    return 2;
  }
  if (!compact(t)) {
    logf_(call, PG_LOG_ERROR, "attention_cuda: %s is not a compact row-major tensor", what);
    return 2;
  }
  if (dt_of(t->dtype) == Dt::Other) {
    logf_(call, PG_LOG_ERROR, "attention_cuda: %s has dtype code %d bits %d: supported are "
          "float16, bfloat16 and float32", what, (int)t->dtype.code, (int)t->dtype.bits);
    return 2;
  }
  return 0;
}

/* 0 when mode `cuda` can run on call->device_id here; PG_UNAVAILABLE (reason logged)
 * when it cannot. */
int select_device(const pg_call *call) {
  if (strcmp(call->mode, "cuda") != 0) {
    logf_(call, PG_LOG_INFO, "attention_cuda runs mode 'cuda' only, not '%s'", call->mode);
    return PG_UNAVAILABLE;
  }
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    logf_(call, PG_LOG_WARN, "attention_cuda: no CUDA device here (%s): mode 'cuda' is "
          "unavailable", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return PG_UNAVAILABLE;
  }
  if (call->device_id < 0 || call->device_id >= n) {
    logf_(call, PG_LOG_WARN, "attention_cuda: device id %d does not exist (%d CUDA device%s)",
          (int)call->device_id, n, n == 1 ? "" : "s");
    return PG_UNAVAILABLE;
  }
  e = cudaSetDevice(call->device_id);
  if (e != cudaSuccess) {
    logf_(call, PG_LOG_WARN, "attention_cuda: cudaSetDevice(%d): %s", (int)call->device_id,
          cudaGetErrorString(e));
    return PG_UNAVAILABLE;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, call->device_id) == cudaSuccess)
    pg_call_device_name(call, prop.name); /* the report's run.device.name */
  return 0;
}

unsigned blocks_for(size_t n, unsigned threads) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b < 65535 ? (b ? b : 1) : 65535);
}

/* Converts n elements of a half/bf16 device buffer to a fresh fp32 one. */
int widen(const DevBuf &src, Dt d, size_t n, DevBuf &dst, const pg_call *call) {
  CK(cudaMalloc(&dst.p, n * sizeof(float)));
  if (d == Dt::F16)
    cast_kernel<__half, float><<<blocks_for(n, 256), 256>>>(src.as<__half>(), dst.as<float>(), n);
  else
    cast_kernel<__nv_bfloat16, float>
        <<<blocks_for(n, 256), 256>>>(src.as<__nv_bfloat16>(), dst.as<float>(), n);
  CK(cudaGetLastError());
  return 0;
}

/* fp32 device buffer -> output dtype, copied into the host output tensor. */
int store(const DevBuf &f, size_t n, DLTensor *out, const pg_call *call) {
  Dt d = dt_of(out->dtype);
  char *dst = static_cast<char *>(out->data) + out->byte_offset;
  if (d == Dt::F32) {
    CK(cudaMemcpy(dst, f.p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return 0;
  }
  DevBuf o;
  CK(cudaMalloc(&o.p, n * dt_size(d)));
  if (d == Dt::F16)
    cast_kernel<float, __half><<<blocks_for(n, 256), 256>>>(f.as<float>(), o.as<__half>(), n);
  else
    cast_kernel<float, __nv_bfloat16>
        <<<blocks_for(n, 256), 256>>>(f.as<float>(), o.as<__nv_bfloat16>(), n);
  CK(cudaGetLastError());
  CK(cudaMemcpy(dst, o.p, n * dt_size(d), cudaMemcpyDeviceToHost));
  return 0;
}

template <typename TA, typename TB, bool B_TRANS>
int bmm(const void *A, const void *B, float *C, int batch, int M, int N, int K, float alpha,
        const pg_call *call) {
  dim3 block(TILE, BLOCK_ROWS);
  dim3 grid((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE),
            (unsigned)batch);
  bmm_kernel<TA, TB, B_TRANS><<<grid, block>>>(static_cast<const TA *>(A),
                                               static_cast<const TB *>(B), C, M, N, K, alpha);
  CK(cudaGetLastError());
  return 0;
}

/* probs (dtype P) · v (fp16 or fp32) into fp32. */
template <typename TP>
int pv(const void *probs, const void *v, bool v_half, float *out, int batch, int S, int D,
       const pg_call *call) {
  return v_half ? bmm<TP, __half, false>(probs, v, out, batch, S, D, S, 1.0f, call)
                : bmm<TP, float, false>(probs, v, out, batch, S, D, S, 1.0f, call);
}

int run(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out, const pg_call *call,
        int phase) {
  /* the contract: q, k, v [B, H, S, D]; one boundary output */
  if (n_in != 3 || n_out != 1) {
    logf_(call, PG_LOG_ERROR, "attention_cuda: expected 3 inputs and 1 output, got %d and %d",
          (int)n_in, (int)n_out);
    return 2;
  }
  static const char *const names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; i++) {
    if (in[i].ndim != 4) {
      logf_(call, PG_LOG_ERROR, "attention_cuda: %s has %d dims, expected [B, H, S, D]",
            names[i], (int)in[i].ndim);
      return 2;
    }
    for (int a = 0; a < 4; a++)
      if (in[i].shape[a] != in[0].shape[a]) {
        logf_(call, PG_LOG_ERROR, "attention_cuda: q, k and v differ in shape");
        return 2;
      }
    if (int rc = check_host_tensor(&in[i], names[i], call)) return rc;
  }
  if (int rc = check_host_tensor(&out[0], "the output", call)) return rc;
  const int64_t B = in[0].shape[0], H = in[0].shape[1], S = in[0].shape[2], D = in[0].shape[3];
  const int64_t last = phase == 3 ? D : S;
  if (out[0].ndim != 4 || out[0].shape[0] != B || out[0].shape[1] != H ||
      out[0].shape[2] != S || out[0].shape[3] != last) {
    logf_(call, PG_LOG_ERROR, "attention_cuda: the output is not [B, H, S, %s]",
          phase == 3 ? "D" : "S");
    return 2;
  }
  if (B * H > 65535 || S > INT32_MAX / 2 || D > INT32_MAX / 2) {
    logf_(call, PG_LOG_ERROR, "attention_cuda: B*H = %lld exceeds the grid's 65535 heads",
          (long long)(B * H));
    return 2;
  }
  if (int rc = select_device(call)) return rc;
  if (numel(&out[0]) == 0) return 0; /* an empty boundary: nothing to compute */

  const int BH = (int)(B * H), Si = (int)S, Di = (int)D;
  const size_t nqk = (size_t)B * H * S * D, nss = (size_t)B * H * S * S;
  const Dt dq = dt_of(in[0].dtype), dk = dt_of(in[1].dtype), dv = dt_of(in[2].dtype);
  /* fp16 kernels when every input is fp16; otherwise every input is widened to fp32 */
  const bool half_path = dq == Dt::F16 && dk == Dt::F16 && (phase < 3 || dv == Dt::F16);
  const int n_used = phase == 3 ? 3 : 2;

  DevBuf raw[3], wide[3];
  const void *dev_in[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < n_used; i++) {
    const Dt d = dt_of(in[i].dtype);
    CK(cudaMalloc(&raw[i].p, nqk * dt_size(d)));
    CK(cudaMemcpy(raw[i].p, host_ptr(&in[i]), nqk * dt_size(d), cudaMemcpyHostToDevice));
    dev_in[i] = raw[i].p;
    if (!half_path && d != Dt::F32) {
      if (int rc = widen(raw[i], d, nqk, wide[i], call)) return rc;
      dev_in[i] = wide[i].p;
    }
  }

  /* M1: scores = q kᵀ / sqrt(D), fp32 */
  DevBuf scores;
  CK(cudaMalloc(&scores.p, nss * sizeof(float)));
  const float alpha = 1.0f / sqrtf((float)D);
  int rc = half_path
               ? bmm<__half, __half, true>(dev_in[0], dev_in[1], scores.as<float>(), BH, Si, Si, Di, alpha, call)
               : bmm<float, float, true>(dev_in[0], dev_in[1], scores.as<float>(), BH, Si, Si, Di, alpha, call);
  if (rc) return rc;
  if (phase == 1) {
    CK(cudaDeviceSynchronize());
    return store(scores, nss, &out[0], call);
  }

  /* M2: probs = softmax(scores) over the key axis, stored in the probs dtype: the
   * output's at phase 2; at phase 3 (which sees only `out`) the output's dtype, which is
   * what every suite case declares for probs too (float16, or float32 with fp32 out) */
  const Dt dp = dt_of(out[0].dtype);
  DevBuf probs;
  CK(cudaMalloc(&probs.p, nss * dt_size(dp)));
  const unsigned rows = (unsigned)(B * H * S);
  if (dp == Dt::F32)
    softmax_rows_kernel<float><<<rows, SOFTMAX_THREADS>>>(scores.as<float>(), probs.as<float>(), Si);
  else if (dp == Dt::F16)
    softmax_rows_kernel<__half><<<rows, SOFTMAX_THREADS>>>(scores.as<float>(), probs.as<__half>(), Si);
  else
    softmax_rows_kernel<__nv_bfloat16>
        <<<rows, SOFTMAX_THREADS>>>(scores.as<float>(), probs.as<__nv_bfloat16>(), Si);
  CK(cudaGetLastError());
  if (phase == 2) {
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(static_cast<char *>(out[0].data) + out[0].byte_offset, probs.p,
                  nss * dt_size(dp), cudaMemcpyDeviceToHost));
    return 0;
  }

  /* M3: out = probs v, fp32 accumulation over S (tiled, tail handled) */
  DevBuf o;
  CK(cudaMalloc(&o.p, nqk * sizeof(float)));
  if (dp == Dt::F32) rc = pv<float>(probs.p, dev_in[2], half_path, o.as<float>(), BH, Si, Di, call);
  else if (dp == Dt::F16) rc = pv<__half>(probs.p, dev_in[2], half_path, o.as<float>(), BH, Si, Di, call);
  else rc = pv<__nv_bfloat16>(probs.p, dev_in[2], half_path, o.as<float>(), BH, Si, Di, call);
  if (rc) return rc;
  CK(cudaDeviceSynchronize());
  return store(o, nqk, &out[0], call);
}

}  // namespace

int attention_module1_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                              const pg_call *call) {
  return run(in, n_in, out, n_out, call, 1);
}

int attention_module12_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                               const pg_call *call) {
  return run(in, n_in, out, n_out, call, 2);
}

int attention_module123_wrapper(const DLTensor *in, int32_t n_in, DLTensor *out, int32_t n_out,
                                const pg_call *call) {
  return run(in, n_in, out, n_out, call, 3);
}
