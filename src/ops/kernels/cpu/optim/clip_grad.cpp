// CPU kernels of grad_norm and clip_grads_by_norm (athanor/ops/optimizer_updates.h), what
// optim::clip_grad_norm_ runs.
// Memory contract: grad_norm reads each gradient (any layout; float32/float64 in place, other
// floating dtypes through a float32 copy), keeps its partial sums in the declared workspace and
// writes its 0-d output; clip_grads_by_norm reads the
// 0-d total and scales each gradient in place.
#include <algorithm>
#include <cmath>

#include "athanor/core/parallel.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/optimizer_updates.h"
#include "athanor/ops/pointwise.h"

namespace ath::optim_kernels {

namespace {

// Partial sums over fixed chunks (kGradNormChunk, optimizer_updates.h), combined in order:
// thread-count independent. The partial sums live in the op's declared workspace.
constexpr int64_t kChunk = kGradNormChunk;

template <class T>
double norm_of(const T* x, int64_t n, double p) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const std::span<std::byte> workspace = kernel_workspace();
  ATH_CHECK(workspace.size() >= static_cast<std::size_t>(chunks) * sizeof(double), Error,
            "internal: grad_norm's workspace holds {} bytes, {} chunks need more", workspace.size(),
            chunks);
  const std::span<double> part(reinterpret_cast<double*>(workspace.data()),
                               static_cast<std::size_t>(chunks));
  parallel_for(0, chunks, std::max<int64_t>(1, 32768 / kChunk), [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t b = c * kChunk, e = std::min(n, b + kChunk);
      double acc = 0;
      if (std::isinf(p)) {
        for (int64_t i = b; i < e; ++i) {
          const double a = std::abs(double(x[i]));
          acc = (a > acc || a != a) ? a : acc;
        }
      } else if (p == 2) {
        for (int64_t i = b; i < e; ++i) acc += double(x[i]) * double(x[i]);
      } else if (p == 1) {
        for (int64_t i = b; i < e; ++i) acc += std::abs(double(x[i]));
      } else {
        for (int64_t i = b; i < e; ++i) acc += std::pow(std::abs(double(x[i])), p);
      }
      part[static_cast<std::size_t>(c)] = acc;
    }
  });
  double total = 0;
  for (double v : part) {
    if (std::isinf(p))
      total = (v > total || v != v) ? v : total;
    else
      total += v;
  }
  if (std::isinf(p)) return total;
  return p == 1 ? total : (p == 2 ? std::sqrt(total) : std::pow(total, 1.0 / p));
}

// Rounds to a dtype, as PyTorch's norms are tensors of the gradients' dtype.
double round_to(double v, DType dt) {
  return dt == kFloat64 ? v : static_cast<double>(static_cast<float>(v));
}

double gradient_norm(const Tensor& g, double p) {
  const Tensor c = g.contiguous();
  if (c.dtype() == kFloat64) return norm_of(c.data<double>(), c.numel(), p);
  if (c.dtype() == kFloat32) return norm_of(c.data<float>(), c.numel(), p);
  const Tensor f = c.to(kFloat32);
  return norm_of(f.data<float>(), f.numel(), p);
}

void grad_norm_kernel(TensorSpan grads, std::span<Tensor> out, const GradNormAttrs& a) {
  const double p = a.norm_type;
  const bool inf_norm = std::isinf(p);
  double acc = 0;
  for (const Tensor& g : grads) {
    const double n = round_to(gradient_norm(g, p), g.dtype());
    if (inf_norm)
      acc = (n > acc || n != n) ? n : acc;
    else
      acc += p == 2 ? n * n : std::pow(n, p);
  }
  const double total = inf_norm ? acc : (p == 2 ? std::sqrt(acc) : std::pow(acc, 1 / p));
  const double rounded = round_to(total, out[0].dtype());
  if (out[0].dtype() == kFloat64)
    *out[0].data<double>() = rounded;
  else if (out[0].dtype() == kFloat32)
    *out[0].data<float>() = static_cast<float>(rounded);
  else
    out[0].fill_(rounded);  // float16/bfloat16 gradients only: rounded once more on the way
}

void clip_grads_by_norm_kernel(TensorSpan in, std::span<Tensor>, const ClipByNormAttrs& a) {
  const Tensor& total_t = in[0];
  const DType dt = total_t.dtype();
  const double total = total_t.item<double>();
  // PyTorch's clip_coef = max_norm / (total + 1e-6), in the total's dtype, clamped to 1.
  const double coef = dt == kFloat64 ? a.max_norm / (total + 1e-6)
                                     : double(float(a.max_norm) / (float(total) + float(1e-6)));
  if (!(coef < 1.0) && !std::isnan(coef)) return;  // clamped to 1: nothing changes
  for (const Tensor& g_const : in.subspan(1)) {
    Tensor g = g_const;
    const double c = round_to(coef, g.dtype());
    if (g.is_contiguous() && (g.dtype() == kFloat32 || g.dtype() == kFloat64)) {
      auto scale = [&]<class T>(T* x) {
        const T s = T(c);
        parallel_for(0, g.numel(), kPointwiseGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) x[i] = x[i] * s;
        });
      };
      if (g.dtype() == kFloat64)
        scale(g.data<double>());
      else
        scale(g.data<float>());
    } else {
      g.mul_(Scalar(c));
    }
  }
}

}  // namespace

static KernelRegistrar<GradNormAttrs> reg_norm(op_grad_norm(), DeviceType::CPU, kFloatingTypes,
                                               grad_norm_kernel);
static KernelRegistrar<ClipByNormAttrs> reg_clip(op_clip_grads_by_norm(), DeviceType::CPU,
                                                 kFloatingTypes, clip_grads_by_norm_kernel);

}  // namespace ath::optim_kernels
