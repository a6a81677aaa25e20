// nn::summarize: Lightning's ModelSummary table. The expected strings are what pytorch-lightning
// 2.6.6's ModelSummary prints for the same models (the CNN's row names without the `net.` of the
// LightningModule wrapping it), FLOPs included; parameter counts, depth, and that summarizing
// leaves no trace: modes, buffers and the random generator are as before, also when forward
// throws.
#include <gtest/gtest.h>

#include <map>

#include "athanor/athanor.h"
#include "athanor/nn/multihead_attention.h"
#include "athanor/nn/nn.h"
#include "layers_nn_golden.h"

namespace ath::nn {
namespace {

// The CNN of the MNIST example: 421,642 parameters (golden "w2_cnn", counted by PyTorch).
std::shared_ptr<Sequential> w2_cnn() {
  auto net = std::make_shared<Sequential>();
  net->emplace_back<Conv2d>(Conv2dOptions{.in = 1, .out = 32, .kernel = 3, .padding = 1});
  net->emplace_back<ReLU>();
  net->emplace_back<MaxPool2d>(MaxPool2dOptions{.kernel = 2});
  net->emplace_back<Conv2d>(Conv2dOptions{.in = 32, .out = 64, .kernel = 3, .padding = 1});
  net->emplace_back<ReLU>();
  net->emplace_back<MaxPool2d>(MaxPool2dOptions{.kernel = 2});
  net->emplace_back<Flatten>();
  net->emplace_back<Linear>(LinearOptions{.in = 3136, .out = 128});
  net->emplace_back<ReLU>();
  net->emplace_back<Linear>(LinearOptions{.in = 128, .out = 10});
  return net;
}

TEST(Summary, CnnTableLikeLightning) {
  auto net = w2_cnn();
  const auto& golden = testing::layers_nn_case("w2_cnn");
  EXPECT_EQ(net->to_string(), golden.attrs["repr"].get<std::string>());
  ModelSummary s = summarize(*net, zeros({2, 1, 28, 28}));
  EXPECT_EQ(s.total_params, golden.attrs["params"].get<int64_t>());
  EXPECT_EQ(s.total_params, 421642);
  EXPECT_EQ(s.trainable_params, 421642);
  ASSERT_EQ(s.rows.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(s.rows[i].params, golden.attrs["layer_params"][i].get<int64_t>()) << i;
  }
  EXPECT_EQ(*s.rows[6].out_shape, Shape({2, 3136}));
  EXPECT_EQ(
      s.to_string(),
      "  | Name | Type      | Params | Mode  | FLOPs  | In sizes        | Out sizes      \n"
      "----------------------------------------------------------------------------------------\n"
      "0 | 0    | Conv2d    | 320    | train | 903 K  | [2, 1, 28, 28]  | [2, 32, 28, 28]\n"
      "1 | 1    | ReLU      | 0      | train | 0      | [2, 32, 28, 28] | [2, 32, 28, 28]\n"
      "2 | 2    | MaxPool2d | 0      | train | 0      | [2, 32, 28, 28] | [2, 32, 14, 14]\n"
      "3 | 3    | Conv2d    | 18.5 K | train | 14.5 M | [2, 32, 14, 14] | [2, 64, 14, 14]\n"
      "4 | 4    | ReLU      | 0      | train | 0      | [2, 64, 14, 14] | [2, 64, 14, 14]\n"
      "5 | 5    | MaxPool2d | 0      | train | 0      | [2, 64, 14, 14] | [2, 64, 7, 7]  \n"
      "6 | 6    | Flatten   | 0      | train | 0      | [2, 64, 7, 7]   | [2, 3136]      \n"
      "7 | 7    | Linear    | 401 K  | train | 1.6 M  | [2, 3136]       | [2, 128]       \n"
      "8 | 8    | ReLU      | 0      | train | 0      | [2, 128]        | [2, 128]       \n"
      "9 | 9    | Linear    | 1.3 K  | train | 5.1 K  | [2, 128]        | [2, 10]        \n"
      "----------------------------------------------------------------------------------------\n"
      "421 K     Trainable params\n"
      "0         Non-trainable params\n"
      "421 K     Total params\n"
      "1.687     Total estimated model params size (MB)\n"
      "10        Modules in train mode\n"
      "0         Modules in eval mode\n"
      "17.0 M    Total Flops");
}

// Own parameters, a frozen weight, a submodule in eval mode and one never called.
struct Net : Module {
  Tensor scale;
  Sequential body;
  Linear head{{.in = 3, .out = 2}};
  ReLU unused;
  Net() : Module("Net") {
    scale = register_parameter("scale", ones({3}));
    body.emplace_back<Linear>(LinearOptions{.in = 4, .out = 3});
    body.emplace_back<BatchNorm1d>(BatchNormOptions{.features = 3});
    register_module("body", body);
    register_module("head", head);
    register_module("unused", unused);
    head.weight.requires_grad_(false);
    body[1].eval();
  }
  Tensor forward(const Tensor& x) override { return head(body(x) * scale); }
};

TEST(Summary, DepthsFrozenParamsAndOtherParams) {
  Net net;
  ModelSummary top = summarize(net);
  EXPECT_FALSE(top.has_shapes);
  EXPECT_EQ(top.non_trainable_params(), 6);
  EXPECT_EQ(top.to_string(),
            "  | Name         | Type       | Params | Mode  | FLOPs\n"
            "------------------------------------------------------------\n"
            "0 | body         | Sequential | 21     | train | 0    \n"
            "1 | head         | Linear     | 8      | train | 0    \n"
            "2 | unused       | ReLU       | 0      | train | 0    \n"
            "  | other params | n/a        | 3      | n/a   | n/a  \n"
            "------------------------------------------------------------\n"
            "26        Trainable params\n"
            "6         Non-trainable params\n"
            "32        Total params\n"
            "0.000     Total estimated model params size (MB)\n"
            "4         Modules in train mode\n"
            "1         Modules in eval mode\n"
            "0         Total Flops");
  // Every depth, with shapes: a batch of one is fine (the pass runs in eval mode).
  ModelSummary all = summarize(net, zeros({1, 4}), -1);
  EXPECT_EQ(all.rows[3].trainable, 2);
  EXPECT_EQ(all.to_string(),
            "  | Name   | Type        | Params | Mode  | FLOPs | In sizes | Out sizes\n"
            "------------------------------------------------------------------------------\n"
            "0 | body   | Sequential  | 21     | train | 24    | [1, 4]   | [1, 3]   \n"
            "1 | body.0 | Linear      | 15     | train | 24    | [1, 4]   | [1, 3]   \n"
            "2 | body.1 | BatchNorm1d | 6      | eval  | 0     | [1, 3]   | [1, 3]   \n"
            "3 | head   | Linear      | 8      | train | 12    | [1, 3]   | [1, 2]   \n"
            "4 | unused | ReLU        | 0      | train | 0     | ?        | ?        \n"
            "------------------------------------------------------------------------------\n"
            "26        Trainable params\n"
            "6         Non-trainable params\n"
            "32        Total params\n"
            "0.000     Total estimated model params size (MB)\n"
            "4         Modules in train mode\n"
            "1         Modules in eval mode\n"
            "36        Total Flops");
  EXPECT_EQ(summarize(net, 2).rows.size(), 5u);
  EXPECT_EQ(summarize(net, 0).to_string(),
            "  | Name         | Type | Params | Mode | FLOPs\n"
            "-----------------------------------------------------\n"
            "  | other params | n/a  | 32     | n/a  | n/a  \n"
            "-----------------------------------------------------\n"
            "26        Trainable params\n"
            "6         Non-trainable params\n"
            "32        Total params\n"
            "0.000     Total estimated model params size (MB)\n"
            "4         Modules in train mode\n"
            "1         Modules in eval mode\n"
            "0         Total Flops");
  EXPECT_THROW(summarize(net, -2), ValueError);
}

// FLOPs of the other layers with matrix products. The values are torch.utils.flop_counter's
// (through Lightning's summary) for the same layers and inputs, except LSTM and Bilinear, which
// it counts as 0 on the CPU: their values are the products' multiply-adds counted by hand.
struct Zoo : Module {
  LSTM lstm{{.input_size = 8, .hidden_size = 16, .num_layers = 2, .bidirectional = true}};
  GRUCell gru{{.input_size = 4, .hidden_size = 6}};
  MultiheadAttention mha{{.embed_dim = 12, .num_heads = 3}};
  MultiheadAttention mha_bf{{.embed_dim = 12, .num_heads = 3, .batch_first = true}};
  MultiheadAttention mha_unbatched{{.embed_dim = 12, .num_heads = 3}};
  ConvTranspose2d tconv{{.in = 3, .out = 5, .kernel = 3, .stride = 2}};
  Conv1d c1{{.in = 4, .out = 6, .kernel = 3, .groups = 2}};
  Bilinear bil{{.in1 = 3, .in2 = 4, .out = 5}};
  Zoo() : Module("Zoo") {
    register_module("lstm", lstm);
    register_module("gru", gru);
    register_module("mha", mha);
    register_module("mha_bf", mha_bf);
    register_module("mha_unbatched", mha_unbatched);
    register_module("tconv", tconv);
    register_module("c1", c1);
    register_module("bil", bil);
  }
  Tensor forward(const Tensor& x) override {
    lstm(zeros({7, 2, 8}));
    gru(zeros({3, 4}));
    mha(zeros({5, 2, 12}), zeros({5, 2, 12}), zeros({5, 2, 12}));
    mha_bf(zeros({2, 5, 12}));
    mha_unbatched(zeros({5, 12}));
    tconv(zeros({2, 3, 4, 4}));
    c1(zeros({2, 4, 10}));
    bil(zeros({2, 3}), zeros({2, 4}));
    return x;
  }
};

TEST(Summary, FlopsOfEveryLayerWithMatrixProducts) {
  Zoo zoo;
  ModelSummary s = summarize(zoo, zeros({1}), 2);
  std::map<std::string, int64_t> flops;
  for (const LayerSummary& r : s.rows) flops[r.name] = r.flops;
  // 14 tokens through 2 layers x 2 directions: 2 * 14 * (64*8 + 64*16 + 64*32 + 64*16) * 2.
  EXPECT_EQ(flops["lstm"], 2 * 14 * (512 + 1024 + 2048 + 1024) * 2);
  EXPECT_EQ(flops["gru"], 1080);
  EXPECT_EQ(flops["mha"], 13920);  // projections, Q K^T, A V and out_proj: torch's 13.9 K
  EXPECT_EQ(flops["mha.out_proj"], 2880);
  EXPECT_EQ(flops["mha_bf"], 13920);        // the same attention, batch first
  EXPECT_EQ(flops["mha_unbatched"], 6960);  // half the tokens: 4320 + 1200 + 1440
  EXPECT_EQ(flops["tconv"], 8640);
  EXPECT_EQ(flops["c1"], 1152);
  EXPECT_EQ(flops["bil"], 2 * 10 * 3 * 4);
  EXPECT_EQ(s.total_flops, flops["lstm"] + 1080 + 13920 * 2 + 6960 + 8640 + 1152 + 240);
  // Without an example input nothing runs: zeros, as Lightning prints them.
  EXPECT_EQ(summarize(zoo, 2).total_flops, 0);
}

TEST(Summary, HumanReadableCounts) {
  EXPECT_EQ(human_readable_count(0), "0  ");
  EXPECT_EQ(human_readable_count(123), "123  ");
  EXPECT_EQ(human_readable_count(1234), "1.2 K");
  EXPECT_EQ(human_readable_count(99999), "100.0 K");  // Lightning's rounding, kept
  EXPECT_EQ(human_readable_count(421642), "421 K");
  EXPECT_EQ(human_readable_count(2000000), "2.0 M");
  EXPECT_EQ(human_readable_count(3000000000), "3.0 B");
  EXPECT_EQ(human_readable_count(400000000000000), "400 T");
  EXPECT_EQ(human_readable_count(5000000000000000), "5,000 T");
  EXPECT_THROW(human_readable_count(-1), ValueError);
}

// A module with state that even an eval forward changes: a call counter buffer, a random draw,
// and a flag flip. The summary must put all of it back.
struct Stateful : Module {
  Tensor calls;
  bool fail = false;
  Stateful() : Module("Stateful") { calls = register_buffer("calls", zeros({1})); }
  Tensor forward(const Tensor& x) override {
    {
      NoGradGuard no_grad;
      calls.add_(ones({1}));
    }
    Tensor noise = randn(x.shape());
    training_ = !training_;
    ATH_CHECK(!fail, ValueError, "Stateful: asked to fail");
    return x + noise * 0.0;
  }
};

struct Model : Module {
  Sequential body;
  Stateful state;
  Model() : Module("Model") {
    body.emplace_back<Linear>(LinearOptions{.in = 4, .out = 3});
    body.emplace_back<BatchNorm1d>(BatchNormOptions{.features = 3});
    body.emplace_back<Dropout>(DropoutOptions{.p = 0.5});
    register_module("body", body);
    register_module("state", state);
  }
  Tensor forward(const Tensor& x) override { return state(body(x)); }
};

TEST(Summary, LeavesModesBuffersAndRandomStateAlone) {
  manual_seed(7);
  Model m;
  m.body(randn({8, 4}));  // a training step: non-trivial running stats
  m.body[2].eval();       // a mixed-mode model
  Tensor x = randn({2, 4});
  StateDict before;
  for (auto& [k, t] : m.state_dict()) before.insert(k, t.clone());
  std::vector<bool> modes;
  for (Module* mod : m.modules()) modes.push_back(mod->is_training());
  const uint64_t offset = default_generator().offset();
  auto expect_untouched = [&] {
    std::vector<bool> now;
    for (Module* mod : m.modules()) now.push_back(mod->is_training());
    EXPECT_EQ(now, modes);
    for (auto& [k, t] : m.state_dict()) {
      EXPECT_EQ(t.to_vector<double>(), before.at(k).to_vector<double>()) << k;
    }
    EXPECT_EQ(default_generator().offset(), offset);
  };

  ModelSummary s = summarize(m, x, -1);
  ASSERT_EQ(s.rows.size(), 5u);  // body, body.0, body.1, body.2, state
  EXPECT_EQ(*s.rows[4].out_shape, Shape({2, 3}));
  expect_untouched();

  // A forward that throws: the error comes through and everything is restored, hooks included
  // (a later forward must not write into the dead summary's rows).
  m.state.fail = true;
  EXPECT_THROW(summarize(m, x, -1), ValueError);
  expect_untouched();
  m.state.fail = false;
  m(x);
  EXPECT_EQ(m.state.calls.item<float>(), 1.0f);
}

}  // namespace
}  // namespace ath::nn
