// LearningRateFinder (see the header): Lightning's lr_find — its schedules (_ExponentialLR,
// _LinearLR stepped once per optimizer step), its loss smoothing and early stop (_LRCallback)
// and its suggestion() — run as a self-contained loop inside on_fit_start.
#include "athanor/train/callbacks/learning_rate_finder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "../step_runner.h"
#include "athanor/core/error.h"
#include "athanor/train/trainer.h"
#include "training_snapshot.h"

namespace ath::train {

namespace detail {
std::vector<double> gradient(const std::vector<double>& y, const std::vector<double>& x) {
  const std::size_t n = y.size();
  std::vector<double> g(n);
  if (n < 2) return g;
  g[0] = (y[1] - y[0]) / (x[1] - x[0]);
  g[n - 1] = (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]);
  for (std::size_t i = 1; i + 1 < n; ++i) {
    const double hl = x[i] - x[i - 1], hr = x[i + 1] - x[i];
    g[i] = (hl * hl * y[i + 1] - hr * hr * y[i - 1] + (hr * hr - hl * hl) * y[i]) /
           (hl * hr * (hl + hr));
  }
  return g;
}
}  // namespace detail

LearningRateFinder::LearningRateFinder(LearningRateFinderOptions options)
    : options_(std::move(options)) {
  const auto& o = options_;
  ATH_CHECK(o.min_lr > 0 && o.max_lr > o.min_lr && std::isfinite(o.max_lr), ValueError,
            "LearningRateFinder: need 0 < min_lr < max_lr, got min_lr={} max_lr={}", o.min_lr,
            o.max_lr);
  ATH_CHECK(o.num_training_steps >= 1, ValueError,
            "LearningRateFinder: num_training_steps must be >= 1, got {}", o.num_training_steps);
  ATH_CHECK(o.mode == "exponential" || o.mode == "linear", ValueError,
            "LearningRateFinder: mode must be 'exponential' or 'linear', got '{}'", o.mode);
  ATH_CHECK(!o.early_stop_threshold || *o.early_stop_threshold > 0, ValueError,
            "LearningRateFinder: early_stop_threshold must be positive, got {}",
            o.early_stop_threshold.value_or(0));
}

void LearningRateFinder::on_fit_start(Trainer& trainer, TrainingModule& module) {
  lr_find(trainer, module);
}

void LearningRateFinder::lr_find(Trainer& trainer, TrainingModule& module) {
  optim::Optimizer* opt = trainer.optimizer();
  ATH_CHECK(opt != nullptr && trainer.train_source() != nullptr, ValueError,
            "LearningRateFinder: runs inside fit (it needs the optimizer and the training data)");
  ATH_CHECK(module.automatic_optimization(), ValueError,
            "LearningRateFinder: not supported with manual optimization");
  results_ = {};
  optimal_lr_.reset();
  stopped_early_ = false;
  detail::TrainingSnapshot snapshot(module, *opt);
  try {
    search(trainer, module);
  } catch (...) {
    snapshot.restore();
    throw;
  }
  snapshot.restore();
  if (options_.update_attr) {
    optimal_lr_ = suggestion();
    if (optimal_lr_) {
      for (std::size_t g = 0; g < opt->num_param_groups(); ++g) opt->set_lr(g, *optimal_lr_);
    }
  }
  const std::string svg = plot_svg();
  for (const auto& lg : trainer.loggers()) lg->log_text("lr_finder_svg", svg);
}

void LearningRateFinder::search(Trainer& trainer, TrainingModule& module) {
  optim::Optimizer& opt = *trainer.optimizer();
  StepRunner runner(trainer, module);  // fit's step, without fit's hooks
  data::BatchSource& source = *trainer.train_source();
  const auto& o = options_;
  const int64_t accumulate = trainer.accumulate_grad_batches();
  constexpr double kBeta = 0.98;
  module.train();

  int64_t epoch = 0, batch_idx = 0;
  source.start_epoch(epoch);
  auto next_batch = [&]() -> data::Batch {
    std::optional<data::Batch> b = source.next();
    if (!b) {
      // Lightning's search runs through as many epochs as it needs.
      source.start_epoch(++epoch);
      batch_idx = 0;
      b = source.next();
      ATH_CHECK(b.has_value(), ValueError,
                "LearningRateFinder: the training source yielded no batch for epoch {}", epoch);
    }
    return std::move(*b);
  };

  double avg_loss = 0.0, best_loss = 0.0;
  const double n = static_cast<double>(o.num_training_steps);
  for (int64_t step = 0; step < o.num_training_steps; ++step) {
    const double r = static_cast<double>(step) / n;
    const double lr = o.mode == "exponential" ? o.min_lr * std::pow(o.max_lr / o.min_lr, r)
                                              : o.min_lr + r * (o.max_lr - o.min_lr);
    for (std::size_t g = 0; g < opt.num_param_groups(); ++g) opt.set_lr(g, lr);
    double loss_sum = 0.0;
    int64_t counted = 0;
    for (int64_t a = 0; a < accumulate; ++a) {
      const data::Batch batch = next_batch();
      Tensor loss = runner.training_step(batch, batch_idx++);
      if (!loss.defined()) continue;  // a skipped batch, as in the Trainer
      runner.backward(loss, counted, accumulate);
      loss_sum += loss.item<double>();
      ++counted;
    }
    if (counted == 0) continue;
    runner.optimizer_step();

    // _LRCallback.on_train_batch_end, with its step counter (the global step after the
    // optimizer step, so the bias correction's exponent starts at 2).
    const int64_t current_step = step + 1;
    const double current_loss = loss_sum / static_cast<double>(counted);
    avg_loss = kBeta * avg_loss + (1 - kBeta) * current_loss;
    const double smoothed = avg_loss / (1 - std::pow(kBeta, static_cast<double>(current_step + 1)));
    const bool diverged = o.early_stop_threshold && current_step > 1 &&
                          smoothed > *o.early_stop_threshold * best_loss;
    if (smoothed < best_loss || current_step == 1) best_loss = smoothed;
    results_.lrs.push_back(lr);
    results_.losses.push_back(smoothed);
    if (diverged) {
      stopped_early_ = true;
      break;
    }
  }
}

std::optional<double> LearningRateFinder::suggestion(int64_t skip_begin, int64_t skip_end) const {
  ATH_CHECK(skip_begin >= 0 && skip_end >= 0, ValueError,
            "LearningRateFinder::suggestion: skip_begin and skip_end must be >= 0");
  const auto total = static_cast<int64_t>(results_.losses.size());
  std::vector<std::size_t> idx;
  std::vector<double> lrs, losses;
  for (int64_t i = skip_begin; i < total - skip_end; ++i) {
    const double l = results_.losses[static_cast<std::size_t>(i)];
    if (!std::isfinite(l)) continue;
    idx.push_back(static_cast<std::size_t>(i));
    lrs.push_back(results_.lrs[static_cast<std::size_t>(i)]);
    losses.push_back(l);
  }
  if (idx.size() < 2) return std::nullopt;
  const std::vector<double> grad = detail::gradient(losses, lrs);
  std::size_t best = 0;
  double best_grad = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < grad.size(); ++i) {
    if (grad[i] < best_grad) {
      best_grad = grad[i];
      best = i;
    }
  }
  return results_.lrs[idx[best]];
}

std::string LearningRateFinder::plot_svg() const {
  constexpr double kW = 480, kH = 320, kL = 60, kR = 15, kT = 15, kB = 45;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n",
      kW, kH, kW, kH, kL, kT, kW - kL - kR, kH - kT - kB);
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < results_.lrs.size(); ++i) {
    if (std::isfinite(results_.losses[i]) && results_.lrs[i] > 0)
      pts.emplace_back(std::log10(results_.lrs[i]), results_.losses[i]);
  }
  if (pts.empty())
    return svg + "<text x=\"70\" y=\"40\">no finite losses recorded</text>\n</svg>\n";
  double x0 = pts.front().first, x1 = x0, y0 = pts.front().second, y1 = y0;
  for (const auto& [x, y] : pts) {
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  auto px = [&](double x) { return kL + (x - x0) / (x1 - x0) * (kW - kL - kR); };
  auto py = [&](double y) { return kH - kB - (y - y0) / (y1 - y0) * (kH - kT - kB); };
  svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
  for (const auto& [x, y] : pts) svg += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
  svg += "\"/>\n";
  if (auto s = suggestion()) {
    for (std::size_t i = 0; i < results_.lrs.size(); ++i) {
      if (results_.lrs[i] != *s) continue;
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"red\"/>\n"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"red\">suggested lr {:.3g}</text>\n",
          px(std::log10(*s)), py(results_.losses[i]), px(std::log10(*s)) + 6,
          py(results_.losses[i]) - 6, *s);
      break;
    }
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\">{:.3g}</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g}"
      "</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">learning rate (log scale)</text>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g}</text>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g}</text>\n"
      "<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">loss</text>\n"
      "</svg>\n",
      kL, kH - kB + 14, std::pow(10.0, x0), kW - kR, kH - kB + 14, std::pow(10.0, x1),
      (kW + kL) / 2, kH - 8, kL - 4, kH - kB, y0, kL - 4, kT + 10, y1, kH / 2, kH / 2);
  return svg;
}

}  // namespace ath::train
