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

  // Decoding (athanor/nn/generate.h) with the model's key-value cache: the prompt's bytes fill
  // the cache, then each step feeds one byte.
  InferenceMode no_autograd;
  model.eval();
  const std::string prompt = "This License";
  auto prefill = [&](int64_t batch) {  // the cache after all but the prompt's last byte
    std::vector<Tensor> cache = model.empty_cache(batch);
    for (std::size_t i = 0; i + 1 < prompt.size(); ++i) {
      model.step(full({batch}, int64_t(static_cast<unsigned char>(prompt[i]))), cache);
    }
    return cache;
  };
  seq::StepFn cached = [&](const Tensor& last, const std::vector<Tensor>& state) {
    std::vector<Tensor> cache = state;
    return seq::Step{log_softmax(model.step(last, cache), 1), cache};
  };
  auto text_of = [&](const std::vector<int64_t>& bytes) {
    std::string t = prompt;
    for (int64_t b : bytes) t.push_back(static_cast<char>(b));
    return t;
  };
  const Tensor last = full({1}, int64_t(static_cast<unsigned char>(prompt.back())));
  const auto greedy = seq::sample(cached, last, prefill(1), {.max_len = 60, .temperature = 0});
  std::printf("greedy: %s\n", text_of(greedy[0]).c_str());
  const auto beams = seq::beam_search(cached, last, prefill(1), {.beam = 4, .max_len = 60});
  std::printf("beam 4: %s\n", text_of(beams[0][0].tokens).c_str());
  const auto nucleus =
      seq::sample(cached, last, prefill(1), {.max_len = 60, .top_p = 0.9, .seed = 1});
  std::printf("top-p 0.9: %s\n", text_of(nucleus[0]).c_str());

  // Tokens/s: 8 continuations of 100 bytes, with the cache and by re-running the whole prefix
  // every step (the same seeded draws, so the same text).
  const int64_t batch_n = 8, new_tokens = 100;
  seq::StepFn rerun = [&](const Tensor& last_tokens, const std::vector<Tensor>& state) {
    Tensor history = cat({state[0], last_tokens.unsqueeze(1)}, 1);
    return seq::Step{log_softmax(model(history).select(1, history.size(1) - 1), 1), {history}};
  };
  std::vector<int64_t> head_bytes;
  for (std::size_t i = 0; i + 1 < prompt.size(); ++i) {
    head_bytes.push_back(static_cast<unsigned char>(prompt[i]));
  }
  const Tensor history0 = from_vector(head_bytes).unsqueeze(0).expand({batch_n, -1}).contiguous();
  const Tensor lasts = full({batch_n}, int64_t(static_cast<unsigned char>(prompt.back())));
  const seq::SamplingOptions so{.max_len = new_tokens, .seed = 2};
  auto time_of = [&](auto&& run) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = run();
    return std::pair{out,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  };
  auto [with_cache, t_cache] =
      time_of([&] { return seq::sample(cached, lasts, prefill(batch_n), so); });
  auto [by_rerun, t_rerun] = time_of([&] { return seq::sample(rerun, lasts, {history0}, so); });
  const double n_tokens = static_cast<double>(batch_n * new_tokens);
  std::printf(
      "sampling %lld x %lld bytes: key-value cache %.0f tokens/s, full re-runs %.0f "
      "tokens/s (%.1fx); same text: %s\n",
      static_cast<long long>(batch_n), static_cast<long long>(new_tokens), n_tokens / t_cache,
      n_tokens / t_rerun, t_rerun / t_cache, with_cache == by_rerun ? "yes" : "no");
}
