#include "athanor/nn/hmm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include "athanor/core/error.h"
#include "athanor/core/parallel.h"
#include "athanor/ops/creation.h"

namespace ath::seq {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
// How far a probability row may be from summing to 1 (float32 parameters round to ~1e-7).
constexpr double kSumTolerance = 1e-6;
// The scaled recursion hands a sequence to the log-space one when a frame's scale or a backward
// value leaves [1e-290, 1e290]: past that, doubles lose precision and then under/overflow.
constexpr double kScaledMin = 1e-290;
constexpr double kScaledMax = 1e290;

// hmmlearn's GaussianHMM defaults that its M-step uses (means_prior = means_weight = 0 drop out).
constexpr double kCovarsPrior = 1e-2;
constexpr double kCovarsWeight = 1.0;
constexpr double kMinDenominator = 1e-5;

std::vector<double> values_of(const std::string& who, const char* what, const Tensor& t) {
  ATH_CHECK(t.defined(), ValueError, "{}: {} is an undefined tensor", who, what);
  ATH_CHECK(is_floating(t.dtype()) || is_integral(t.dtype()), DTypeError,
            "{}: {} must be a real-valued tensor, got {}", who, what, dtype_name(t.dtype()));
  return t.to_vector<double>();
}

// Rows of non-negative entries that sum to 1.
void check_stochastic(const std::string& who, const char* what, const std::vector<double>& v,
                      int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double p = v[r * cols + c];
      ATH_CHECK(std::isfinite(p) && p >= 0, ValueError,
                "{}: {} must hold probabilities, got {} at row {}, column {}", who, what, p, r, c);
      sum += p;
    }
    ATH_CHECK(std::abs(sum - 1) <= kSumTolerance, ValueError,
              "{}: {} row {} sums to {}, not 1 (each row must be a distribution)", who, what, r,
              sum);
  }
}

double log_sum_exp(const double* v, int64_t n) {
  const double m = *std::max_element(v, v + n);
  if (m == kNegInf) return kNegInf;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(v[i] - m);
  return m + std::log(s);
}

std::vector<double> logs(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i] > 0 ? std::log(v[i]) : kNegInf;
  return out;
}

// Uniform in [0, 1) from 53 random bits, so draws do not depend on the standard library
// (std::uniform_real_distribution's algorithm is unspecified; mt19937_64's output is not).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// The first index whose cumulative probability exceeds u, as hmmlearn samples.
int64_t draw(const double* p, int64_t n, std::mt19937_64& rng) {
  const double u = uniform(rng);
  double cdf = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < n; ++i) {
    cdf += p[i];
    if (p[i] > 0) last = i;
    if (cdf > u) return i;
  }
  return last;  // rounding left the total just under u
}

// The Markov chain and frame log-likelihoods of one sequence, for the recursions below.
struct Chain {
  int64_t k;
  const double* start;      // [K]
  const double* trans;      // [K, K]
  const double* log_start;  // [K]
  const double* log_trans;  // [K, K]
};

// Log-space forward-backward: log p(x), and when gamma is given the posteriors [T, K] and the
// expected transition counts added to xi [K, K] (hmmlearn's forward_log, backward_log and
// compute_log_xi_sum). The fallback for sequences the scaled recursion cannot hold.
double forward_backward_log(const Chain& c, const double* lp, int64_t T, double* gamma,
                            double* xi) {
  const int64_t K = c.k;
  std::vector<double> fwd(T * K), bwd(T * K), tmp(K);
  for (int64_t k = 0; k < K; ++k) fwd[k] = c.log_start[k] + lp[k];
  for (int64_t t = 1; t < T; ++t) {
    for (int64_t j = 0; j < K; ++j) {
      for (int64_t i = 0; i < K; ++i) tmp[i] = fwd[(t - 1) * K + i] + c.log_trans[i * K + j];
      fwd[t * K + j] = log_sum_exp(tmp.data(), K) + lp[t * K + j];
    }
  }
  const double log_prob = log_sum_exp(&fwd[(T - 1) * K], K);
  if (gamma == nullptr || log_prob == kNegInf) return log_prob;
  for (int64_t t = T - 2; t >= 0; --t) {
    for (int64_t i = 0; i < K; ++i) {
      for (int64_t j = 0; j < K; ++j) {
        tmp[j] = c.log_trans[i * K + j] + lp[(t + 1) * K + j] + bwd[(t + 1) * K + j];
      }
      bwd[t * K + i] = log_sum_exp(tmp.data(), K);
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < K; ++k) tmp[k] = fwd[t * K + k] + bwd[t * K + k];
    const double norm = log_sum_exp(tmp.data(), K);
    for (int64_t k = 0; k < K; ++k) gamma[t * K + k] = std::exp(tmp[k] - norm);
  }
  if (xi != nullptr) {
    for (int64_t t = 0; t + 1 < T; ++t) {
      for (int64_t i = 0; i < K; ++i) {
        for (int64_t j = 0; j < K; ++j) {
          xi[i * K + j] += std::exp(fwd[t * K + i] + c.log_trans[i * K + j] + lp[(t + 1) * K + j] +
                                    bwd[(t + 1) * K + j] - log_prob);
        }
      }
    }
  }
  return log_prob;
}

// Scaled forward-backward (Rabiner): every frame's forward variables are renormalized to sum to
// 1, and emission probabilities are taken relative to the frame's most likely state, so one exp
// per frame and state suffices and long sequences do not underflow. Same outputs as the log
// version, to which it hands over when a scale leaves [kScaledMin, kScaledMax] (a state far
// less likely than the rest for hundreds of frames) or the sequence is impossible.
double forward_backward(const Chain& c, const double* lp, int64_t T, double* gamma, double* xi) {
  const int64_t K = c.k;
  std::vector<double> b(T * K), alpha(T * K), scale(T);
  double log_prob = 0;
  for (int64_t t = 0; t < T; ++t) {
    const double* lpt = lp + t * K;
    const double m = *std::max_element(lpt, lpt + K);
    if (!std::isfinite(m)) return forward_backward_log(c, lp, T, gamma, xi);
    double* bt = &b[t * K];
    double* at = &alpha[t * K];
    for (int64_t k = 0; k < K; ++k) bt[k] = std::exp(lpt[k] - m);
    if (t == 0) {
      for (int64_t k = 0; k < K; ++k) at[k] = c.start[k] * bt[k];
    } else {
      const double* prev = at - K;
      for (int64_t j = 0; j < K; ++j) at[j] = 0;
      for (int64_t i = 0; i < K; ++i) {
        if (prev[i] == 0) continue;
        for (int64_t j = 0; j < K; ++j) at[j] += prev[i] * c.trans[i * K + j];
      }
      for (int64_t j = 0; j < K; ++j) at[j] *= bt[j];
    }
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += at[k];
    if (!(s >= kScaledMin)) return forward_backward_log(c, lp, T, gamma, xi);
    for (int64_t k = 0; k < K; ++k) at[k] /= s;
    scale[t] = s;
    log_prob += std::log(s) + m;
  }
  if (gamma == nullptr) return log_prob;
  // beta[t] = p(x[t+1:] | state at t) / p(x[t+1:] | x[:t+1]), so alpha * beta is the posterior.
  // All of it first: a hand-over to the log version must find xi untouched.
  std::vector<double> beta(T * K, 1.0), w(K);
  auto weights = [&](int64_t t) {  // emission times beta of frame t + 1, over its scale
    for (int64_t j = 0; j < K; ++j)
      w[j] = b[(t + 1) * K + j] * beta[(t + 1) * K + j] / scale[t + 1];
  };
  for (int64_t t = T - 2; t >= 0; --t) {
    weights(t);
    for (int64_t i = 0; i < K; ++i) {
      double s = 0;
      for (int64_t j = 0; j < K; ++j) s += c.trans[i * K + j] * w[j];
      if (!(s <= kScaledMax)) return forward_backward_log(c, lp, T, gamma, xi);
      beta[t * K + i] = s;
    }
  }
  if (xi != nullptr) {
    for (int64_t t = 0; t + 1 < T; ++t) {
      weights(t);
      for (int64_t i = 0; i < K; ++i) {
        const double a = alpha[t * K + i];
        if (a == 0) continue;
        for (int64_t j = 0; j < K; ++j) xi[i * K + j] += a * c.trans[i * K + j] * w[j];
      }
    }
  }
  // Posteriors renormalized per frame, as hmmlearn does (they sum to 1 up to rounding anyway).
  for (int64_t t = 0; t < T; ++t) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double a = alpha[t * K + k];
      gamma[t * K + k] = a == 0 ? 0.0 : a * beta[t * K + k];
      s += gamma[t * K + k];
    }
    for (int64_t k = 0; k < K; ++k) gamma[t * K + k] /= s;
  }
  return log_prob;
}

// Viterbi in log space with hmmlearn's tie-breaking: the last state is the first maximum, the
// traceback takes the last maximum.
double viterbi(const Chain& c, const double* lp, int64_t T, int64_t* path) {
  const int64_t K = c.k;
  std::vector<double> v(T * K);
  for (int64_t k = 0; k < K; ++k) v[k] = c.log_start[k] + lp[k];
  for (int64_t t = 1; t < T; ++t) {
    for (int64_t j = 0; j < K; ++j) {
      double best = kNegInf;
      for (int64_t i = 0; i < K; ++i) {
        best = std::max(best, v[(t - 1) * K + i] + c.log_trans[i * K + j]);
      }
      v[t * K + j] = best + lp[t * K + j];
    }
  }
  const double* last = &v[(T - 1) * K];
  int64_t state = std::max_element(last, last + K) - last;
  const double log_prob = last[state];
  path[T - 1] = state;
  for (int64_t t = T - 2; t >= 0; --t) {
    std::pair<double, int64_t> best{kNegInf, 0};
    for (int64_t i = 0; i < K; ++i) {
      best = std::max(best, std::make_pair(v[t * K + i] + c.log_trans[i * K + state], i));
    }
    path[t] = state = best.second;
  }
  return log_prob;
}

// Rows scaled to sum to 1; an all-zero row stays zero (hmmlearn's normalize).
void normalize_rows(std::vector<double>& v, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += v[r * cols + c];
    if (s == 0) continue;
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] /= s;
  }
}

}  // namespace

// Prepared observations of one call: sequence boundaries and the frame log-likelihoods.
struct BaseHMM::Frames {
  int64_t n = 0;
  std::vector<int64_t> offsets;  // [n_sequences + 1]
  std::vector<double> obs;       // prepare()'s values
  std::vector<double> lp;        // [n, K]
  int64_t sequences() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

BaseHMM::BaseHMM(std::string name, const Tensor& startprob, const Tensor& transmat)
    : name_(std::move(name)) {
  start_ = values_of(name_, "startprob", startprob);
  ATH_CHECK(startprob.dim() == 1 && startprob.numel() >= 1, ShapeError,
            "{}: startprob must be a non-empty vector [K], got shape {}", name_, startprob.shape());
  k_ = startprob.numel();
  check_stochastic(name_, "startprob", start_, 1, k_);
  trans_ = values_of(name_, "transmat", transmat);
  ATH_CHECK(transmat.shape() == Shape({k_, k_}), ShapeError,
            "{}: transmat must be [K, K] = [{}, {}] for startprob's {} states, got shape {}", name_,
            k_, k_, k_, transmat.shape());
  check_stochastic(name_, "transmat", trans_, k_, k_);
}

Tensor BaseHMM::startprob() const { return from_vector(start_, {k_}); }
Tensor BaseHMM::transmat() const { return from_vector(trans_, {k_, k_}); }

BaseHMM::Frames BaseHMM::frames(const Tensor& x, const std::vector<int64_t>& lengths) const {
  ATH_CHECK(x.defined(), ValueError, "{}: the observations are an undefined tensor", name_);
  Frames f;
  f.obs = prepare(x, f.n);
  ATH_CHECK(f.n >= 1, ValueError, "{}: there are no observations (shape {})", name_, x.shape());
  f.offsets.push_back(0);
  if (lengths.empty()) {
    f.offsets.push_back(f.n);
  } else {
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      ATH_CHECK(lengths[i] >= 1, ValueError,
                "{}: lengths[{}] is {}; every sequence needs at least one observation", name_, i,
                lengths[i]);
      ATH_CHECK(lengths[i] <= f.n - f.offsets.back(), ValueError,
                "{}: lengths sum to more than the {} observations", name_, f.n);
      f.offsets.push_back(f.offsets.back() + lengths[i]);
    }
    ATH_CHECK(f.offsets.back() == f.n, ValueError,
              "{}: lengths sum to {} but there are {} observations", name_, f.offsets.back(), f.n);
  }
  f.lp.resize(f.n * k_);
  log_emission(f.obs, f.n, f.lp.data());
  return f;
}

// Forward-backward over every sequence in parallel: posteriors into gamma [n, K], per-sequence
// log-likelihoods, and (if xi) expected transitions [S, K, K] per sequence, which the caller
// adds up in order so results do not depend on the thread count.
void BaseHMM::posteriors(const Frames& f, std::vector<double>& gamma, std::vector<double>* xi,
                         std::vector<double>* seq_logp) const {
  const int64_t S = f.sequences(), K = k_;
  const std::vector<double> log_start = logs(start_), log_trans = logs(trans_);
  const Chain chain{K, start_.data(), trans_.data(), log_start.data(), log_trans.data()};
  gamma.assign(f.n * K, 0.0);
  if (xi != nullptr) xi->assign(S * K * K, 0.0);
  std::vector<double> logp(S);
  const int64_t grain = f.n * K * K < kPointwiseGrain ? S : 1;
  parallel_for(0, S, grain, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = f.offsets[s], T = f.offsets[s + 1] - o;
      logp[s] = forward_backward(chain, &f.lp[o * K], T, &gamma[o * K],
                                 xi != nullptr ? &(*xi)[s * K * K] : nullptr);
    }
  });
  for (int64_t s = 0; s < S; ++s) {
    ATH_CHECK(logp[s] > kNegInf, ValueError,
              "{}: sequence {} (observations {} to {}) has probability 0 under the model, so "
              "its posteriors are undefined",
              name_, s, f.offsets[s], f.offsets[s + 1] - 1);
  }
  if (seq_logp != nullptr) *seq_logp = std::move(logp);
}

double BaseHMM::score(const Tensor& x, const std::vector<int64_t>& lengths) const {
  const Frames f = frames(x, lengths);
  const std::vector<double> log_start = logs(start_), log_trans = logs(trans_);
  const Chain chain{k_, start_.data(), trans_.data(), log_start.data(), log_trans.data()};
  const int64_t S = f.sequences();
  std::vector<double> logp(S);
  parallel_for(0, S, f.n * k_ * k_ < kPointwiseGrain ? S : 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = f.offsets[s];
      logp[s] = forward_backward(chain, &f.lp[o * k_], f.offsets[s + 1] - o, nullptr, nullptr);
    }
  });
  double total = 0;
  for (double v : logp) total += v;
  return total;
}

HmmPosteriors BaseHMM::score_samples(const Tensor& x, const std::vector<int64_t>& lengths) const {
  const Frames f = frames(x, lengths);
  std::vector<double> gamma, logp;
  posteriors(f, gamma, nullptr, &logp);
  double total = 0;
  for (double v : logp) total += v;
  return {total, from_vector(gamma, {f.n, k_})};
}

Tensor BaseHMM::predict_proba(const Tensor& x, const std::vector<int64_t>& lengths) const {
  return score_samples(x, lengths).posteriors;
}

HmmPath BaseHMM::decode(const Tensor& x, const std::vector<int64_t>& lengths) const {
  const Frames f = frames(x, lengths);
  const std::vector<double> log_start = logs(start_), log_trans = logs(trans_);
  const Chain chain{k_, start_.data(), trans_.data(), log_start.data(), log_trans.data()};
  const int64_t S = f.sequences();
  std::vector<double> logp(S);
  std::vector<int64_t> path(f.n);
  parallel_for(0, S, f.n * k_ * k_ < kPointwiseGrain ? S : 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = f.offsets[s];
      logp[s] = viterbi(chain, &f.lp[o * k_], f.offsets[s + 1] - o, &path[o]);
    }
  });
  double total = 0;
  for (double v : logp) total += v;
  return {total, from_vector(path, {f.n})};
}

Tensor BaseHMM::predict(const Tensor& x, const std::vector<int64_t>& lengths) const {
  return decode(x, lengths).states;
}

std::vector<double> BaseHMM::fit(const Tensor& x, const std::vector<int64_t>& lengths,
                                 const HmmFitOptions& options) {
  ATH_CHECK(options.n_iter >= 0, ValueError, "{}: fit needs n_iter >= 0, got {}", name_,
            options.n_iter);
  ATH_CHECK(!std::isnan(options.tol), ValueError, "{}: fit's tol is NaN", name_);
  Frames f = frames(x, lengths);
  const int64_t S = f.sequences(), K = k_;
  std::vector<double> history, gamma, xi, logp;
  for (int64_t it = 0; it < options.n_iter; ++it) {
    if (it > 0) log_emission(f.obs, f.n, f.lp.data());  // the emissions moved
    posteriors(f, gamma, &xi, &logp);
    double total = 0;
    for (double v : logp) total += v;

    // M-step, hmmlearn's with its default Dirichlet priors of 1 (which add nothing): expected
    // counts normalized. Zero probabilities stay zero (hmmlearn's np.where; the expected counts
    // of an impossible start or transition are 0 anyway).
    std::vector<double> start(K, 0.0), trans(K * K, 0.0);
    for (int64_t s = 0; s < S; ++s) {
      for (int64_t k = 0; k < K; ++k) start[k] += gamma[f.offsets[s] * K + k];
      for (int64_t i = 0; i < K * K; ++i) trans[i] += xi[s * K * K + i];
    }
    for (int64_t k = 0; k < K; ++k) start[k] = start_[k] == 0 ? 0.0 : start[k];
    for (int64_t i = 0; i < K * K; ++i) trans[i] = trans_[i] == 0 ? 0.0 : trans[i];
    normalize_rows(start, 1, K);
    normalize_rows(trans, K, K);
    start_ = std::move(start);
    trans_ = std::move(trans);
    update_emission(f.obs, f.n, gamma);

    history.push_back(total);
    const std::size_t h = history.size();
    if (h >= 2 && history[h - 1] - history[h - 2] < options.tol) break;
  }
  return history;
}

HmmSample BaseHMM::sample(int64_t n, uint64_t seed) const {
  ATH_CHECK(n >= 1, ValueError, "{}: sample needs n >= 1 frames, got {}", name_, n);
  std::mt19937_64 rng(seed);
  const int64_t width = obs_width();
  std::vector<int64_t> states(n);
  std::vector<double> values(n * width);
  int64_t state = draw(start_.data(), k_, rng);
  for (int64_t t = 0; t < n; ++t) {
    if (t > 0) state = draw(&trans_[state * k_], k_, rng);
    states[t] = state;
    sample_emission(state, rng, &values[t * width]);
  }
  return {sample_tensor(values, n), from_vector(states, {n})};
}

// ---- CategoricalHMM -------------------------------------------------------------------------

CategoricalHMM::CategoricalHMM(const Tensor& startprob, const Tensor& transmat,
                               const Tensor& emissionprob)
    : BaseHMM("CategoricalHMM", startprob, transmat) {
  emission_ = values_of(name_, "emissionprob", emissionprob);
  ATH_CHECK(emissionprob.dim() == 2 && emissionprob.size(0) == k_ && emissionprob.size(1) >= 1,
            ShapeError, "{}: emissionprob must be [K, M] with K = {} states, got shape {}", name_,
            k_, emissionprob.shape());
  m_ = emissionprob.size(1);
  check_stochastic(name_, "emissionprob", emission_, k_, m_);
}

Tensor CategoricalHMM::emissionprob() const { return from_vector(emission_, {k_, m_}); }

std::vector<double> CategoricalHMM::prepare(const Tensor& x, int64_t& n_out) const {
  ATH_CHECK(is_integral(x.dtype()), DTypeError,
            "{}: observations must be integer symbols, got dtype {}", name_, dtype_name(x.dtype()));
  ATH_CHECK(x.dim() == 1 || (x.dim() == 2 && x.size(1) == 1), ShapeError,
            "{}: observations must be symbols [n] or [n, 1], got shape {}", name_, x.shape());
  const std::vector<int64_t> symbols = x.to_vector<int64_t>();
  std::vector<double> obs(symbols.size());
  for (std::size_t t = 0; t < symbols.size(); ++t) {
    ATH_CHECK(symbols[t] >= 0 && symbols[t] < m_, IndexError,
              "{}: symbol {} at position {} is out of range for {} symbols [0, {})", name_,
              symbols[t], t, m_, m_);
    obs[t] = static_cast<double>(symbols[t]);
  }
  n_out = static_cast<int64_t>(obs.size());
  return obs;
}

void CategoricalHMM::log_emission(const std::vector<double>& obs, int64_t n, double* out) const {
  const std::vector<double> log_e = logs(emission_);
  for (int64_t t = 0; t < n; ++t) {
    const auto m = static_cast<int64_t>(obs[t]);
    for (int64_t k = 0; k < k_; ++k) out[t * k_ + k] = log_e[k * m_ + m];
  }
}

// hmmlearn: emissionprob = expected symbol counts per state (prior 1 adds nothing), normalized.
void CategoricalHMM::update_emission(const std::vector<double>& obs, int64_t n,
                                     const std::vector<double>& gamma) {
  std::vector<double> counts(k_ * m_, 0.0);
  for (int64_t t = 0; t < n; ++t) {
    const auto m = static_cast<int64_t>(obs[t]);
    for (int64_t k = 0; k < k_; ++k) counts[k * m_ + m] += gamma[t * k_ + k];
  }
  normalize_rows(counts, k_, m_);
  emission_ = std::move(counts);
}

int64_t CategoricalHMM::obs_width() const { return 1; }

void CategoricalHMM::sample_emission(int64_t k, std::mt19937_64& rng, double* out) const {
  *out = static_cast<double>(draw(&emission_[k * m_], m_, rng));
}

Tensor CategoricalHMM::sample_tensor(const std::vector<double>& values, int64_t n) const {
  return from_vector(std::vector<int64_t>(values.begin(), values.end()), {n});
}

// ---- GaussianHMM ----------------------------------------------------------------------------

GaussianHMM::GaussianHMM(const Tensor& startprob, const Tensor& transmat, const Tensor& means,
                         const Tensor& covars)
    : BaseHMM("GaussianHMM", startprob, transmat) {
  means_ = values_of(name_, "means", means);
  ATH_CHECK(means.dim() == 2 && means.size(0) == k_ && means.size(1) >= 1, ShapeError,
            "{}: means must be [K, D] with K = {} states, got shape {}", name_, k_, means.shape());
  d_ = means.size(1);
  covars_ = values_of(name_, "covars", covars);
  ATH_CHECK(covars.shape() == means.shape(), ShapeError,
            "{}: covars must be the diagonal variances [K, D] = {}, got shape {}", name_,
            means.shape(), covars.shape());
  for (std::size_t i = 0; i < means_.size(); ++i) {
    ATH_CHECK(std::isfinite(means_[i]), ValueError, "{}: means[{}, {}] is {}", name_, i / d_,
              i % d_, means_[i]);
    ATH_CHECK(std::isfinite(covars_[i]) && covars_[i] > 0, ValueError,
              "{}: covars must be positive and finite, got {} at [{}, {}]", name_, covars_[i],
              i / d_, i % d_);
  }
}

Tensor GaussianHMM::means() const { return from_vector(means_, {k_, d_}); }
Tensor GaussianHMM::covars() const { return from_vector(covars_, {k_, d_}); }

std::vector<double> GaussianHMM::prepare(const Tensor& x, int64_t& n_out) const {
  ATH_CHECK(is_floating(x.dtype()) || is_integral(x.dtype()), DTypeError,
            "{}: observations must be real-valued, got dtype {}", name_, dtype_name(x.dtype()));
  ATH_CHECK(x.dim() == 2 && x.size(1) == d_, ShapeError,
            "{}: observations must be [n, D] with D = {} features, got shape {}", name_, d_,
            x.shape());
  std::vector<double> obs = x.to_vector<double>();
  for (std::size_t i = 0; i < obs.size(); ++i) {
    ATH_CHECK(std::isfinite(obs[i]), ValueError, "{}: observation [{}, {}] is {}", name_, i / d_,
              i % d_, obs[i]);
  }
  n_out = x.size(0);
  return obs;
}

// hmmlearn's _log_multivariate_normal_density_diag.
void GaussianHMM::log_emission(const std::vector<double>& obs, int64_t n, double* out) const {
  std::vector<double> base(k_);
  for (int64_t k = 0; k < k_; ++k) {
    double s = static_cast<double>(d_) * std::log(2 * std::numbers::pi);
    for (int64_t d = 0; d < d_; ++d) s += std::log(covars_[k * d_ + d]);
    base[k] = -0.5 * s;
  }
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / (k_ * d_));
  parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const double* xt = &obs[t * d_];
      for (int64_t k = 0; k < k_; ++k) {
        double q = 0;
        for (int64_t d = 0; d < d_; ++d) {
          const double diff = xt[d] - means_[k * d_ + d];
          q += diff * diff / covars_[k * d_ + d];
        }
        out[t * k_ + k] = base[k] - 0.5 * q;
      }
    }
  });
}

// hmmlearn's diag M-step with its defaults: means = sum_t g x / sum_t g and
// covars = (covars_prior + sum_t g (x - means)^2) / max(max(covars_weight - 1, 0) + sum_t g,
// 1e-5). hmmlearn expands the squared deviation as sum g x^2 - 2 means sum g x + means^2 sum g;
// summing (x - means)^2 directly is the same number without the cancellation. A state with no
// posterior mass at all keeps its parameters (hmmlearn's 0 / 0 makes them NaN).
void GaussianHMM::update_emission(const std::vector<double>& obs, int64_t n,
                                  const std::vector<double>& gamma) {
  std::vector<double> post(k_, 0.0), sum(k_ * d_, 0.0), dev(k_ * d_, 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t k = 0; k < k_; ++k) {
      const double g = gamma[t * k_ + k];
      post[k] += g;
      for (int64_t d = 0; d < d_; ++d) sum[k * d_ + d] += g * obs[t * d_ + d];
    }
  }
  std::vector<double> means = means_;
  for (int64_t k = 0; k < k_; ++k) {
    if (post[k] == 0) continue;
    for (int64_t d = 0; d < d_; ++d) means[k * d_ + d] = sum[k * d_ + d] / post[k];
  }
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t k = 0; k < k_; ++k) {
      const double g = gamma[t * k_ + k];
      for (int64_t d = 0; d < d_; ++d) {
        const double diff = obs[t * d_ + d] - means[k * d_ + d];
        dev[k * d_ + d] += g * diff * diff;
      }
    }
  }
  for (int64_t k = 0; k < k_; ++k) {
    if (post[k] == 0) continue;
    const double denom = std::max(std::max(kCovarsWeight - 1, 0.0) + post[k], kMinDenominator);
    for (int64_t d = 0; d < d_; ++d) covars_[k * d_ + d] = (kCovarsPrior + dev[k * d_ + d]) / denom;
  }
  means_ = std::move(means);
}

int64_t GaussianHMM::obs_width() const { return d_; }

// Box-Muller (one draw of the pair), for draws that do not depend on the standard library.
void GaussianHMM::sample_emission(int64_t k, std::mt19937_64& rng, double* out) const {
  for (int64_t d = 0; d < d_; ++d) {
    const double u1 = 1.0 - uniform(rng), u2 = uniform(rng);
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    out[d] = means_[k * d_ + d] + std::sqrt(covars_[k * d_ + d]) * z;
  }
}

Tensor GaussianHMM::sample_tensor(const std::vector<double>& values, int64_t n) const {
  return from_vector(values, {n, d_});
}

}  // namespace ath::seq
