// DistributedDataParallel rebuilds its buckets after the first synchronised step in the order
// the gradients arrived: a model that uses its layers in reverse registration order gets a
// first bucket that is ready early in the backward instead of last, with the same gradients.
#include "ddp_test_util.h"

namespace ath::dist::testing {
namespace {

// Registers a, b, c but runs c, b, a: backward produces a's gradients first, c's last, the
// reverse of what registration order predicts (as a pre-norm layer's LayerNorm, registered last
// and used first).
struct Reversed : nn::Module {
  explicit Reversed(uint64_t seed) : Module("Reversed") {
    manual_seed(seed);
    for (const char* name : {"a", "b", "c"}) {
      layers.push_back(register_module(
          name, std::make_shared<nn::Linear>(nn::LinearOptions{.in = 8, .out = 8})));
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) h = (**it)(h).tanh();
    return h;
  }
  std::vector<std::shared_ptr<nn::Linear>> layers;
};

// Each layer (288 B) fills a bucket of its own.
DDPOptions one_layer_a_bucket(bool rebuild) {
  return {.bucket_cap_bytes = 64, .first_bucket_cap_bytes = 64, .rebuild_buckets = rebuild};
}

void train(DistributedDataParallel& ddp, nn::Module& model, int steps) {
  Communicator& comm = ddp.communicator();
  optim::SGD opt(model.parameters(), {.lr = 0.1});
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = step_data(step, 4 * comm.world_size());
    opt.zero_grad();
    Tensor out = ddp(rows_of(x, 4 * comm.rank(), 4));
    (out.narrow(1, 0, 4) - rows_of(y, 4 * comm.rank(), 4)).pow(2).mean().backward();
    ddp.finish_gradient_sync();
    opt.step();
  }
}

TEST(DDPRebuild, FirstBucketFollowsObservedOrder) {
  Reversed model(7);
  DistributedDataParallel ddp(model, one_layer_a_bucket(true));
  ASSERT_EQ(ddp.buckets().size(), 3u);
  EXPECT_EQ(ddp.buckets()[0].names, (std::vector<std::string>{"c.bias", "c.weight"}));
  train(ddp, model, 3);
  // Rebuilt after step 0: a's gradients arrive first, so a's bucket goes first.
  ASSERT_EQ(ddp.buckets().size(), 3u);
  EXPECT_EQ(ddp.buckets()[0].names, (std::vector<std::string>{"a.bias", "a.weight"}));
  EXPECT_EQ(ddp.buckets()[2].names, (std::vector<std::string>{"c.bias", "c.weight"}));

  const auto& steps = ddp.timeline().steps();
  ASSERT_EQ(steps.size(), 3u);
  // Step 0, registration order: bucket 0 (c) is ready last, when the backward is all but over.
  EXPECT_GE(steps[0].buckets[0].ready, steps[0].buckets[2].ready);
  // Then bucket 0 (a) is ready first, while b's and c's backward still has to run.
  for (std::size_t s = 1; s < steps.size(); ++s) {
    EXPECT_LT(steps[s].buckets[0].ready, steps[s].buckets[2].ready);
    EXPECT_LT(steps[s].buckets[0].start, steps[s].backward_end);
  }
}

TEST(DDPRebuild, SameGradientsAsWithoutRebuild) {
  Reversed rebuilt_model(7), static_model(7);
  DistributedDataParallel rebuilt(rebuilt_model, one_layer_a_bucket(true));
  DistributedDataParallel fixed(static_model, one_layer_a_bucket(false));
  train(rebuilt, rebuilt_model, 5);
  train(fixed, static_model, 5);
  EXPECT_EQ(fixed.buckets()[0].names, (std::vector<std::string>{"c.bias", "c.weight"}));
  EXPECT_EQ(rebuilt.buckets()[0].names, (std::vector<std::string>{"a.bias", "a.weight"}));
  // Bit for bit: each element's mean does not depend on where its bucket puts it.
  EXPECT_EQ(max_abs_param_diff(rebuilt_model, static_model), 0.0);
  for (const auto& [name, p] : rebuilt_model.named_parameters()) {
    expect_same_on_all_ranks(rebuilt.communicator(), p, name);
  }
}

TEST(DDPRebuild, UnusedParametersGoLast) {
  Mlp model(3, /*with_extra=*/true, /*with_never=*/true);
  model.use_extra = false;
  DistributedDataParallel ddp(model, {.bucket_cap_bytes = 1 << 20,
                                      .first_bucket_cap_bytes = 1 << 20,
                                      .find_unused_parameters = true});
  optim::SGD opt(model.parameters(), {.lr = 0.1});
  auto [x, y] = step_data(0, 4);
  ddp(x).sum().backward();
  ddp.finish_gradient_sync();
  ASSERT_EQ(ddp.buckets().size(), 1u);
  // Arrived: fc2, fc1; then the unused ones in reverse registration order.
  EXPECT_EQ(ddp.buckets()[0].names,
            (std::vector<std::string>{"fc2.bias", "fc2.weight", "fc1.bias", "fc1.weight",
                                      "never.bias", "never.weight", "extra.bias", "extra.weight"}));
}

}  // namespace
}  // namespace ath::dist::testing
