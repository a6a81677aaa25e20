#include "athanor/nn/crf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "athanor/core/error.h"
#include "athanor/nn/init.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Validated inputs, time-major ([T, B, ...]) like pytorch-crf's internals, with the mask and
// tags also read on the host: the index arithmetic and the Viterbi pass need them there, and
// reading them is how bad tags are caught before any op indexes with them.
struct Batch {
  Tensor emissions;           // [T, B, K]
  Tensor mask;                // bool [T, B]
  std::vector<uint8_t> on;    // mask, time-major
  std::vector<int64_t> tags;  // time-major; empty without tags
  int64_t steps = 0, batch = 0;
  int64_t on_count(int64_t b) const {
    int64_t n = 0;
    for (int64_t t = 0; t < steps; ++t) n += on[t * batch + b];
    return n;
  }
};

Batch validate(const CRFOptions& o, const Tensor& emissions, const Tensor* tags,
               const Tensor& mask) {
  const char* layout = o.batch_first ? "[B, T, num_tags]" : "[T, B, num_tags]";
  ATH_CHECK(emissions.defined(), ValueError, "CRF: emissions is an undefined tensor");
  ATH_CHECK(emissions.dim() == 3, ShapeError, "CRF: emissions must be 3-D {}, got shape {}", layout,
            emissions.shape());
  ATH_CHECK(emissions.is_floating_point(), DTypeError,
            "CRF: emissions must be floating point, got {}", emissions.dtype());
  ATH_CHECK(emissions.size(2) == o.num_tags, ShapeError,
            "CRF: emissions' last dim must be num_tags = {}, got shape {}", o.num_tags,
            emissions.shape());
  const Shape lead{emissions.size(0), emissions.size(1)};
  const int64_t time_dim = o.batch_first ? 1 : 0;
  ATH_CHECK(emissions.size(time_dim) > 0, ShapeError,
            "CRF: emissions must have at least one time step, got shape {}", emissions.shape());
  Batch in;
  in.steps = emissions.size(time_dim);
  in.batch = emissions.size(1 - time_dim);
  in.emissions = o.batch_first ? emissions.transpose(0, 1) : emissions;
  auto time_major = [&](const Tensor& t) { return o.batch_first ? t.transpose(0, 1) : t; };

  if (tags != nullptr) {
    ATH_CHECK(tags->defined(), ValueError, "CRF: tags is an undefined tensor");
    ATH_CHECK(tags->dtype() == kInt64, DTypeError, "CRF: tags must be int64, got {}",
              tags->dtype());
    ATH_CHECK(tags->shape() == lead, ShapeError,
              "CRF: tags must have emissions' first two dims {}, got shape {}", lead,
              tags->shape());
    in.tags = time_major(*tags).to_vector<int64_t>();
    for (std::size_t i = 0; i < in.tags.size(); ++i) {
      const int64_t v = in.tags[i];
      ATH_CHECK(v >= 0 && v < o.num_tags, IndexError,
                "CRF: tag {} at step {} of sample {} is out of range [0, {})", v,
                static_cast<int64_t>(i) / in.batch, static_cast<int64_t>(i) % in.batch, o.num_tags);
    }
  }
  if (mask.defined()) {
    ATH_CHECK(mask.dtype() == kBool || mask.dtype() == kUInt8, DTypeError,
              "CRF: mask must be bool or uint8, got {}", mask.dtype());
    ATH_CHECK(mask.shape() == lead, ShapeError,
              "CRF: mask must have emissions' first two dims {}, got shape {}", lead, mask.shape());
    in.on = time_major(mask).to_vector<uint8_t>();
    for (uint8_t& v : in.on) v = v != 0;
    for (int64_t b = 0; b < in.batch; ++b) {
      ATH_CHECK(in.on[b], ValueError,
                "CRF: the mask's first time step must be on for every sample (pytorch-crf's "
                "rule), but sample {} is off",
                b);
    }
  } else {
    in.on.assign(static_cast<std::size_t>(in.steps * in.batch), 1);
  }
  in.mask = from_vector<uint8_t>(in.on, {in.steps, in.batch}).to(kBool);
  return in;
}

// logsumexp over dim, with a gradient of 0 (not NaN) for a row that is all -inf: logsumexp's
// backward is g * exp(x - y), and -inf - -inf is NaN even where g is 0. Such rows are tags no
// allowed path reaches under constraints; their value stays -inf.
Tensor logsumexp_safe(const Tensor& x, int64_t dim) {
  Tensor dead = all(eq(x.detach(), kNegInf), {dim}, /*keepdim=*/true);
  if (!any(dead).item<bool>()) return logsumexp(x, {dim});
  Tensor y = logsumexp(where(dead, 0.0, x), {dim}, /*keepdim=*/true);
  return where(dead, kNegInf, y).squeeze(dim);
}

Tensor reduce(const Tensor& llh, CRFReduction reduction, const Batch& in) {
  switch (reduction) {
    case CRFReduction::None:
      return llh;
    case CRFReduction::Sum:
      return sum(llh);
    case CRFReduction::Mean:
      return mean(llh);
    case CRFReduction::TokenMean: {
      int64_t tokens = 0;
      for (uint8_t v : in.on) tokens += v;
      return div(sum(llh), static_cast<double>(tokens));
    }
  }
  ATH_THROW(ValueError, "CRF: invalid reduction {}", static_cast<int>(reduction));
}

}  // namespace

const char* crf_reduction_name(CRFReduction r) {
  switch (r) {
    case CRFReduction::None:
      return "none";
    case CRFReduction::Sum:
      return "sum";
    case CRFReduction::Mean:
      return "mean";
    case CRFReduction::TokenMean:
      return "token_mean";
  }
  return "?";
}

CRF::CRF(CRFOptions o) : Module("CRF"), options(o) {
  ATH_CHECK(o.num_tags > 0, ValueError, "CRF: num_tags must be positive, got {}", o.num_tags);
  start_transitions = register_parameter("start_transitions", empty({o.num_tags}));
  end_transitions = register_parameter("end_transitions", empty({o.num_tags}));
  transitions = register_parameter("transitions", empty({o.num_tags, o.num_tags}));
  reset_parameters();
}

void CRF::reset_parameters() {
  init::uniform_(start_transitions, -0.1, 0.1);
  init::uniform_(end_transitions, -0.1, 0.1);
  init::uniform_(transitions, -0.1, 0.1);
}

std::string CRF::extra_repr() const {
  std::string s = fmt::format("num_tags={}", options.num_tags);
  if (options.batch_first) s += ", batch_first=True";
  if (has_constraints()) s += ", constrained=True";
  return s;
}

void CRF::set_allowed_transitions(const Tensor& allowed, const Tensor& start_allowed,
                                  const Tensor& end_allowed) {
  const int64_t k = options.num_tags;
  // Validates one constraint and returns where it disallows (undefined: allows everything).
  auto disallowed = [&](const Tensor& a, const Shape& shape, const char* name) -> Tensor {
    if (!a.defined()) return zeros(shape, kBool);
    ATH_CHECK(a.dtype() == kBool || a.dtype() == kUInt8, DTypeError,
              "CRF: {} must be bool or uint8, got {}", name, a.dtype());
    ATH_CHECK(a.shape() == shape, ShapeError, "CRF: {} must have shape {} (num_tags = {}), got {}",
              name, shape, k, a.shape());
    return eq(a.to(kUInt8), 0).contiguous();
  };
  ATH_CHECK(allowed.defined(), ValueError,
            "CRF: set_allowed_transitions needs the allowed [K, K] matrix (use "
            "clear_allowed_transitions to drop constraints)");
  Tensor d = disallowed(allowed, {k, k}, "allowed");
  Tensor ds = disallowed(start_allowed, {k}, "start_allowed");
  Tensor de = disallowed(end_allowed, {k}, "end_allowed");
  disallowed_ = d;
  start_disallowed_ = ds;
  end_disallowed_ = de;
}

void CRF::clear_allowed_transitions() {
  disallowed_ = start_disallowed_ = end_disallowed_ = Tensor();
}

CRF::Scores CRF::scores() const {
  if (!has_constraints()) return {start_transitions, end_transitions, transitions};
  // masked_fill passes no gradient to the filled entries.
  return {masked_fill(start_transitions, start_disallowed_, kNegInf),
          masked_fill(end_transitions, end_disallowed_, kNegInf),
          masked_fill(transitions, disallowed_, kNegInf)};
}

Tensor CRF::log_likelihood(const Tensor& emissions, const Tensor& tags, const Tensor& mask,
                           CRFReduction reduction) const {
  const Batch in = validate(options, emissions, &tags, mask);
  const int64_t T = in.steps, B = in.batch, K = options.num_tags;
  const Scores s = scores();
  const Tensor& em = in.emissions;

  // ---- numerator: the score of the given tags (pytorch-crf's _compute_score) ----
  Tensor tag_index = from_vector<int64_t>(in.tags, {T, B, 1});
  // Emissions and transitions at mask-off steps count 0. where() rather than pytorch-crf's
  // multiplication by the mask: the same values, but a -inf (disallowed) transition past a
  // sample's end must not become -inf * 0 = NaN.
  Tensor emitted = where(in.mask, gather(em, 2, tag_index).squeeze(2), 0.0);
  Tensor first = from_vector<int64_t>(std::vector<int64_t>(in.tags.begin(), in.tags.begin() + B));
  Tensor score = add(index_select(s.start, 0, first), sum(emitted, {0}));
  if (T > 1) {
    std::vector<int64_t> pair(static_cast<std::size_t>((T - 1) * B));
    for (int64_t i = 0; i < (T - 1) * B; ++i) pair[i] = in.tags[i] * K + in.tags[i + B];
    Tensor moved =
        index_select(s.trans.reshape({K * K}), 0, from_vector<int64_t>(pair)).reshape({T - 1, B});
    score = add(score, sum(where(in.mask.narrow(0, 1, T - 1), moved, 0.0), {0}));
  }
  // The last tag is the one at index sum(mask) - 1 (pytorch-crf's seq_ends, also for a mask
  // with gaps).
  std::vector<int64_t> last(static_cast<std::size_t>(B));
  for (int64_t b = 0; b < B; ++b) last[b] = in.tags[(in.on_count(b) - 1) * B + b];
  score = add(score, index_select(s.end, 0, from_vector<int64_t>(last)));

  // ---- denominator: the log partition function (forward algorithm, _compute_normalizer) ----
  Tensor alpha = add(s.start, em.select(0, 0));  // [B, K]: log-sum of paths ending in tag j
  Tensor trans = s.trans.unsqueeze(0);           // [1, K, K]
  for (int64_t t = 1; t < T; ++t) {
    int64_t on = 0;
    for (int64_t b = 0; b < B; ++b) on += in.on[t * B + b];
    if (on == 0) continue;  // every sample keeps its alpha
    // [B, K, K]: alpha[b, i] + trans[i, j] + em[t, b, j], summed over i in log space.
    Tensor next =
        logsumexp_safe(add(add(alpha.unsqueeze(2), trans), em.select(0, t).unsqueeze(1)), 1);
    alpha = on == B ? next : where(in.mask.select(0, t).unsqueeze(1), next, alpha);
  }
  Tensor log_z = logsumexp_safe(add(alpha, s.end), 1);  // [B]
  return reduce(sub(score, log_z), reduction, in);
}

Tensor CRF::nll(const Tensor& emissions, const Tensor& tags, const Tensor& mask,
                CRFReduction reduction) const {
  return neg(log_likelihood(emissions, tags, mask, reduction));
}

std::vector<std::vector<int64_t>> CRF::decode(const Tensor& emissions, const Tensor& mask) const {
  const Batch in = validate(options, emissions, nullptr, mask);
  const int64_t T = in.steps, B = in.batch, K = options.num_tags;
  NoGradGuard no_grad;
  const Scores s = scores();
  const std::vector<double> em = in.emissions.to(kFloat64).to_vector<double>();  // [T, B, K]
  const std::vector<double> start = s.start.to(kFloat64).to_vector<double>();
  const std::vector<double> end = s.end.to(kFloat64).to_vector<double>();
  const std::vector<double> trans = s.trans.to(kFloat64).to_vector<double>();

  // torch.max's choice: the first maximum, and a NaN wins (it propagates).
  auto better = [](double v, double best) {
    return v > best || (std::isnan(v) && !std::isnan(best));
  };
  // score[b * K + j]: the best path so far ending in tag j; history[((t - 1) * B + b) * K + j]
  // the tag before it. As in pytorch-crf, history is kept for mask-off steps too, and those
  // steps leave score unchanged.
  std::vector<double> score(static_cast<std::size_t>(B * K)), next(static_cast<std::size_t>(K));
  std::vector<int32_t> history(static_cast<std::size_t>((T - 1) * B * K));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < K; ++j) score[b * K + j] = start[j] + em[b * K + j];
  for (int64_t t = 1; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const double* e = &em[(t * B + b) * K];
      double* sc = &score[b * K];
      int32_t* h = &history[((t - 1) * B + b) * K];
      for (int64_t j = 0; j < K; ++j) {
        // pytorch-crf's order of additions, (score + transition) + emission, so exact ties
        // stay ties.
        double best = (sc[0] + trans[j]) + e[j];
        int32_t arg = 0;
        for (int64_t i = 1; i < K; ++i) {
          const double v = (sc[i] + trans[i * K + j]) + e[j];
          if (better(v, best)) best = v, arg = static_cast<int32_t>(i);
        }
        next[j] = best;
        h[j] = arg;
      }
      if (in.on[t * B + b]) std::copy(next.begin(), next.end(), sc);
    }
  }

  std::vector<std::vector<int64_t>> paths(static_cast<std::size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    double best = score[b * K] + end[0];
    int64_t tag = 0;
    for (int64_t j = 1; j < K; ++j) {
      const double v = score[b * K + j] + end[j];
      if (better(v, best)) best = v, tag = j;
    }
    ATH_CHECK(!(has_constraints() && best == kNegInf), ValueError,
              "CRF: decode found no tag sequence of sample {} that the allowed transitions "
              "permit (every path scores -inf)",
              b);
    const int64_t n = in.on_count(b);
    std::vector<int64_t>& path = paths[b];
    path.resize(static_cast<std::size_t>(n));
    path[n - 1] = tag;
    // Back through the first n - 1 steps' history (pytorch-crf's history[:seq_end]).
    for (int64_t t = n - 1; t >= 1; --t) {
      tag = history[((t - 1) * B + b) * K + tag];
      path[t - 1] = tag;
    }
  }
  return paths;
}

}  // namespace ath::nn
