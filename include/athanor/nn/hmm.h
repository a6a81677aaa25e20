// Hidden Markov models with categorical or diagonal-Gaussian emissions, as hmmlearn 0.3.3's
// CategoricalHMM and GaussianHMM(covariance_type="diag"): the likelihood (forward algorithm),
// posterior state marginals (forward-backward), the most likely state path (Viterbi) and
// Baum-Welch EM with hmmlearn's M-step and default priors.
//
//   #include "athanor/nn/hmm.h"
//   seq::CategoricalHMM hmm(from_vector<double>({0.6, 0.4}),                    // startprob [K]
//                           from_vector<double>({0.7, 0.3, 0.4, 0.6}, {2, 2}),  // transmat [K, K]
//                           from_vector<double>({0.5, 0.4, 0.1, 0.1, 0.3, 0.6}, {2, 3}));
//   Tensor x = from_vector<int64_t>({0, 1, 2, 2, 0, 1, 2});  // two sequences: 3 and 4 symbols
//   double ll = hmm.score(x, {3, 4});                        // log p(x), summed over sequences
//   Tensor post = hmm.predict_proba(x, {3, 4});              // [7, 2] posterior state marginals
//   auto [best, states] = hmm.decode(x, {3, 4});             // log p(x, path), int64 path [7]
//   assert(best <= ll && states.size(0) == 7);
//   std::vector<double> history = hmm.fit(x, {3, 4}, {.n_iter = 20});  // EM; updates the model
//   assert(history.back() >= history.front() && hmm.score(x, {3, 4}) >= history.back());
//
// Observations `x` hold several sequences one after another; `lengths` gives their lengths
// (each at least 1, summing to the number of observations; empty: one sequence). Categorical
// observations are integer symbols [n] (or [n, 1]) in [0, M); Gaussian ones are [n, D].
//
// Everything runs in float64 on the host, independent sequences in parallel; parameters are
// float64 tensors. The forward-backward recursion is the scaled one (each frame renormalized,
// emission probabilities taken relative to the frame's best state), so sequences of any length
// neither underflow nor overflow; Viterbi runs in log space. A sequence the model cannot emit
// (zero probability, e.g. a symbol no reachable state emits) scores -inf; asking for its
// posteriors or fitting on it is a ValueError.
//
// Not autograd ops: parameters are plain values that fit() replaces, not trainable tensors.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "athanor/tensor/tensor.h"

namespace ath::seq {

// hmmlearn's n_iter and tol: EM stops after n_iter iterations, or earlier once an iteration
// raises the log-likelihood by less than tol.
struct HmmFitOptions {
  int64_t n_iter = 10;
  double tol = 1e-2;
};

// score_samples(): the total log-likelihood and the posterior state marginals [n, K].
struct HmmPosteriors {
  double log_prob = 0;
  Tensor posteriors;
};

// decode(): log p(x, best path) summed over sequences and the path, int64 [n].
struct HmmPath {
  double log_prob = 0;
  Tensor states;
};

// sample(): observations (int64 [n] or float64 [n, D]) and the states that emitted them [n].
struct HmmSample {
  Tensor x;
  Tensor states;
};

// What both models share: the Markov chain (startprob [K], transmat [K, K]) and the algorithms.
// The emission model is the subclass's.
class BaseHMM {
 public:
  virtual ~BaseHMM() = default;

  int64_t n_states() const { return k_; }
  Tensor startprob() const;  // [K] float64
  Tensor transmat() const;   // [K, K] float64

  // Total log-likelihood log p(x) of all sequences.
  double score(const Tensor& x, const std::vector<int64_t>& lengths = {}) const;
  // The log-likelihood and p(state at t | its sequence) [n, K].
  HmmPosteriors score_samples(const Tensor& x, const std::vector<int64_t>& lengths = {}) const;
  Tensor predict_proba(const Tensor& x, const std::vector<int64_t>& lengths = {}) const;
  // The most likely state path of each sequence (Viterbi; ties broken as hmmlearn does).
  HmmPath decode(const Tensor& x, const std::vector<int64_t>& lengths = {}) const;
  Tensor predict(const Tensor& x, const std::vector<int64_t>& lengths = {}) const;
  // Baum-Welch EM from the current parameters, updating all of them. Returns the log-likelihood
  // of the data at the start of each iteration (hmmlearn's monitor_.history: non-decreasing;
  // the fitted model's own score() is one more EM step up).
  std::vector<double> fit(const Tensor& x, const std::vector<int64_t>& lengths = {},
                          const HmmFitOptions& options = {});
  // One sequence of n frames drawn from the model (a 64-bit Mersenne twister seeded with seed;
  // the draws are this library's own, not numpy's).
  HmmSample sample(int64_t n, uint64_t seed = 0) const;

 protected:
  BaseHMM(std::string name, const Tensor& startprob, const Tensor& transmat);

  // Observations checked and flattened to float64 (symbols are exact as doubles); n_out gets
  // the number of frames.
  virtual std::vector<double> prepare(const Tensor& x, int64_t& n_out) const = 0;
  // Log emission densities [n, K] of prepared observations into out.
  virtual void log_emission(const std::vector<double>& obs, int64_t n, double* out) const = 0;
  // The emission M-step from the posteriors gamma [n, K].
  virtual void update_emission(const std::vector<double>& obs, int64_t n,
                               const std::vector<double>& gamma) = 0;
  // Values per frame (1 symbol or D features), and one emission of state k into out.
  virtual int64_t obs_width() const = 0;
  virtual void sample_emission(int64_t k, std::mt19937_64& rng, double* out) const = 0;
  virtual Tensor sample_tensor(const std::vector<double>& values, int64_t n) const = 0;

  const std::string& name() const { return name_; }

  std::string name_;
  int64_t k_ = 0;
  std::vector<double> start_;  // [K]
  std::vector<double> trans_;  // [K, K]

 private:
  struct Frames;
  Frames frames(const Tensor& x, const std::vector<int64_t>& lengths) const;
  void posteriors(const Frames& f, std::vector<double>& gamma, std::vector<double>* xi,
                  std::vector<double>* seq_logp) const;
};

// Emissions: emissionprob [K, M], the probability of symbol m in state k (rows sum to 1).
class CategoricalHMM : public BaseHMM {
 public:
  CategoricalHMM(const Tensor& startprob, const Tensor& transmat, const Tensor& emissionprob);
  int64_t n_symbols() const { return m_; }
  Tensor emissionprob() const;  // [K, M] float64

 protected:
  std::vector<double> prepare(const Tensor& x, int64_t& n_out) const override;
  void log_emission(const std::vector<double>& obs, int64_t n, double* out) const override;
  void update_emission(const std::vector<double>& obs, int64_t n,
                       const std::vector<double>& gamma) override;
  int64_t obs_width() const override;
  void sample_emission(int64_t k, std::mt19937_64& rng, double* out) const override;
  Tensor sample_tensor(const std::vector<double>& values, int64_t n) const override;

 private:
  int64_t m_ = 0;
  std::vector<double> emission_;  // [K, M]
};

// Emissions: a Gaussian with diagonal covariance per state, means [K, D], variances [K, D] (> 0).
// EM uses hmmlearn's defaults: an inverse-gamma prior on each variance (covars_prior 1e-2,
// covars_weight 1), so var = (1e-2 + sum_t g (x - mean)^2) / max(sum_t g, 1e-5), and no prior on
// the means. (min_covar, which hmmlearn adds only when it initializes covars itself, is unused.)
class GaussianHMM : public BaseHMM {
 public:
  GaussianHMM(const Tensor& startprob, const Tensor& transmat, const Tensor& means,
              const Tensor& covars);
  int64_t n_features() const { return d_; }
  Tensor means() const;   // [K, D] float64
  Tensor covars() const;  // [K, D] float64, the diagonal variances

 protected:
  std::vector<double> prepare(const Tensor& x, int64_t& n_out) const override;
  void log_emission(const std::vector<double>& obs, int64_t n, double* out) const override;
  void update_emission(const std::vector<double>& obs, int64_t n,
                       const std::vector<double>& gamma) override;
  int64_t obs_width() const override;
  void sample_emission(int64_t k, std::mt19937_64& rng, double* out) const override;
  Tensor sample_tensor(const std::vector<double>& values, int64_t n) const override;

 private:
  int64_t d_ = 0;
  std::vector<double> means_;   // [K, D]
  std::vector<double> covars_;  // [K, D]
};

}  // namespace ath::seq
