// Kernels of the packed inference linear (linear_packed.h): a oneDNN matmul primitive whose
// weight format oneDNN chooses (`any`), the weight reordered into it once by
// linear_pack_weight; bias and relu or gelu as the primitive's bias and post-op. Built once per
// shape and cached (dnnl_utils.h). Products of a few thousand multiply-adds (a classifier's last
// layer at batch 1) run a direct loop over a transposed weight instead: oneDNN's call costs
// ~2 us whatever the size, the loop 0.1 us for 1 x 128 x 10.
//
// Memory contract of the direct loop: reads x, the weight and the bias once, the residual
// once; writes each output element once.
#include "linear_packed_dnnl.h"

#include <optional>

#include "athanor/ops/linear_packed.h"
#include "common/dnnl_utils.h"
#include "common/register.h"
#include "packed_weight_header.h"

namespace ath::kernels {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

// Products at most this many multiply-adds, without GELU (whose erf is oneDNN's own polynomial),
// run the direct loop; the packed weight is then [K, N] row-major after the header. Decided from
// the attributes alone, so packing and running agree.
constexpr int64_t kDirectMacs = 16384;
// The header's format word for the direct loop's layout (oneDNN's formats hash to others).
constexpr uint64_t kDirectFormat = 0x4449524543544b4eull;  // "DIRECTKN"

bool direct(const LinearPackedAttrs& a) {
  return !a.gelu && a.rows * a.in_features * a.out_features <= kDirectMacs;
}

void pack_direct(const Tensor& weight, Tensor& out, const LinearPackedAttrs& a) {
  const Tensor w = weight.contiguous();
  const int64_t n = a.out_features, k = a.in_features;
  write_packed_header(out.data_ptr(), a, kDirectFormat);
  const auto* src = static_cast<const float*>(w.data_ptr());
  auto* dst = reinterpret_cast<float*>(packed_data(out.data_ptr()));
  for (int64_t o = 0; o < n; ++o)
    for (int64_t i = 0; i < k; ++i) dst[i * n + o] = src[o * k + i];
}

// y[r] = act(bias + sum over k of x[r][k] * W[k] (+ residual[r])), each output accumulated in k
// order; the loop over N vectorizes.
void run_direct(const LinearPackedAttrs& a, const float* x, const Tensor& packed, float* y,
                const float* bias, const float* addend) {
  const int64_t n = a.out_features, k = a.in_features;
  const auto bytes = static_cast<int64_t>(packed.nbytes());
  ATH_CHECK(packed.is_contiguous() && bytes == n * k * 4 + kPackedHeaderBytes, ShapeError,
            "linear_packed: a packed weight of {} bytes was packed for another shape", bytes);
  check_packed_header(packed.data_ptr(), a, kDirectFormat, "linear_packed");
  const auto* w = reinterpret_cast<const float*>(packed_data(packed.data_ptr()));
  for (int64_t r = 0; r < a.rows; ++r) {
    float* yr = y + r * n;
    const float* xr = x + r * k;
    for (int64_t o = 0; o < n; ++o) yr[o] = bias != nullptr ? bias[o] : 0.0f;
    for (int64_t i = 0; i < k; ++i) {
      const float xv = xr[i];
      const float* wi = w + i * n;
      for (int64_t o = 0; o < n; ++o) yr[o] += xv * wi[o];
    }
    if (addend != nullptr)
      for (int64_t o = 0; o < n; ++o) yr[o] += addend[r * n + o];
    if (a.relu)
      for (int64_t o = 0; o < n; ++o) yr[o] = yr[o] > 0.0f ? yr[o] : 0.0f;
  }
}

// 1 when the product is small enough to run on one thread (inference_threads) and the weight
// small enough to stay in one core's cache (kSharedWeightBytes), else 0 (all).
int linear_threads(const LinearPackedAttrs& a) {
  const double weight_bytes =
      static_cast<double>(a.in_features) * static_cast<double>(a.out_features) * sizeof(float);
  if (weight_bytes >= kSharedWeightBytes) return 0;
  return inference_threads(static_cast<double>(a.rows) * static_cast<double>(a.in_features) *
                               static_cast<double>(a.out_features),
                           kSingleThreadMacs);
}

// Built (and run) with linear_threads(a) threads, computed from `a` alone so that packing and
// running agree on the weight format.
std::shared_ptr<const PackedEntry> entry(const LinearPackedAttrs& a) {
  const int threads = linear_threads(a);
  std::optional<SingleThreadBuild> one;
  if (threads == 1) one.emplace();
  PrimitiveKey key(PrimKind::LinearPacked, threads);
  key.add(a.rows).add(a.in_features).add(a.out_features);
  key.add(static_cast<int64_t>(a.with_bias)).add(static_cast<int64_t>(a.relu));
  key.add(static_cast<int64_t>(a.gelu)).add(static_cast<int64_t>(a.residual));
  return cached_primitive<PackedEntry>(key, [&] {
    auto e = std::make_shared<PackedEntry>();
    const int64_t m = a.rows, k = a.in_features, n = a.out_features;
    e->src = memory::desc({m, k}, kF32, tag::ab);
    e->dst = memory::desc({m, n}, kF32, tag::ab);
    e->bias = memory::desc({1, n}, kF32, tag::ab);
    e->plain_weights = memory::desc({k, n}, kF32, tag::ba);  // the [N, K] weight, transposed
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (a.residual) {
      e->addend = e->dst;
      ops.append_binary(dnnl::algorithm::binary_add, e->addend);
    }
    if (a.relu || a.gelu)
      ops.append_eltwise(1.0f,
                         a.relu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_gelu_erf,
                         0.0f, 0.0f);
    attr.set_post_ops(ops);
    try {
      const memory::desc any_weights({k, n}, kF32, tag::any);
      auto desc = a.with_bias ? dnnl::matmul::desc(e->src, any_weights, e->bias, e->dst)
                              : dnnl::matmul::desc(e->src, any_weights, e->dst);
      dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
      e->prim = dnnl::matmul(pd);
      e->finish(pd);
    } catch (const dnnl::error& err) {
      throw_dnnl_error(err, "packed linear");
    }
    return e;
  });
}

void pack_kernel(TensorSpan in, std::span<Tensor> out, const LinearPackedAttrs& a) {
  if (direct(a)) return pack_direct(in[0], out[0], a);
  std::optional<SingleThreadBuild> one;
  if (linear_threads(a) == 1) one.emplace();
  pack_weight(*entry(a), in[0], out[0], a);
}

void linear_packed_kernel(TensorSpan in, std::span<Tensor> out, const LinearPackedAttrs& a) {
  if (direct(a)) {
    const Tensor x = in[0].contiguous();
    const Tensor bias = a.with_bias ? in[2].contiguous() : Tensor();
    const Tensor addend = a.residual ? in.back().contiguous() : Tensor();
    return run_direct(a, static_cast<const float*>(x.data_ptr()), in[1],
                      static_cast<float*>(out[0].data_ptr()),
                      a.with_bias ? static_cast<const float*>(bias.data_ptr()) : nullptr,
                      a.residual ? static_cast<const float*>(addend.data_ptr()) : nullptr);
  }
  std::optional<SingleThreadBuild> one;
  if (linear_threads(a) == 1) one.emplace();
  const Tensor x = in[0].contiguous();
  const Tensor bias = a.with_bias ? in[2].contiguous() : Tensor();
  const Tensor addend = a.residual ? in.back().contiguous() : Tensor();
  run_packed(entry(a), a, "linear_packed", x.data_ptr(), in[1], out[0].data_ptr(),
             a.with_bias ? bias.data_ptr() : nullptr, a.residual ? addend.data_ptr() : nullptr);
}

const bool registered = [] {
  register_cpu<float>(op_linear_pack_weight(), []<class T>() { return &pack_kernel; });
  register_cpu<float>(op_linear_packed(), []<class T>() { return &linear_packed_kernel; });
  return true;
}();

}  // namespace

int64_t linear_packed_weight_bytes(const LinearPackedAttrs& a) {
  if (direct(a)) return a.in_features * a.out_features * 4 + kPackedHeaderBytes;
  return static_cast<int64_t>(entry(a)->weights.get_size()) + kPackedHeaderBytes;
}

}  // namespace ath::kernels
