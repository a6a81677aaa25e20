// ath::seq::CategoricalHMM and GaussianHMM: hmmlearn 0.3.3 goldens (tools/golden/hmm.py: score,
// posteriors, Viterbi, parameters after 1 and 5 EM iterations and after convergence), a
// brute-force check over every state path of tiny models, EM monotonicity, long sequences and
// the log-space hand-over, hmmlearn's Viterbi tie-breaking, impossible sequences, sampling,
// thread-count independence and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>

#include "athanor/athanor.h"
#include "athanor/nn/hmm.h"
#include "support/golden.h"

namespace ath::seq {
namespace {

using testing::expect_close;
using testing::GoldenCase;

const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> c = testing::load_golden("hmm");
  return c;
}

Tensor mat(std::vector<double> v, int64_t rows, int64_t cols) {
  return from_vector(v, {rows, cols});
}
Tensor vec(std::vector<double> v) { return from_vector(v); }

std::unique_ptr<BaseHMM> model_of(const GoldenCase& c, const std::string& prefix = "") {
  if (c.attrs.at("kind") == "categorical") {
    return std::make_unique<CategoricalHMM>(c.t(prefix + "startprob"), c.t(prefix + "transmat"),
                                            c.t(prefix + "emissionprob"));
  }
  return std::make_unique<GaussianHMM>(c.t(prefix + "startprob"), c.t(prefix + "transmat"),
                                       c.t(prefix + "means"), c.t(prefix + "covars"));
}

// The fitted parameters of a model against the golden's "<tag>_<param>" tensors.
void expect_params(const BaseHMM& m, const GoldenCase& c, const std::string& tag, double rtol) {
  const double atol = 1e-12;
  expect_close(m.startprob(), c.t(tag + "_startprob"), rtol, atol, tag + " startprob");
  expect_close(m.transmat(), c.t(tag + "_transmat"), rtol, atol, tag + " transmat");
  if (const auto* cat = dynamic_cast<const CategoricalHMM*>(&m)) {
    expect_close(cat->emissionprob(), c.t(tag + "_emissionprob"), rtol, atol, tag + " emission");
  } else {
    const auto& g = dynamic_cast<const GaussianHMM&>(m);
    expect_close(g.means(), c.t(tag + "_means"), rtol, atol, tag + " means");
    expect_close(g.covars(), c.t(tag + "_covars"), rtol, atol, tag + " covars");
  }
}

Tensor history_tensor(const std::vector<double>& h) { return from_vector(h); }

TEST(HmmGolden, MatchesHmmlearn) {
  ASSERT_EQ(cases().size(), 7u);
  for (const GoldenCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<int64_t> lengths = c.attrs.at("lengths").get<std::vector<int64_t>>();
    const Tensor& x = c.t("X");
    auto m = model_of(c);
    const double score = m->score(x, lengths);
    EXPECT_NEAR(score, c.t("score").item<double>(), 1e-6 * std::abs(score));
    HmmPosteriors p = m->score_samples(x, lengths);
    EXPECT_NEAR(p.log_prob, score, 1e-9 * std::abs(score));
    expect_close(p.posteriors, c.t("posteriors"), 1e-6, 1e-12, "posteriors");
    HmmPath path = m->decode(x, lengths);
    EXPECT_NEAR(path.log_prob, c.t("viterbi_logprob").item<double>(), 1e-6 * std::abs(score));
    EXPECT_EQ(path.states.to_vector<int64_t>(), c.t("viterbi_path").to_vector<int64_t>());

    auto m1 = model_of(c);
    EXPECT_EQ(m1->fit(x, lengths, {.n_iter = 1, .tol = 0}).size(), 1u);
    expect_params(*m1, c, "fit1", 1e-6);

    auto m5 = model_of(c);
    const std::vector<double> h5 = m5->fit(x, lengths, {.n_iter = 5, .tol = -1e300});
    expect_close(history_tensor(h5), c.t("fit5_history"), 1e-6, 0, "fit5 history");
    expect_params(*m5, c, "fit5", 1e-6);

    auto mc = model_of(c);
    const std::vector<double> hc = mc->fit(x, lengths,
                                           {.n_iter = c.attrs.at("conv_n_iter").get<int64_t>(),
                                            .tol = c.attrs.at("conv_tol").get<double>()});
    expect_close(history_tensor(hc), c.t("conv_history"), 1e-6, 0, "converged history");
    expect_params(*mc, c, "conv", 1e-6);
  }
}

// ---- brute force: every K^T state path of one sequence ----------------------------------------

struct Brute {
  double log_prob;               // log sum over paths
  double best_log_prob;          // log of the best path's joint probability
  std::vector<int64_t> best;     // the best path
  std::vector<double> marginal;  // [T, K]
};

// emit(t, k): the emission probability of frame t in state k.
Brute brute_force(const std::vector<double>& start, const std::vector<double>& trans, int64_t K,
                  int64_t T, const std::function<double(int64_t, int64_t)>& emit) {
  Brute r{0, -INFINITY, std::vector<int64_t>(T), std::vector<double>(T * K, 0.0)};
  std::vector<int64_t> s(T, 0);
  double total = 0;
  for (int64_t code = 0; code < static_cast<int64_t>(std::pow(K, T)); ++code) {
    for (int64_t t = 0, c = code; t < T; ++t, c /= K) s[t] = c % K;
    double p = start[s[0]] * emit(0, s[0]);
    for (int64_t t = 1; t < T; ++t) p *= trans[s[t - 1] * K + s[t]] * emit(t, s[t]);
    total += p;
    for (int64_t t = 0; t < T; ++t) r.marginal[t * K + s[t]] += p;
    if (std::log(p) > r.best_log_prob) {
      r.best_log_prob = std::log(p);
      r.best = s;
    }
  }
  r.log_prob = std::log(total);
  for (double& v : r.marginal) v /= total;
  return r;
}

void expect_brute(const BaseHMM& m, const Tensor& x, const Brute& b) {
  EXPECT_NEAR(m.score(x), b.log_prob, 1e-12 * std::abs(b.log_prob));
  HmmPath path = m.decode(x);
  EXPECT_NEAR(path.log_prob, b.best_log_prob, 1e-12 * std::abs(b.best_log_prob));
  EXPECT_EQ(path.states.to_vector<int64_t>(), b.best);
  const std::vector<double> post = m.predict_proba(x).to_vector<double>();
  ASSERT_EQ(post.size(), b.marginal.size());
  for (std::size_t i = 0; i < post.size(); ++i) EXPECT_NEAR(post[i], b.marginal[i], 1e-12);
}

TEST(HmmBruteForce, CategoricalEveryPath) {
  const std::vector<double> start{0.5, 0.3, 0.2},
      trans{0.6, 0.3, 0.1, 0.2, 0.5, 0.3, 0.25, 0.25, 0.5},
      emis{0.7, 0.2, 0.1, 0.1, 0.6, 0.3, 0.3, 0.3, 0.4};
  const std::vector<int64_t> sym{0, 2, 1, 1, 0, 2};
  CategoricalHMM m(vec(start), mat(trans, 3, 3), mat(emis, 3, 3));
  expect_brute(m, from_vector(sym), brute_force(start, trans, 3, 6, [&](int64_t t, int64_t k) {
                 return emis[k * 3 + sym[t]];
               }));
  // A single frame: the posterior is start * emission, normalized.
  const std::vector<int64_t> one{2};
  expect_brute(m, from_vector(one), brute_force(start, trans, 3, 1, [&](int64_t t, int64_t k) {
                 return emis[k * 3 + one[t]];
               }));
}

TEST(HmmBruteForce, GaussianEveryPath) {
  const std::vector<double> start{0.4, 0.6}, trans{0.8, 0.2, 0.35, 0.65},
      means{-1.0, 0.5, 1.5, -0.5}, covars{0.8, 1.3, 0.6, 2.0};
  const std::vector<double> x{-0.9, 0.3, 1.2, -0.1, 2.0, -1.5, 0.1,  0.4,
                              -1.1, 0.9, 1.7, -0.8, 1.4, 0.2,  -0.3, 0.6};  // T = 8 frames, D = 2
  GaussianHMM m(vec(start), mat(trans, 2, 2), mat(means, 2, 2), mat(covars, 2, 2));
  auto emit = [&](int64_t t, int64_t k) {
    double p = 1;
    for (int64_t d = 0; d < 2; ++d) {
      const double v = covars[k * 2 + d], z = x[t * 2 + d] - means[k * 2 + d];
      p *= std::exp(-0.5 * z * z / v) / std::sqrt(2 * std::numbers::pi * v);
    }
    return p;
  };
  expect_brute(m, mat(x, 8, 2), brute_force(start, trans, 2, 8, emit));
}

// ---- EM ------------------------------------------------------------------------------------

void expect_monotone(const std::vector<double>& h) {
  for (std::size_t i = 1; i < h.size(); ++i) {
    EXPECT_GE(h[i] - h[i - 1], -1e-9 * std::abs(h[i])) << "iteration " << i;
  }
}

TEST(HmmFit, MonotoneOnLargerRandomCases) {
  // Data from one model, EM started from another: 4 states, 6 symbols, 12 sequences.
  CategoricalHMM truth(
      vec({0.4, 0.3, 0.2, 0.1}),
      mat({0.7, 0.1, 0.1, 0.1, 0.1, 0.7, 0.1, 0.1, 0.1, 0.1, 0.7, 0.1, 0.2, 0.2, 0.2, 0.4}, 4, 4),
      mat({0.5, 0.3, 0.1, 0.05, 0.03, 0.02, 0.02, 0.03, 0.05, 0.1, 0.3,  0.5,
           0.2, 0.2, 0.2, 0.2,  0.1,  0.1,  0.05, 0.05, 0.4,  0.4, 0.05, 0.05},
          4, 6));
  std::vector<Tensor> xs;
  std::vector<int64_t> lengths;
  for (int64_t s = 0; s < 12; ++s) {
    lengths.push_back(50 + 37 * s);
    xs.push_back(truth.sample(lengths.back(), 100 + s).x);
  }
  const Tensor x = cat(xs, 0);
  std::vector<double> emis(24);
  for (int64_t i = 0; i < 24; ++i) emis[i] = (1.0 + (i * 7) % 5) / 1.0;
  Tensor e = mat(emis, 4, 6);
  e = e / e.sum({1}, true);
  CategoricalHMM m(vec({0.25, 0.25, 0.25, 0.25}), full({4, 4}, 0.25, kFloat64), e);
  const std::vector<double> h = m.fit(x, lengths, {.n_iter = 40, .tol = -1e300});
  ASSERT_EQ(h.size(), 40u);
  expect_monotone(h);
  EXPECT_GT(h.back(), h.front() + 10);
  EXPECT_GE(m.score(x, lengths), h.back() - 1e-9 * std::abs(h.back()));

  GaussianHMM gt(vec({0.5, 0.3, 0.2}), mat({0.9, 0.05, 0.05, 0.1, 0.8, 0.1, 0.05, 0.15, 0.8}, 3, 3),
                 mat({-2, 0, 1, 1, 3, -1}, 3, 2), mat({0.5, 1, 1, 0.3, 0.8, 0.8}, 3, 2));
  const HmmSample s = gt.sample(3000, 7);
  GaussianHMM g(vec({1.0 / 3, 1.0 / 3, 1.0 / 3}), full({3, 3}, 1.0 / 3, kFloat64),
                mat({-1, 1, 0, 0, 1, -1}, 3, 2), full({3, 2}, 2.0, kFloat64));
  const std::vector<double> hg = g.fit(s.x, {1000, 1, 999, 1000}, {.n_iter = 30, .tol = -1e300});
  ASSERT_EQ(hg.size(), 30u);
  expect_monotone(hg);
}

TEST(HmmFit, StopsAtTolAndKeepsZeros) {
  CategoricalHMM m(vec({1.0, 0.0}), mat({0.9, 0.1, 0.0, 1.0}, 2, 2),
                   mat({0.6, 0.4, 0.3, 0.7}, 2, 2));
  const Tensor x = from_vector<int64_t>({0, 0, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1});
  const std::vector<double> h = m.fit(x, {6, 8}, {.n_iter = 500, .tol = 1e-2});
  ASSERT_GE(h.size(), 2u);
  EXPECT_LT(h.size(), 500u);
  EXPECT_LT(h[h.size() - 1] - h[h.size() - 2], 1e-2);
  EXPECT_EQ(m.startprob().to_vector<double>()[1], 0.0);  // zeros stay zero, as in hmmlearn
  EXPECT_EQ(m.transmat().to_vector<double>()[2], 0.0);
  EXPECT_TRUE(m.fit(x, {}, {.n_iter = 0}).empty());
}

TEST(HmmFit, IndependentOfThreadCount) {
  GaussianHMM gt(vec({0.6, 0.4}), mat({0.95, 0.05, 0.1, 0.9}, 2, 2), mat({0, 3}, 2, 1),
                 mat({1, 0.5}, 2, 1));
  const Tensor x = gt.sample(40000, 3).x;
  std::vector<int64_t> lengths(400, 100);
  const int saved = get_num_threads();
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    GaussianHMM m(vec({0.5, 0.5}), mat({0.5, 0.5, 0.5, 0.5}, 2, 2), mat({-1, 1}, 2, 1),
                  mat({2, 2}, 2, 1));
    std::vector<double> r = m.fit(x, lengths, {.n_iter = 3});
    for (double v : m.means().to_vector<double>()) r.push_back(v);
    for (double v : m.predict_proba(x, lengths).to_vector<double>()) r.push_back(v);
    results.push_back(r);
  }
  set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
}

// ---- long sequences, the log-space hand-over, ties, impossible sequences ---------------------

// An independent log-space forward pass for one sequence of a Gaussian HMM with D = 1.
double log_forward_1d(const std::vector<double>& start, const std::vector<double>& trans,
                      const std::vector<double>& means, const std::vector<double>& vars,
                      const std::vector<double>& x) {
  const int64_t K = static_cast<int64_t>(start.size());
  auto lse = [](double a, double b) {
    if (a == -INFINITY) return b;
    const double m = std::max(a, b);
    return m + std::log(std::exp(a - m) + std::exp(b - m));
  };
  auto le = [&](double v, int64_t k) {
    return -0.5 *
           (std::log(2 * std::numbers::pi * vars[k]) + (v - means[k]) * (v - means[k]) / vars[k]);
  };
  std::vector<double> a(K), next(K);
  for (int64_t k = 0; k < K; ++k) a[k] = std::log(start[k]) + le(x[0], k);
  for (std::size_t t = 1; t < x.size(); ++t) {
    for (int64_t j = 0; j < K; ++j) {
      double s = -INFINITY;
      for (int64_t i = 0; i < K; ++i) s = lse(s, a[i] + std::log(trans[i * K + j]));
      next[j] = s + le(x[t], j);
    }
    a = next;
  }
  double r = -INFINITY;
  for (double v : a) r = lse(r, v);
  return r;
}

TEST(HmmLong, TenThousandFramesDoNotUnderflow) {
  const std::vector<double> start{0.5, 0.3, 0.2},
      trans{0.9, 0.05, 0.05, 0.1, 0.85, 0.05, 0.1, 0.1, 0.8}, means{-3, 0, 4}, vars{1, 0.5, 2};
  GaussianHMM m(vec(start), mat(trans, 3, 3), mat(means, 3, 1), mat(vars, 3, 1));
  const HmmSample s = m.sample(10000, 11);
  const double score = m.score(s.x);
  ASSERT_TRUE(std::isfinite(score));
  EXPECT_LT(score, -10000);  // p(x) itself is far below the smallest double
  EXPECT_NEAR(score, log_forward_1d(start, trans, means, vars, s.x.to_vector<double>()),
              1e-9 * std::abs(score));
  const std::vector<double> post = m.predict_proba(s.x).to_vector<double>();
  for (int64_t t = 0; t < 10000; ++t) {
    ASSERT_NEAR(post[t * 3] + post[t * 3 + 1] + post[t * 3 + 2], 1.0, 1e-12) << t;
  }
  const HmmPath path = m.decode(s.x);
  EXPECT_LE(path.log_prob, score);
  EXPECT_GT(path.log_prob, score - 2000);

  CategoricalHMM c(vec({0.5, 0.5}), mat({0.9, 0.1, 0.2, 0.8}, 2, 2),
                   mat({0.9, 0.05, 0.05, 0.1, 0.1, 0.8}, 2, 3));
  const Tensor xc = c.sample(10000, 5).x;
  EXPECT_TRUE(std::isfinite(c.score(xc)));
  EXPECT_TRUE(std::isfinite(c.predict_proba(xc).sum().item<double>()));
}

// A state that can never be entered but explains every frame far better: the scaled backward
// variables of that state overflow within a few frames, so the sequence goes to the log-space
// recursion. The only possible path stays in state 0.
TEST(HmmLong, UnreachableStateUsesLogSpace) {
  GaussianHMM m(vec({1.0, 0.0}), mat({1.0, 0.0, 0.0, 1.0}, 2, 2), mat({0.0, 40.0}, 2, 1),
                mat({1.0, 1.0}, 2, 1));
  std::vector<double> x(3000);
  double want = 0;
  for (std::size_t t = 0; t < x.size(); ++t) {
    x[t] = 40.0 + 0.1 * std::sin(static_cast<double>(t));
    want += -0.5 * (std::log(2 * std::numbers::pi) + x[t] * x[t]);
  }
  const Tensor xt = mat(x, 3000, 1);
  EXPECT_NEAR(m.score(xt), want, 1e-9 * std::abs(want));
  const std::vector<double> post = m.predict_proba(xt).to_vector<double>();
  for (std::size_t t = 0; t < x.size(); ++t) {
    ASSERT_EQ(post[t * 2], 1.0) << t;
    ASSERT_EQ(post[t * 2 + 1], 0.0) << t;
  }
  const HmmPath path = m.decode(xt);
  EXPECT_NEAR(path.log_prob, want, 1e-9 * std::abs(want));
  EXPECT_EQ(path.states.sum().item<int64_t>(), 0);
}

// hmmlearn 0.3.3 on this all-ties model decodes [2, 2, 2, 0]: the last state is the first
// maximum, the traceback keeps the last.
TEST(HmmDecode, BreaksTiesLikeHmmlearn) {
  CategoricalHMM m(full({3}, 1.0 / 3, kFloat64), full({3, 3}, 1.0 / 3, kFloat64),
                   full({3, 2}, 0.5, kFloat64));
  const HmmPath p = m.decode(from_vector<int64_t>({0, 1, 0, 1}));
  EXPECT_EQ(p.states.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 2, 0}));
  EXPECT_NEAR(p.log_prob, 4 * std::log(0.5) + 4 * std::log(1.0 / 3), 1e-12);
  EXPECT_EQ(m.predict(from_vector<int64_t>({1})).to_vector<int64_t>(), (std::vector<int64_t>{0}));
}

// hmmlearn: score -inf and NaN posteriors; here -inf and a ValueError for the posteriors.
TEST(HmmDecode, ImpossibleSequence) {
  CategoricalHMM m(vec({1.0, 0.0}), mat({1.0, 0.0, 0.0, 1.0}, 2, 2),
                   mat({0.0, 1.0, 1.0, 0.0}, 2, 2));
  const Tensor x = from_vector<int64_t>({1, 1, 0, 1});
  EXPECT_EQ(m.score(x), -INFINITY);
  EXPECT_EQ(m.score(x, {2, 2}), -INFINITY);
  EXPECT_EQ(m.score(from_vector<int64_t>({1, 1}), {1, 1}), 2 * std::log(1.0));
  EXPECT_EQ(m.decode(x).log_prob, -INFINITY);
  EXPECT_THROW(m.predict_proba(x), ValueError);
  EXPECT_THROW(m.fit(x, {1, 3}), ValueError);
}

TEST(HmmSample, FollowsTheModelAndIsSeeded) {
  GaussianHMM m(vec({0.2, 0.8}), mat({0.7, 0.3, 0.4, 0.6}, 2, 2), mat({-1, 2, 5, 0}, 2, 2),
                mat({0.5, 1, 2, 0.25}, 2, 2));
  const HmmSample a = m.sample(20000, 42), b = m.sample(20000, 42);
  EXPECT_EQ(a.x.to_vector<double>(), b.x.to_vector<double>());
  EXPECT_EQ(a.x.shape(), Shape({20000, 2}));
  const std::vector<int64_t> s = a.states.to_vector<int64_t>();
  const std::vector<double> x = a.x.to_vector<double>();
  double n0 = 0, stay0 = 0, mean1 = 0, n1 = 0;
  for (std::size_t t = 0; t < s.size(); ++t) {
    if (t + 1 < s.size() && s[t] == 0) {
      ++n0;
      stay0 += s[t + 1] == 0;
    }
    if (s[t] == 1) {
      ++n1;
      mean1 += x[t * 2];
    }
  }
  EXPECT_NEAR(stay0 / n0, 0.7, 0.02);
  EXPECT_NEAR(mean1 / n1, 5.0, 0.05);
  CategoricalHMM c(vec({0.5, 0.5}), mat({0.5, 0.5, 0.5, 0.5}, 2, 2), mat({1, 0, 0, 0, 0, 1}, 2, 3));
  const HmmSample cs = c.sample(100, 1);
  EXPECT_EQ(cs.x.dtype(), kInt64);
  EXPECT_EQ(cs.x.to_vector<int64_t>(), (cs.states * 2).to_vector<int64_t>());
}

// ---- bad input ---------------------------------------------------------------------------

template <class E, class F>
void expect_error(F&& f, const std::string& who) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind(who + ": ", 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(HmmErrors, BadParameters) {
  const Tensor s = vec({0.5, 0.5}), t = mat({0.5, 0.5, 0.5, 0.5}, 2, 2);
  const Tensor e = mat({0.5, 0.5, 0.5, 0.5}, 2, 2), mu = mat({0, 1}, 2, 1), v = mat({1, 1}, 2, 1);
  const std::string C = "CategoricalHMM", G = "GaussianHMM";
  expect_error<ShapeError>([&] { CategoricalHMM(mat({0.5, 0.5}, 1, 2), t, e); }, C);
  expect_error<ShapeError>([&] { CategoricalHMM(Tensor(vec({})), t, e); }, C);
  expect_error<ShapeError>([&] { CategoricalHMM(s, mat({1, 0, 0, 0, 1, 0}, 2, 3), e); }, C);
  expect_error<ShapeError>([&] { CategoricalHMM(s, t, mat({1, 0, 0, 1, 0, 0}, 3, 2)); }, C);
  expect_error<ShapeError>([&] { CategoricalHMM(s, t, vec({0.5, 0.5})); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(vec({0.6, 0.5}), t, e); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(vec({1.5, -0.5}), t, e); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(vec({NAN, 1.0}), t, e); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(s, mat({0.5, 0.5, 0.3, 0.3}, 2, 2), e); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(s, t, mat({0.5, 0.5, 1.1, -0.1}, 2, 2)); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(s, t, mat({0.5, 0.5, 0.5, 0.4999}, 2, 2)); }, C);
  expect_error<DTypeError>([&] { CategoricalHMM(full({2}, true, kBool), t, e); }, C);
  expect_error<ValueError>([&] { CategoricalHMM(Tensor(), t, e); }, C);
  expect_error<ShapeError>([&] { GaussianHMM(s, t, vec({0, 1}), v); }, G);
  expect_error<ShapeError>([&] { GaussianHMM(s, t, mat({0, 1, 2}, 3, 1), v); }, G);
  expect_error<ShapeError>([&] { GaussianHMM(s, t, mu, mat({1, 1, 1, 1}, 2, 2)); }, G);
  expect_error<ValueError>([&] { GaussianHMM(s, t, mu, mat({1, 0}, 2, 1)); }, G);
  expect_error<ValueError>([&] { GaussianHMM(s, t, mu, mat({1, -2}, 2, 1)); }, G);
  expect_error<ValueError>([&] { GaussianHMM(s, t, mu, mat({1, INFINITY}, 2, 1)); }, G);
  expect_error<ValueError>([&] { GaussianHMM(s, t, mat({0, NAN}, 2, 1), v); }, G);
  expect_error<ValueError>([&] { GaussianHMM(vec({0.7, 0.7}), t, mu, v); }, G);
  // float32 parameters that sum to 1 in float32 are accepted.
  EXPECT_NO_THROW(GaussianHMM(vec({0.1, 0.9}).to(kFloat32), t.to(kFloat32), mu, v));
}

TEST(HmmErrors, BadObservations) {
  CategoricalHMM c(vec({0.5, 0.5}), mat({0.5, 0.5, 0.5, 0.5}, 2, 2),
                   mat({0.2, 0.3, 0.5, 0.6, 0.3, 0.1}, 2, 3));
  GaussianHMM g(vec({0.5, 0.5}), mat({0.5, 0.5, 0.5, 0.5}, 2, 2), mat({0, 1, 2, 3}, 2, 2),
                mat({1, 1, 1, 1}, 2, 2));
  const std::string C = "CategoricalHMM", G = "GaussianHMM";
  const Tensor sym = from_vector<int64_t>({0, 1, 2, 1});
  expect_error<IndexError>([&] { c.score(from_vector<int64_t>({0, 3, 1})); }, C);
  expect_error<IndexError>([&] { c.decode(from_vector<int64_t>({0, -1})); }, C);
  expect_error<DTypeError>([&] { c.score(vec({0, 1, 2})); }, C);
  expect_error<ShapeError>([&] { c.score(from_vector<int64_t>({0, 1, 2, 1}, {2, 2})); }, C);
  expect_error<ValueError>([&] { c.score(from_vector<int64_t>({}, {0})); }, C);
  expect_error<ValueError>([&] { c.score(Tensor()); }, C);
  expect_error<ValueError>([&] { c.score(sym, {2, 1}); }, C);             // sums to 3, not 4
  expect_error<ValueError>([&] { c.score(sym, {2, 3}); }, C);             // past the end
  expect_error<ValueError>([&] { c.predict_proba(sym, {2, 0, 2}); }, C);  // an empty sequence
  expect_error<ValueError>([&] { c.decode(sym, {5, -1}); }, C);
  expect_error<ValueError>([&] { c.fit(sym, {}, {.n_iter = -1}); }, C);
  expect_error<ValueError>([&] { c.fit(sym, {}, {.tol = NAN}); }, C);
  expect_error<ValueError>([&] { c.sample(0); }, C);
  EXPECT_NO_THROW(c.score(from_vector<int64_t>({0, 1, 2, 1}, {4, 1}).to(kInt32), {1, 3}));
  const Tensor xg = mat({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, 3, 2);
  expect_error<ShapeError>([&] { g.score(vec({0.1, 0.2})); }, G);
  expect_error<ShapeError>([&] { g.score(mat({0.1, 0.2, 0.3}, 1, 3)); }, G);
  expect_error<ValueError>([&] { g.score(mat({0.1, NAN, 0.3, 0.4}, 2, 2)); }, G);
  expect_error<ValueError>([&] { g.score(mat({0.1, INFINITY, 0.3, 0.4}, 2, 2)); }, G);
  expect_error<DTypeError>([&] { g.score(full({2, 2}, true, kBool)); }, G);
  expect_error<ValueError>([&] { g.score(from_vector<double>({}, {0, 2})); }, G);
  expect_error<ValueError>([&] { g.fit(xg, {1, 1}); }, G);
  expect_error<ValueError>([&] { g.decode(xg, {0, 3}); }, G);
  // A failed call leaves the model as it was.
  const std::vector<double> before = g.means().to_vector<double>();
  expect_error<ValueError>([&] { g.fit(mat({0.1, NAN}, 1, 2)); }, G);
  EXPECT_EQ(g.means().to_vector<double>(), before);
}

}  // namespace
}  // namespace ath::seq
