// The main job until the Trainer exists: a two-layer MLP learns to classify points drawn from
// four Gaussian blobs, with nothing but tensors, autograd and a hand-written SGD step.
//
//   scripts/run-main.sh            # or: ./build/examples/train_synthetic [steps]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>

#include <chrono>
#include <cstdio>
#include <string>

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

namespace {

constexpr int64_t kClasses = 4, kFeatures = 16, kHidden = 64, kBatch = 256;

// Blob c is centred at `centres[c]`; labels are the blob index.
std::pair<Tensor, Tensor> sample_batch(const Tensor& centres, Generator& gen) {
  Tensor labels = randint(0, kClasses, {kBatch}, {.dtype = kInt64, .generator = &gen});
  Tensor noise = randn({kBatch, kFeatures}, {.generator = &gen});
  Tensor x = index_select(centres, 0, labels) + noise * 1.5;
  return {x, labels};
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 300;
  set_num_threads(2);
  manual_seed(0);
  Generator data_gen(1234);
  Tensor centres = randn({kClasses, kFeatures}, {.generator = &data_gen}) * 2.0;

  // Kaiming-uniform-like initialisation, as torch.nn.Linear does.
  auto init = [](Shape shape, int64_t fan_in) {
    double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return ((rand(shape) * 2.0 - 1.0) * bound).requires_grad_();
  };
  Tensor w1 = init({kHidden, kFeatures}, kFeatures), b1 = init({kHidden}, kFeatures);
  Tensor w2 = init({kClasses, kHidden}, kHidden), b2 = init({kClasses}, kHidden);
  std::vector<Tensor> params{w1, b1, w2, b2};
  std::vector<Tensor> velocity;
  for (const Tensor& p : params) velocity.push_back(zeros_like(p));

  const double lr = 0.05, momentum = 0.9;
  auto start = std::chrono::steady_clock::now();
  double running = 0;
  for (int step = 1; step <= steps; ++step) {
    auto [x, y] = sample_batch(centres, data_gen);
    Tensor logits = linear(relu(linear(x, w1, b1)), w2, b2);
    Tensor loss = cross_entropy(logits, y);  // ath::cross_entropy: one fused op
    for (Tensor& p : params) p.set_grad({});
    loss.backward();
    {
      NoGradGuard no_grad;  // SGD with momentum: v = m v + g; p -= lr v
      for (std::size_t i = 0; i < params.size(); ++i) {
        velocity[i].mul_(momentum).add_(params[i].grad());
        params[i].sub_(velocity[i], lr);
      }
    }
    running = step == 1 ? loss.item<double>() : 0.9 * running + 0.1 * loss.item<double>();
    if (step == 1 || step % 25 == 0) std::printf("step %4d  loss %.4f\n", step, running);
  }

  // Accuracy on a fresh batch.
  NoGradGuard no_grad;
  auto [x, y] = sample_batch(centres, data_gen);
  Tensor pred = argmax(linear(relu(linear(x, w1, b1)), w2, b2), 1);
  double acc = eq(pred, y).to(kFloat32).mean().item<double>();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("trained %d steps in %.2f s; held-out accuracy %.3f\n", steps, secs, acc);
  return acc > 0.8 ? 0 : 1;  // the blobs are separable: a working autograd gets well above this
}
