// The workloads of WORKLOADS.md as the athanor benchmarks run them (bench/e2e/athanor_e2e.cpp,
// bench/dist/athanor_ddp.cpp): data in RAM, the fixed batch orders of bench/e2e/data, models
// and optimizers, and the step as the Trainer's StepRunner takes it.
#pragma once

#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/io/idx.h"
#include "athanor/models/char_lstm.h"
#include "athanor/models/char_transformer.h"
#include "athanor/models/fashion.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/sgd.h"
#include "athanor/train/mixed_precision.h"

namespace ath::bench {

inline const std::string kData = ATH_E2E_DATA_DIR;  // bench/e2e/data: the batch-order files
inline const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

inline std::vector<int64_t> read_i32(const std::string& name) {
  std::ifstream f(kData + "/" + name, std::ios::binary);
  ATH_CHECK(f.good(), IOError, "cannot open {}/{}", kData, name);
  std::vector<int32_t> raw;
  int32_t v;
  while (f.read(reinterpret_cast<char*>(&v), sizeof v)) raw.push_back(v);
  return {raw.begin(), raw.end()};
}

// Images stay uint8 in RAM (a quarter of float32's bytes) and are normalized per batch, as an
// athanor user's DataLoader with a Normalize transform does; the model sees the same floats.
struct Fashion {
  Tensor images, y;  // [N, 1, 28, 28] uint8, [N] int64
};

inline Fashion load_fashion(const std::string& split) {
  Tensor images = read_idx(kFashion + split + "-images-idx3-ubyte.gz");
  Tensor labels = read_idx(kFashion + split + "-labels-idx1-ubyte.gz");
  return {images.unsqueeze(1), labels.to(kInt64)};
}

// uint8 -> float32 / 255 -> (x - 0.2860) / 0.3530, in place on the batch's one float copy.
inline Tensor normalize(const Tensor& images_u8) {
  Tensor x = images_u8.to(kFloat32);
  x.mul_(1.0 / (255.0 * 0.3530)).sub_(scalar_tensor(0.2860 / 0.3530));
  return x;
}

inline Tensor corpus() {
  const char* names[] = {"Apache-2.0", "Artistic", "BSD",     "CC0-1.0", "GFDL-1.2",
                         "GFDL-1.3",   "GPL-1",    "GPL-2",   "GPL-3",   "LGPL-2",
                         "LGPL-2.1",   "LGPL-3",   "MPL-1.1", "MPL-2.0"};
  std::vector<int64_t> bytes;
  for (const char* n : names) {
    std::ifstream f(std::string("/usr/share/common-licenses/") + n, std::ios::binary);
    ATH_CHECK(f.good(), IOError, "cannot open /usr/share/common-licenses/{}", n);
    for (char c; f.get(c);) bytes.push_back(static_cast<unsigned char>(c));
  }
  ATH_CHECK(bytes.size() == 237320, ValueError, "corpus has {} bytes, expected 237320",
            bytes.size());
  return from_vector(bytes);
}

struct Workload {
  std::function<std::shared_ptr<nn::Module>()> make_model;
  std::function<std::unique_ptr<optim::Optimizer>(nn::Module&)> make_optimizer;
  std::vector<Tensor> batches;                                  // index tensors / window starts
  std::function<std::pair<Tensor, Tensor>(const Tensor&)> get;  // batch -> (x, y)
  std::optional<Fashion> test;
};

inline Workload make_workload(const std::string& name) {
  Workload w;
  if (name == "W1" || name == "W2") {
    auto train = std::make_shared<Fashion>(load_fashion("train"));
    w.test = load_fashion("t10k");
    const int64_t bs = name == "W1" ? 128 : 64;
    std::vector<int64_t> perm = read_i32("fmnist_train_perm_seed0.i32");
    Tensor p = from_vector(perm);
    for (int64_t i = 0; i < p.numel(); i += bs) {
      w.batches.push_back(p.slice(0, i, std::min<int64_t>(i + bs, p.numel())).contiguous());
    }
    w.get = [train](const Tensor& idx) {
      return std::pair{normalize(index_select(train->images, 0, idx)),
                       index_select(train->y, 0, idx)};
    };
    if (name == "W1") {
      w.make_model = [] { return models::fashion_mlp(); };
      w.make_optimizer = [](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
        return std::make_unique<optim::SGD>(m.parameters(),
                                            optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
      };
    } else {
      w.make_model = [] { return models::fashion_cnn(); };
      w.make_optimizer = [](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
        return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions{.lr = 1e-3});
      };
    }
    return w;
  }
  Tensor text = corpus();
  const bool lstm = name == "W3";
  const int64_t seq = lstm ? 64 : 128, batch = lstm ? 32 : 16;
  std::vector<int64_t> starts =
      read_i32(lstm ? "lm_W3_lstm_starts_seq64_b32_s200_seed0.i32"
                    : "lm_W4_transformer_starts_seq128_b16_s200_seed0.i32");
  Tensor s = from_vector(starts).view({-1, batch});
  for (int64_t i = 0; i < s.size(0); ++i) w.batches.push_back(s[i].contiguous());
  Tensor offsets = arange(0, seq + 1);
  w.get = [text, offsets](const Tensor& st) {
    Tensor idx = st.unsqueeze(1) + offsets.unsqueeze(0);  // [B, seq + 1]
    Tensor win = index_select(text, 0, idx.flatten()).view(idx.shape());
    return std::pair{win.slice(1, 0, -1), win.slice(1, 1)};
  };
  if (lstm) {
    w.make_model = [] { return std::make_shared<models::CharLstm>(); };
    w.make_optimizer = [](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
      return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions{.lr = 2e-3});
    };
  } else {
    w.make_model = [] { return std::make_shared<models::CharTransformer>(); };
    w.make_optimizer = [](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
      return std::make_unique<optim::AdamW>(m.parameters(),
                                            optim::AdamWOptions{.lr = 1e-3, .weight_decay = 0.01});
    };
  }
  return w;
}

// The batch as the precision plugin hands it to a step (bf16-true converts floating inputs).
inline Tensor convert_input(train::PrecisionPlugin& precision, const Tensor& x) {
  std::optional<data::Batch> b = precision.convert_input(data::Batch(data::TensorList{x}, 1));
  return b ? (*b)[0] : x;
}

// One step as the Trainer's StepRunner takes it: forward under the plugin (autocast), backward
// from the scaled loss, the plugin's optimizer step (unscale, skip non-finite, update).
inline Tensor train_step(nn::Module& model, optim::Optimizer& opt,
                         train::PrecisionPlugin& precision, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  Tensor loss = precision.forward([&] {
    Tensor out = model(convert_input(precision, x));
    return cross_entropy(out.reshape({-1, out.size(-1)}), y.reshape({-1}));
  });
  precision.scale_loss(loss).backward();
  precision.optimizer_step(opt, [] {});
  return loss;
}

}  // namespace ath::bench
