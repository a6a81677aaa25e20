#include "op_table.h"

#include <fmt/ranges.h>

#include <vector>

#include "athanor/onnx/session.h"
#include "athanor/ops/copy.h"

namespace ath::onnx {

namespace detail {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_activation_ops(t);
    add_shape_ops(t);
    add_indexing_ops(t);
    add_reduce_ops(t);
    add_nn_ops(t);
    add_pad_ops(t);
    add_loss_ops(t);
    add_resize_ops(t);
    add_rnn_ops(t);
    add_signal_ops(t);
    add_quantize_ops(t);
    add_einsum_ops(t);
    add_integer_ops(t);
    add_grid_sample_ops(t);
    add_det_ops(t);
    add_unique_ops(t);
    add_nms_ops(t);
    return t;
  }();
  return table;
}

void check_output_size(const Shape& shape) {
  constexpr int64_t kMax = int64_t{1} << 31;
  int64_t n = 1;
  for (int64_t d : shape) {
    ATH_CHECK(d >= 0, ValueError, "negative dimension {} in [{}]", d, fmt::join(shape, ","));
    ATH_CHECK(d == 0 || n <= kMax / d, ValueError, "shape [{}] has more than 2^31 elements",
              fmt::join(shape, ","));
    n *= d;
  }
}

Tensor like_type(const Tensor& r, const Tensor& x) {
  return r.dtype() == x.dtype() ? r : to_dtype(r, x.dtype());
}

}  // namespace detail

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, op] : detail::op_table()) names.push_back(name);
  return names;
}

}  // namespace ath::onnx
