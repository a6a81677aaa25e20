// Word segmentation with a CRF: the char corpus of WORKLOADS.md (Debian's license texts) with
// its whitespace removed, each character tagged B (begins a word) or I. A BiLSTM over byte
// embeddings gives per-character tag scores; one copy trains them with softmax + cross-entropy,
// another with a linear-chain CRF on top (nll, Viterbi decoding). Reported: F1 of the predicted
// word beginnings on the held-out last tenth of the text.
//
//   ./build/examples/segment_crf [steps per model (default 600)]
#include <athanor/athanor.h>
#include <athanor/core/thread_policy.h>
#include <athanor/nn/nn.h>
#include <athanor/optim/adam.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

ATH_SHORT_OPENMP_SPIN();

using namespace ath;

namespace {

constexpr int64_t kSeq = 64, kBatch = 32;

// Characters without whitespace and their tags (1: the first character of a word, 0: inside).
struct Tagged {
  std::vector<int64_t> chars, tags;
};

Tagged read_tagged(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  Tagged t;
  bool boundary = true;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    for (char c; in.get(c);) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        boundary = true;
        continue;
      }
      t.chars.push_back(static_cast<unsigned char>(c));
      t.tags.push_back(boundary ? 1 : 0);
      boundary = false;
    }
  }
  return t;
}

class Tagger : public nn::Module {
 public:
  Tagger() : Module("Tagger") {
    register_module("emb", emb);
    register_module("lstm", lstm);
    register_module("head", head);
  }
  Tensor forward(const Tensor& chars) override {  // [T, B] -> tag scores [T, B, 2]
    return head(lstm(emb(chars)));
  }
  nn::Embedding emb{{.num = 256, .dim = 32}};
  nn::LSTM lstm{{.input_size = 32, .hidden_size = 64, .bidirectional = true}};
  nn::Linear head{{.in = 128, .out = 2}};
};

// Windows [T, B] of chars and tags starting at `starts`.
std::pair<Tensor, Tensor> windows(const Tagged& t, const std::vector<int64_t>& starts) {
  std::vector<int64_t> c, g;
  for (int64_t i = 0; i < kSeq; ++i) {
    for (int64_t s : starts) {
      c.push_back(t.chars[static_cast<std::size_t>(s + i)]);
      g.push_back(t.tags[static_cast<std::size_t>(s + i)]);
    }
  }
  const auto b = static_cast<int64_t>(starts.size());
  return {from_vector(c).reshape({kSeq, b}), from_vector(g).reshape({kSeq, b})};
}

struct F1 {
  int64_t tp = 0, predicted = 0, actual = 0;
  double value() const {
    const double p = double(tp) / std::max<int64_t>(predicted, 1);
    const double r = double(tp) / std::max<int64_t>(actual, 1);
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

// Trains one tagger (with or without the CRF) and returns its word-beginning F1 on held-out text.
double train_and_score(const Tagged& t, int64_t split, int64_t steps, bool use_crf) {
  manual_seed(0);
  std::mt19937 rng(0);
  Tagger model;
  nn::CRF crf({.num_tags = 2});
  std::vector<Tensor> params = model.parameters();
  if (use_crf) {
    for (const Tensor& p : crf.parameters()) params.push_back(p);
  }
  optim::Adam opt(params, {.lr = 3e-3});
  std::uniform_int_distribution<int64_t> start(0, split - kSeq - 1);
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<int64_t> starts;
    for (int64_t b = 0; b < kBatch; ++b) starts.push_back(start(rng));
    auto [x, y] = windows(t, starts);
    opt.zero_grad();
    Tensor scores = model(x);
    Tensor loss = use_crf ? crf.nll(scores, y, {}, nn::CRFReduction::TokenMean)
                          : cross_entropy(scores.reshape({-1, 2}), y.reshape({-1}));
    loss.backward();
    opt.step();
    if (step % 200 == 0 || step == steps - 1) {
      std::printf("  %s step %4lld  loss %.4f\n", use_crf ? "crf    " : "softmax",
                  static_cast<long long>(step), loss.item<double>());
    }
  }
  // Held-out: consecutive windows over the last tenth.
  model.eval();
  InferenceMode no_autograd;
  F1 f1;
  const auto n = static_cast<int64_t>(t.chars.size());
  for (int64_t s0 = split; s0 + kSeq * 64 <= n; s0 += kSeq * 64) {
    std::vector<int64_t> starts;
    for (int64_t b = 0; b < 64; ++b) starts.push_back(s0 + b * kSeq);
    auto [x, y] = windows(t, starts);
    Tensor scores = model(x);
    const std::vector<int64_t> truth = y.to_vector<int64_t>();
    std::vector<int64_t> pred;
    if (use_crf) {
      const auto paths = crf.decode(scores);  // per window
      pred.assign(truth.size(), 0);
      for (int64_t b = 0; b < 64; ++b) {
        for (int64_t i = 0; i < kSeq; ++i) pred[i * 64 + b] = paths[b][i];
      }
    } else {
      pred = argmax(scores, 2).to_vector<int64_t>();
    }
    for (std::size_t i = 0; i < truth.size(); ++i) {
      f1.tp += pred[i] == 1 && truth[i] == 1;
      f1.predicted += pred[i] == 1;
      f1.actual += truth[i] == 1;
    }
  }
  return f1.value();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::stoll(argv[1]) : 600;
  set_num_threads(2);
  const Tagged t = read_tagged("/usr/share/common-licenses");
  const auto split = static_cast<int64_t>(t.chars.size()) * 9 / 10;
  std::printf("corpus: %zu characters without whitespace; held-out from %lld\n", t.chars.size(),
              static_cast<long long>(split));
  const double f1_softmax = train_and_score(t, split, steps, false);
  const double f1_crf = train_and_score(t, split, steps, true);
  std::printf("word-beginning F1 on the held-out tenth: BiLSTM+softmax %.4f, BiLSTM+CRF %.4f\n",
              f1_softmax, f1_crf);
  return 0;
}
