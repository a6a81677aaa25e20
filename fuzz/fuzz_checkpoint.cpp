// libFuzzer target for the checkpoint loader: the safetensors header, the per-tensor checksums,
// the metadata document and every field a resumed fit reads from it (loop position, optimizer and
// callback states, RNG), through Trainer::fit(ckpt_path) itself.
//
// Properties checked on every input, under ASan + UBSan:
//   - the fit either resumes (and finishes its epochs) or throws an ath::Error: any other
//     exception, a crash, an out-of-bounds read, a hang or undefined behaviour is a finding;
//   - a checkpoint refused while loading is named in the error and leaves the module's weights
//     as they were.
//
// Seeds (fuzz/corpus/checkpoint/) are real checkpoints of the fit below, written by this binary:
//   ATH_FUZZ_WRITE_SEEDS=fuzz/corpus/checkpoint build-asan/fuzz/fuzz_checkpoint -runs=0
// writes them afresh (mid-epoch, epoch-end and weights-only checkpoints, each also without its
// checksums so mutations reach the metadata checks behind the CRC).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "athanor/io/safetensors.h"
#include "athanor/train/callbacks/early_stopping.h"
#include "athanor/train/callbacks/model_checkpoint.h"
#include "athanor/train/checkpoint.h"
#include "fuzz_input.h"
#include "train/trainer_fixtures.h"

namespace {

using namespace ath;
using namespace ath::train;

// Two epochs of two batches; early stopping on the training loss carries a callback state.
TrainerOptions fit_options() {
  TrainerOptions o = testing::quiet_options();
  o.max_epochs = 2;
  o.num_sanity_val_steps = 0;
  o.callbacks = {std::make_shared<EarlyStopping>(
      EarlyStoppingOptions{.monitor = "train_loss", .patience = 3, .strict = false})};
  return o;
}

std::shared_ptr<testing::VectorSource> train_data() { return testing::regression_source(2); }

void write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  TrainerOptions o = fit_options();
  o.enable_checkpointing = true;
  o.callbacks.push_back(std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
      .dirpath = dir, .filename = "{step}", .save_top_k = -1, .every_n_train_steps = 1}));
  o.callbacks.push_back(std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{
      .dirpath = dir, .filename = "weights_only", .save_weights_only = true}));
  testing::Regressor module;
  Trainer(o).fit(module, train_data());
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (path.ends_with(".nocrc.ckpt")) continue;
    SafetensorsData file = load_safetensors(path);
    file.metadata.erase(kChecksumsMetadataKey);
    std::string plain = path.substr(0, path.size() - 5) + ".nocrc.ckpt";
    save_safetensors(plain, file.tensors, file.metadata);
  }
}

bool same_weights(const StateDict& a, const StateDict& b) {
  for (const auto& [name, t] : a) {
    if (std::memcmp(t.data_ptr(), b.at(name).data_ptr(), t.nbytes()) != 0) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("ATH_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file;
  const std::string& path = file.write(data, size);
  testing::Regressor module;
  StateDict before;
  for (const auto& [name, t] : module.state_dict()) before.insert(name, t.clone());
  Trainer trainer(fit_options());
  try {
    trainer.fit(module, train_data(), nullptr, path);
  } catch (const Error& e) {
    // A file refused while loading is named, and changed nothing. (A file that loaded and was
    // then refused while applying is named too, and rolled back; the target cannot tell that
    // phase from training, where errors need not name the file.)
    const std::string what = e.what();
    if (trainer.restored_checkpoint().empty()) {
      fuzz::check(what.find(path) != std::string::npos, "error does not name the file:", what);
      fuzz::check(same_weights(module.state_dict(), before), "refused, yet weights changed:", what);
    }
  }
  return 0;
}
