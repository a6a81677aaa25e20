// Trainer overhead: one W1 epoch (WORKLOADS.md: MLP on Fashion-MNIST, batch 128, SGD 0.1 /
// momentum 0.9, the committed batch order) as the plain loop of bench/e2e and through the
// Trainer with its defaults on (progress bar, CSV + HTML loggers, model summary, a checkpoint at
// the epoch end), interleaved, same batches, same initial weights. Prints each repeat and the
// ratio of medians (Trainer / plain; issue 4's budget is <= 1.03).
//
//   build-bench/bench/trainer_overhead [--repeats 5] [--threads 2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/core/thread_policy.h"
#include "athanor/io/idx.h"
#include "athanor/models/fashion.h"
#include "athanor/ops/losses.h"
#include "athanor/optim/sgd.h"
#include "athanor/train/trainer.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

namespace {

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

// The W1 batches: the committed permutation, 128 at a time, gathered from uint8 images and
// normalized per batch (as bench/e2e's plain loop does).
class FashionBatches : public data::BatchSource {
 public:
  FashionBatches() {
    images_ = read_idx(kFashion + "train-images-idx3-ubyte.gz").unsqueeze(1);
    labels_ = read_idx(kFashion + "train-labels-idx1-ubyte.gz").to(kInt64);
    std::ifstream f(std::string(ATH_E2E_DATA_DIR) + "/fmnist_train_perm_seed0.i32",
                    std::ios::binary);
    ATH_CHECK(f.good(), IOError, "trainer_overhead: cannot open the batch-order file");
    std::vector<int64_t> perm;
    for (int32_t v; f.read(reinterpret_cast<char*>(&v), sizeof v);) perm.push_back(v);
    Tensor p = from_vector(perm);
    for (int64_t i = 0; i < p.numel(); i += 128) {
      batches_.push_back(p.slice(0, i, std::min<int64_t>(i + 128, p.numel())).contiguous());
    }
  }
  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }
  void start_epoch(int64_t) override { next_ = 0; }
  std::optional<data::Batch> next() override {
    if (next_ >= batches_.size()) return std::nullopt;
    const Tensor& idx = batches_[next_++];
    Tensor x = index_select(images_, 0, idx).to(kFloat32);
    x.mul_(1.0 / (255.0 * 0.3530)).sub_(scalar_tensor(0.2860 / 0.3530));
    return data::Batch(data::TensorList{x, index_select(labels_, 0, idx)}, idx.numel());
  }
  nlohmann::json state_dict() const override { return {{"next", next_}}; }
  void load_state_dict(const nlohmann::json& s) override { next_ = s.at("next"); }

 private:
  Tensor images_, labels_;
  std::vector<Tensor> batches_;
  std::size_t next_ = 0;
};

class Mlp : public train::TrainingModule {
 public:
  Mlp() : TrainingModule("FashionMlp") { register_module("net", net); }
  Tensor forward(const Tensor& x) override { return (*net)(x); }
  Tensor training_step(const data::Batch& b, int64_t) override {
    Tensor loss = cross_entropy(forward(b[0]), b[1]);
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  train::OptimizerConfig configure_optimizers() override {
    return {
        std::make_shared<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9})};
  }
  std::shared_ptr<nn::Sequential> net = models::fashion_mlp();
};

double plain_epoch(FashionBatches& src) {
  manual_seed(0);
  auto model = models::fashion_mlp();
  optim::SGD opt(model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  const auto t0 = std::chrono::steady_clock::now();
  src.start_epoch(0);
  double last = 0;
  while (auto b = src.next()) {
    opt.zero_grad();
    Tensor loss = cross_entropy((*model)((*b)[0]), (*b)[1]);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  (void)last;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double trainer_epoch(const std::shared_ptr<FashionBatches>& src, const std::string& root) {
  manual_seed(0);
  Mlp module;
  train::TrainerOptions o;
  o.max_epochs = 1;
  o.default_root_dir = root;
  const auto t0 = std::chrono::steady_clock::now();
  train::Trainer(o).fit(module, src);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--repeats") repeats = std::stoi(argv[i + 1]);
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
  }
  set_num_threads(threads);
  auto src = std::make_shared<FashionBatches>();
  const std::string root =
      (std::filesystem::temp_directory_path() / "athanor_trainer_overhead").string();
  plain_epoch(*src);  // warm-up: caches, oneDNN primitives, page faults
  std::vector<double> plain, trainer;
  for (int r = 0; r < repeats; ++r) {
    plain.push_back(plain_epoch(*src));
    std::filesystem::remove_all(root);
    trainer.push_back(trainer_epoch(src, root));
    std::fprintf(stderr, "repeat %d: plain %.3f s, trainer %.3f s\n", r + 1, plain.back(),
                 trainer.back());
  }
  std::filesystem::remove_all(root);
  const double p = median(plain), t = median(trainer);
  std::printf(
      "{\"bench\": \"trainer_overhead_W1\", \"plain_s\": %.4f, \"trainer_s\": %.4f, "
      "\"ratio\": %.4f, \"repeats\": %d, \"threads\": %d}\n",
      p, t, t / p, repeats, threads);
  return 0;
}
