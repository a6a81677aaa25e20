// W2 of WORKLOADS.md as a plain training loop: a small CNN on Fashion-MNIST, Adam, one epoch,
// then test accuracy (about 0.88-0.89). The Trainer (athanor fit) runs the same model for you.
//
//   ./build/examples/fashion_cnn [max_steps]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/models/fashion.h>
#include <athanor/ops/losses.h>
#include <athanor/optim/adam.h>

#include <cstdio>
#include <string>

#include "fashion_data.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

int main(int argc, char** argv) {
  const int64_t max_steps = argc > 1 ? std::stoll(argv[1]) : -1;
  set_num_threads(2);
  manual_seed(0);
  FashionSplit train = load_fashion("train"), test = load_fashion("t10k");

  auto model = models::fashion_cnn();
  optim::Adam opt(model->parameters(), {.lr = 1e-3});
  const int64_t batch = 64, n = train.labels.size(0);
  Tensor order = randperm(n);

  for (int64_t step = 0, i = 0; i < n && step != max_steps; ++step, i += batch) {
    Tensor idx = order.slice(0, i, std::min(i + batch, n));
    Tensor x = index_select(train.images, 0, idx), y = index_select(train.labels, 0, idx);
    opt.zero_grad();
    Tensor loss = cross_entropy((*model)(x), y);
    loss.backward();
    opt.step();
    if (step % 100 == 0)
      std::printf("step %4lld  loss %.4f\n", static_cast<long long>(step), loss.item<float>());
  }
  std::printf("test_acc=%.4f\n", accuracy(*model, test));
}
