// MultiheadAttention, TransformerEncoderLayer, TransformerEncoder: PyTorch 1.13 goldens (same
// weights in, same outputs, input and parameter gradients out), parameter names and default
// initialisation, the causal flag against an explicit mask, gradcheck, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "athanor/athanor.h"
#include "athanor/nn/multihead_attention.h"
#include "athanor/nn/transformer.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::GoldenCase;
using testing::load_golden;
using Tensors = std::vector<Tensor>;

const GoldenCase& golden(const std::string& name) {
  static const std::vector<GoldenCase> cases = load_golden("transformer");
  for (const auto& c : cases) {
    if (c.name == name) return c;
  }
  throw KeyError("no golden case " + name);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// Bool mask -> additive float mask (0 or -inf), as the golden generator builds it.
Tensor to_float_mask(const Tensor& m) { return masked_fill(zeros(m.shape()), m, -kInf); }
Tensor causal_float(int64_t l) { return triu(full({l, l}, -kInf), 1); }

Tensors both(const MultiheadAttentionOutput& r) {
  return r.weights.defined() ? Tensors{r.output, r.weights} : Tensors{r.output};
}

MultiheadAttentionOptions mha_options(const GoldenCase& c) {
  MultiheadAttentionOptions o{.embed_dim = 8, .num_heads = 2};
  o.batch_first = c.attrs.value("batch_first", false);
  o.bias = c.attrs.value("bias", true);
  if (c.attrs.contains("kdim")) o.kdim = c.attrs["kdim"].get<int64_t>();
  if (c.attrs.contains("vdim")) o.vdim = c.attrs["vdim"].get<int64_t>();
  return o;
}

void check_mha(const std::string& name,
               const std::function<Tensors(MultiheadAttention&, const Tensors&)>& run) {
  const GoldenCase& c = golden(name);
  MultiheadAttention mha(mha_options(c));
  check_module_golden(c, mha, [&](const Tensors& in) { return run(mha, in); });
}

TEST(MultiheadAttention, MatchesPyTorch) {
  check_mha("mha_self_bool_mask", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[0], in[0], {.attn_mask = in[1]}));
  });
  check_mha("mha_self_float_mask_per_head", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[0], in[0], {.attn_mask = in[1], .average_attn_weights = false}));
  });
  check_mha("mha_kpm_bool_attn3d", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[1], in[2], {.key_padding_mask = in[3], .attn_mask = in[4]}));
  });
  check_mha("mha_kpm_float", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[1], in[2],
                  {.key_padding_mask = to_float_mask(in[3]), .average_attn_weights = false}));
  });
  check_mha("mha_cross_kv",
            [](MultiheadAttention& m, const Tensors& in) { return both(m(in[0], in[1], in[1])); });
  check_mha("mha_kdim_vdim", [](MultiheadAttention& m, const Tensors& in) {
    MultiheadAttentionOutput r = m(in[0], in[1], in[2], {.need_weights = false});
    EXPECT_FALSE(r.weights.defined());
    return both(r);
  });
  check_mha("mha_nobias_unbatched", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[1], in[2], {.key_padding_mask = in[3]}));
  });
  // torch 1.13 has no is_causal: the golden used an explicit -inf mask.
  check_mha("mha_causal", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[0], in[0], {.is_causal = true}));
  });
  check_mha("mha_causal", [](MultiheadAttention& m, const Tensors& in) {
    return both(m(in[0], in[0], in[0], {.attn_mask = causal_float(in[0].size(1))}));
  });
}

TEST(MultiheadAttention, ParametersAndDefaultInit) {
  manual_seed(5);
  MultiheadAttention mha({.embed_dim = 64, .num_heads = 4});
  EXPECT_EQ(mha.state_dict().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                      "out_proj.bias"}));
  EXPECT_EQ(mha.in_proj_weight.shape(), (Shape{192, 64}));
  EXPECT_EQ(mha.head_dim(), 16);
  // xavier_uniform_ on [3E, E]: bound sqrt(6 / (E + 3E)).
  const double bound = std::sqrt(6.0 / (64 + 192));
  EXPECT_LE(max(mha.in_proj_weight.abs()).item<double>(), bound);
  EXPECT_GT(max(mha.in_proj_weight.abs()).item<double>(), 0.98 * bound);
  EXPECT_EQ(mha.in_proj_bias.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(mha.out_proj.bias.abs().sum().item<double>(), 0.0);
  // out_proj.weight keeps Linear's default: U(-1/sqrt(E), 1/sqrt(E)).
  EXPECT_LE(max(mha.out_proj.weight.abs()).item<double>(), 1.0 / 8);
  EXPECT_GT(max(mha.out_proj.weight.abs()).item<double>(), 0.95 / 8);

  MultiheadAttention sep({.embed_dim = 8, .num_heads = 2, .bias = false, .kdim = 5, .vdim = 7});
  EXPECT_FALSE(sep.packed());
  EXPECT_EQ(sep.state_dict().keys(),
            (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                      "out_proj.weight"}));
  EXPECT_EQ(sep.k_proj_weight.shape(), (Shape{8, 5}));
}

TEST(MultiheadAttention, WeightsAreDistributionsAndDropoutOnlyTrains) {
  manual_seed(7);
  MultiheadAttention mha({.embed_dim = 8, .num_heads = 2, .dropout = 0.5, .batch_first = true});
  Tensor x = randn({2, 6, 8});
  mha.eval();
  auto r = mha(x, x, x, {.is_causal = true});
  EXPECT_EQ(r.weights.shape(), (Shape{2, 6, 6}));
  testing::expect_close(r.weights.sum({-1}), ones({2, 6}), 1e-5, 1e-6, "rows sum to 1");
  // Causal: nothing above the diagonal.
  EXPECT_EQ(triu(r.weights, 1).abs().sum().item<double>(), 0.0);
  testing::expect_close(mha(x, x, x, {.is_causal = true}).output, r.output, 0, 0, "eval");
  mha.train();
  Tensor y = mha(x, x, x, {.is_causal = true}).output;
  EXPECT_GT((y - r.output).abs().sum().item<double>(), 1e-3);
  mha.eval();
  // A uint8 attn_mask (PyTorch's deprecated byte mask) acts as the bool one.
  Tensor causal_bool = triu(ones({6, 6}, kBool), 1);
  testing::expect_close(mha(x, x, x, {.attn_mask = causal_bool.to(kUInt8)}).output,
                        mha(x, x, x, {.attn_mask = causal_bool}).output, 0, 0, "uint8 mask");
  testing::expect_close(mha(x, x, x, {.attn_mask = causal_bool}).output,
                        mha(x, x, x, {.is_causal = true}).output, 1e-5, 1e-6, "bool causal");
  // The one-tensor forward is self-attention without masks (and without weights, so with grad
  // mode on it is the fused self_attention op: equal to rounding).
  testing::expect_close(mha(x), mha(x, x, x).output, 1e-6, 1e-6, "forward(x)");
  {
    NoGradGuard no_grad;  // the unfused path, like mha(x, x, x) with its weights
    testing::expect_close(mha(x), mha(x, x, x).output, 0, 0, "forward(x), no grad");
  }
}

TEST(MultiheadAttention, GradientsMatchFiniteDifferences) {
  manual_seed(11);
  MultiheadAttention mha({.embed_dim = 4, .num_heads = 2, .dtype = kFloat64});
  Tensor x = randn({3, 2, 4}).to(kFloat64).requires_grad_();
  Tensor pad = from_vector<bool>({false, false, true, false, false, false}).view({2, 3});
  // Without the padding mask, self-attention is the fused self_attention op and its backward.
  for (bool masked : {true, false}) {
    for (bool causal : {false, true}) {
      auto r = gradcheck(
          [&](const Tensors& in) {
            return Tensors{mha(in[0], in[0], in[0],
                               {.key_padding_mask = masked ? pad : Tensor(),
                                .need_weights = false,
                                .is_causal = causal})
                               .output};
          },
          {x});
      EXPECT_TRUE(r.ok) << (masked ? "masked" : "fused") << (causal ? " causal: " : ": ")
                        << r.message;
    }
  }
}

template <class E>
void expect_error(const std::function<void()>& f, const std::string& layer) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(layer), std::string::npos) << e.what();
  }
}

TEST(MultiheadAttention, BadInputNamesTheLayer) {
  const std::string n = "MultiheadAttention";
  expect_error<ValueError>([] { MultiheadAttention({.embed_dim = 10, .num_heads = 3}); }, n);
  expect_error<ValueError>([] { MultiheadAttention({.embed_dim = 0, .num_heads = 1}); }, n);
  expect_error<NotImplementedError>(
      [] { MultiheadAttention({.embed_dim = 8, .num_heads = 2, .add_bias_kv = true}); }, n);
  MultiheadAttention mha({.embed_dim = 8, .num_heads = 2, .batch_first = true});
  Tensor x = randn({2, 5, 8});
  expect_error<ShapeError>([&] { mha(x, x, x, {.attn_mask = zeros({5, 4})}); }, n);
  expect_error<ShapeError>([&] { mha(x, x, x, {.attn_mask = zeros({2, 5, 5})}); }, n);
  expect_error<DTypeError>([&] { mha(x, x, x, {.attn_mask = zeros({5, 5}, kInt64)}); }, n);
  expect_error<ShapeError>([&] { mha(x, x, x, {.key_padding_mask = zeros({5, 2}, kBool)}); }, n);
  expect_error<DTypeError>([&] { mha(x, x, x, {.key_padding_mask = zeros({2, 5}, kInt32)}); }, n);
  expect_error<DTypeError>([&] { mha(x, x, x, {.key_padding_mask = zeros({2, 5}, kUInt8)}); }, n);
  expect_error<ShapeError>([&] { mha(randn({2, 5, 6}), x, x); }, n);
  expect_error<ShapeError>([&] { mha(x, randn({3, 5, 8}), randn({3, 5, 8})); }, n);
  expect_error<ShapeError>([&] { mha(randn({8}), randn({8}), randn({8})); }, n);
}

// ---- TransformerEncoderLayer / TransformerEncoder ----------------------------------------------

TransformerEncoderLayerOptions layer_options(const GoldenCase& c) {
  return {.d_model = 8,
          .nhead = 2,
          .dim_feedforward = 12,
          .dropout = 0.0,
          .activation = c.attrs["activation"].get<std::string>(),
          .batch_first = c.attrs["batch_first"].get<bool>(),
          .norm_first = c.attrs["norm_first"].get<bool>()};
}

TEST(TransformerEncoderLayer, MatchesPyTorch) {
  for (const char* name : {"layer_post_relu_causal", "layer_pre_gelu_causal"}) {
    const GoldenCase& c = golden(name);
    TransformerEncoderLayer layer(layer_options(c));
    check_module_golden(
        c, layer, [&](const Tensors& in) { return Tensors{layer(in[0], {.is_causal = true})}; });
    // The same with the explicit mask torch used.
    check_module_golden(c, layer, [&](const Tensors& in) {
      const int64_t l = in[0].size(layer.options.batch_first ? 1 : 0);
      return Tensors{layer(in[0], {.src_mask = causal_float(l)})};
    });
  }
  for (const char* name : {"layer_post_gelu_padding", "layer_pre_relu_padding"}) {
    const GoldenCase& c = golden(name);
    TransformerEncoderLayer layer(layer_options(c));
    check_module_golden(c, layer, [&](const Tensors& in) {
      return Tensors{layer(in[0], {.src_key_padding_mask = in[1]})};
    });
  }
  const GoldenCase& c = golden("layer_post_relu_float_mask_padding");
  TransformerEncoderLayer layer(layer_options(c));
  check_module_golden(c, layer, [&](const Tensors& in) {
    return Tensors{layer(in[0], {.src_mask = in[1], .src_key_padding_mask = in[2]})};
  });
}

TEST(TransformerEncoderLayer, NamesAndDefaults) {
  TransformerEncoderLayer layer({.d_model = 8, .nhead = 2, .dim_feedforward = 12});
  EXPECT_EQ(layer.state_dict().keys(),
            (std::vector<std::string>{
                "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}));
  std::vector<std::string> children;
  for (auto& [name, m] : layer.named_children()) children.push_back(name);
  EXPECT_EQ(children, (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2",
                                                "norm1", "norm2", "dropout1", "dropout2"}));
  EXPECT_EQ(layer.dropout.options.p, 0.1);
  EXPECT_EQ(layer.self_attn.options.dropout, 0.1);
  TransformerEncoderLayer d({.d_model = 8, .nhead = 2});
  EXPECT_EQ(d.linear1.options.out, 2048);
}

TEST(TransformerEncoderLayer, BadInputNamesTheLayer) {
  const std::string n = "TransformerEncoderLayer";
  expect_error<ValueError>([] { TransformerEncoderLayer({.d_model = 10, .nhead = 3}); }, n);
  expect_error<ValueError>(
      [] { TransformerEncoderLayer({.d_model = 8, .nhead = 2, .activation = "tanh"}); }, n);
  TransformerEncoderLayer layer({.d_model = 8, .nhead = 2, .dim_feedforward = 12});
  Tensor x = randn({5, 2, 8});
  expect_error<ShapeError>([&] { layer(x, {.src_mask = zeros({4, 5})}); }, n);
  expect_error<ShapeError>([&] { layer(x, {.src_key_padding_mask = zeros({5, 2}, kBool)}); }, n);
  expect_error<DTypeError>([&] { layer(x, {.src_mask = zeros({5, 5}, kInt64)}); }, n);
  expect_error<ShapeError>([&] { layer(randn({5, 2, 6})); }, n);
}

TEST(TransformerEncoder, MatchesPyTorch) {
  {
    const GoldenCase& c = golden("encoder_prenorm_gelu_causal_norm");
    TransformerEncoder enc(
        {.layer = layer_options(c), .num_layers = 2, .norm = LayerNormOptions{.shape = {8}}});
    check_module_golden(
        c, enc, [&](const Tensors& in) { return Tensors{enc(in[0], {.is_causal = true})}; });
  }
  const GoldenCase& c = golden("encoder_postnorm_relu_padding");
  TransformerEncoder enc({.layer = layer_options(c), .num_layers = 2});
  check_module_golden(c, enc, [&](const Tensors& in) {
    return Tensors{enc(in[0], {.src_key_padding_mask = in[1]})};
  });
}

// Outputs and every gradient are bitwise the same on 1 and 2 threads (W4's block, scaled down
// but with rows long enough to be split across threads).
TEST(TransformerEncoderLayer, ResultsDoNotDependOnTheThreadCount) {
  const int saved = get_num_threads();
  manual_seed(21);
  TransformerEncoderLayer layer({.d_model = 64,
                                 .nhead = 4,
                                 .dim_feedforward = 256,
                                 .dropout = 0.0,
                                 .activation = "gelu",
                                 .batch_first = true,
                                 .norm_first = true});
  Tensor x = randn({4, 64, 64}).requires_grad_();
  std::vector<Tensor> wrt{x};
  for (const Tensor& p : layer.parameters()) wrt.push_back(p);
  Tensor gy = randn({4, 64, 64});
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor y = layer(x, {.is_causal = true});
    Tensors out = grad({y}, wrt, {gy});
    out.push_back(y.detach());
    return out;
  };
  Tensors one = run(1), two = run(2);
  set_num_threads(saved);
  for (std::size_t i = 0; i < one.size(); ++i) {
    testing::expect_close(two[i], one[i], 0, 0, "tensor " + std::to_string(i));
  }
}

TEST(TransformerEncoder, LayersAreIndependentClones) {
  TransformerEncoder enc({.layer = {.d_model = 8, .nhead = 2, .dim_feedforward = 12},
                          .num_layers = 3,
                          .norm = LayerNormOptions{.shape = {8}}});
  EXPECT_EQ(enc.num_layers(), 3u);
  StateDict s = enc.state_dict();
  EXPECT_TRUE(s.contains("layers.2.self_attn.in_proj_weight"));
  EXPECT_TRUE(s.contains("norm.weight"));
  EXPECT_EQ(enc.parameters().size(), 3u * 12 + 2);
  // PyTorch deep-copies one layer: equal values, separate storage.
  Tensor w0 = enc.layer(0).linear1.weight, w2 = enc.layer(2).linear1.weight;
  testing::expect_close(w2, w0, 0, 0, "clone values");
  EXPECT_FALSE(w0.shares_storage(w2));
  EXPECT_THROW(enc.layer(3), IndexError);
  EXPECT_THROW(TransformerEncoder({.layer = {.d_model = 8, .nhead = 2}, .num_layers = 0}),
               ValueError);
  Tensor x = randn({4, 2, 8});
  EXPECT_EQ(enc(x).shape(), x.shape());
  EXPECT_NE(enc.to_string().find("(layers): ModuleList("), std::string::npos) << enc.to_string();
}

}  // namespace
}  // namespace ath::nn
