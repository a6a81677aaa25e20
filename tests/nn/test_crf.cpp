// nn::CRF: pytorch-crf goldens (tests/golden/crf.json, tools/golden/crf.py) for the
// log-likelihood under every reduction, its gradients and the Viterbi paths, in float64 and
// float32; a brute-force enumeration of all K^T tag sequences (independent of pytorch-crf);
// finite-difference gradients; allowed-transition constraints; every bad input; a small
// training run.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/nn/crf.h"
#include "athanor/nn/linear.h"
#include "athanor/optim/adam.h"
#include "support/golden.h"

namespace ath::nn {
namespace {

using testing::expect_close;
using testing::GoldenCase;

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> c = testing::load_golden("crf");
  return c;
}

CRFReduction reduction_of(const GoldenCase& c) {
  const std::string r = c.attrs.at("reduction").get<std::string>();
  return r == "none"   ? CRFReduction::None
         : r == "sum"  ? CRFReduction::Sum
         : r == "mean" ? CRFReduction::Mean
                       : CRFReduction::TokenMean;
}

// A CRF with the case's parameters (and constraints) in dtype t.
std::unique_ptr<CRF> crf_of(const GoldenCase& c, DType t) {
  auto crf =
      std::make_unique<CRF>(CRFOptions{.num_tags = c.attrs.at("num_tags").get<int64_t>(),
                                       .batch_first = c.attrs.at("batch_first").get<bool>()});
  crf->to(t);
  StateDict sd;  // pytorch-crf's names: its state dict loads as is
  for (const char* name : {"start_transitions", "end_transitions", "transitions"}) {
    sd.insert(name, c.t(name));
  }
  crf->load_state_dict(sd);
  if (c.attrs.at("constrained").get<bool>()) {
    crf->set_allowed_transitions(c.t("allowed"), c.t("start_allowed"), c.t("end_allowed"));
  }
  return crf;
}

// The paths as golden stores them: [B, T], padded with -1.
std::vector<std::vector<int64_t>> golden_paths(const GoldenCase& c) {
  const Tensor& p = c.t("paths");
  const std::vector<int64_t> v = p.to_vector<int64_t>();
  std::vector<std::vector<int64_t>> out(static_cast<std::size_t>(p.size(0)));
  for (int64_t b = 0; b < p.size(0); ++b) {
    for (int64_t t = 0; t < p.size(1) && v[b * p.size(1) + t] >= 0; ++t) {
      out[b].push_back(v[b * p.size(1) + t]);
    }
  }
  return out;
}

void check_case(const GoldenCase& c, DType t, double rtol, double atol) {
  SCOPED_TRACE(c.name);
  auto crf = crf_of(c, t);
  Tensor em = c.t("emissions").to(t).detach().requires_grad_();
  const Tensor mask = c.attrs.at("has_mask").get<bool>() ? c.t("mask") : Tensor();
  Tensor llh = crf->log_likelihood(em, c.t("tags"), mask, reduction_of(c));
  EXPECT_EQ(llh.dtype(), t);
  expect_close(llh.to(kFloat64), c.t("llh"), rtol, atol, "llh");
  std::vector<Tensor> g =
      grad({llh}, {em, crf->start_transitions, crf->end_transitions, crf->transitions},
           {c.t("gy").to(t)}, {}, /*allow_unused=*/true);
  const char* names[] = {"demissions", "dstart_transitions", "dend_transitions", "dtransitions"};
  for (std::size_t i = 0; i < g.size(); ++i) {
    Tensor gi = g[i].defined() ? g[i].to(kFloat64) : zeros(c.t(names[i]).shape(), kFloat64);
    expect_close(gi, c.t(names[i]), rtol, atol, names[i]);
  }
  EXPECT_EQ(crf->decode(c.t("emissions").to(t), mask), golden_paths(c));
}

TEST(CRFGolden, MatchesPytorchCrfInFloat64) {
  ASSERT_GE(cases().size(), 19u);
  for (const GoldenCase& c : cases()) check_case(c, kFloat64, 1e-5, 1e-10);
}

// float32 emissions and parameters: the forward algorithm runs in float32 (Viterbi in float64).
TEST(CRFGolden, MatchesPytorchCrfInFloat32) {
  for (const GoldenCase& c : cases()) check_case(c, kFloat32, 1e-4, 1e-4);
}

TEST(CRFGolden, UInt8MaskEqualsBoolMask) {
  for (const GoldenCase& c : cases()) {
    if (!c.attrs.at("has_mask").get<bool>()) continue;
    SCOPED_TRACE(c.name);
    auto crf = crf_of(c, kFloat64);
    const Tensor& m = c.t("mask");
    Tensor a = crf->log_likelihood(c.t("emissions"), c.t("tags"), m, CRFReduction::None);
    Tensor b = crf->log_likelihood(c.t("emissions"), c.t("tags"), m.to(kUInt8), CRFReduction::None);
    EXPECT_TRUE(equal(a, b));
    EXPECT_EQ(crf->decode(c.t("emissions"), m.to(kUInt8)), golden_paths(c));
  }
}

TEST(CRF, StateDictUsesPytorchCrfNames) {
  CRF crf({.num_tags = 4});
  StateDict sd = crf.state_dict();
  ASSERT_EQ(sd.size(), 3u);
  auto names = crf.named_parameters();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0].first, "start_transitions");
  EXPECT_EQ(names[1].first, "end_transitions");
  EXPECT_EQ(names[2].first, "transitions");
  EXPECT_EQ(names[0].second.shape(), (Shape{4}));
  EXPECT_EQ(names[1].second.shape(), (Shape{4}));
  EXPECT_EQ(names[2].second.shape(), (Shape{4, 4}));
  EXPECT_EQ(crf.type_name(), "CRF");
  // Constraints are not state: the state dict stays the three parameters.
  crf.set_allowed_transitions(ones({4, 4}, kBool));
  EXPECT_EQ(crf.state_dict().size(), 3u);
  EXPECT_TRUE(crf.named_buffers().empty());
  EXPECT_EQ(crf.extra_repr(), "num_tags=4, constrained=True");
  crf.clear_allowed_transitions();
  EXPECT_FALSE(crf.has_constraints());
  EXPECT_EQ(crf.extra_repr(), "num_tags=4");
}

TEST(CRF, InitialisationIsUniformTenth) {
  manual_seed(3);
  CRF crf({.num_tags = 40});
  for (const Tensor& p : crf.parameters()) {
    EXPECT_EQ(p.dtype(), kFloat32);
    EXPECT_TRUE(p.requires_grad());
    EXPECT_LE(max(p).item<double>(), 0.1);
    EXPECT_GE(min(p).item<double>(), -0.1);
  }
  EXPECT_GT(ath::std(crf.transitions).item<double>(), 0.04);  // U(-0.1, 0.1): 0.0577
}

// ---- brute force: every K^n sequence, scored directly in float64 --------------------------------

struct Enumerated {
  double log_z = -kInf;
  std::vector<int64_t> best;
  double best_score = -kInf;
};

// All tag sequences of length n for sample b of time-major emissions em [T, B, K], under the
// optional allowed matrices (empty: all allowed).
Enumerated enumerate(const std::vector<double>& em, int64_t B, int64_t K, int64_t b, int64_t n,
                     const std::vector<double>& start, const std::vector<double>& end,
                     const std::vector<double>& trans, const std::vector<uint8_t>& allowed = {},
                     const std::vector<uint8_t>& start_ok = {},
                     const std::vector<uint8_t>& end_ok = {}) {
  Enumerated r;
  std::vector<double> scores;
  std::vector<int64_t> seq(static_cast<std::size_t>(n), 0);
  while (true) {
    bool ok = (start_ok.empty() || start_ok[seq[0]]) && (end_ok.empty() || end_ok[seq[n - 1]]);
    double s = start[seq[0]] + end[seq[n - 1]];
    for (int64_t t = 0; t < n; ++t) {
      s += em[(t * B + b) * K + seq[t]];
      if (t > 0) {
        s += trans[seq[t - 1] * K + seq[t]];
        ok = ok && (allowed.empty() || allowed[seq[t - 1] * K + seq[t]]);
      }
    }
    if (ok) {
      scores.push_back(s);
      if (s > r.best_score) r.best_score = s, r.best = seq;
    }
    int64_t i = n - 1;  // next sequence, last tag fastest
    while (i >= 0 && ++seq[i] == K) seq[i--] = 0;
    if (i < 0) break;
  }
  double m = -kInf, acc = 0;
  for (double s : scores) m = std::max(m, s);
  for (double s : scores) acc += std::exp(s - m);
  r.log_z = scores.empty() ? -kInf : m + std::log(acc);
  return r;
}

double path_score(const std::vector<double>& em, int64_t B, int64_t K, int64_t b,
                  const std::vector<int64_t>& seq, const std::vector<double>& start,
                  const std::vector<double>& end, const std::vector<double>& trans) {
  double s = start[seq[0]] + end[seq.back()];
  for (std::size_t t = 0; t < seq.size(); ++t) {
    s += em[(t * B + b) * K + seq[t]];
    if (t > 0) s += trans[seq[t - 1] * K + seq[t]];
  }
  return s;
}

TEST(CRF, MatchesBruteForceEnumeration) {
  manual_seed(11);
  const int64_t T = 5, B = 3, K = 3;
  const std::vector<int64_t> lengths{5, 3, 1};
  CRF crf({.num_tags = K});
  crf.to(kFloat64);
  {
    NoGradGuard g;  // scores of a few units, so paths are far from ties
    for (Tensor p : crf.parameters()) p.copy_(randn(p.shape(), {.dtype = kFloat64}));
  }
  Tensor em = randn({T, B, K}, {.dtype = kFloat64}) * 2.0;
  Tensor tags = randint(0, K, {T, B});
  Tensor mask = lt(arange(T).unsqueeze(1), from_vector<int64_t>(lengths));
  Tensor llh = crf.log_likelihood(em, tags, mask, CRFReduction::None);
  auto paths = crf.decode(em, mask);

  const auto e = em.to_vector<double>(), s = crf.start_transitions.to_vector<double>(),
             n = crf.end_transitions.to_vector<double>(), tr = crf.transitions.to_vector<double>();
  const auto tg = tags.to_vector<int64_t>();
  const auto got = llh.to_vector<double>();
  for (int64_t b = 0; b < B; ++b) {
    SCOPED_TRACE(b);
    Enumerated r = enumerate(e, B, K, b, lengths[b], s, n, tr);
    std::vector<int64_t> gold;
    for (int64_t t = 0; t < lengths[b]; ++t) gold.push_back(tg[t * B + b]);
    EXPECT_NEAR(got[b], path_score(e, B, K, b, gold, s, n, tr) - r.log_z, 1e-10);
    EXPECT_EQ(paths[b], r.best);
  }

  // The same with constraints: only allowed sequences count.
  const std::vector<uint8_t> allowed{1, 1, 0, 0, 1, 1, 1, 0, 1}, start_ok{1, 0, 1}, end_ok{0, 1, 1};
  crf.set_allowed_transitions(from_vector<uint8_t>(allowed, {K, K}).to(kBool),
                              from_vector<uint8_t>(start_ok).to(kBool),
                              from_vector<uint8_t>(end_ok).to(kBool));
  Tensor sum_llh = crf.log_likelihood(em, tags, mask, CRFReduction::None);
  paths = crf.decode(em, mask);
  const auto got_c = sum_llh.to_vector<double>();
  for (int64_t b = 0; b < B; ++b) {
    SCOPED_TRACE(b);
    Enumerated r = enumerate(e, B, K, b, lengths[b], s, n, tr, allowed, start_ok, end_ok);
    ASSERT_FALSE(r.best.empty());
    EXPECT_EQ(paths[b], r.best);
    // The best allowed path's likelihood: its score minus the constrained log partition.
    Tensor best_tags = tags.clone();
    {
      NoGradGuard g;
      for (int64_t t = 0; t < lengths[b]; ++t) best_tags[t][b].fill_(r.best[t]);
    }
    Tensor l = crf.log_likelihood(em, best_tags, mask, CRFReduction::None);
    EXPECT_NEAR(l.to_vector<double>()[b], r.best_score - r.log_z, 1e-10);
    // The random gold tags are allowed or score -inf.
    std::vector<int64_t> gold;
    for (int64_t t = 0; t < lengths[b]; ++t) gold.push_back(tg[t * B + b]);
    bool ok = start_ok[gold[0]] && end_ok[gold.back()];
    for (std::size_t t = 1; t < gold.size(); ++t) ok = ok && allowed[gold[t - 1] * K + gold[t]];
    if (ok) {
      EXPECT_NEAR(got_c[b], path_score(e, B, K, b, gold, s, n, tr) - r.log_z, 1e-10);
    } else {
      EXPECT_EQ(got_c[b], -kInf);
    }
  }
}

// ---- finite differences
// ---------------------------------------------------------------------------

TEST(CRF, GradientsMatchFiniteDifferences) {
  manual_seed(5);
  const int64_t T = 4, B = 3, K = 3;
  for (bool constrained : {false, true}) {
    for (CRFReduction r : {CRFReduction::None, CRFReduction::Mean, CRFReduction::TokenMean}) {
      SCOPED_TRACE(std::string(crf_reduction_name(r)) + (constrained ? " constrained" : ""));
      CRF crf({.num_tags = K, .batch_first = true});
      crf.to(kFloat64);
      if (constrained) {
        Tensor a = ones({K, K}, kBool);
        a[0][2].fill_(false);
        a[1][1].fill_(false);
        crf.set_allowed_transitions(a, from_vector<uint8_t>({1, 1, 0}).to(kBool));
      }
      Tensor em = randn({B, T, K}, {.dtype = kFloat64}).requires_grad_();
      // Allowed sequences (a disallowed one has log-likelihood -inf: no finite difference).
      Tensor tags = from_vector<int64_t>({0, 1, 0, 1, 1, 0, 0, 2, 1, 2, 1, 1}, {B, T});
      Tensor mask = from_vector<uint8_t>({1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0}, {B, T}).to(kBool);
      auto fn = [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{crf.log_likelihood(in[0], tags, mask, r)};
      };
      GradcheckResult res =
          gradcheck(fn, {em, crf.start_transitions, crf.end_transitions, crf.transitions});
      EXPECT_TRUE(res.ok) << res.message;
    }
  }
}

// ---- constraints
// ----------------------------------------------------------------------------------

TEST(CRF, ConstrainedDecodeNeverReturnsDisallowedPaths) {
  manual_seed(7);
  const int64_t T = 12, B = 16, K = 4;
  CRF crf({.num_tags = K});
  // Tag 3 may only follow 2, tag 0 may not follow itself, no start on 3, no end on 1.
  Tensor a = ones({K, K}, kBool);
  for (int64_t i : {0, 1, 3}) a[i][3].fill_(false);
  a[0][0].fill_(false);
  Tensor sa = from_vector<uint8_t>({1, 1, 1, 0}).to(kBool);
  Tensor ea = from_vector<uint8_t>({1, 0, 1, 1}).to(kBool);
  crf.set_allowed_transitions(a, sa, ea);
  // Emissions that push hard toward tag 3 and toward repeated 0s.
  Tensor em = randn({T, B, K}) * 3.0 + from_vector<float>({2, 0, 0, 4});
  Tensor mask = lt(arange(T).unsqueeze(1), randint(1, T + 1, {B}));
  const auto av = a.to_vector<uint8_t>();
  for (const auto& p : crf.decode(em, mask)) {
    ASSERT_FALSE(p.empty());
    EXPECT_NE(p.front(), 3);
    EXPECT_NE(p.back(), 1);
    for (std::size_t t = 1; t < p.size(); ++t) EXPECT_TRUE(av[p[t - 1] * K + p[t]]);
  }
}

TEST(CRF, DisallowedEntriesGetZeroGradientAndNoNaN) {
  manual_seed(8);
  const int64_t T = 6, B = 2, K = 3;
  CRF crf({.num_tags = K});
  // Nothing may move to tag 2, so from step 1 on tag 2 is unreachable: a log-sum over only
  // -inf, whose gradient must be 0, not NaN.
  Tensor a = ones({K, K}, kBool);
  for (int64_t i = 0; i < K; ++i) a[i][2].fill_(false);
  crf.set_allowed_transitions(a, {}, from_vector<uint8_t>({1, 1, 0}).to(kBool));
  Tensor em = randn({T, B, K}).requires_grad_();
  Tensor tags = from_vector<int64_t>({2, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0}, {T, B});
  Tensor mask = from_vector<uint8_t>({1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0}, {T, B}).to(kBool);
  Tensor loss = crf.nll(em, tags, mask, CRFReduction::Mean);
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  loss.backward();
  for (const Tensor& g : {em.grad(), crf.start_transitions.grad(), crf.end_transitions.grad(),
                          crf.transitions.grad()}) {
    EXPECT_TRUE(all(isfinite(g)).item<bool>()) << g.to_string();
  }
  const auto gt = crf.transitions.grad().to_vector<float>();
  for (int64_t i = 0; i < K; ++i) EXPECT_EQ(gt[i * K + 2], 0.0f);
  EXPECT_EQ(crf.end_transitions.grad().to_vector<float>()[2], 0.0f);
  // Tag 2 at step 1 of sample 0 is disallowed: that sequence scores -inf.
  Tensor bad = tags.clone();
  {
    NoGradGuard g;
    bad[1][0].fill_(2);
  }
  Tensor l = crf.log_likelihood(em, bad, mask, CRFReduction::None);
  EXPECT_EQ(l.to_vector<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isfinite(l.to_vector<float>()[1]));
  // Emission scores on the unreachable tag get no gradient past step 0.
  const auto ge = em.grad().to_vector<float>();
  for (int64_t t = 1; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) EXPECT_EQ(ge[(t * B + b) * K + 2], 0.0f);
  }
}

// ---- bad input
// --------------------------------------------------------------------------------------

template <class E>
void expect_crf_error(const std::function<void()>& f, const std::string& what) {
  SCOPED_TRACE(what);
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind("CRF", 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(CRF, BadInputThrowsNamingCRF) {
  expect_crf_error<ValueError>([] { CRF c({.num_tags = 0}); }, "num_tags 0");
  expect_crf_error<ValueError>([] { CRF c({.num_tags = -2}); }, "num_tags -2");
  CRF crf({.num_tags = 3});
  const Tensor em = randn({4, 2, 3}), tags = zeros({4, 2}, kInt64);
  auto llh = [&](const Tensor& e, const Tensor& t, const Tensor& m = {}) {
    return [&crf, e, t, m] { crf.log_likelihood(e, t, m); };
  };
  auto dec = [&](const Tensor& e, const Tensor& m = {}) {
    return [&crf, e, m] { crf.decode(e, m); };
  };
  expect_crf_error<ValueError>(llh(Tensor(), tags), "undefined emissions");
  expect_crf_error<ValueError>(llh(em, Tensor()), "undefined tags");
  expect_crf_error<ShapeError>(llh(randn({4, 3}), tags), "2-D emissions");
  expect_crf_error<ShapeError>(dec(randn({4, 2, 3, 1})), "4-D emissions");
  expect_crf_error<DTypeError>(llh(zeros({4, 2, 3}, kInt64), tags), "int emissions");
  expect_crf_error<DTypeError>(dec(zeros({4, 2, 3}, kInt64)), "int emissions, decode");
  expect_crf_error<ShapeError>(llh(randn({4, 2, 5}), tags), "last dim");
  expect_crf_error<ShapeError>(dec(randn({4, 2, 2})), "last dim, decode");
  expect_crf_error<ShapeError>(llh(randn({0, 2, 3}), zeros({0, 2}, kInt64)), "no steps");
  expect_crf_error<ShapeError>(dec(randn({0, 2, 3})), "no steps, decode");
  expect_crf_error<DTypeError>(llh(em, zeros({4, 2}, kInt32)), "int32 tags");
  expect_crf_error<DTypeError>(llh(em, zeros({4, 2})), "float tags");
  expect_crf_error<ShapeError>(llh(em, zeros({2, 4}, kInt64)), "tags transposed");
  expect_crf_error<ShapeError>(llh(em, zeros({4, 2, 1}, kInt64)), "tags 3-D");
  expect_crf_error<IndexError>(llh(em, full({4, 2}, int64_t(3))), "tag == num_tags");
  Tensor neg = tags.clone();
  neg[2][1].fill_(-1);
  expect_crf_error<IndexError>(llh(em, neg), "negative tag");
  expect_crf_error<ShapeError>(llh(em, tags, ones({4, 3}, kBool)), "mask shape");
  expect_crf_error<ShapeError>(dec(em, ones({2, 4}, kBool)), "mask shape, decode");
  expect_crf_error<DTypeError>(llh(em, tags, ones({4, 2})), "float mask");
  expect_crf_error<DTypeError>(dec(em, ones({4, 2}, kInt64)), "int64 mask, decode");
  Tensor late = ones({4, 2}, kBool);
  late[0][1].fill_(false);
  expect_crf_error<ValueError>(llh(em, tags, late), "first step off");
  expect_crf_error<ValueError>(dec(em, late.to(kUInt8)), "first step off, decode");
  // batch_first: the first step is column 0 of [B, T].
  CRF bf({.num_tags = 3, .batch_first = true});
  Tensor bf_mask = ones({2, 4}, kBool);
  bf_mask[1][0].fill_(false);
  expect_crf_error<ValueError>(
      [&] {
        bf.decode(randn({2, 4, 3}), bf_mask);
      },
      "first step off, batch_first");
  expect_crf_error<ShapeError>(
      [&] {
        bf.log_likelihood(randn({2, 4, 3}), tags);
      },
      "batch_first tags must be [B, T]");
  // One-tensor forward and constraints.
  expect_crf_error<ValueError>([&] { crf(em); }, "one-tensor call");
  expect_crf_error<ValueError>([&] { crf.set_allowed_transitions(Tensor()); }, "no allowed");
  expect_crf_error<ShapeError>(
      [&] {
        crf.set_allowed_transitions(ones({3, 2}, kBool));
      },
      "allowed shape");
  expect_crf_error<DTypeError>([&] { crf.set_allowed_transitions(ones({3, 3})); }, "float allowed");
  expect_crf_error<ShapeError>(
      [&] {
        crf.set_allowed_transitions(ones({3, 3}, kBool), ones({2}, kBool));
      },
      "start_allowed shape");
  expect_crf_error<DTypeError>(
      [&] {
        crf.set_allowed_transitions(ones({3, 3}, kBool), {}, ones({3}, kInt64));
      },
      "end_allowed dtype");
  EXPECT_FALSE(crf.has_constraints());  // a failed call sets nothing
  // Constraints that allow no sequence: nothing to decode.
  crf.set_allowed_transitions(ones({3, 3}, kBool), zeros({3}, kBool));
  expect_crf_error<ValueError>(dec(em), "no allowed sequence");
}

// ---- module behaviour ---------------------------------------------------------------------------

TEST(CRF, CallRunsHooksAndNllIsMinusLogLikelihood) {
  CRF crf({.num_tags = 4});
  Tensor em = randn({3, 2, 4}), tags = randint(0, 4, {3, 2});
  int calls = 0;
  crf.register_forward_hook([&](Module&, const Tensor& in, const Tensor& out) {
    ++calls;
    EXPECT_TRUE(in.is_same(em));
    EXPECT_TRUE(out.dim() == 0 || out.shape() == Shape{2});
  });
  Tensor a = crf(em, tags);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(equal(a, crf.log_likelihood(em, tags)));
  EXPECT_TRUE(equal(neg(a), crf.nll(em, tags)));
  EXPECT_LT(a.item<double>(), 0.0);  // a log-probability of two sequences
  EXPECT_EQ(crf(em, tags, {}, CRFReduction::None).shape(), (Shape{2}));
  EXPECT_STREQ(crf_reduction_name(CRFReduction::TokenMean), "token_mean");
}

TEST(CRF, EmptyBatch) {
  CRF crf({.num_tags = 3});
  Tensor em = randn({4, 0, 3});
  EXPECT_EQ(crf.log_likelihood(em, zeros({4, 0}, kInt64), {}, CRFReduction::None).shape(),
            (Shape{0}));
  EXPECT_EQ(crf.log_likelihood(em, zeros({4, 0}, kInt64)).item<double>(), 0.0);
  EXPECT_TRUE(crf.decode(em).empty());
}

// ---- training
// -------------------------------------------------------------------------------------

// Tags follow a rule a linear layer can read from each step's features plus a transition
// preference: tag = argmax of a fixed projection of x. A Linear + CRF fits it with Adam; the
// untrained model decodes at chance level.
TEST(CRF, TrainsALinearTagger) {
  manual_seed(21);
  const int64_t T = 10, B = 32, K = 4, D = 6;
  Tensor w_true = randn({D, K});
  auto make = [&](int64_t batch) {
    Tensor x = randn({T, batch, D});
    Tensor y = argmax(matmul(x, w_true), 2);  // [T, batch]
    Tensor mask = lt(arange(T).unsqueeze(1), randint(3, T + 1, {batch}));
    return std::tuple{x, y, mask};
  };
  auto [x, y, mask] = make(B);
  // Named tensors, not a structured binding: clang 14 (the sanitizer build) cannot capture one.
  const auto held_out = make(64);
  const Tensor &xt = std::get<0>(held_out), &yt = std::get<1>(held_out),
               &mt = std::get<2>(held_out);
  Linear head({.in = D, .out = K});
  CRF crf({.num_tags = K});
  auto accuracy = [&] {
    NoGradGuard g;
    auto paths = crf.decode(head(xt), mt);
    const auto yv = yt.to_vector<int64_t>();
    int64_t right = 0, total = 0;
    for (int64_t b = 0; b < 64; ++b) {
      for (std::size_t t = 0; t < paths[b].size(); ++t, ++total) {
        right += paths[b][t] == yv[t * 64 + b];
      }
    }
    return static_cast<double>(right) / static_cast<double>(total);
  };
  const double before = accuracy();
  std::vector<Tensor> params = head.parameters();
  for (const Tensor& p : crf.parameters()) params.push_back(p);
  optim::Adam opt(params, {.lr = 0.05});
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor loss = crf.nll(head(x), y, mask, CRFReduction::TokenMean);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  const double after = accuracy();
  EXPECT_LT(before, 0.6);
  EXPECT_GT(after, 0.9);
  EXPECT_LT(last, 0.3 * first);
}

}  // namespace
}  // namespace ath::nn
