// CPU kernels for the copy ops: one strided, broadcasting, converting loop serves all three, with
// a tiled path for transposing copies.
// Memory contract: reads the source once per element, writes every element of out once.
#include "athanor/ops/copy.h"

#include <bit>
#include <cstdint>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "athanor/core/loop_hints.h"
#include "common/isa_dispatch.h"
#include "common/pointwise_loop.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

// Floating -> int32/int64 as x86's truncating conversions (cvttss2si, cvttsd2si) do it, and so
// as PyTorch does on x86, but as defined C++ (a plain cast of NaN or of a value out of range is
// undefined behaviour): truncation toward zero, and I's minimum, the "integer indefinite", for
// NaN, infinities and values out of range.
template <class I, class F>
I x86_truncate(F v) {
  constexpr F lo = -static_cast<F>(uint64_t{1} << (8 * sizeof(I) - 1));
  return v >= lo && v < -lo ? static_cast<I>(v) : std::numeric_limits<I>::min();
}

template <class Src, class Dst>
Dst convert(compute_t<Src> v) {
  using C = compute_t<Src>;
  if constexpr (std::is_same_v<Dst, bool>) {
    return v != C(0);
  } else if constexpr (std::is_same_v<Dst, Half> || std::is_same_v<Dst, BFloat16>) {
    return Dst(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<C> && std::is_integral_v<Dst>) {
    // Narrow types take the int32 result's low bits, as the compiled cast does.
    if constexpr (sizeof(Dst) == 8) return static_cast<Dst>(x86_truncate<int64_t>(v));
    return static_cast<Dst>(x86_truncate<int32_t>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

constexpr int64_t kTile = 32;

// One tile of a 4-byte transpose: out[i * o_row + j] = src[i + j * s_col] for i in [i0, i1),
// j in [j0, j1), as 4 x 4 register transposes (SSE2, part of x86-64) with scalar edges.
template <class T>
void transpose_tile(const T* src, T* out, int64_t s_col, int64_t o_row, int64_t i0, int64_t i1,
                    int64_t j0, int64_t j1) {
  int64_t i = i0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    const int64_t j4 = j0 + (j1 - j0) / 4 * 4;
    for (; i + 4 <= i1; i += 4) {
      for (int64_t j = j0; j < j4; j += 4) {
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(src + i + j * s_col));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(src + i + (j + 1) * s_col));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(src + i + (j + 2) * s_col));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(src + i + (j + 3) * s_col));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(reinterpret_cast<float*>(out + i * o_row + j), r0);
        _mm_storeu_ps(reinterpret_cast<float*>(out + (i + 1) * o_row + j), r1);
        _mm_storeu_ps(reinterpret_cast<float*>(out + (i + 2) * o_row + j), r2);
        _mm_storeu_ps(reinterpret_cast<float*>(out + (i + 3) * o_row + j), r3);
      }
      for (int64_t k = i; k < i + 4; ++k) {
        for (int64_t j = j4; j < j1; ++j) out[k * o_row + j] = src[k + j * s_col];
      }
    }
  }
#endif
  for (; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) out[i * o_row + j] = src[i + j * s_col];
  }
}

// A transposing copy: out contiguous, src of the same shape whose stride-1 dim is not its last
// (x.t().contiguous(), a permuted view, the left operand a matrix product copies). The general
// loop walks out's rows and reads src with a large stride, a new cache line per element; this
// one copies kTile x kTile tiles of (that dim, last dim), whose source and destination lines
// stay in L1, for every index of the other (batch) dims. Returns false when it does not apply.
template <class Src, class Dst, class F>
bool transpose_into(Tensor& out, const Tensor& src, const F& f) {
  const int64_t nd = src.dim();
  if (nd < 2 || !out.is_contiguous() || src.shape() != out.shape()) return false;
  const int64_t last = nd - 1, cols = src.shape()[last];
  int64_t d = -1;
  for (int64_t k = 0; k < last; ++k) {
    if (src.strides()[k] == 1 && src.shape()[k] > 1) d = k;
  }
  if (d < 0 || src.strides()[last] == 1 || cols < 4 || src.shape()[d] < 4) return false;
  const int64_t rows = src.shape()[d], s_col = src.strides()[last], o_row = out.strides()[d];
  // Batch dims: every dim but d and last, innermost first.
  std::array<int64_t, kMaxDims> bsize{}, bsrc{}, bout{};
  int64_t nb = 0, batches = 1;
  for (int64_t k = last - 1; k >= 0; --k) {
    if (k == d) continue;
    bsize[nb] = src.shape()[k];
    bsrc[nb] = src.strides()[k];
    bout[nb] = out.strides()[k];
    batches *= bsize[nb++];
  }
  const int64_t tr = (rows + kTile - 1) / kTile, tc = (cols + kTile - 1) / kTile;
  const Src* sp = static_cast<const Src*>(src.data_ptr());
  Dst* op = static_cast<Dst*>(out.data_ptr());
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / (kTile * kTile));
  parallel_for(0, batches * tr * tc, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t b = t / (tr * tc), so = 0, oo = 0;
      const int64_t i0 = (t / tc) % tr * kTile, j0 = t % tc * kTile;
      for (int64_t k = 0; k < nb; ++k) {
        so += b % bsize[k] * bsrc[k];
        oo += b % bsize[k] * bout[k];
        b /= bsize[k];
      }
      const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      if constexpr (std::is_same_v<Src, Dst>) {  // no conversion: a bit-exact move
        transpose_tile(sp + so, op + oo, s_col, o_row, i0, i1, j0, j1);
        continue;
      }
      for (int64_t i = i0; i < i1; ++i) {
        const Src* si = sp + so + i;
        Dst* oi = op + oo + i * o_row;
        for (int64_t j = j0; j < j1; ++j) oi[j] = static_cast<Dst>(f(load(si + j * s_col)));
      }
    }
  });
  return true;
}

// Copies src into out (out's shape; src broadcast), converting Src -> out's dtype.
// The conversions mixed precision runs on every step (bfloat16 <-> float32 casts of activations
// and weights, bool masks to bfloat16), on dense operands, compiled per ISA: as pointwise_loop's
// baseline loop they were scalar, 11% of a bf16-mixed W2 step. Bit-identical to BFloat16's own
// conversions (round to nearest even; a NaN stays a quiet NaN with its sign and top payload).
ATH_ISA_BODY void bf16_to_f32_body(const uint16_t* x, float* y, int64_t n) {
  ATH_IVDEP
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(static_cast<uint32_t>(x[i]) << 16);
}
ATH_ISA_DISPATCH(bf16_to_f32, (const uint16_t* x, float* y, int64_t n), (x, y, n))

ATH_ISA_BODY void f32_to_bf16_body(const float* x, uint16_t* y, int64_t n) {
  ATH_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(x[i]);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40u;
    y[i] = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}
ATH_ISA_DISPATCH(f32_to_bf16, (const float* x, uint16_t* y, int64_t n), (x, y, n))

ATH_ISA_BODY void bool_to_bf16_body(const bool* x, uint16_t* y, int64_t n) {
  ATH_IVDEP
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] ? uint16_t{0x3f80} : uint16_t{0};  // 1.0 : 0.0
}
ATH_ISA_DISPATCH(bool_to_bf16, (const bool* x, uint16_t* y, int64_t n), (x, y, n))

// float16: the same casts for 16-mixed, through Half's branch-free conversions (vectorized per
// ISA here; bit-identical to the scalar ones by construction).
ATH_ISA_BODY void f16_to_f32_body(const uint16_t* x, float* y, int64_t n) {
  ATH_IVDEP
  for (int64_t i = 0; i < n; ++i) y[i] = Half::to_float(x[i]);
}
ATH_ISA_DISPATCH(f16_to_f32, (const uint16_t* x, float* y, int64_t n), (x, y, n))

ATH_ISA_BODY void f32_to_f16_body(const float* x, uint16_t* y, int64_t n) {
  ATH_IVDEP
  for (int64_t i = 0; i < n; ++i) y[i] = Half::from_float(x[i]);
}
ATH_ISA_DISPATCH(f32_to_f16, (const float* x, uint16_t* y, int64_t n), (x, y, n))

ATH_ISA_BODY void bool_to_f16_body(const bool* x, uint16_t* y, int64_t n) {
  ATH_IVDEP
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] ? uint16_t{0x3c00} : uint16_t{0};  // 1.0 : 0.0
}
ATH_ISA_DISPATCH(bool_to_f16, (const bool* x, uint16_t* y, int64_t n), (x, y, n))

// out = src converted, through the dense kernels above when both are contiguous and the pair
// has one; false otherwise.
template <class Src, class Dst>
bool convert_dense(Tensor& out, const Tensor& src) {
  if (!out.is_contiguous() || !src.is_contiguous() || out.shape() != src.shape()) return false;
  const int64_t n = out.numel();
  auto run = [&](auto kernel, const auto* x, auto* y) {
    parallel_for(0, n, kPointwiseGrain, [&](int64_t b, int64_t e) { kernel(x + b, y + b, e - b); });
  };
  if constexpr (std::is_same_v<Src, BFloat16> && std::is_same_v<Dst, float>) {
    run(&bf16_to_f32, static_cast<const uint16_t*>(src.data_ptr()), out.data<float>());
    return true;
  } else if constexpr (std::is_same_v<Src, float> && std::is_same_v<Dst, BFloat16>) {
    run(&f32_to_bf16, src.data<float>(), static_cast<uint16_t*>(out.data_ptr()));
    return true;
  } else if constexpr (std::is_same_v<Src, bool> && std::is_same_v<Dst, BFloat16>) {
    run(&bool_to_bf16, src.data<bool>(), static_cast<uint16_t*>(out.data_ptr()));
    return true;
  } else if constexpr (std::is_same_v<Src, Half> && std::is_same_v<Dst, float>) {
    run(&f16_to_f32, static_cast<const uint16_t*>(src.data_ptr()), out.data<float>());
    return true;
  } else if constexpr (std::is_same_v<Src, float> && std::is_same_v<Dst, Half>) {
    run(&f32_to_f16, src.data<float>(), static_cast<uint16_t*>(out.data_ptr()));
    return true;
  } else if constexpr (std::is_same_v<Src, bool> && std::is_same_v<Dst, Half>) {
    run(&bool_to_f16, src.data<bool>(), static_cast<uint16_t*>(out.data_ptr()));
    return true;
  }
  return false;
}

template <class Src>
void convert_into(Tensor& out, const Tensor& src) {
  dispatch_dtype(out.dtype(), [&]<class Dst>() {
    if (convert_dense<Src, Dst>(out, src)) return;
    auto f = [](compute_t<Src> v) { return compute_t<Dst>(convert<Src, Dst>(v)); };
    if (transpose_into<Src, Dst>(out, src, f)) return;
    pointwise_loop<Dst, Src>(out, {&src}, f);
  });
}

template <class Src>
void to_dtype_kernel(TensorSpan in, std::span<Tensor> out, const ToDTypeAttrs&) {
  convert_into<Src>(out[0], in[0]);
}
template <class Src>
void clone_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  convert_into<Src>(out[0], in[0]);
}
template <class Src>
void copy_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  convert_into<Src>(out[0], in[1]);
}

const bool registered = [] {
  register_cpu_all(op_to_dtype(), []<class T>() { return &to_dtype_kernel<T>; });
  register_cpu_all(op_clone(), []<class T>() { return &clone_kernel<T>; });
  register_cpu_all(op_copy(), []<class T>() { return &copy_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
