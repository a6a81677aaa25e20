// Convolution and pooling over NCHW tensors (N, channels, height, width), as torch.nn.functional.
//
//   Tensor x = randn({1, 3, 8, 8}), w = randn({4, 3, 3, 3}), b = zeros({4});
//   Tensor y = conv2d(x, w, b, {.stride = 2, .padding = 1});          // w [out, in/groups, kh, kw]
//   Tensor s = conv2d(x, w, {}, {.padding = "same", .dilation = 2});  // output keeps H x W
//   Tensor wt = randn({4, 3, 3, 3});                                  // [in, out/groups, kh, kw]
//   Tensor u = conv_transpose2d(y, wt, {}, {.stride = 2, .padding = 1, .output_padding = 1});
//   Tensor seq = randn({2, 3, 10}), k = randn({5, 3, 5});
//   Tensor z = conv1d(seq, k, {}, {.padding = 2});                    // [N, C, L]
//   Tensor m = max_pool2d(x, {.kernel = 2});                          // stride defaults to kernel
//   auto [v, idx] = max_pool2d_with_indices(x, {.kernel = 3, .stride = 2, .ceil_mode = true});
//   Tensor a = avg_pool2d(x, {.kernel = 3, .padding = 1, .count_include_pad = false});
//   Tensor g = adaptive_avg_pool2d(x, {5, 7});
//   assert(y.size(2) == 4 && s.size(2) == 8 && u.size(2) == 8 && z.size(2) == 10);
//
// A 3-D input (C, H, W) is one unbatched sample, as in PyTorch. Convolutions (forward and all
// gradients) run on oneDNN for float32/bfloat16 with cached primitives, and on direct loops for
// float64; pooling runs on C++ loops. Max-pool indices are flat offsets within each H x W plane
// (PyTorch's convention), kept as a second int64 output for the backward pass.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "athanor/ops/op.h"

namespace ath {

// One value for both spatial dims, or one per dim: `.stride = 2` or `.stride = {2, 1}`.
struct Int2 {
  Int2() = default;
  Int2(int64_t v) : v{v, v} {}  // NOLINT: implicit by design
  Int2(int64_t h, int64_t w) : v{h, w} {}
  int64_t operator[](std::size_t i) const { return v[i]; }
  bool operator==(const Int2&) const = default;
  std::array<int64_t, 2> v{0, 0};
};

// An Int2 that may be left unset (pooling's stride, which defaults to the kernel size).
struct MaybeInt2 {
  MaybeInt2() = default;
  MaybeInt2(int64_t v) : value(Int2(v)) {}  // NOLINT
  MaybeInt2(int64_t h, int64_t w) : value(Int2(h, w)) {}
  MaybeInt2(Int2 v) : value(v) {}  // NOLINT
  Int2 value_or(Int2 fallback) const { return value.value_or(fallback); }
  std::optional<Int2> value;
};

// Convolution padding: a size (or one per dim), or "valid" (0) or "same" (output size = input
// size; stride 1 only; an even dilated kernel pads one more at the bottom/right, like PyTorch).
struct ConvPadding {
  ConvPadding(int v) : value(v) {}      // NOLINT (int: `= 0` must not read as a null pointer)
  ConvPadding(int64_t v) : value(v) {}  // NOLINT
  ConvPadding(int64_t h, int64_t w) : value(h, w) {}
  ConvPadding(const char* m) : mode(m) {}             // NOLINT
  ConvPadding(std::string m) : mode(std::move(m)) {}  // NOLINT
  Int2 value;
  std::string mode;  // empty: use value
};

struct Conv1dOptions {
  int64_t stride = 1;
  ConvPadding padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
};
struct Conv2dOptions {
  Int2 stride = 1;
  ConvPadding padding = 0;
  Int2 dilation = 1;
  int64_t groups = 1;
};
struct ConvTranspose2dOptions {
  Int2 stride = 1;
  Int2 padding = 0;
  Int2 output_padding = 0;  // extra rows/cols at the bottom/right; < stride or < dilation
  int64_t groups = 1;
  Int2 dilation = 1;
};

// x [N, C, L], weight [out, C/groups, k], bias [out].
Tensor conv1d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const Conv1dOptions& options = {});
// x [N, C, H, W], weight [out, C/groups, kh, kw], bias [out].
Tensor conv2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias = {},
              const Conv2dOptions& options = {});
// x [N, C, H, W], weight [C, out/groups, kh, kw], bias [out].
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight,
                        const std::optional<Tensor>& bias = {},
                        const ConvTranspose2dOptions& options = {});

struct MaxPool2dOptions {
  Int2 kernel;
  MaybeInt2 stride;  // default: kernel
  Int2 padding = 0;  // at most half the kernel
  Int2 dilation = 1;
  bool ceil_mode = false;
};
struct AvgPool2dOptions {
  Int2 kernel;
  MaybeInt2 stride;  // default: kernel
  Int2 padding = 0;  // at most half the kernel
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
};

Tensor max_pool2d(const Tensor& x, const MaxPool2dOptions& options);
// (values, indices): indices are int64 offsets h * W + w within each input plane.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const MaxPool2dOptions& options);
Tensor avg_pool2d(const Tensor& x, const AvgPool2dOptions& options);
// Output [N, C, oh, ow]; window i spans [floor(i * H / oh), ceil((i + 1) * H / oh)).
Tensor adaptive_avg_pool2d(const Tensor& x, Int2 output_size);

// ---- ops ---------------------------------------------------------------------------------

// The geometry of a forward 2-D convolution: output = floor((in + pad_l + pad_r -
// dilation * (kernel - 1) - 1) / stride) + 1. `transposed` computes its adjoint with respect
// to the input (conv_transpose2d, and the input gradient), whose output size is then
// (in - 1) * stride - pad_l - pad_r + dilation * (kernel - 1) + 1; pad_r may be negative there
// (output_padding is folded in as pad_r - output_padding).
struct ConvAttrs {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> pad_l{0, 0};
  std::array<int64_t, 2> pad_r{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  bool transposed = false;
  bool operator==(const ConvAttrs&) const = default;
};
// The weight gradient of a forward convolution with `geometry`: inputs (x, grad_out), outputs
// grad_weight [O, C/groups, kh, kw] and, with_bias, grad_bias [O].
struct ConvWeightGradAttrs {
  ConvAttrs geometry;
  std::array<int64_t, 2> kernel{1, 1};
  bool with_bias = false;
  bool operator==(const ConvWeightGradAttrs&) const = default;
};

// Inputs (x, weight) or (x, weight, bias).
const Op<ConvAttrs>& op_convolution();
const Op<ConvWeightGradAttrs>& op_convolution_backward_weight();
Tensor convolution(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                   const ConvAttrs& attrs);

struct MaxPool2dAttrs {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
  bool operator==(const MaxPool2dAttrs&) const = default;
};
struct AvgPool2dAttrs {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
  bool operator==(const AvgPool2dAttrs&) const = default;
};
// The pooled input's plane size, for the backward ops.
struct PoolGradAttrs {
  std::array<int64_t, 2> input{0, 0};
  bool operator==(const PoolGradAttrs&) const = default;
};
struct AvgPoolGradAttrs {
  AvgPool2dAttrs pool;
  std::array<int64_t, 2> input{0, 0};
  bool operator==(const AvgPoolGradAttrs&) const = default;
};

// max_pool2d: x -> (values, indices).
const Op<MaxPool2dAttrs>& op_max_pool2d();
// (grad, indices) -> grad_x: grad scattered (added) to the argmax positions of each plane.
const Op<PoolGradAttrs>& op_max_pool2d_backward();
// (grad_x, indices) -> values of grad_x at the indices: the adjoint of the scatter.
const Op<NoAttrs>& op_max_pool2d_gather();
// (grad, indices, pooled) -> max_pool2d_backward(grad, indices) * (x > 0), where
// (pooled, indices) = max_pool2d(x): a ReLU-style mask on the pool's input folded into the
// scatter. At each window's winner x equals the pooled value, and everywhere else the scatter
// writes zero, so the mask needs only `pooled` (a quarter of x's bytes for a 2x2 pool) and the
// gradient is written once. Bit-identical to the unfused scatter-then-mask (the mask is applied
// after the sums, by multiplying with exactly 1 or 0). The graph compiler's pool_mask pass makes
// it from W2-style conv -> relu -> max_pool backward graphs.
const Op<PoolGradAttrs>& op_max_pool2d_backward_masked();
const Op<AvgPool2dAttrs>& op_avg_pool2d();
const Op<AvgPoolGradAttrs>& op_avg_pool2d_backward();
struct AdaptivePoolAttrs {
  std::array<int64_t, 2> output{1, 1};
  bool operator==(const AdaptivePoolAttrs&) const = default;
};
const Op<AdaptivePoolAttrs>& op_adaptive_avg_pool2d();
const Op<PoolGradAttrs>& op_adaptive_avg_pool2d_backward();

// Output plane size of a pooling window along one dim (PyTorch's rule, ceil_mode included).
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode);

}  // namespace ath
