// Reading lines of Fashion-MNIST items with CTC: each line is 1-6 images side by side (28 x 28k,
// padded to 28 x 168), its text the items' classes. A small CNN turns the line into 42 frames
// (one per 4 pixels of width), a bidirectional LSTM reads them, and CTC trains the frame
// classifier (11 classes: the blank and the ten items) without saying which frames hold which
// item. Evaluated on 1000 lines built from the test set: sequence accuracy and character error
// rate, greedy decoding against prefix beam search.
//
//   ./build/examples/ocr_ctc [steps (default 1500)]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/nn/nn.h>
#include <athanor/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "fashion_data.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

namespace {

constexpr int64_t kMaxItems = 6, kWidth = 28 * kMaxItems, kFrames = kWidth / 4, kClasses = 11;

struct Lines {
  Tensor images;                        // [B, 1, 28, 168]
  Tensor targets;                       // [B, 6] padded labels 1..10
  std::vector<int64_t> frames, counts;  // per line: frames covering its items, item count
};

// `batch` lines of 1-6 random items from `split`; the padding is the images' background value.
Lines make_lines(const FashionSplit& split, int64_t batch, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> count(1, kMaxItems);
  std::uniform_int_distribution<int64_t> pick(0, split.labels.size(0) - 1);
  const double background = ath::min(split.images).item<double>();
  std::vector<Tensor> rows;
  std::vector<int64_t> labels(static_cast<std::size_t>(batch * kMaxItems), 1);
  Lines out;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t k = count(rng);
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < k; ++j) idx.push_back(pick(rng));
    const Tensor items = index_select(split.images, 0, from_vector(idx));  // [k, 1, 28, 28]
    const std::vector<int64_t> cls =
        index_select(split.labels, 0, from_vector(idx)).to_vector<int64_t>();
    for (int64_t j = 0; j < k; ++j)
      labels[static_cast<std::size_t>(b * kMaxItems + j)] = cls[j] + 1;
    // [k, 1, 28, 28] -> [1, 1, 28, 28k], then the background to width 168.
    Tensor line = items.permute({1, 2, 0, 3}).reshape({1, 1, 28, 28 * k});
    if (k < kMaxItems) line = cat({line, full({1, 1, 28, 28 * (kMaxItems - k)}, background)}, 3);
    rows.push_back(line);
    out.frames.push_back(k * 28 / 4);
    out.counts.push_back(k);
  }
  out.images = cat(rows, 0);
  out.targets = from_vector(labels).reshape({batch, kMaxItems});
  return out;
}

class LineReader : public nn::Module {
 public:
  LineReader() : Module("LineReader") {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("proj", proj);
    register_module("lstm", lstm);
    register_module("head", head);
  }
  // [B, 1, 28, 168] -> log-probabilities [42, B, 11].
  Tensor forward(const Tensor& x) override {
    Tensor h = max_pool2d(relu(conv1(x)), {.kernel = 2});  // [B, 32, 14, 84]
    h = max_pool2d(relu(conv2(h)), {.kernel = 2});         // [B, 64, 7, 42]
    h = h.permute({3, 0, 1, 2}).flatten(2);                // [42, B, 448]: one frame per column
    h = lstm(relu(proj(h)));                               // [42, B, 256]
    return log_softmax(head(h), 2);
  }
  nn::Conv2d conv1{{.in = 1, .out = 32, .kernel = 3, .padding = 1}};
  nn::Conv2d conv2{{.in = 32, .out = 64, .kernel = 3, .padding = 1}};
  nn::Linear proj{{.in = 64 * 7, .out = 128}};
  nn::LSTM lstm{{.input_size = 128, .hidden_size = 128, .bidirectional = true}};
  nn::Linear head{{.in = 256, .out = kClasses}};
};

int64_t edit_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int64_t>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int64_t>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::stoll(argv[1]) : 1500;
  set_num_threads(2);
  manual_seed(0);
  std::mt19937 rng(0);
  const FashionSplit train = load_fashion("train"), test = load_fashion("t10k");
  LineReader model;
  optim::Adam opt(model.parameters(), {.lr = 1e-3});
  nn::CTCLoss ctc({.zero_infinity = true});
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < steps; ++step) {
    const Lines b = make_lines(train, 32, rng);
    opt.zero_grad();
    Tensor loss = ctc(model(b.images), b.targets, from_vector(b.frames), from_vector(b.counts));
    loss.backward();
    opt.step();
    if (step % 100 == 0 || step == steps - 1) {
      std::printf("step %4lld  ctc loss %.4f\n", static_cast<long long>(step), loss.item<double>());
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 1000 test lines, decoded greedily and by beam search (beam 8).
  model.eval();
  InferenceMode no_autograd;
  std::mt19937 test_rng(1);
  int64_t lines = 0, chars = 0, exact_greedy = 0, exact_beam = 0, errors_greedy = 0,
          errors_beam = 0;
  for (int64_t i = 0; i < 10; ++i) {
    const Lines b = make_lines(test, 100, test_rng);
    const Tensor lp = model(b.images);
    const Tensor frames = from_vector(b.frames);
    const auto greedy = seq::ctc_greedy_decode(lp, frames);
    const auto beams = seq::ctc_beam_search(lp, frames, {.beam_width = 8});
    const std::vector<int64_t> tv = b.targets.to_vector<int64_t>();
    for (int64_t n = 0; n < 100; ++n) {
      const std::vector<int64_t> truth(tv.begin() + n * kMaxItems,
                                       tv.begin() + n * kMaxItems + b.counts[n]);
      const auto& g = greedy[static_cast<std::size_t>(n)];
      const auto& bm = beams[static_cast<std::size_t>(n)][0].tokens;
      exact_greedy += g == truth;
      exact_beam += bm == truth;
      errors_greedy += edit_distance(g, truth);
      errors_beam += edit_distance(bm, truth);
      chars += static_cast<int64_t>(truth.size());
      ++lines;
    }
  }
  std::printf("trained %lld steps in %.1f s\n", static_cast<long long>(steps), seconds);
  std::printf(
      "test lines %lld: sequence accuracy greedy %.4f beam %.4f; CER greedy %.4f beam %.4f\n",
      static_cast<long long>(lines), double(exact_greedy) / lines, double(exact_beam) / lines,
      double(errors_greedy) / chars, double(errors_beam) / chars);
  return 0;
}
