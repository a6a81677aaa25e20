// Test fixtures for the Trainer: a BatchSource over in-memory batches (shuffled per epoch from a
// seed, resumable) and a small regression module, so Trainer tests need neither the data layer
// nor files.
#pragma once

#include <athanor/athanor.h>
#include <athanor/nn/linear.h>
#include <athanor/ops/losses.h>
#include <athanor/optim/sgd.h>
#include <athanor/train/trainer.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace ath::train::testing {

// Batches fixed at construction; shuffled per epoch (std::mt19937_64 seeded by seed + epoch)
// when `shuffle`, so epochs differ but runs repeat.
class VectorSource : public data::BatchSource {
 public:
  VectorSource(std::vector<data::Batch> batches, bool shuffle = false, uint64_t seed = 0)
      : batches_(std::move(batches)), shuffle_(shuffle), seed_(seed) {}

  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }
  void start_epoch(int64_t epoch) override {
    order_.resize(batches_.size());
    std::iota(order_.begin(), order_.end(), 0);
    if (shuffle_) {
      std::mt19937_64 rng(seed_ + static_cast<uint64_t>(epoch));
      std::shuffle(order_.begin(), order_.end(), rng);
    }
    next_ = (loaded_epoch_ == epoch) ? loaded_next_ : 0;
    loaded_epoch_ = -1;
    epoch_ = epoch;
  }
  std::optional<data::Batch> next() override {
    if (next_ >= static_cast<int64_t>(order_.size())) return std::nullopt;
    ++yielded_;
    return batches_[order_[next_++]];
  }
  nlohmann::json state_dict() const override { return {{"epoch", epoch_}, {"next", next_}}; }
  void load_state_dict(const nlohmann::json& s) override {
    loaded_epoch_ = s.at("epoch").get<int64_t>();
    loaded_next_ = s.at("next").get<int64_t>();
  }
  int64_t yielded() const { return yielded_; }

 private:
  std::vector<data::Batch> batches_;
  bool shuffle_;
  uint64_t seed_;
  std::vector<size_t> order_;
  int64_t next_ = 0, epoch_ = 0, loaded_epoch_ = -1, loaded_next_ = 0, yielded_ = 0;
};

// n batches of (x [b, 4], y [b, 1]) with y = x . w + noise, generated from `seed`.
inline std::vector<data::Batch> regression_batches(int n, int64_t b = 8, uint64_t seed = 1) {
  Generator g(seed);
  std::vector<data::Batch> out;
  Tensor w = from_vector<float>({0.5f, -1.0f, 2.0f, 0.25f}, {4, 1});
  for (int i = 0; i < n; ++i) {
    Tensor x = randn({b, 4}, {.generator = &g});
    Tensor y = matmul(x, w) + 0.1 * randn({b, 1}, {.generator = &g});
    out.emplace_back(data::TensorList{x, y}, b);
  }
  return out;
}

inline std::shared_ptr<VectorSource> regression_source(int n, bool shuffle = false,
                                                       uint64_t seed = 1) {
  return std::make_shared<VectorSource>(regression_batches(n, 8, seed), shuffle, seed);
}

// Linear regression trained with SGD + momentum; logs train_loss (step) and val_loss (epoch).
class Regressor : public TrainingModule {
 public:
  explicit Regressor(double lr = 0.05, bool dropout = false)
      : TrainingModule("Regressor"), lr_(lr), dropout_(dropout) {
    register_module("fc", fc);
    save_hyperparameters({{"lr", lr}});
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = fc(x);
    return dropout_ && is_training() ? dropout(h, 0.1, true) : h;
  }
  Tensor training_step(const data::Batch& batch, int64_t) override {
    Tensor loss = mse_loss(forward(batch[0]), batch[1]);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  void validation_step(const data::Batch& batch, int64_t) override {
    log("val_loss", mse_loss(forward(batch[0]), batch[1]));
  }
  void test_step(const data::Batch& batch, int64_t) override {
    log("test_loss", mse_loss(forward(batch[0]), batch[1]));
  }
  OptimizerConfig configure_optimizers() override {
    return {
        std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = lr_, .momentum = 0.9})};
  }
  nn::Linear fc{nn::LinearOptions{.in = 4, .out = 1}};

 private:
  double lr_;
  bool dropout_;
};

// Options with every default side effect (files, console) off.
inline TrainerOptions quiet_options() {
  TrainerOptions o;
  o.enable_checkpointing = false;
  o.enable_model_summary = false;
  o.enable_progress_bar = false;
  o.logger = false;
  return o;
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max(abs(a - b)).item<double>();
}

inline bool bitwise_equal(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, t] : a) {
    if (!b.contains(k)) return false;
    Tensor u = t.contiguous(), v = b.at(k).contiguous();
    if (u.shape() != v.shape() || u.dtype() != v.dtype()) return false;
    if (std::memcmp(u.data_ptr(), v.data_ptr(), u.nbytes()) != 0) return false;
  }
  return true;
}

}  // namespace ath::train::testing
