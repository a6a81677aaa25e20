// oneDNN kernels of the packed inference linear (linear_packed.h): a matmul primitive whose
// weight format oneDNN chooses (`any`), the weight reordered into it once by
// linear_pack_weight; bias and relu as the primitive's bias and post-op. Built once per shape
// and cached (dnnl_utils.h).
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

struct Entry : CachedPrimitive {
  dnnl::matmul prim;
  dnnl::reorder pack;  // [N, K] row-major (a transposed [K, N]) -> the primitive's format
  memory::desc src, weights, plain_weights, bias, dst, scratchpad;
};

// 1 when the product is small enough to run on one thread (inference_threads), else 0 (all).
int linear_threads(const LinearPackedAttrs& a) {
  return inference_threads(static_cast<double>(a.rows) * static_cast<double>(a.in_features) *
                               static_cast<double>(a.out_features),
                           kSingleThreadMacs);
}

// Built (and run) with linear_threads(a) threads, computed from `a` alone so that packing and
// running agree on the weight format.
std::shared_ptr<const Entry> entry(const LinearPackedAttrs& a) {
  const int threads = linear_threads(a);
  std::optional<SingleThreadBuild> one;
  if (threads == 1) one.emplace();
  PrimitiveKey key(PrimKind::LinearPacked, threads);
  key.add(a.rows).add(a.in_features).add(a.out_features);
  key.add(static_cast<int64_t>(a.with_bias)).add(static_cast<int64_t>(a.relu));
  return cached_primitive<Entry>(key, [&] {
    auto e = std::make_shared<Entry>();
    const int64_t m = a.rows, k = a.in_features, n = a.out_features;
    e->src = memory::desc({m, k}, kF32, tag::ab);
    e->dst = memory::desc({m, n}, kF32, tag::ab);
    e->bias = memory::desc({1, n}, kF32, tag::ab);
    e->plain_weights = memory::desc({k, n}, kF32, tag::ba);  // the [N, K] weight, transposed
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (a.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    try {
      const memory::desc any_weights({k, n}, kF32, tag::any);
      auto desc = a.with_bias ? dnnl::matmul::desc(e->src, any_weights, e->bias, e->dst)
                              : dnnl::matmul::desc(e->src, any_weights, e->dst);
      dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
      e->prim = dnnl::matmul(pd);
      e->weights = pd.weights_desc();
      e->scratchpad = pd.scratchpad_desc();
      e->pack = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), e->plain_weights, cpu_engine(), e->weights));
    } catch (const dnnl::error& err) {
      throw_dnnl_error(err, "packed linear");
    }
    return e;
  });
}

void pack_kernel(TensorSpan in, std::span<Tensor> out, const LinearPackedAttrs& a) {
  std::optional<SingleThreadBuild> one;
  if (linear_threads(a) == 1) one.emplace();
  auto e = entry(a);
  const Tensor w = in[0].contiguous();
  dnnl::stream& s = cpu_stream();
  memory src = make_memory(e->plain_weights, w.data_ptr());
  write_packed_header(out[0].data_ptr(), a, e->weights);
  memory dst = make_memory(e->weights, packed_data(out[0].data_ptr()));
  e->pack.execute(s, src, dst);
  s.wait();
}

void linear_packed_kernel(TensorSpan in, std::span<Tensor> out, const LinearPackedAttrs& a) {
  std::optional<SingleThreadBuild> one;
  if (linear_threads(a) == 1) one.emplace();
  auto e = entry(a);
  check_packed_header(in[1].data_ptr(), a, e->weights, "linear_packed");
  const Tensor x = in[0].contiguous();
  std::unordered_map<int, memory>& args = thread_call_args(e);
  bind_arg(args, DNNL_ARG_SRC, e->src, x.data_ptr());
  bind_arg(args, DNNL_ARG_WEIGHTS, e->weights, packed_data(in[1].data_ptr()));
  bind_arg(args, DNNL_ARG_DST, e->dst, out[0].data_ptr());
  Tensor bias;
  if (a.with_bias) {
    bias = in[2].contiguous();
    bind_arg(args, DNNL_ARG_BIAS, e->bias, bias.data_ptr());
  }
  Tensor scratch;
  if (e->scratchpad.get_size() > 0)
    args.insert_or_assign(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e->scratchpad, scratch));
  dnnl::stream& s = cpu_stream();
  e->prim.execute(s, args);
  s.wait();
}

const bool registered = [] {
  register_cpu<float>(op_linear_pack_weight(), []<class T>() { return &pack_kernel; });
  register_cpu<float>(op_linear_packed(), []<class T>() { return &linear_packed_kernel; });
  return true;
}();

}  // namespace

int64_t linear_packed_weight_bytes(const LinearPackedAttrs& a) {
  return static_cast<int64_t>(entry(a)->weights.get_size()) + kPackedHeaderBytes;
}

}  // namespace ath::kernels
