// Checks an athanor layer against a PyTorch golden case written by tools/golden/module_case.py:
// loads the case's state into the module (strict), runs it on the case's inputs, and compares
// outputs, input gradients, parameter gradients and updated buffers.
//
//   for (const GoldenCase& c : load_golden("layers_basic")) {
//     nn::Linear fc({.in = c.attrs["in"], .out = c.attrs["out"]});
//     check_module_golden(c, fc);                  // forward(in:0)
//   }
#pragma once

#include <functional>
#include <vector>

#include "athanor/nn/module.h"
#include "support/golden.h"

namespace ath::testing {

using ModuleRun = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

struct ModuleGoldenTolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

// With no `run`, calls module(in:0) and compares one output.
void check_module_golden(const GoldenCase& c, nn::Module& module, const ModuleRun& run = {},
                         ModuleGoldenTolerance tol = {});

}  // namespace ath::testing
