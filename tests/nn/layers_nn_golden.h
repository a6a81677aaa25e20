// The cases of tests/golden/layers_nn.json (tools/golden/layers_nn.py), loaded once, by name.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/golden.h"

namespace ath::testing {

inline const GoldenCase& layers_nn_case(const std::string& name) {
  static const std::vector<GoldenCase> cases = load_golden("layers_nn");
  for (const auto& c : cases) {
    if (c.name == name) return c;
  }
  throw KeyError("no golden case " + name + " in layers_nn.json");
}

// Runs f and expects an exception of type E whose message names `layer`.
template <class E, class F>
void expect_error_naming(F&& f, const std::string& layer) {
  try {
    f();
    ADD_FAILURE() << "expected an error naming " << layer;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(layer), std::string::npos) << e.what();
  }
}

}  // namespace ath::testing
