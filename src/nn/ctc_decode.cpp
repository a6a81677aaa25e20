// CTC greedy decoding and prefix beam search (include/athanor/nn/ctc_decode.h). Prefixes live in
// a trie (node = parent + last label), so extending a prefix is a child lookup and a beam entry
// is a node id; the scorer runs once per node, when it is created.
#include "athanor/nn/ctc_decode.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "athanor/core/error.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::seq {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  const double m = std::max(a, b);
  return m == kNegInf ? kNegInf : m + std::log(std::exp(a - m) + std::exp(b - m));
}

// The emissions as float64 [T, N, C] plus each sample's frame count, checked.
struct Emissions {
  int64_t frames = 0, batch = 0, classes = 0;
  std::vector<double> values;
  std::vector<int64_t> lengths;
  double at(int64_t t, int64_t n, int64_t c) const {
    return values[static_cast<std::size_t>((t * batch + n) * classes + c)];
  }
};

Emissions read_emissions(const char* who, const Tensor& log_probs, const Tensor& input_lengths,
                         int64_t blank) {
  ATH_CHECK(log_probs.defined() && (log_probs.dim() == 2 || log_probs.dim() == 3), ShapeError,
            "{}: log_probs must be [T, N, C] or [T, C], got shape {}", who,
            log_probs.defined() ? to_string(log_probs.shape()) : "(undefined)");
  ATH_CHECK(is_floating(log_probs.dtype()), DTypeError, "{}: log_probs must be floating, got {}",
            who, dtype_name(log_probs.dtype()));
  const Tensor lp = log_probs.dim() == 2 ? log_probs.unsqueeze(1) : log_probs;
  Emissions e;
  e.frames = lp.shape()[0];
  e.batch = lp.shape()[1];
  e.classes = lp.shape()[2];
  ATH_CHECK(blank >= 0 && blank < e.classes, IndexError,
            "{}: blank {} is not a class of log_probs (classes [0, {}))", who, blank, e.classes);
  e.values = lp.to(kFloat64).contiguous().to_vector<double>();
  if (!input_lengths.defined()) {
    e.lengths.assign(static_cast<std::size_t>(e.batch), e.frames);
    return e;
  }
  ATH_CHECK(input_lengths.dtype() == kInt64 || input_lengths.dtype() == kInt32, DTypeError,
            "{}: input_lengths must be int64 or int32, got {}", who,
            dtype_name(input_lengths.dtype()));
  ATH_CHECK(input_lengths.numel() == e.batch && input_lengths.dim() <= 1, ShapeError,
            "{}: input_lengths must hold one length per sample ({}), got shape {}", who, e.batch,
            to_string(input_lengths.shape()));
  e.lengths = input_lengths.to(kInt64).reshape({e.batch}).to_vector<int64_t>();
  for (int64_t n = 0; n < e.batch; ++n) {
    const int64_t f = e.lengths[static_cast<std::size_t>(n)];
    ATH_CHECK(f >= 0 && f <= e.frames, IndexError,
              "{}: input_lengths[{}] = {} is outside [0, {}] (log_probs has {} frames)", who, n, f,
              e.frames, e.frames);
  }
  return e;
}

// The prefix trie of one sample's search.
class PrefixTrie {
 public:
  explicit PrefixTrie(const CtcBeamSearchOptions& o) : options_(o) { nodes_.push_back({}); }
  struct Node {
    int64_t parent = -1, token = -1, length = 0;
    double scorer_sum = 0;
    std::map<int64_t, int64_t> children;
  };
  const Node& node(int64_t id) const { return nodes_[static_cast<std::size_t>(id)]; }
  int64_t child(int64_t id, int64_t token) {
    auto& kids = nodes_[static_cast<std::size_t>(id)].children;
    if (auto it = kids.find(token); it != kids.end()) return it->second;
    Node n{.parent = id, .token = token, .length = node(id).length + 1};
    n.scorer_sum = node(id).scorer_sum;
    if (options_.scorer) {
      const std::vector<int64_t> prefix = tokens(id);
      n.scorer_sum += options_.scorer(prefix, token);
    }
    const auto new_id = static_cast<int64_t>(nodes_.size());
    nodes_.push_back(std::move(n));
    nodes_[static_cast<std::size_t>(id)].children.emplace(token, new_id);
    return new_id;
  }
  std::vector<int64_t> tokens(int64_t id) const {
    std::vector<int64_t> out;
    for (; id > 0; id = node(id).parent) out.push_back(node(id).token);
    std::reverse(out.begin(), out.end());
    return out;
  }
  double score(int64_t id, double log_prob) const {
    const Node& n = node(id);
    return log_prob + options_.scorer_weight * n.scorer_sum +
           options_.token_bonus * static_cast<double>(n.length);
  }

 private:
  const CtcBeamSearchOptions& options_;
  std::vector<Node> nodes_;
};

// Log-probabilities of a prefix's alignments so far, by their last frame's label.
struct PrefixProbs {
  double blank = kNegInf, label = kNegInf;
  double total() const { return log_add(blank, label); }
};

std::vector<CtcHypothesis> beam_search_one(const Emissions& e, int64_t n,
                                           const CtcBeamSearchOptions& o) {
  PrefixTrie trie(o);
  std::vector<std::pair<int64_t, PrefixProbs>> beam{{0, {.blank = 0.0}}};
  std::vector<int64_t> tried;
  const int64_t frames = e.lengths[static_cast<std::size_t>(n)];
  for (int64_t t = 0; t < frames; ++t) {
    tried.clear();
    for (int64_t c = 0; c < e.classes; ++c) {
      if (c != o.blank && e.at(t, n, c) >= o.token_min_log_prob) tried.push_back(c);
    }
    std::unordered_map<int64_t, PrefixProbs> next;
    const double lp_blank = e.at(t, n, o.blank);
    for (const auto& [id, p] : beam) {
      const double total = p.total();
      PrefixProbs& same = next[id];
      same.blank = log_add(same.blank, total + lp_blank);
      const int64_t last = trie.node(id).token;
      for (int64_t c : tried) {
        const double lp = e.at(t, n, c);
        const int64_t ext = trie.child(id, c);
        PrefixProbs& longer = next[ext];
        if (c == last) {
          // A repeat without a blank between extends the same label; after a blank, a new one.
          PrefixProbs& stay = next[id];
          stay.label = log_add(stay.label, p.label + lp);
          longer.label = log_add(longer.label, p.blank + lp);
        } else {
          longer.label = log_add(longer.label, total + lp);
        }
      }
    }
    beam.assign(next.begin(), next.end());
    // Best score first; node ids (creation order) break ties, so the result is deterministic.
    auto better = [&](const auto& a, const auto& b) {
      const double sa = trie.score(a.first, a.second.total());
      const double sb = trie.score(b.first, b.second.total());
      return sa != sb ? sa > sb : a.first < b.first;
    };
    const auto keep = std::min<std::size_t>(beam.size(), static_cast<std::size_t>(o.beam_width));
    std::partial_sort(beam.begin(), beam.begin() + static_cast<std::ptrdiff_t>(keep), beam.end(),
                      better);
    beam.resize(keep);
  }
  // Every surviving prefix: the caller rescores them exactly, then keeps n_best.
  std::vector<CtcHypothesis> out;
  for (const auto& [id, p] : beam) {
    const double extra = trie.score(id, 0.0);  // scorer and bonus terms
    out.push_back({.tokens = trie.tokens(id), .log_prob = p.total(), .score = extra});
  }
  return out;
}

// Replaces each hypothesis' log_prob (the alignments the beam kept: a lower bound) with the exact
// one, every alignment summed by the CTC forward algorithm (ctc_loss, all hypotheses in one
// call), then ranks each sample's by score and keeps n_best.
void rescore_exactly(const Tensor& log_probs, const Emissions& e,
                     std::vector<std::vector<CtcHypothesis>>& beams, int64_t n_best,
                     int64_t blank) {
  std::vector<int64_t> sample, lengths, frames;
  int64_t width = 1;
  for (int64_t n = 0; n < e.batch; ++n) {
    for (const CtcHypothesis& h : beams[static_cast<std::size_t>(n)]) {
      sample.push_back(n);
      lengths.push_back(static_cast<int64_t>(h.tokens.size()));
      frames.push_back(e.lengths[static_cast<std::size_t>(n)]);
      width = std::max<int64_t>(width, static_cast<int64_t>(h.tokens.size()));
    }
  }
  const auto count = static_cast<int64_t>(sample.size());
  std::vector<int64_t> padded(static_cast<std::size_t>(count * width), blank == 0 ? 1 : 0);
  int64_t k = 0;
  for (const auto& hyps : beams) {
    for (const CtcHypothesis& h : hyps) {
      std::copy(h.tokens.begin(), h.tokens.end(), padded.begin() + k * width);
      ++k;
    }
  }
  const Tensor lp = (log_probs.dim() == 2 ? log_probs.unsqueeze(1) : log_probs).to(kFloat64);
  const Tensor nll = ctc_loss(index_select(lp, 1, from_vector(sample)),
                              from_vector(padded).reshape({count, width}), from_vector(frames),
                              from_vector(lengths), {.blank = blank, .reduction = Reduction::None});
  const std::vector<double> exact = nll.to_vector<double>();
  k = 0;
  for (auto& hyps : beams) {
    for (CtcHypothesis& h : hyps) {
      h.log_prob = -exact[static_cast<std::size_t>(k++)];
      h.score += h.log_prob;
    }
    // Best score first; the search's order (deterministic) breaks ties.
    std::stable_sort(hyps.begin(), hyps.end(), [](const CtcHypothesis& a, const CtcHypothesis& b) {
      return a.score > b.score;
    });
    if (static_cast<int64_t>(hyps.size()) > n_best) hyps.resize(static_cast<std::size_t>(n_best));
  }
}

}  // namespace

std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& log_probs,
                                                    const Tensor& input_lengths, int64_t blank) {
  const Emissions e = read_emissions("ctc_greedy_decode", log_probs, input_lengths, blank);
  std::vector<std::vector<int64_t>> out(static_cast<std::size_t>(e.batch));
  for (int64_t n = 0; n < e.batch; ++n) {
    int64_t prev = -1;
    for (int64_t t = 0; t < e.lengths[static_cast<std::size_t>(n)]; ++t) {
      int64_t best = 0;
      for (int64_t c = 1; c < e.classes; ++c) {
        if (e.at(t, n, c) > e.at(t, n, best)) best = c;
      }
      if (best != prev && best != blank) out[static_cast<std::size_t>(n)].push_back(best);
      prev = best;
    }
  }
  return out;
}

std::vector<std::vector<CtcHypothesis>> ctc_beam_search(const Tensor& log_probs,
                                                        const Tensor& input_lengths,
                                                        const CtcBeamSearchOptions& options) {
  ATH_CHECK(options.beam_width >= 1, ValueError, "ctc_beam_search: beam_width must be >= 1, got {}",
            options.beam_width);
  ATH_CHECK(options.n_best >= 1 && options.n_best <= options.beam_width, ValueError,
            "ctc_beam_search: n_best must be in [1, beam_width = {}], got {}", options.beam_width,
            options.n_best);
  ATH_CHECK(!std::isnan(options.scorer_weight) && !std::isnan(options.token_bonus), ValueError,
            "ctc_beam_search: scorer_weight and token_bonus must not be NaN");
  const Emissions e = read_emissions("ctc_beam_search", log_probs, input_lengths, options.blank);
  std::vector<std::vector<CtcHypothesis>> out(static_cast<std::size_t>(e.batch));
  // Samples are independent; a user scorer may not be thread-safe, so it runs on one thread.
  const int64_t grain = options.scorer ? e.batch : 1;
  parallel_for(0, e.batch, grain, [&](int64_t b, int64_t end) {
    for (int64_t n = b; n < end; ++n)
      out[static_cast<std::size_t>(n)] = beam_search_one(e, n, options);
  });
  NoGradGuard no_grad;
  rescore_exactly(log_probs, e, out, options.n_best, options.blank);
  return out;
}

}  // namespace ath::seq
