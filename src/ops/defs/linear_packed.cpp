// The packed inference linear (linear_packed.h): shape rules and public functions; kernels in
// kernels/cpu/linear_packed_dnnl.cpp.
#include "athanor/ops/linear_packed.h"

#include "../kernels/cpu/linear_packed_dnnl.h"
#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

constexpr const char* kInference = "an inference op (graph/passes.h: pack_linear)";

void check_attrs(const LinearPackedAttrs& a) {
  ATH_CHECK(a.rows >= 1 && a.in_features >= 1 && a.out_features >= 1, ValueError,
            "packed linear: rows, in_features and out_features must be >= 1, got {}, {}, {}",
            a.rows, a.in_features, a.out_features);
  ATH_CHECK(!(a.relu && a.gelu), ValueError, "packed linear: relu and gelu are exclusive");
}

void check_float32(const Tensor& t, const char* what) {
  ATH_CHECK(t.dtype() == kFloat32, DTypeError, "{} must be float32, got {}", what,
            dtype_name(t.dtype()));
}

}  // namespace

const Op<LinearPackedAttrs>& op_linear_pack_weight() {
  static const auto& op = define_op<LinearPackedAttrs>({
      .name = "linear_pack_weight",
      .infer =
          [](TensorSpan in, const LinearPackedAttrs& a) {
            check_attrs(a);
            check_float32(in[0], "the weight");
            ATH_CHECK(in[0].shape() == Shape({a.out_features, a.in_features}), ShapeError,
                      "weight of shape {}, expected [{}, {}]", to_string(in[0].shape()),
                      a.out_features, a.in_features);
            return OutputSpec{{{{kernels::linear_packed_weight_bytes(a) / 4}, kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

const Op<LinearPackedAttrs>& op_linear_packed() {
  static const auto& op = define_op<LinearPackedAttrs>({
      .name = "linear_packed",
      .num_inputs = -1,
      .infer =
          [](TensorSpan in, const LinearPackedAttrs& a) {
            check_attrs(a);
            const std::size_t want = 2 + a.with_bias + a.residual;
            ATH_CHECK(in.size() == want, ValueError, "expected {} tensors, got {}", want,
                      in.size());
            for (const Tensor& t : in) check_float32(t, "every tensor");
            const Tensor& x = in[0];
            ATH_CHECK(x.dim() >= 1 && x.shape().back() == a.in_features &&
                          x.numel() == a.rows * a.in_features,
                      ShapeError, "input of shape {}, expected [..., {}] with {} rows",
                      to_string(x.shape()), a.in_features, a.rows);
            // The packed weight's size is checked by the kernel (see conv_blocked's shape rule).
            if (a.with_bias)
              ATH_CHECK(in[2].dim() == 1 && in[2].shape()[0] == a.out_features, ShapeError,
                        "bias of shape {} for {} outputs", to_string(in[2].shape()),
                        a.out_features);
            Shape out = x.shape();
            out.back() = a.out_features;
            if (a.residual)  // read as the [rows, N] product it is added to
              ATH_CHECK(in.back().numel() == a.rows * a.out_features, ShapeError,
                        "residual of shape {} for an output of shape {}",
                        to_string(in.back().shape()), to_string(out));
            return OutputSpec{{{out, kFloat32}}, kFloat32};
          },
      .not_differentiable = kInference,
  });
  return op;
}

Tensor linear_pack_weight(const Tensor& weight, const LinearPackedAttrs& attrs) {
  return call1(op_linear_pack_weight(), {weight}, attrs);
}

Tensor linear_packed(const Tensor& x, const Tensor& packed_weight,
                     const std::optional<Tensor>& bias, const LinearPackedAttrs& attrs,
                     const std::optional<Tensor>& residual) {
  std::vector<Tensor> in{x, packed_weight};
  if (bias) in.push_back(*bias);
  if (residual) in.push_back(*residual);
  return call1(op_linear_packed(), in, attrs);
}

}  // namespace ath
