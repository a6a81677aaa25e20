// ctc_loss and ctc_loss_backward: definitions, shape rules and the public functions. The shape
// rules check what shapes and dtypes say; the kernels check the values (lengths within the
// tensors, labels within the classes and not the blank) before reading through them.
#include "athanor/ops/ctc.h"

#include <algorithm>

#include "athanor/ops/dispatch.h"
#include "athanor/ops/ops.h"
#include "loss_checks.h"

namespace ath {
namespace {

bool is_index_dtype(DType t) { return t == kInt64 || t == kInt32; }

// Checks the four forward inputs; returns (T, N, C, S_max), S_max the padded target width (for
// concatenated targets: the longest a target could be, their total count).
std::array<int64_t, 4> check_ctc_inputs(TensorSpan in, const CtcLossAttrs& a) {
  const Tensor &lp = in[0], &targets = in[1], &il = in[2], &tl = in[3];
  ATH_CHECK(lp.dim() == 3, ShapeError,
            "log_probs must be [T, N, C] (frames, batch, classes), got shape {}",
            to_string(lp.shape()));
  ATH_CHECK(is_floating(lp.dtype()), DTypeError, "log_probs must be floating, got {}",
            dtype_name(lp.dtype()));
  const int64_t t = lp.shape()[0], n = lp.shape()[1], c = lp.shape()[2];
  ATH_CHECK(c > 0, ShapeError, "log_probs has no classes (shape {})", to_string(lp.shape()));
  ATH_CHECK(a.blank >= 0 && a.blank < c, IndexError,
            "blank {} is not a class index of log_probs (classes [0, {}))", a.blank, c);
  ATH_CHECK(is_index_dtype(targets.dtype()), DTypeError, "targets must be int64 or int32, got {}",
            dtype_name(targets.dtype()));
  ATH_CHECK(targets.dim() == 1 || targets.dim() == 2, ShapeError,
            "targets must be padded [N, S] or concatenated [sum(target_lengths)], got shape {}",
            to_string(targets.shape()));
  if (targets.dim() == 2) {
    ATH_CHECK(targets.shape()[0] == n, ShapeError,
              "padded targets {} must have one row per sample of log_probs {} (N = {})",
              to_string(targets.shape()), to_string(lp.shape()), n);
  }
  for (const auto& [len, name] : {std::pair{&il, "input_lengths"}, {&tl, "target_lengths"}}) {
    ATH_CHECK(is_index_dtype(len->dtype()), DTypeError, "{} must be int64 or int32, got {}", name,
              dtype_name(len->dtype()));
    ATH_CHECK(len->dim() == 1 && len->shape()[0] == n, ShapeError,
              "{} must be [N] = [{}] (one length per sample), got shape {}", name, n,
              to_string(len->shape()));
  }
  const int64_t s_max = targets.dim() == 2 ? targets.shape()[1] : targets.numel();
  return {t, n, c, s_max};
}

}  // namespace

const Op<CtcLossAttrs>& op_ctc_loss() {
  static const auto& op = define_op<CtcLossAttrs>({
      .name = "ctc_loss",
      .kind = OpKind::Opaque,
      .num_inputs = 4,   // log_probs, targets, input_lengths, target_lengths
      .num_outputs = 3,  // loss [N], normalized forward variables, log-likelihood [N]
      .autocast = AutocastPolicy::Float32,
      .save_inputs = 0b1111,
      .save_outputs = 0b110,
      .promote_inputs = 0b0001,
      .infer =
          [](TensorSpan in, const CtcLossAttrs& a) {
            const auto [t, n, c, s_max] = check_ctc_inputs(in, a);
            const DType d = in[0].dtype();
            return OutputSpec{{{{n}, d}, {{n, t, 2 * s_max + 1}, kFloat64}, {{n}, kFloat64}}, d};
          },
      .backward =
          [](BackwardContext& ctx, const CtcLossAttrs& a) {
            if (!ctx.needs_grad(0)) return;
            ctx.set_grad_input(0, call1(op_ctc_loss_backward(),
                                        {ctx.grad_output(0), ctx.input(0), ctx.input(1),
                                         ctx.input(2), ctx.input(3), ctx.output(1), ctx.output(2)},
                                        a));
          },
  });
  return op;
}

const Op<CtcLossAttrs>& op_ctc_loss_backward() {
  static const auto& op = define_op<CtcLossAttrs>({
      .name = "ctc_loss_backward",
      .kind = OpKind::Opaque,
      .num_inputs = 7,  // g, log_probs, targets, input_lengths, target_lengths, alpha, ll
      .promote_inputs = 0b0000011,
      .infer =
          [](TensorSpan in, const CtcLossAttrs& a) {
            const auto [t, n, c, s_max] = check_ctc_inputs(in.subspan(1, 4), a);
            ATH_CHECK(in[0].shape() == Shape{n}, ShapeError,
                      "expected a loss gradient of shape [{}], got {}", n,
                      to_string(in[0].shape()));
            ATH_CHECK(in[5].shape() == Shape({n, t, 2 * s_max + 1}) && in[5].dtype() == kFloat64 &&
                          in[6].shape() == Shape{n} && in[6].dtype() == kFloat64,
                      ShapeError,
                      "expected the forward op's float64 outputs [{}, {}, {}] and [{}], got {} {} "
                      "and {} {}",
                      n, t, 2 * s_max + 1, n, to_string(in[5].shape()), dtype_name(in[5].dtype()),
                      to_string(in[6].shape()), dtype_name(in[6].dtype()));
            return OutputSpec{{{in[1].shape(), in[1].dtype()}}, in[1].dtype()};
          },
      .not_differentiable =
          "CTC's gradient comes from the forward-backward recursion; its own derivative (a "
          "double backward) is not implemented, as in torch",
  });
  return op;
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CtcLossOptions& options) {
  ATH_CHECK(options.reduction != Reduction::BatchMean, ValueError,
            "ctc_loss: reduction must be none, mean or sum, got batchmean");
  const CtcLossAttrs a{.blank = options.blank, .zero_infinity = options.zero_infinity};
  // Unbatched: log_probs [T, C], targets [S], 0-dim or [1] lengths, as a batch of one.
  const bool unbatched = log_probs.dim() == 2;
  auto as_batch = [&](const Tensor& len) { return len.dim() == 0 ? len.reshape({1}) : len; };
  const Tensor lp = unbatched ? log_probs.unsqueeze(1) : log_probs;
  const Tensor tg = unbatched && targets.dim() == 1 ? targets.unsqueeze(0) : targets;
  const Tensor il = as_batch(input_lengths), tl = as_batch(target_lengths);
  Tensor loss = call(op_ctc_loss(), std::vector<Tensor>{lp, tg, il, tl}, a)[0];
  switch (options.reduction) {
    case Reduction::None:
      return unbatched ? loss.squeeze(0) : loss;
    case Reduction::Sum:
      return sum(loss);
    default:  // Mean: per-target-length, then over the batch (torch's definition)
      return mean(loss / clamp_min(tl, 1).to(loss.dtype()));
  }
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets,
                std::span<const int64_t> input_lengths, std::span<const int64_t> target_lengths,
                const CtcLossOptions& options) {
  auto as_tensor = [](std::span<const int64_t> v) {
    return from_vector(std::vector<int64_t>(v.begin(), v.end()));
  };
  const bool unbatched = log_probs.dim() == 2;
  Tensor il = as_tensor(input_lengths), tl = as_tensor(target_lengths);
  if (unbatched && il.numel() == 1) il = il.reshape(Shape{});
  if (unbatched && tl.numel() == 1) tl = tl.reshape(Shape{});
  return ctc_loss(log_probs, targets, il, tl, options);
}

}  // namespace ath
