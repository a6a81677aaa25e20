// Shared by the callback tests: a Logger that records everything, a Regressor whose optimizer
// configuration a test supplies, and a scratch directory.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>

#include "train/trainer_fixtures.h"

namespace ath::train::testing {

class RecordingLogger : public Logger {
 public:
  std::string name() const override { return "recording"; }
  void log_hyperparams(const nlohmann::json&) override {}
  void log_metrics(const Metrics& m, int64_t step) override { metrics.push_back({step, m}); }
  void log_text(const std::string& key, const std::string& text) override { texts[key] = text; }
  // (step, value) of every call that logged `key`.
  std::vector<std::pair<int64_t, double>> series(const std::string& key) const {
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& [step, m] : metrics) {
      auto it = m.find(key);
      if (it != m.end()) out.emplace_back(step, it->second);
    }
    return out;
  }
  std::vector<std::pair<int64_t, Metrics>> metrics;
  std::map<std::string, std::string> texts;
};

// A Regressor whose configure_optimizers the test writes.
class ConfigurableRegressor : public Regressor {
 public:
  using Make = std::function<OptimizerConfig(ConfigurableRegressor&)>;
  explicit ConfigurableRegressor(Make make, bool dropout = false)
      : Regressor(0.05, dropout), make_(std::move(make)) {}
  OptimizerConfig configure_optimizers() override { return make_(*this); }

 private:
  Make make_;
};

struct ScratchDir {
  ScratchDir() {
    path = std::filesystem::temp_directory_path() /
           ("athanor_cb_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::filesystem::path path;
  static inline int counter = 0;
};

inline StateDict clone_state(const nn::Module& m) {
  StateDict out;
  for (const auto& [k, t] : m.state_dict()) out.insert(k, t.clone());
  return out;
}

}  // namespace ath::train::testing
