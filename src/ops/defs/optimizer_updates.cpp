// The optimizer update and gradient-clipping ops (athanor/ops/optimizer_updates.h): their
// shape rules, which check every list before a kernel writes anything, and which inputs each
// writes. Kernels: src/ops/kernels/cpu/optim/.
#include "athanor/ops/optimizer_updates.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

constexpr const char* kUpdateReason =
    "an in-place optimizer update: it runs under no_grad on leaf parameters";

// The layout every update shares: `counters` 0-d float64 lists first, then params, grads and the
// state lists. `names` names each list (for messages). Returns the parameters' dtype.
DType check_update_lists(TensorSpan in, int lists, int counters,
                         std::span<const char* const> names) {
  const auto total = static_cast<int64_t>(in.size());
  ATH_CHECK(total > 0 && total % lists == 0, ValueError,
            "expected {} equal-length tensor lists ({}...), got {} inputs", lists, names[0], total);
  const int64_t n = total / lists;
  auto at = [&](int list, int64_t i) -> const Tensor& {
    return in[static_cast<std::size_t>(list * n + i)];
  };
  const int params = counters;
  const DType dt = at(params, 0).dtype();
  ATH_CHECK(is_floating(dt), DTypeError, "parameters must be floating, got {}", dtype_name(dt));
  for (int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < counters; ++c) {
      const Tensor& t = at(c, i);
      ATH_CHECK(t.dtype() == kFloat64 && t.dim() == 0, ValueError,
                "{}[{}] must be a 0-d float64 tensor, got {} {}", names[c], i,
                dtype_name(t.dtype()), to_string(t.shape()));
    }
    const Tensor& p = at(params, i);
    for (int list = params; list < lists; ++list) {
      const Tensor& t = at(list, i);
      ATH_CHECK(t.dtype() == dt, DTypeError, "{}[{}] has dtype {}, parameter 0 has {}", names[list],
                i, dtype_name(t.dtype()), dtype_name(dt));
      ATH_CHECK(t.shape() == p.shape(), ShapeError, "{}[{}] has shape {}, its parameter {}",
                names[list], i, to_string(t.shape()), to_string(p.shape()));
      ATH_CHECK(t.is_contiguous(), ValueError, "{}[{}] must be contiguous", names[list], i);
    }
  }
  return dt;
}

// Every list but the gradients (the list after the parameters) is written.
template <class A, int kCounters>
bool writes_all_but_grads(int input, int num_inputs, const A& attrs) {
  const int n = num_inputs / attrs.lists();
  return n == 0 || input / n != kCounters + 1;
}

template <class A, int kCounters>
OpSpec<A> update_spec(const char* name) {
  OpSpec<A> spec;
  spec.name = name;
  spec.num_inputs = -1;
  spec.num_outputs = 0;
  spec.not_differentiable = kUpdateReason;
  spec.mutates = writes_all_but_grads<A, kCounters>;
  return spec;
}

}  // namespace

const Op<SgdUpdateAttrs>& op_sgd_update() {
  static const auto& op = []() -> const Op<SgdUpdateAttrs>& {
    static constexpr std::array<const char*, 3> names{"param", "grad", "momentum_buffer"};
    OpSpec<SgdUpdateAttrs> spec = update_spec<SgdUpdateAttrs, 0>("sgd_update");
    spec.infer = [](TensorSpan in, const SgdUpdateAttrs& a) {
      return OutputSpec{{}, check_update_lists(in, a.lists(), 0, names)};
    };
    return define_op(std::move(spec));
  }();
  return op;
}

const Op<AdamUpdateAttrs>& op_adam_update() {
  static const auto& op = []() -> const Op<AdamUpdateAttrs>& {
    static constexpr std::array<const char*, 6> names{"step",    "param",      "grad",
                                                      "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    OpSpec<AdamUpdateAttrs> spec = update_spec<AdamUpdateAttrs, 1>("adam_update");
    spec.infer = [](TensorSpan in, const AdamUpdateAttrs& a) {
      return OutputSpec{{}, check_update_lists(in, a.lists(), 1, names)};
    };
    return define_op(std::move(spec));
  }();
  return op;
}

const Op<AdamaxUpdateAttrs>& op_adamax_update() {
  static const auto& op = []() -> const Op<AdamaxUpdateAttrs>& {
    static constexpr std::array<const char*, 5> names{"step", "param", "grad", "exp_avg",
                                                      "exp_inf"};
    OpSpec<AdamaxUpdateAttrs> spec = update_spec<AdamaxUpdateAttrs, 1>("adamax_update");
    spec.infer = [](TensorSpan in, const AdamaxUpdateAttrs& a) {
      return OutputSpec{{}, check_update_lists(in, a.lists(), 1, names)};
    };
    return define_op(std::move(spec));
  }();
  return op;
}

const Op<NAdamUpdateAttrs>& op_nadam_update() {
  static const auto& op = []() -> const Op<NAdamUpdateAttrs>& {
    static constexpr std::array<const char*, 6> names{"step", "mu_product", "param",
                                                      "grad", "exp_avg",    "exp_avg_sq"};
    OpSpec<NAdamUpdateAttrs> spec = update_spec<NAdamUpdateAttrs, 2>("nadam_update");
    spec.infer = [](TensorSpan in, const NAdamUpdateAttrs& a) {
      return OutputSpec{{}, check_update_lists(in, a.lists(), 2, names)};
    };
    return define_op(std::move(spec));
  }();
  return op;
}

const Op<RMSpropUpdateAttrs>& op_rmsprop_update() {
  static const auto& op = []() -> const Op<RMSpropUpdateAttrs>& {
    static constexpr std::array<const char*, 6> names{"step",       "param",           "grad",
                                                      "square_avg", "momentum_buffer", "grad_avg"};
    static constexpr std::array<const char*, 6> centered_only{"step",       "param",    "grad",
                                                              "square_avg", "grad_avg", "grad_avg"};
    OpSpec<RMSpropUpdateAttrs> spec = update_spec<RMSpropUpdateAttrs, 1>("rmsprop_update");
    spec.infer = [](TensorSpan in, const RMSpropUpdateAttrs& a) {
      const bool buffer = a.momentum > 0;
      return OutputSpec{{}, check_update_lists(in, a.lists(), 1, buffer ? names : centered_only)};
    };
    return define_op(std::move(spec));
  }();
  return op;
}

const Op<AdagradUpdateAttrs>& op_adagrad_update() {
  static const auto& op = []() -> const Op<AdagradUpdateAttrs>& {
    static constexpr std::array<const char*, 4> names{"step", "param", "grad", "sum"};
    OpSpec<AdagradUpdateAttrs> spec = update_spec<AdagradUpdateAttrs, 1>("adagrad_update");
    spec.infer = [](TensorSpan in, const AdagradUpdateAttrs& a) {
      return OutputSpec{{}, check_update_lists(in, a.lists(), 1, names)};
    };
    return define_op(std::move(spec));
  }();
  return op;
}

namespace {

DType check_gradients(TensorSpan grads) {
  DType dt = grads[0].dtype();
  for (std::size_t i = 0; i < grads.size(); ++i) {
    ATH_CHECK(is_floating(grads[i].dtype()), DTypeError, "gradient {} has dtype {}", i,
              dtype_name(grads[i].dtype()));
    dt = promote_types(dt, grads[i].dtype());
  }
  return dt;
}

}  // namespace

const Op<GradNormAttrs>& op_grad_norm() {
  static const auto& op = define_op<GradNormAttrs>({
      .name = "grad_norm",
      .kind = OpKind::Reduce,
      .num_inputs = -1,
      .promote_inputs = 0,  // each gradient is read in its own dtype
      .infer =
          [](TensorSpan in, const GradNormAttrs& a) {
            ATH_CHECK(!in.empty(), ValueError, "expected at least one gradient");
            ATH_CHECK(a.norm_type > 0, ValueError, "norm_type must be > 0 or infinity, got {}",
                      a.norm_type);
            const DType dt = check_gradients(in);
            return OutputSpec{{{Shape{}, dt}}, dt};
          },
      .not_differentiable = "a clipping statistic, computed under no_grad on gradients",
      .workspace = [](TensorSpan in, const GradNormAttrs&) -> std::size_t {
        int64_t largest = 0;
        for (const Tensor& g : in) largest = std::max(largest, g.numel());
        return static_cast<std::size_t>((largest + kGradNormChunk - 1) / kGradNormChunk) *
               sizeof(double);
      },
  });
  return op;
}

const Op<ClipByNormAttrs>& op_clip_grads_by_norm() {
  static const auto& op = define_op<ClipByNormAttrs>({
      .name = "clip_grads_by_norm",
      .num_inputs = -1,
      .num_outputs = 0,
      .infer =
          [](TensorSpan in, const ClipByNormAttrs&) {
            ATH_CHECK(in.size() >= 2, ValueError,
                      "expected the total norm and at least one gradient, got {} inputs",
                      in.size());
            const Tensor& total = in[0];
            ATH_CHECK(total.dim() == 0 && is_floating(total.dtype()), ValueError,
                      "the total norm must be a 0-d floating tensor, got {} {}",
                      dtype_name(total.dtype()), to_string(total.shape()));
            check_gradients(in.subspan(1));
            return OutputSpec{{}, total.dtype()};
          },
      .not_differentiable = "an in-place gradient rescaling, run under no_grad",
      .mutates = [](int input, int, const ClipByNormAttrs&) { return input > 0; },
  });
  return op;
}

const Op<UnscaleGradsAttrs>& op_unscale_grads() {
  static const auto& op = define_op<UnscaleGradsAttrs>({
      .name = "unscale_grads",
      .num_inputs = -1,
      .num_outputs = 0,
      .promote_inputs = 0,  // each gradient is read and written in its own dtype
      .infer =
          [](TensorSpan in, const UnscaleGradsAttrs&) {
            ATH_CHECK(in.size() >= 3, ValueError,
                      "expected found_inf, inv_scale and at least one gradient, got {} inputs",
                      in.size());
            for (std::size_t i = 0; i < 2; ++i) {
              ATH_CHECK(in[i].dim() == 0 && in[i].dtype() == kFloat32, ValueError,
                        "{} must be a 0-d float32 tensor, got {} {}",
                        i == 0 ? "found_inf" : "inv_scale", dtype_name(in[i].dtype()),
                        to_string(in[i].shape()));
            }
            return OutputSpec{{}, check_gradients(in.subspan(2))};
          },
      .not_differentiable = "an in-place gradient rescaling, run under no_grad",
      .mutates = [](int input, int, const UnscaleGradsAttrs&) { return input != 1; },
  });
  return op;
}

}  // namespace ath
