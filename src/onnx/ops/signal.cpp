// The window functions (HannWindow, HammingWindow, BlackmanWindow, opset 17): a pure function
// of the size, computed on the host in double precision and converted to output_datatype.
#include <cmath>
#include <numbers>

#include "../op_table.h"
#include "../tensor_proto.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"

namespace ath::onnx::detail {

namespace {

// a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N'), N' = N (periodic) or N - 1 (symmetric).
void window(NodeContext& c, double a0, double a1, double a2) {
  const int64_t n = c.ints(0).at(0);
  ATH_CHECK(n >= 0 && n <= (int64_t{1} << 28), ValueError, "window size {} is out of range", n);
  const bool periodic = c.attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? n : n - 1);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double x = 2 * std::numbers::pi * static_cast<double>(i) / denom;
    w[static_cast<std::size_t>(i)] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  const int type = static_cast<int>(c.attr_int("output_datatype", ::onnx::TensorProto::FLOAT));
  const std::optional<DType> dt = dtype_from_onnx(type);
  if (!dt) c.unsupported("output_datatype {}", onnx_type_name(type));
  c.out(0, to_dtype(from_vector(w), *dt));
}

void lower_hann(NodeContext& c) { window(c, 0.5, 0.5, 0.0); }
void lower_hamming(NodeContext& c) { window(c, 25.0 / 46.0, 1.0 - 25.0 / 46.0, 0.0); }
void lower_blackman(NodeContext& c) { window(c, 0.42, 0.5, 0.08); }

}  // namespace

void add_signal_ops(OpTable& t) {
  t["HannWindow"] = {lower_hann, 1u << 0, 17, kIntTypes};
  t["HammingWindow"] = {lower_hamming, 1u << 0, 17, kIntTypes};
  t["BlackmanWindow"] = {lower_blackman, 1u << 0, 17, kIntTypes};
}

}  // namespace ath::onnx::detail
