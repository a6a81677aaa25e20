// LSTM, GRU, LSTMCell, GRUCell: PyTorch goldens (tools/golden/rnn.py: every option, given and
// default states, unbatched input, dropout), parameter names, default initialisation, printing,
// bad input, dropout between layers, thread-count independence, and a wider check against the
// same network written with plain ops in float64.
#include <gtest/gtest.h>

#include <cmath>

#include "athanor/athanor.h"
#include "athanor/nn/embedding.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/rnn.h"
#include "athanor/nn/sequential.h"
#include "support/module_golden.h"

namespace ath::nn {
namespace {

using testing::check_module_golden;
using testing::GoldenCase;

const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> c = testing::load_golden("rnn");
  return c;
}

bool values_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

void expect_close_f(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  testing::expect_close(got, want, tol, tol);
}

RNNOptions rnn_options(const nlohmann::json& a) {
  return {.input_size = a["input_size"].get<int64_t>(),
          .hidden_size = a["hidden_size"].get<int64_t>(),
          .num_layers = a.value("num_layers", int64_t{1}),
          .bias = a.value("bias", true),
          .batch_first = a.value("batch_first", false),
          .dropout = a.value("dropout", 0.0),
          .bidirectional = a.value("bidirectional", false)};
}

RNNCellOptions cell_options(const nlohmann::json& a) {
  return {.input_size = a["input_size"].get<int64_t>(),
          .hidden_size = a["hidden_size"].get<int64_t>(),
          .bias = a.value("bias", true)};
}

int run_goldens(const std::string& kind) {
  int n = 0;
  for (const GoldenCase& c : cases()) {
    if (c.attrs["kind"] != kind) continue;
    ++n;
    if (kind == "LSTM") {
      LSTM m(rnn_options(c.attrs));
      m.train(c.attrs["train"].get<bool>());
      check_module_golden(c, m, [&](const std::vector<Tensor>& in) {
        auto [y, s] = m.forward(in[0], in.size() == 3 ? LSTMState{in[1], in[2]} : LSTMState{});
        return std::vector<Tensor>{y, s.h, s.c};
      });
    } else if (kind == "GRU") {
      GRU m(rnn_options(c.attrs));
      m.train(c.attrs["train"].get<bool>());
      check_module_golden(c, m, [&](const std::vector<Tensor>& in) {
        auto [y, h] = m.forward(in[0], in.size() == 2 ? in[1] : Tensor());
        return std::vector<Tensor>{y, h};
      });
    } else if (kind == "LSTMCell") {
      LSTMCell m(cell_options(c.attrs));
      check_module_golden(c, m, [&](const std::vector<Tensor>& in) {
        LSTMState s = m.forward(in[0], in.size() == 3 ? LSTMState{in[1], in[2]} : LSTMState{});
        return std::vector<Tensor>{s.h, s.c};
      });
    } else {
      GRUCell m(cell_options(c.attrs));
      check_module_golden(c, m, [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{m.forward(in[0], in.size() == 2 ? in[1] : Tensor())};
      });
    }
  }
  return n;
}

TEST(LSTM, MatchesPyTorch) { EXPECT_EQ(run_goldens("LSTM"), 8); }
TEST(GRU, MatchesPyTorch) { EXPECT_EQ(run_goldens("GRU"), 8); }
TEST(LSTMCell, MatchesPyTorch) { EXPECT_EQ(run_goldens("LSTMCell"), 3); }
TEST(GRUCell, MatchesPyTorch) { EXPECT_EQ(run_goldens("GRUCell"), 3); }

TEST(LSTM, ParameterNamesShapesAndPrinting) {
  LSTM lstm({.input_size = 3, .hidden_size = 5, .num_layers = 2, .bidirectional = true});
  std::vector<std::string> names;
  for (const auto& [n, p] : lstm.named_parameters()) names.push_back(n);
  std::vector<std::string> want;
  for (const char* layer : {"_l0", "_l0_reverse", "_l1", "_l1_reverse"}) {
    for (const char* p : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}) {
      want.push_back(std::string(p) + layer);
    }
  }
  EXPECT_EQ(names, want);
  EXPECT_EQ(lstm.parameter("weight_ih_l0").shape(), (Shape{20, 3}));
  EXPECT_EQ(lstm.parameter("weight_ih_l1_reverse").shape(), (Shape{20, 10}));
  EXPECT_EQ(lstm.parameter("weight_hh_l1").shape(), (Shape{20, 5}));
  EXPECT_EQ(lstm.to_string(), "LSTM(3, 5, num_layers=2, bidirectional=True)");

  GRU gru({.input_size = 4, .hidden_size = 2, .bias = false, .batch_first = true, .dropout = 0.5});
  EXPECT_EQ(gru.state_dict().keys(), (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0"}));
  EXPECT_EQ(gru.parameter("weight_ih_l0").shape(), (Shape{6, 4}));
  EXPECT_EQ(gru.to_string(), "GRU(4, 2, bias=False, batch_first=True, dropout=0.5)");

  LSTMCell cell({.input_size = 4, .hidden_size = 5});
  EXPECT_EQ(cell.state_dict().keys(),
            (std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}));
  EXPECT_EQ(cell.weight_ih.shape(), (Shape{20, 4}));
  EXPECT_EQ(cell.to_string(), "LSTMCell(4, 5)");
  EXPECT_EQ(GRUCell({.input_size = 4, .hidden_size = 5, .bias = false}).to_string(),
            "GRUCell(4, 5, bias=False)");
}

TEST(LSTM, DefaultInitIsUniformOneOverSqrtHidden) {
  manual_seed(5);
  LSTM lstm({.input_size = 64, .hidden_size = 256});
  GRUCell cell({.input_size = 64, .hidden_size = 100});
  for (auto [params, hidden] :
       {std::pair{lstm.parameters(), 256.0}, std::pair{cell.parameters(), 100.0}}) {
    const double bound = 1 / std::sqrt(hidden);
    for (const Tensor& p : params) {
      EXPECT_LE(max(p.abs()).item<double>(), bound);
      EXPECT_GT(max(p.abs()).item<double>(), 0.95 * bound);
      if (p.numel() > 10000) {
        EXPECT_NEAR(p.pow(2).mean().item<double>(), bound * bound / 3, 0.03 * bound * bound);
      }
    }
  }
}

TEST(LSTM, OneTensorForwardSitsInSequential) {
  manual_seed(1);
  Sequential model;
  model.emplace_back<Embedding>(EmbeddingOptions{.num = 16, .dim = 4});
  auto& lstm =
      model.emplace_back<LSTM>(LSTMOptions{.input_size = 4, .hidden_size = 6, .batch_first = true});
  model.emplace_back<Linear>(LinearOptions{.in = 6, .out = 16});
  Tensor ids = from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 6});
  Tensor logits = model(ids);
  EXPECT_EQ(logits.shape(), (Shape{2, 6, 16}));
  Tensor emb = model.at<Embedding>(0)(ids);
  auto [y, state] = lstm.forward(emb, {});
  EXPECT_EQ(values_equal(lstm(emb), y), true);
  EXPECT_EQ(state.h.shape(), (Shape{1, 2, 6}));
  // The final hidden state is the last step's output.
  EXPECT_TRUE(values_equal(state.h.select(0, 0), y.select(1, 5)));
  logits.sum().backward();
  for (const auto& [name, p] : model.named_parameters()) {
    EXPECT_TRUE(p.grad().defined()) << name;
  }
}

TEST(LSTM, DropoutOnlyBetweenLayersAndOnlyInTraining) {
  manual_seed(2);
  Tensor x = randn({5, 3, 4});
  LSTM one({.input_size = 4, .hidden_size = 8, .dropout = 0.9});
  Tensor a = one(x);
  one.eval();
  EXPECT_TRUE(values_equal(a, one(x)));  // one layer: no dropout anywhere

  GRU two({.input_size = 4, .hidden_size = 8, .num_layers = 2, .dropout = 1.0});
  two.eval();
  Tensor eval_out = two(x);
  two.train();
  Tensor train_out = two(x);
  EXPECT_FALSE(values_equal(eval_out, train_out));
  // p = 1 zeroes the second layer's input: its output is then that of a zero input.
  GRU second({.input_size = 8, .hidden_size = 8});
  StateDict sd;
  for (const char* p : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}) {
    sd.insert(std::string(p) + "_l0", two.parameter(std::string(p) + "_l1"));
  }
  second.load_state_dict(sd);
  expect_close_f(train_out, second(zeros({5, 3, 8})));
}

// Every bad input throws an ath::Error whose message names the layer.
template <class E, class F>
void expect_error(const char* layer, F&& f) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(layer), std::string::npos) << e.what();
  }
}

TEST(LSTM, BadInputNamesTheLayer) {
  LSTM lstm({.input_size = 3, .hidden_size = 4, .num_layers = 2});
  Tensor x = randn({5, 2, 3});
  expect_error<ShapeError>("LSTM", [&] { lstm(randn({5, 2, 7})); });  // input size
  expect_error<ShapeError>("LSTM", [&] { lstm(randn({5})); });        // rank
  expect_error<ShapeError>("LSTM", [&] { lstm(randn({1, 5, 2, 3})); });
  expect_error<DTypeError>("LSTM", [&] { lstm(x.to(kFloat64)); });  // dtype
  expect_error<DTypeError>("LSTM", [&] { lstm(zeros({5, 2, 3}, kInt64)); });
  expect_error<ShapeError>("LSTM", [&] { lstm.forward(x, {zeros({2, 3, 4}), zeros({2, 3, 4})}); });
  expect_error<ShapeError>("LSTM", [&] { lstm.forward(x, {zeros({1, 2, 4}), zeros({2, 2, 4})}); });
  expect_error<ShapeError>("LSTM", [&] { lstm.forward(x, {zeros({2, 2, 5}), zeros({2, 2, 5})}); });
  expect_error<ShapeError>("LSTM", [&] { lstm.forward(x, {zeros({2, 4}), zeros({2, 4})}); });
  expect_error<DTypeError>("LSTM", [&] {
    lstm.forward(x, {zeros({2, 2, 4}, kFloat64), zeros({2, 2, 4}, kFloat64)});
  });
  expect_error<ValueError>("LSTM", [&] { lstm.forward(x, {zeros({2, 2, 4}), Tensor()}); });
  expect_error<ValueError>("LSTM", [&] { lstm(randn({0, 2, 3})); });  // as torch: no empty sequence
  EXPECT_EQ(lstm(randn({4, 0, 3})).shape(), (Shape{4, 0, 4}));        // an empty batch is fine
  // Unbatched input takes unbatched states.
  expect_error<ShapeError>("LSTM", [&] {
    lstm.forward(randn({5, 3}), {zeros({2, 1, 4}), zeros({2, 1, 4})});
  });

  GRU gru({.input_size = 3, .hidden_size = 4, .batch_first = true});
  expect_error<ShapeError>("GRU", [&] { gru(randn({2, 5, 4})); });
  expect_error<ShapeError>("GRU", [&] { gru.forward(randn({2, 5, 3}), zeros({1, 5, 4})); });
  expect_error<DTypeError>("GRU", [&] { gru(randn({2, 5, 3}).to(kFloat64)); });

  LSTMCell cell({.input_size = 3, .hidden_size = 4});
  expect_error<ShapeError>("LSTMCell", [&] { cell(randn({2, 4})); });
  expect_error<ShapeError>("LSTMCell", [&] { cell(randn({1, 2, 3})); });
  expect_error<ShapeError>("LSTMCell", [&] {
    cell.forward(randn({2, 3}), {zeros({3, 4}), zeros({3, 4})});
  });
  expect_error<ShapeError>("LSTMCell", [&] {
    cell.forward(randn({2, 3}), {zeros({2, 5}), zeros({2, 5})});
  });
  expect_error<DTypeError>("LSTMCell", [&] { cell(randn({2, 3}).to(kFloat64)); });
  GRUCell gcell({.input_size = 3, .hidden_size = 4});
  expect_error<ShapeError>("GRUCell", [&] { gcell.forward(randn({3}), zeros({1, 4})); });
  expect_error<DTypeError>("GRUCell", [&] {
    gcell.forward(randn({2, 3}), zeros({2, 4}, kFloat64));
  });
}

TEST(LSTM, BadOptions) {
  expect_error<ValueError>("LSTM", [] { LSTM({.input_size = 3, .hidden_size = 0}); });
  expect_error<ValueError>("LSTM",
                           [] { LSTM({.input_size = 3, .hidden_size = 2, .num_layers = 0}); });
  expect_error<ValueError>("GRU", [] { GRU({.input_size = 3, .hidden_size = 2, .dropout = 1.5}); });
  expect_error<NotImplementedError>(
      "LSTM", [] { LSTM({.input_size = 3, .hidden_size = 4, .proj_size = 2}); });
  expect_error<ValueError>("GRU", [] { GRU({.input_size = 3, .hidden_size = 4, .proj_size = 2}); });
  expect_error<ValueError>("LSTMCell", [] { LSTMCell({.input_size = 3, .hidden_size = -1}); });
  expect_error<IndexError>("LSTM", [] { LSTM({.input_size = 3, .hidden_size = 4}).weights(1, 0); });
}

// The same network from plain ops in float64: a check of the fused path at sizes where the
// vector loops run their main body (H = 37), in both directions, batch-first, two layers.
struct Reference {
  Tensor output, h, c;
};

Reference lstm_by_ops(const LSTM& m, const Tensor& x_bf) {
  const int64_t H = m.options.hidden_size, T = x_bf.shape()[1];
  Tensor layer_in = x_bf.transpose(0, 1);  // [T, B, in]
  std::vector<Tensor> hs, cs;
  for (int64_t l = 0; l < m.options.num_layers; ++l) {
    std::vector<Tensor> dir_out;
    for (int64_t d = 0; d < 2; ++d) {
      const auto& w = m.weights(l, d);
      Tensor h = zeros({x_bf.shape()[0], H}, kFloat64), c = h;
      std::vector<Tensor> ys(static_cast<std::size_t>(T));
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 1 ? T - 1 - s : s;
        Tensor g =
            matmul(layer_in.select(0, t), w.w_ih.t()) + w.b_ih + matmul(h, w.w_hh.t()) + w.b_hh;
        Tensor i = g.narrow(1, 0, H).sigmoid(), f = g.narrow(1, H, H).sigmoid();
        Tensor gg = g.narrow(1, 2 * H, H).tanh(), o = g.narrow(1, 3 * H, H).sigmoid();
        c = f * c + i * gg;
        h = o * c.tanh();
        ys[static_cast<std::size_t>(t)] = h;
      }
      dir_out.push_back(stack(ys, 0));
      hs.push_back(h);
      cs.push_back(c);
    }
    layer_in = cat(dir_out, -1);
  }
  return {layer_in.transpose(0, 1), stack(hs, 0), stack(cs, 0)};
}

TEST(LSTM, MatchesPlainOpsAtWiderSizes) {
  manual_seed(7);
  LSTM m({.input_size = 6,
          .hidden_size = 37,
          .num_layers = 2,
          .batch_first = true,
          .bidirectional = true});
  LSTM m64({.input_size = 6,
            .hidden_size = 37,
            .num_layers = 2,
            .batch_first = true,
            .bidirectional = true,
            .dtype = kFloat64});
  m64.load_state_dict(m.state_dict());
  Tensor x = randn({5, 9, 6}).requires_grad_();
  Tensor x64 = x.detach().to(kFloat64).requires_grad_();
  auto [y, s] = m.forward(x, {});
  Reference r = lstm_by_ops(m64, x64);
  expect_close_f(y, r.output, 2e-5);
  expect_close_f(s.h, r.h, 2e-5);
  expect_close_f(s.c, r.c, 2e-5);
  Tensor gy = randn(y.shape()), gh = randn(s.h.shape());
  ((y * gy).sum() + (s.h * gh).sum() + s.c.sum()).backward();
  ((r.output * gy.to(kFloat64)).sum() + (r.h * gh.to(kFloat64)).sum() + r.c.sum()).backward();
  expect_close_f(x.grad(), x64.grad(), 1e-4);
  auto p64 = m64.named_parameters();
  auto p32 = m.named_parameters();
  for (std::size_t i = 0; i < p32.size(); ++i) {
    SCOPED_TRACE(p32[i].first);
    expect_close_f(p32[i].second.grad(), p64[i].second.grad(), 1e-4);
  }
}

TEST(LSTM, ResultsDoNotDependOnTheThreadCount) {
  manual_seed(3);
  LSTM lstm({.input_size = 16, .hidden_size = 64, .batch_first = true, .bidirectional = true});
  GRU gru({.input_size = 16, .hidden_size = 64});
  Tensor x = randn({40, 12, 16});     // batch >= 32: independent batch chunks (2 of 20 rows)
  Tensor small = randn({8, 12, 16});  // one chunk: each step's product runs on all threads
  auto run = [&](int threads) {
    const int prev = get_num_threads();
    set_num_threads(threads);
    lstm.zero_grad();
    gru.zero_grad();
    (lstm(x).pow(2).sum() + gru(x).pow(2).sum() + lstm(small).pow(2).sum() +
     gru(small).pow(2).sum())
        .backward();
    std::vector<std::vector<float>> out;
    for (const Tensor& p : lstm.parameters()) out.push_back(p.grad().to_vector<float>());
    for (const Tensor& p : gru.parameters()) out.push_back(p.grad().to_vector<float>());
    set_num_threads(prev);
    return out;
  };
  EXPECT_EQ(run(1), run(2));
}

TEST(LSTM, DoubleBackwardIsRefused) {
  LSTM lstm({.input_size = 2, .hidden_size = 3});
  Tensor x = randn({2, 1, 2}).requires_grad_();
  std::vector<Tensor> g = grad({lstm(x).sum()}, {x}, {}, {.retain_graph = true});
  EXPECT_EQ(g[0].shape(), x.shape());
  EXPECT_THROW(grad({lstm(x).sum()}, {x}, {}, {.create_graph = true}), NotImplementedError);
  GRUCell cell({.input_size = 2, .hidden_size = 3});
  Tensor xc = randn({1, 2}).requires_grad_();
  EXPECT_THROW(grad({cell(xc).sum()}, {xc}, {}, {.create_graph = true}), NotImplementedError);
}

TEST(GRU, ConvertsToFloat64) {
  manual_seed(4);
  GRU gru({.input_size = 3, .hidden_size = 4, .num_layers = 2});
  Tensor x = randn({3, 2, 3});
  Tensor y32 = gru(x);
  gru.to(kFloat64);
  Tensor y64 = gru(x.to(kFloat64));
  EXPECT_EQ(y64.dtype(), kFloat64);
  expect_close_f(y32, y64, 1e-5);
}

}  // namespace
}  // namespace ath::nn
