// W4 of WORKLOADS.md as a plain training loop: a byte-level Transformer language model on the
// licence texts Debian ships in /usr/share/common-licenses, AdamW, 200 steps of 16 windows of 128
// bytes, then generated text (greedy, beam search, nucleus sampling through the model's
// key-value cache) and the decoding speed with the cache against re-running the prefix.
//
//   ./build/examples/char_transformer [steps]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/models/char_transformer.h>
#include <athanor/nn/generate.h>
#include <athanor/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "char_generation.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

// The regular files of a folder, sorted by name, concatenated: int64 byte values.
Tensor read_corpus(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<int64_t> bytes;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    for (char c; in.get(c);) bytes.push_back(static_cast<unsigned char>(c));
  }
  return from_vector(bytes);
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 200;
  const int64_t seq = 128, batch = 16;
  set_num_threads(2);
  manual_seed(0);
  Tensor text = read_corpus("/usr/share/common-licenses");
  std::printf("corpus: %lld bytes\n", static_cast<long long>(text.numel()));

  models::CharTransformer model;
  optim::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  Tensor offsets = arange(0, seq + 1).unsqueeze(0);  // [1, seq + 1]
  for (int step = 0; step < steps; ++step) {
    Tensor starts = randint(0, text.numel() - seq - 1, {batch, 1});
    Tensor window = index_select(text, 0, (starts + offsets).flatten()).view({batch, seq + 1});
    Tensor x = window.slice(1, 0, seq), y = window.slice(1, 1);
    opt.zero_grad();
    Tensor loss = cross_entropy(model(x).reshape({-1, 256}), y.reshape({-1}));
    loss.backward();
    opt.step();
    if (step % 20 == 0 || step == steps - 1) {
      std::printf("step %3d  loss %.3f nats/byte\n", step, loss.item<float>());
    }
  }

  decode_demo(model);
}
