// W4 of WORKLOADS.md through the Trainer: a byte-level Transformer language model on the licence
// texts Debian ships, AdamW, 200 steps of 16 windows of 128 bytes, then decoding from the trained
// model (examples/char_generation.h). Compare examples/char_transformer.cpp.
//
//   ./build/examples/trainer_char_transformer [steps]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/data/data.h>
#include <athanor/models/char_transformer.h>
#include <athanor/ops/losses.h>
#include <athanor/optim/adam.h>
#include <athanor/train/trainer.h>

#include <algorithm>
#include <filesystem>

#include "char_generation.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

class CharLm : public train::TrainingModule {
 public:
  CharLm() : TrainingModule("CharLm") { register_module("net", net); }
  Tensor training_step(const data::Batch& b, int64_t) override {
    Tensor loss = cross_entropy(net(b[0]).reshape({-1, 256}), b[1].reshape({-1}));
    log("train_loss", loss, {.prog_bar = true});
    return loss;
  }
  train::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<optim::AdamW>(parameters(), optim::AdamWOptions{.lr = 1e-3})};
  }
  models::CharTransformer net;
};

int main(int argc, char** argv) {
  set_num_threads(2);
  std::vector<std::string> files;  // regular files only, sorted: WORKLOADS.md's corpus
  for (const auto& e : std::filesystem::directory_iterator("/usr/share/common-licenses"))
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  auto text = std::make_shared<data::TextBytesDataset>(
      data::TextBytesOptions{.paths = files, .seq_len = 128, .stride = 1});
  train::TrainerOptions opts;
  opts.max_steps = argc > 1 ? std::stoll(argv[1]) : 200;
  opts.seed = 0;
  opts.log_every_n_steps = 20;
  opts.default_root_dir = "runs/char_transformer";
  CharLm model;
  train::Trainer(opts).fit(model, data::make_loader(text, {.batch_size = 16, .shuffle = true}));
  decode_demo(model.net);  // generation from the trained model
}
