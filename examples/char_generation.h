// What the W4 examples (char_transformer, trainer_char_transformer) do with the trained model:
// decode a prompt greedily, by beam search and by nucleus sampling through the model's
// key-value cache (athanor/nn/generate.h), then time sampling with the cache against re-running
// the whole prefix every step.
#pragma once

#include <athanor/athanor.h>
#include <athanor/models/char_transformer.h>
#include <athanor/nn/generate.h>

#include <chrono>
#include <cstdio>
#include <string>

inline void decode_demo(ath::models::CharTransformer& model) {
  using namespace ath;
  // Decoding with the model's key-value cache: the prompt's bytes fill
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
