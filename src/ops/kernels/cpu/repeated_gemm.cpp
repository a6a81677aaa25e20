// See repeated_gemm.h. The primitive and its packing reorder are built once per shape and b's
// strides, and cached (dnnl_utils.h); only the packed copy is per object.
#include "repeated_gemm.h"

#include <cstring>
#include <optional>

#include "athanor/core/parallel.h"
#include "common/dnnl_utils.h"
#include "common/gemm.h"
#include "common/nn_common.h"
#include "packed_weight_header.h"

namespace ath::kernels {

namespace {

using dnnl::memory;
constexpr auto kF32 = memory::data_type::f32;

struct RepeatedEntry : PackedEntry {
  bool brgemm = false;
};

std::shared_ptr<const RepeatedEntry> repeated_entry(int64_t rows, int64_t lda, const Tensor& b,
                                                    bool with_bias, bool with_addend, int threads) {
  const int64_t k = b.shape()[0], n = b.shape()[1];
  PrimitiveKey key(PrimKind::MatmulRepeated, threads);
  key.add(rows).add(lda).add(k).add(n).add(b.strides()).add(static_cast<int64_t>(with_bias));
  key.add(static_cast<int64_t>(with_addend));
  return cached_primitive<RepeatedEntry>(key, [&] {
    auto e = std::make_shared<RepeatedEntry>();
    e->src = strided_md({rows, k}, {lda, 1}, kFloat32);
    e->dst = memory::desc({rows, n}, kF32, memory::format_tag::ab);
    e->bias = memory::desc({1, n}, kF32, memory::format_tag::ab);
    e->plain_weights = strided_md(b.shape(), b.strides(), kFloat32);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (with_addend) {  // c = a @ b + addend: one rounding, as a prefilled sum would give
      e->addend = e->dst;
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_add, e->addend);
      attr.set_post_ops(ops);
    }
    try {
      const memory::desc any_weights({k, n}, kF32, memory::format_tag::any);
      auto desc = with_bias ? dnnl::matmul::desc(e->src, any_weights, e->bias, e->dst)
                            : dnnl::matmul::desc(e->src, any_weights, e->dst);
      dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
      e->brgemm = std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
      e->prim = dnnl::matmul(pd);
      e->finish(pd);
    } catch (const dnnl::error& err) {
      throw_dnnl_error(err, "repeated matrix product");
    }
    return e;
  });
}

}  // namespace

RepeatedGemm::RepeatedGemm(int64_t rows, const Tensor& b, const Tensor& bias, int64_t calls,
                           bool with_addend)
    : b_(b), bias_(bias), with_addend_(with_addend) {
  ATH_CHECK(!(bias.defined() && with_addend), ValueError,
            "repeated matrix product: a bias or a per-call addend, not both");
  if (b.dtype() != kFloat32 || calls < kMinCalls || rows == 0 || b.numel() == 0) return;
  if (b.strides()[0] != 1 && b.strides()[1] != 1) b_ = dense(b);  // kernel-side: no dispatch
  const int64_t k = b.shape()[0];
  // Inside a parallel region oneDNN runs on the calling thread alone: build for that.
  threads_ = in_parallel_region() || get_num_threads() == 1 ? 1 : 0;
  std::optional<SingleThreadBuild> one;
  if (threads_ == 1) one.emplace();
  auto e = repeated_entry(rows, k, b_, bias.defined(), with_addend, threads_);
  if (!e->brgemm && threads_ != 1) return;  // gemm() splits it into fixed blocks instead
  packed_ = empty({static_cast<int64_t>(e->weights.get_size())}, kUInt8);
  dnnl::stream& s = cpu_stream();
  memory from = make_memory(e->plain_weights, b_.data_ptr());
  memory to = make_memory(e->weights, packed_.data_ptr());
  e->pack.execute(s, from, to);
  s.wait();
  entry_ = e;
}

void RepeatedGemm::operator()(const Tensor& a, const Tensor& c, const Tensor& addend) const {
  ATH_CHECK(a.shape()[0] == c.shape()[0] && a.strides()[1] == 1 &&
                (a.shape()[0] == 1 || a.strides()[0] == a.shape()[1]) && c.is_contiguous(),
            ShapeError, "repeated matrix product: a must have dense rows and c be contiguous");
  ATH_CHECK(addend.defined() == with_addend_ &&
                (!addend.defined() || (addend.is_contiguous() && addend.shape() == c.shape())),
            ShapeError,
            "repeated matrix product: the addend must be given exactly when it was asked for, "
            "contiguous and of c's shape");
  if (entry_ == nullptr)
    return gemm({.a = a, .b = b_, .c = c, .bias = with_addend_ ? addend : bias_});
  std::optional<SingleThreadBuild> one;
  if (threads_ == 1) one.emplace();
  CallArgs& args = thread_call_args(entry_);
  bind_arg(args, DNNL_ARG_SRC, entry_->src, a.data_ptr());
  bind_arg(args, DNNL_ARG_WEIGHTS, entry_->weights, packed_.data_ptr());
  bind_arg(args, DNNL_ARG_DST, entry_->dst, c.data_ptr());
  if (bias_.defined()) bind_arg(args, DNNL_ARG_BIAS, entry_->bias, bias_.data_ptr());
  if (with_addend_)
    bind_arg(args, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, entry_->addend,
             addend.data_ptr());
  bind_scratchpad(args, entry_->scratchpad);
  execute(entry_->prim, args);
}

}  // namespace ath::kernels
