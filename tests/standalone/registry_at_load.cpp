// Every op is in the registry as soon as the library has loaded, whatever runs first: all_ops()
// (what a graph executor or the op table walks) must not depend on call order. A process of its
// own, since the test binary's other files call ops while it starts.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/linear.h"
#include "athanor/ops/losses.h"

namespace {
std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (const ath::OpDef* op : ath::all_ops()) names.emplace_back(op->name);
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

int main() {
  using namespace ath;
  const std::vector<std::string> at_load = registered_names();
  // A workload that reaches views, shaping, convolution, linear layers, losses and backward.
  nn::Conv2d conv({.in = 1, .out = 2, .kernel = 3, .padding = 1});
  nn::Linear fc({.in = 8, .out = 3});
  Tensor x = randn({2, 1, 4, 4}).requires_grad_();
  Tensor h = max_pool2d(relu(conv(x)), {.kernel = 2}).permute({0, 2, 3, 1});
  Tensor y = fc(h.reshape({2, -1}).slice(1, 0, 8).contiguous());
  Tensor loss = cross_entropy(y, from_vector<int64_t>({0, 2}, {2})) + x.select(0, 1).sum() +
                y.expand({2, 2, 3}).mean() + as_strided(y, {3}, {1}, 0).sum();
  loss.backward();
  int late = 0;
  for (const std::string& name : registered_names()) {
    if (!std::binary_search(at_load.begin(), at_load.end(), name)) {
      std::fprintf(stderr, "op '%s' entered the registry on first call, not at load\n",
                   name.c_str());
      ++late;
    }
  }
  std::printf("%zu ops registered at load; %d registered later\n", at_load.size(), late);
  return late == 0 ? 0 : 1;
}
