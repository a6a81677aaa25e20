#include "support/module_golden.h"

#include <gtest/gtest.h>

#include <string>

namespace ath::testing {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

void check_module_golden(const GoldenCase& c, nn::Module& module, const ModuleRun& run,
                         ModuleGoldenTolerance tol) {
  SCOPED_TRACE("golden case " + c.name);
  StateDict state;
  for (const auto& [key, t] : c.tensors) {
    if (starts_with(key, "state:")) state.insert(key.substr(6), t);
  }
  module.load_state_dict(state);
  module.zero_grad();

  std::vector<Tensor> inputs;
  for (int i = 0; c.tensors.contains("in:" + std::to_string(i)); ++i) {
    Tensor x = c.t("in:" + std::to_string(i)).clone();
    if (c.tensors.contains("grad_in:" + std::to_string(i))) x.requires_grad_();
    inputs.push_back(x);
  }
  std::vector<Tensor> outputs = run ? run(inputs) : std::vector<Tensor>{module(inputs.at(0))};

  Tensor loss;
  int n_out = 0;
  for (; c.tensors.contains("out:" + std::to_string(n_out)); ++n_out) {
    const std::string i = std::to_string(n_out);
    ASSERT_LT(static_cast<std::size_t>(n_out), outputs.size()) << "fewer outputs than golden";
    expect_close(outputs[n_out], c.t("out:" + i), tol.rtol, tol.atol, "out:" + i);
    if (!outputs[n_out].requires_grad()) continue;
    Tensor term = (outputs[n_out] * c.t("gout:" + i)).sum();
    loss = loss.defined() ? loss + term : term;
  }
  EXPECT_EQ(static_cast<std::size_t>(n_out), outputs.size()) << "more outputs than golden";
  if (loss.defined()) loss.backward();

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string key = "grad_in:" + std::to_string(i);
    if (!c.tensors.contains(key)) continue;
    ASSERT_TRUE(inputs[i].grad().defined()) << key << " missing";
    expect_close(inputs[i].grad(), c.t(key), tol.rtol, tol.atol, key);
  }
  for (const auto& [name, p] : module.named_parameters()) {
    const std::string key = "grad:" + name;
    if (!c.tensors.contains(key)) continue;
    ASSERT_TRUE(p.grad().defined()) << key << " missing";
    expect_close(p.grad(), c.t(key), tol.rtol, tol.atol, key);
  }
  StateDict after = module.state_dict();
  for (const auto& [key, t] : c.tensors) {
    if (starts_with(key, "state_after:")) {
      expect_close(after.at(key.substr(12)), t, tol.rtol, tol.atol, key);
    }
  }
}

}  // namespace ath::testing
