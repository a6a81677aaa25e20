// CPU kernel of fused_pointwise: runs a PointwiseProgram block by block.
//
// Memory contract: reads every element of each non-scalar input once and writes every element
// of the result once; intermediates live in a per-thread scratch of kBlock elements per step
// (4 KiB for float32), so a chain of k steps moves the bytes of its inputs and its result, not
// k round trips through memory. Inputs must be contiguous (a strided one is copied first).
//
// Each step is the same IEEE operation the eager kernel does per element (arithmetic.cpp,
// comparison.cpp, copy's bool -> float), compiled per ISA with -ffp-contract=off like every
// isa_dispatch.h kernel, so results are bit-identical to running the ops one by one.
#include "athanor/ops/fused_pointwise.h"

#include <algorithm>
#include <vector>

#include "athanor/core/parallel.h"
#include "common/isa_dispatch.h"

namespace ath::kernels {
namespace {

// Elements per block: small enough that a program's registers stay in L1/L2, large enough
// that each step's loop amortises its dispatch.
constexpr int64_t kBlock = 1024;

template <class In, class Out, class F>
ATH_ISA_BODY void binary_loop(const void* a, const void* b, void* out, int64_t n, F f) {
  const In* __restrict x = static_cast<const In*>(a);
  const In* __restrict y = static_cast<const In*>(b);
  Out* __restrict o = static_cast<Out*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
}

// One block: regs[r] points at register r's kBlock (or n) elements.
ATH_ISA_BODY void run_block_body(const PointwiseStep* steps, int64_t num_steps, int64_t num_inputs,
                                 void** regs, int64_t n) {
  for (int64_t s = 0; s < num_steps; ++s) {
    const PointwiseStep& st = steps[s];
    const void* a = regs[st.a];
    const void* b = st.b >= 0 ? regs[st.b] : nullptr;
    void* out = regs[num_inputs + s];
    switch (st.code) {
      case PointwiseCode::Add:
        if (st.alpha == 1.0f) {
          binary_loop<float, float>(a, b, out, n, [](float x, float y) { return x + y; });
        } else {
          const float alpha = st.alpha;
          binary_loop<float, float>(a, b, out, n,
                                    [alpha](float x, float y) { return x + alpha * y; });
        }
        break;
      case PointwiseCode::Mul:
        binary_loop<float, float>(a, b, out, n, [](float x, float y) { return x * y; });
        break;
      case PointwiseCode::Div:
        binary_loop<float, float>(a, b, out, n, [](float x, float y) { return x / y; });
        break;
      case PointwiseCode::Gt:
        binary_loop<float, bool>(a, b, out, n, [](float x, float y) { return x > y; });
        break;
      case PointwiseCode::Lt:
        binary_loop<float, bool>(a, b, out, n, [](float x, float y) { return x < y; });
        break;
      case PointwiseCode::Ge:
        binary_loop<float, bool>(a, b, out, n, [](float x, float y) { return x >= y; });
        break;
      case PointwiseCode::Le:
        binary_loop<float, bool>(a, b, out, n, [](float x, float y) { return x <= y; });
        break;
      case PointwiseCode::Eq:
        binary_loop<float, bool>(a, b, out, n, [](float x, float y) { return x == y; });
        break;
      case PointwiseCode::Ne:
        binary_loop<float, bool>(a, b, out, n, [](float x, float y) { return x != y; });
        break;
      case PointwiseCode::Neg: {
        const float* __restrict x = static_cast<const float*>(a);
        float* __restrict o = static_cast<float*>(out);
        for (int64_t i = 0; i < n; ++i) o[i] = -x[i];
        break;
      }
      case PointwiseCode::ToFloat: {
        // A bool is stored as the byte 0 or 1: read as bytes and widened through int32, the
        // conversion vectorizes (read as bool, GCC converts one element at a time).
        const uint8_t* __restrict x = static_cast<const uint8_t*>(a);
        float* __restrict o = static_cast<float*>(out);
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(static_cast<int32_t>(x[i]));
        break;
      }
    }
  }
}
ATH_ISA_DISPATCH(run_block,
                 (const PointwiseStep* steps, int64_t num_steps, int64_t num_inputs, void** regs,
                  int64_t n),
                 (steps, num_steps, num_inputs, regs, n))

std::size_t dtype_bytes(DType d) { return d == kBool ? sizeof(bool) : sizeof(float); }

void fused_pointwise_kernel(TensorSpan in, std::span<Tensor> out, const FusedPointwiseAttrs& a) {
  const PointwiseProgram p = PointwiseProgram::decode(a.code);
  const auto num_inputs = static_cast<int64_t>(p.inputs.size());
  const auto num_steps = static_cast<int64_t>(p.steps.size());
  std::vector<Tensor> inputs(in.begin(), in.end());
  for (Tensor& t : inputs) {
    if (!t.is_contiguous()) t = t.contiguous();
  }
  Tensor& result = out[0];
  const int64_t n = result.numel();
  char* result_data = static_cast<char*>(result.data_ptr());
  const std::size_t result_bytes = dtype_bytes(result.dtype());

  parallel_for(0, n, kPointwiseGrain, [&](int64_t begin, int64_t end) {
    // Per chunk: scalar inputs expanded to a block once, then one scratch block per step. The
    // scratch is the thread's, kept between calls: no allocation per replayed kernel.
    thread_local std::vector<float> scratch;
    thread_local std::vector<void*> regs;
    scratch.resize(static_cast<std::size_t>((num_inputs + num_steps) * kBlock));
    regs.resize(static_cast<std::size_t>(num_inputs + num_steps));
    auto block_of = [&](int64_t r) { return scratch.data() + r * kBlock; };
    for (int64_t i = 0; i < num_inputs; ++i) {
      const Tensor& t = inputs[static_cast<std::size_t>(i)];
      if (t.dim() != 0) continue;
      if (t.dtype() == kBool) {
        std::fill_n(reinterpret_cast<bool*>(block_of(i)), kBlock, *t.data<bool>());
      } else {
        std::fill_n(block_of(i), kBlock, *t.data<float>());
      }
    }
    for (int64_t start = begin; start < end; start += kBlock) {
      const int64_t len = std::min(kBlock, end - start);
      for (int64_t i = 0; i < num_inputs; ++i) {
        const Tensor& t = inputs[static_cast<std::size_t>(i)];
        regs[static_cast<std::size_t>(i)] =
            t.dim() == 0 ? static_cast<void*>(block_of(i))
                         : static_cast<char*>(t.data_ptr()) +
                               start * static_cast<int64_t>(dtype_bytes(t.dtype()));
      }
      for (int64_t s = 0; s < num_steps; ++s)
        regs[static_cast<std::size_t>(num_inputs + s)] = block_of(num_inputs + s);
      // The last step writes the result in place of its scratch block.
      regs.back() = result_data + start * static_cast<int64_t>(result_bytes);
      run_block(p.steps.data(), num_steps, num_inputs, regs.data(), len);
    }
  });
}

const bool registered = [] {
  static KernelRegistrar<FusedPointwiseAttrs> reg(op_fused_pointwise(), DeviceType::CPU,
                                                  std::array{kFloat32}, &fused_pointwise_kernel);
  return true;
}();

}  // namespace
}  // namespace ath::kernels
