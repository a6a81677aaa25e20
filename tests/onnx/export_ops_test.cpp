// The exporter's op table, one row per emitter: each row is a small function of tensors that
// records the op; it is exported (dynamic batch), loaded with InferenceSession and run at the
// example's batch size and at another, against the eager result (exactly for integer and bool
// results). ExportOpTable.EveryEmitterHasARow walks onnx::exportable_ops() for ops no row
// records.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>

#include "athanor/graph/tracer.h"
#include "athanor/onnx/export.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::onnx::testing {
namespace {

struct Row {
  std::string name;
  // The inputs at batch size b (dim 0 is the batch).
  std::function<std::vector<Tensor>(int64_t b)> inputs;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
};

std::vector<Tensor> one(const Tensor& t) { return {t}; }
Tensor pos(const Shape& s) { return rand(s) + 0.1; }  // (0.1, 1.1)

std::vector<Row> rows() {
  auto x34 = [](int64_t b) { return std::vector<Tensor>{randn({b, 3, 4})}; };
  auto two34 = [](int64_t b) { return std::vector<Tensor>{randn({b, 3, 4}), randn({b, 3, 4})}; };
  auto pos34 = [](int64_t b) { return std::vector<Tensor>{pos({b, 3, 4})}; };
  auto unit34 = [](int64_t b) { return std::vector<Tensor>{rand({b, 3, 4}) * 1.8 - 0.9}; };
  using V = const std::vector<Tensor>&;
  std::vector<Row> r = {
      // element-wise arithmetic and math
      {"add_sub_scaled", two34, [](V in) { return one(in[0] + in[1] - 2.0 * in[0]); }},
      {"add_alpha", two34, [](V in) { return one(add(in[0], in[1], 3)); }},
      {"mul_div_neg", two34, [](V in) { return one(-(in[0] * in[1]) / (abs(in[1]) + 1.0)); }},
      {"exp_log", pos34, [](V in) { return one(exp(in[0]) + log(in[0])); }},
      {"exp2_log2", pos34, [](V in) { return one(exp2(in[0]) + log2(in[0])); }},
      {"expm1_log1p", pos34, [](V in) { return one(expm1(in[0]) + log1p(in[0])); }},
      {"sqrt_rsqrt_reciprocal", pos34,
       [](V in) { return one(sqrt(in[0]) + rsqrt(in[0]) + reciprocal(in[0])); }},
      {"trig", unit34,
       [](V in) {
         return one(sin(in[0]) + cos(in[0]) + tan(in[0]) + asin(in[0]) + acos(in[0]) + atan(in[0]));
       }},
      {"tanh_sigmoid_erf", x34,
       [](V in) { return one(tanh(in[0]) + sigmoid(in[0]) + erf(in[0])); }},
      {"abs_sign_floor_ceil_round", x34,
       [](V in) {
         Tensor y = in[0] * 3.0;
         return one(abs(y) + sign(y) + floor(y) + ceil(y) + round(y));
       }},
      {"pow",
       [](int64_t b) {
         return std::vector<Tensor>{pos({b, 3, 4}), randn({b, 3, 4})};
       },
       [](V in) { return one(pow(in[0], in[1]) + pow(in[0], 3)); }},
      {"maximum_minimum_clamp", two34,
       [](V in) {
         return one(maximum(in[0], in[1]) + minimum(in[0], in[1]) + clamp(in[0], -0.5, 0.5));
       }},
      {"where_masked_fill", two34,
       [](V in) {
         Tensor m = gt(in[0], in[1]);
         return one(where(m, in[0], in[1]) + masked_fill(in[1], m, 2.5));
       }},
      {"compare", two34,
       [](V in) {
         const Tensor& a = in[0];
         const Tensor& b = in[1];
         return std::vector<Tensor>{eq(a, a), ne(a, b), lt(a, b), le(a, b), gt(a, 0.5), ge(a, b)};
       }},
      {"logic", two34,
       [](V in) {
         Tensor p = gt(in[0], 0.0), q = gt(in[1], 0.0);
         return std::vector<Tensor>{logical_and(p, q), logical_or(p, q), logical_xor(p, q),
                                    logical_not(p)};
       }},
      {"isnan_isinf", x34,
       [](V in) {
         Tensor y = log(in[0]);  // NaN below 0, -inf at 0
         return std::vector<Tensor>{isnan(y), isinf(y / 0.0)};
       }},
      {"to_dtype_clone_copy_fill", x34,
       [](V in) {
         Tensor t = in[0].transpose(1, 2).contiguous();  // clone
         Tensor c = empty_like(in[0]);
         c.copy_(in[0] * 2.0);  // copy into a fresh tensor
         Tensor f = in[0] * 1.0;
         f.fill_(3.0);  // fill_ of a result
         return std::vector<Tensor>{(in[0] * 4.0).to(kInt64), t, c + f};
       }},
      // activations
      {"relu_elu_selu_leaky", x34,
       [](V in) {
         return one(relu(in[0]) + elu(in[0], 0.7) + selu(in[0]) + leaky_relu(in[0], 0.2));
       }},
      {"gelu_silu_mish", x34,
       [](V in) {
         return one(gelu(in[0]) + gelu(in[0], GeluApprox::Tanh) + silu(in[0]) + mish(in[0]));
       }},
      {"softplus_hard", x34,
       [](V in) {
         Tensor y = in[0] * 4.0;
         return one(softplus(y) + softplus(y, 2.0) + hardtanh(y, -2, 1) + hardsigmoid(y) +
                    hardswish(y));
       }},
      {"softmax_log_softmax", x34,
       [](V in) { return one(softmax(in[0], 1) + log_softmax(in[0], -1)); }},
      // reductions
      {"sum_mean_prod", x34,
       [](V in) {
         return std::vector<Tensor>{sum(in[0], {1, 2}), mean(in[0], {2}, true), prod(in[0], {1})};
       }},
      {"amax_amin_logsumexp", x34,
       [](V in) {
         return std::vector<Tensor>{amax(in[0], {2}), amin(in[0], {1}, true),
                                    logsumexp(in[0], {2})};
       }},
      {"argmax_argmin_max_min", x34,
       [](V in) {
         ValuesIndices m = max(in[0], 2), n = min(in[0], 1, true);
         return std::vector<Tensor>{
             argmax(in[0], 1), argmin(in[0], 2, true), m.values, m.indices, n.values, n.indices};
       }},
      // shapes and indexing
      {"view_permute_expand", x34,
       [](V in) {
         Tensor v = in[0].reshape({in[0].size(0), 12}).unsqueeze(1);  // [B, 1, 12]
         return std::vector<Tensor>{v.expand({in[0].size(0), 5, 12}), in[0].permute({2, 0, 1})};
       }},
      {"slice_select_cat_flip", x34,
       [](V in) {
         Tensor s = in[0].slice(2, 1, 4, 2), t = in[0].select(1, 2);
         return std::vector<Tensor>{cat({s, flip(s, {2})}, 2), t, in[0].slice(0, 0, in[0].size(0))};
       }},
      {"tril_triu_arange",
       [](int64_t b) {
         return std::vector<Tensor>{randn({b, 4, 4})};
       },
       [](V in) { return one(tril(in[0]) + triu(in[0], 1) + arange(4).to(kFloat32)); }},
      {"index_select_gather", x34,
       [](V in) {
         Tensor idx = from_vector<int64_t>({3, 0, 0});
         Tensor g = argmax(in[0], 2, true);  // [B, 3, 1]
         return std::vector<Tensor>{index_select(in[0], 2, idx), gather(in[0], 2, g)};
       }},
      // matrix products
      {"mm_addmm_linear",
       [](int64_t b) {
         return std::vector<Tensor>{randn({b, 4})};
       },
       [](V in) {
         Tensor w = full({5, 4}, 0.25), bias = full({5}, 0.5);
         return std::vector<Tensor>{mm(in[0], w.t()), addmm(bias, in[0], w.t(), 0.5, 2.0),
                                    linear(in[0], w, bias)};
       }},
      {"bmm_matmul_linear3d",
       [](int64_t b) {
         return std::vector<Tensor>{randn({b, 3, 4}), randn({b, 4, 2}), randn({b, 2, 3, 4})};
       },
       [](V in) {
         Tensor w = full({5, 4}, 0.25);
         return std::vector<Tensor>{bmm(in[0], in[1]), matmul(in[0], full({4, 6}, 0.5)),
                                    matmul(in[2], in[1].unsqueeze(1)), linear(in[0], w)};
       }},
      // pooling
      {"pools",
       [](int64_t b) {
         return std::vector<Tensor>{randn({b, 2, 8, 8})};
       },
       [](V in) {
         return std::vector<Tensor>{
             avg_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1}),
             avg_pool2d(in[0], {.kernel = 3, .padding = 1, .count_include_pad = false}),
             adaptive_avg_pool2d(in[0], {2, 4}),
             max_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true})};
       }},
  };
  return r;
}

std::string path_for(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "athanor_onnx_export_ops";
  std::filesystem::create_directories(dir);
  return (dir / (name + ".onnx")).string();
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (!is_floating(want.dtype())) {
    EXPECT_TRUE(equal(got, want)) << what;
    return;
  }
  EXPECT_TRUE(allclose(got, want, {.rtol = 1e-5, .atol = 1e-6, .equal_nan = true})) << what;
}

class ExportOpTable : public ::testing::TestWithParam<Row> {};

TEST_P(ExportOpTable, MatchesEager) {
  const Row& row = GetParam();
  manual_seed(11);
  const std::vector<Tensor> ex = row.inputs(3);
  const std::string path = path_for(row.name);
  ASSERT_NO_THROW(export_function(row.fn, ex, {}, path)) << row.name;
  InferenceSession s(path);
  for (const std::vector<Tensor>& in : {ex, row.inputs(6)}) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (std::size_t i = 0; i < in.size(); ++i)
      feeds.emplace_back(in.size() == 1 ? "input" : "input_" + std::to_string(i), in[i]);
    const std::vector<Tensor> got = s.run(feeds);
    NoGradGuard no_grad;
    const std::vector<Tensor> want = row.fn(in);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      expect_same(got[i], want[i],
                  fmt::format("{} output {} at batch {}", row.name, i, in[0].size(0)));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, ExportOpTable, ::testing::ValuesIn(rows()),
                         [](const auto& info) { return info.param.name; });

// Every op the exporter claims is recorded by some row (or by the model tests of
// export_test.cpp and export_layers_test.cpp, listed here).
TEST(ExportOpTableWalk, EveryEmitterHasARow) {
  std::set<std::string> recorded = {"convolution",  "max_pool2d",        "batch_norm",
                                    "layer_norm",   "embedding",         "split_heads",
                                    "merge_heads",  "attention_softmax", "lstm_sequence",
                                    "gru_sequence", "group_norm"};
  for (const Row& row : rows()) {
    const std::vector<Tensor> in = row.inputs(2);
    NoGradGuard no_grad;
    graph::Tracer tracer{std::span<const Tensor>(in)};
    const std::vector<Tensor> out = row.fn(in);
    const graph::Graph g = tracer.finish(std::span<const Tensor>(out));
    for (const graph::Node& n : g.nodes) recorded.insert(n.op->name);
  }
  for (const std::string& op : exportable_ops())
    EXPECT_TRUE(recorded.count(op) > 0) << "no row records '" << op << "'";
}

}  // namespace
}  // namespace ath::onnx::testing
