// Beam search and sampling over a step function (include/athanor/nn/generate.h). The
// bookkeeping (scores, token histories, which hypotheses live) is float64 on the host; the model
// sees one batched call per step, and its state rows are gathered with index_select to follow
// the kept hypotheses.
#include "athanor/nn/generate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "athanor/core/error.h"
#include "athanor/core/rng.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::seq {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t check_start(const char* who, const Tensor& start, const std::vector<Tensor>& state,
                    const std::vector<int64_t>& dims) {
  ATH_CHECK(start.defined() && start.dim() == 1 && start.dtype() == kInt64, ShapeError,
            "{}: start_tokens must be int64 [N], got {}", who,
            start.defined()
                ? to_string(start.shape()) + " " + std::string(dtype_name(start.dtype()))
                : std::string("(undefined)"));
  ATH_CHECK(dims.empty() || dims.size() == state.size(), ValueError,
            "{}: state_batch_dims has {} entries for {} state tensors", who, dims.size(),
            state.size());
  const int64_t n = start.shape()[0];
  for (std::size_t i = 0; i < state.size(); ++i) {
    const int64_t d = dims.empty() ? 0 : dims[i];
    ATH_CHECK(d >= 0 && d < state[i].dim() && state[i].shape()[static_cast<std::size_t>(d)] == n,
              ShapeError, "{}: state tensor {} of shape {} has no dim {} of the batch size {}", who,
              i, to_string(state[i].shape()), d, n);
  }
  return n;
}

// Rows `rows` of every state tensor on its batch dim.
std::vector<Tensor> gather_state(const std::vector<Tensor>& state, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& rows) {
  const Tensor index = from_vector(rows);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < state.size(); ++i) {
    out.push_back(index_select(state[i], dims.empty() ? 0 : dims[i], index));
  }
  return out;
}

// Calls the model and checks its answer: log-probabilities [rows, V] as float64 values.
std::vector<double> run_step(const char* who, const StepFn& step, const std::vector<int64_t>& last,
                             std::vector<Tensor>& state, int64_t& vocab) {
  Step s = step(from_vector(last), state);
  const auto rows = static_cast<int64_t>(last.size());
  ATH_CHECK(s.log_probs.defined() && s.log_probs.dim() == 2 && s.log_probs.shape()[0] == rows &&
                s.log_probs.shape()[1] > 0,
            ShapeError, "{}: the step function must return log_probs [{}, V], got {}", who, rows,
            s.log_probs.defined() ? to_string(s.log_probs.shape()) : std::string("(undefined)"));
  ATH_CHECK(vocab < 0 || s.log_probs.shape()[1] == vocab, ShapeError,
            "{}: the step function's vocabulary changed from {} to {}", who, vocab,
            s.log_probs.shape()[1]);
  ATH_CHECK(s.state.size() == state.size(), ShapeError,
            "{}: the step function returned {} state tensors for {}", who, s.state.size(),
            state.size());
  vocab = s.log_probs.shape()[1];
  state = std::move(s.state);
  return s.log_probs.to(kFloat64).contiguous().to_vector<double>();
}

double normalized(double log_prob, int64_t length, double penalty) {
  return penalty == 0 ? log_prob : log_prob / std::pow(static_cast<double>(length), penalty);
}

struct Live {
  std::vector<int64_t> tokens;
  double log_prob = 0;
};

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(const StepFn& step, const Tensor& start_tokens,
                                                 const std::vector<Tensor>& start_state,
                                                 const BeamSearchOptions& o) {
  const char* who = "beam_search";
  ATH_CHECK(o.beam >= 1, ValueError, "{}: beam must be >= 1, got {}", who, o.beam);
  ATH_CHECK(o.max_len >= 1, ValueError, "{}: max_len must be >= 1, got {}", who, o.max_len);
  ATH_CHECK(o.n_best >= 1 && o.n_best <= o.beam, ValueError,
            "{}: n_best must be in [1, beam = {}], got {}", who, o.beam, o.n_best);
  ATH_CHECK(o.length_penalty >= 0, ValueError, "{}: length_penalty must be >= 0, got {}", who,
            o.length_penalty);
  const int64_t n = check_start(who, start_tokens, start_state, o.state_batch_dims);
  NoGradGuard no_grad;
  const std::vector<int64_t> start = start_tokens.to_vector<int64_t>();
  // Per sample: its live hypotheses (one, empty, to begin) and the finished ones.
  std::vector<std::vector<Live>> live(static_cast<std::size_t>(n), std::vector<Live>(1));
  std::vector<std::vector<Hypothesis>> done(static_cast<std::size_t>(n));
  std::vector<int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<Tensor> state = start_state;
  std::vector<int64_t> last = start;
  int64_t vocab = -1;
  auto finished_enough = [&](int64_t i) {
    // Stop when beam hypotheses are finished and no live one can still beat the worst of them:
    // log-probabilities only fall, and a longer length divides a negative sum by more, so
    // log_prob / max_len^penalty bounds what a live hypothesis can reach.
    auto& d = done[static_cast<std::size_t>(i)];
    const auto& l = live[static_cast<std::size_t>(i)];
    if (l.empty()) return true;
    if (static_cast<int64_t>(d.size()) < o.beam) return false;
    double worst = std::numeric_limits<double>::infinity();
    for (const Hypothesis& h : d) worst = std::min(worst, h.score);
    double best_live = kNegInf;
    for (const Live& h : l) {
      best_live = std::max(best_live, o.length_penalty == 0
                                          ? h.log_prob
                                          : normalized(h.log_prob, o.max_len, o.length_penalty));
    }
    return best_live <= worst;
  };
  for (int64_t len = 1; len <= o.max_len; ++len) {
    const std::vector<double> lp = run_step(who, step, last, state, vocab);
    std::vector<int64_t> next_rows, next_last;
    int64_t row = 0;
    for (int64_t i = 0; i < n; ++i) {
      auto& l = live[static_cast<std::size_t>(i)];
      if (l.empty()) continue;
      // Every (hypothesis, token) extension, best first (ties: earlier hypothesis, lower token).
      struct Cand {
        double log_prob;
        int64_t from, token;
      };
      std::vector<Cand> cands;
      for (std::size_t h = 0; h < l.size(); ++h) {
        const double* r = lp.data() + (row + static_cast<int64_t>(h)) * vocab;
        for (int64_t v = 0; v < vocab; ++v) {
          if (r[v] != kNegInf) cands.push_back({l[h].log_prob + r[v], static_cast<int64_t>(h), v});
        }
      }
      // As Hugging Face's: the 2 * beam best extensions (only those are ordered), finished ones
      // leaving the beam.
      const auto top = std::min(cands.size(), static_cast<std::size_t>(2 * o.beam));
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(top),
                        cands.end(), [](const Cand& a, const Cand& b) {
                          if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
                          return a.from != b.from ? a.from < b.from : a.token < b.token;
                        });
      cands.resize(top);
      std::vector<Live> kept;
      for (const Cand& c : cands) {
        if (static_cast<int64_t>(kept.size()) == o.beam) break;
        Live h = l[static_cast<std::size_t>(c.from)];
        h.tokens.push_back(c.token);
        h.log_prob = c.log_prob;
        if (c.token == o.eos || len == o.max_len) {
          done[static_cast<std::size_t>(i)].push_back(
              {h.tokens, h.log_prob, normalized(h.log_prob, len, o.length_penalty)});
          continue;  // a finished hypothesis frees its place in the beam
        }
        next_rows.push_back(rows[static_cast<std::size_t>(row + c.from)]);
        next_last.push_back(c.token);
        kept.push_back(std::move(h));
      }
      row += static_cast<int64_t>(l.size());
      l = std::move(kept);
      if (finished_enough(i)) {
        // Drop the sample's live rows from the batch.
        next_rows.resize(next_rows.size() - l.size());
        next_last.resize(next_last.size() - l.size());
        l.clear();
      }
    }
    if (next_rows.empty()) break;
    // `rows` indexes the state the model returned this step; the kept hypotheses' rows follow.
    state = gather_state(state, o.state_batch_dims, next_rows);
    rows.resize(next_rows.size());
    std::iota(rows.begin(), rows.end(), 0);
    last = std::move(next_last);
  }
  for (auto& d : done) {
    std::stable_sort(d.begin(), d.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    if (static_cast<int64_t>(d.size()) > o.n_best) d.resize(static_cast<std::size_t>(o.n_best));
  }
  return done;
}

std::vector<std::vector<int64_t>> sample(const StepFn& step, const Tensor& start_tokens,
                                         const std::vector<Tensor>& start_state,
                                         const SamplingOptions& o) {
  const char* who = "sample";
  ATH_CHECK(o.max_len >= 1, ValueError, "{}: max_len must be >= 1, got {}", who, o.max_len);
  ATH_CHECK(o.temperature >= 0 && std::isfinite(o.temperature), ValueError,
            "{}: temperature must be finite and >= 0, got {}", who, o.temperature);
  ATH_CHECK(o.top_k >= 0, ValueError, "{}: top_k must be >= 0, got {}", who, o.top_k);
  ATH_CHECK(o.top_p > 0 && o.top_p <= 1, ValueError, "{}: top_p must be in (0, 1], got {}", who,
            o.top_p);
  const int64_t n = check_start(who, start_tokens, start_state, o.state_batch_dims);
  NoGradGuard no_grad;
  std::vector<std::vector<int64_t>> out(static_cast<std::size_t>(n));
  std::vector<int64_t> live(static_cast<std::size_t>(n));  // sample of each batch row
  std::iota(live.begin(), live.end(), 0);
  std::vector<int64_t> last = start_tokens.to_vector<int64_t>();
  std::vector<Tensor> state = start_state;
  int64_t vocab = -1;
  std::vector<int64_t> order;
  std::vector<double> weight;
  for (int64_t len = 1; len <= o.max_len && !live.empty(); ++len) {
    const std::vector<double> lp = run_step(who, step, last, state, vocab);
    std::vector<int64_t> keep, next_last;
    for (std::size_t r = 0; r < live.size(); ++r) {
      const double* row = lp.data() + static_cast<int64_t>(r) * vocab;
      // Greedy: the most likely token, the first on ties (max_element keeps the first).
      int64_t token = std::max_element(row, row + vocab) - row;
      if (o.temperature > 0) {
        // Candidates: the top_k most likely (only those are ordered; ties by token), then the
        // smallest prefix reaching top_p.
        const int64_t k = o.top_k > 0 ? std::min(o.top_k, vocab) : vocab;
        order.resize(static_cast<std::size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          return row[a] != row[b] ? row[a] > row[b] : a < b;
        });
        weight.assign(static_cast<std::size_t>(k), 0.0);
        const double top = row[order[0]] / o.temperature;
        double total = 0;
        for (int64_t j = 0; j < k; ++j)
          total += weight[j] = std::exp(row[order[j]] / o.temperature - top);
        int64_t used = k;
        if (o.top_p < 1) {
          double mass = 0;
          for (int64_t j = 0; j < k; ++j) {
            mass += weight[j] / total;
            if (mass >= o.top_p) {
              used = j + 1;
              break;
            }
          }
          total = std::accumulate(weight.begin(), weight.begin() + used, 0.0);
        }
        const double u = philox_uniform_double(o.seed, static_cast<uint64_t>(len) * n,
                                               static_cast<uint64_t>(live[r])) *
                         total;
        double acc = 0;
        token = order[used - 1];
        for (int64_t j = 0; j < used; ++j) {
          acc += weight[j];
          if (u < acc) {
            token = order[j];
            break;
          }
        }
      }
      out[static_cast<std::size_t>(live[r])].push_back(token);
      if (token != o.eos) {
        keep.push_back(static_cast<int64_t>(r));
        next_last.push_back(token);
      }
    }
    if (keep.size() != live.size()) {
      std::vector<int64_t> still;
      for (int64_t r : keep) still.push_back(live[static_cast<std::size_t>(r)]);
      live = std::move(still);
      if (!live.empty()) state = gather_state(state, o.state_batch_dims, keep);
    }
    last = std::move(next_last);
  }
  return out;
}

}  // namespace ath::seq
