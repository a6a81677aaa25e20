#include "athanor/train/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ath::train {
namespace {

// tab10, matplotlib's default cycle.
const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

bool usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

std::string num(double v) { return fmt::format("{:.2f}", v); }

std::string tick_label(double v) {
  if (std::abs(v) < 1e-12) v = 0;  // 1-2-5 steps can land on -1e-17 instead of 0
  return fmt::format("{:.4g}", v);
}

struct Point {
  double x, y;
};

// Keeps each bucket's lowest and highest point (in x order), so spikes survive thinning.
std::vector<Point> thin(const std::vector<Point>& pts, std::size_t max_points) {
  if (pts.size() <= max_points || max_points < 4) return pts;
  const std::size_t buckets = max_points / 2;
  std::vector<Point> out;
  out.reserve(buckets * 2);
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t begin = b * pts.size() / buckets, end = (b + 1) * pts.size() / buckets;
    if (begin == end) continue;
    std::size_t lo = begin, hi = begin;
    for (std::size_t i = begin; i < end; ++i) {
      if (pts[i].y < pts[lo].y) lo = i;
      if (pts[i].y > pts[hi].y) hi = i;
    }
    out.push_back(pts[std::min(lo, hi)]);
    if (lo != hi) out.push_back(pts[std::max(lo, hi)]);
  }
  return out;
}

}  // namespace

PlotArea plot_area(const PlotOptions& o) {
  return {64.0, 32.0, static_cast<double>(o.width) - 16.0, static_cast<double>(o.height) - 44.0};
}

AxisScale::AxisScale(double lo, double hi, double pix_lo, double pix_hi, bool log)
    : lo_(lo), hi_(hi), pix_lo_(pix_lo), pix_hi_(pix_hi), log_(log) {}

double AxisScale::operator()(double v) const {
  const double a = log_ ? std::log10(lo_) : lo_, b = log_ ? std::log10(hi_) : hi_;
  const double t = ((log_ ? std::log10(v) : v) - a) / (b - a);
  return pix_lo_ + t * (pix_hi_ - pix_lo_);
}

std::vector<double> AxisScale::ticks(int max_ticks) const {
  std::vector<double> out;
  if (log_) {
    const int k0 = static_cast<int>(std::ceil(std::log10(lo_) - 1e-9));
    const int k1 = static_cast<int>(std::floor(std::log10(hi_) + 1e-9));
    const bool fine = k1 - k0 < 2;
    const int stride = std::max(1, (k1 - k0 + 1 + max_ticks - 1) / std::max(1, max_ticks));
    for (int k = k0 - 1; k <= k1; ++k) {
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double v = m * std::pow(10.0, k);
        if (v < lo_ * (1 - 1e-9) || v > hi_ * (1 + 1e-9)) continue;
        if (!fine && (k - k0) % stride != 0) continue;
        out.push_back(v);
      }
    }
    return out;
  }
  const double raw = (hi_ - lo_) / std::max(1, max_ticks - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo_ / step - 1e-9);
  for (double i = first; i * step <= hi_ + step * 1e-9; i += 1) out.push_back(i * step);
  return out;
}

std::pair<double, double> data_range(const std::vector<const std::vector<double>*>& values,
                                     bool log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* vs : values) {
    for (double v : *vs) {
      if (!usable(v, log)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (lo > hi) return log ? std::pair{1.0, 10.0} : std::pair{0.0, 1.0};
  if (lo == hi) {
    if (log) return {lo / 2, hi * 2};
    const double d = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    return {lo - d, hi + d};
  }
  return {lo, hi};
}

std::string svg_line_plot(const std::vector<PlotSeries>& series, const PlotOptions& o) {
  const PlotArea a = plot_area(o);
  // Only points usable on both axes count towards the ranges.
  std::vector<std::vector<double>> xs(series.size()), ys(series.size());
  for (std::size_t s = 0; s < series.size(); ++s) {
    const std::size_t n = std::min(series[s].x.size(), series[s].y.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (usable(series[s].x[i], o.log_x) && usable(series[s].y[i], o.log_y)) {
        xs[s].push_back(series[s].x[i]);
        ys[s].push_back(series[s].y[i]);
      }
    }
  }
  std::vector<const std::vector<double>*> xp, yp;
  for (std::size_t s = 0; s < series.size(); ++s) {
    xp.push_back(&xs[s]);
    yp.push_back(&ys[s]);
  }
  const auto [x0, x1] = data_range(xp, o.log_x);
  const auto [y0, y1] = data_range(yp, o.log_y);
  const AxisScale sx(x0, x1, a.left, a.right, o.log_x), sy(y0, y1, a.bottom, a.top, o.log_y);

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      o.width, o.height);
  if (!o.title.empty()) {
    svg += fmt::format(
        "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"13\" "
        "font-weight=\"bold\">{}</text>\n",
        num((a.left + a.right) / 2), xml_escape(o.title));
  }
  // Grid, ticks and tick labels.
  for (double t : sx.ticks(7)) {
    const std::string px = num(sx(t));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{0}\" y2=\"{3}\" stroke=\"black\"/>"
        "<text x=\"{0}\" y=\"{4}\" text-anchor=\"middle\">{5}</text>\n",
        px, num(a.top), num(a.bottom), num(a.bottom + 4), num(a.bottom + 16), tick_label(t));
  }
  for (double t : sy.ticks(6)) {
    const std::string py = num(sy(t));
    svg += fmt::format(
        "<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#e5e5e5\"/>"
        "<line x1=\"{3}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/>"
        "<text x=\"{4}\" y=\"{0}\" text-anchor=\"end\" dominant-baseline=\"middle\">{5}</text>\n",
        py, num(a.left), num(a.right), num(a.left - 4), num(a.left - 6), tick_label(t));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n",
      num(a.left), num(a.top), num(a.right - a.left), num(a.bottom - a.top));
  if (!o.x_label.empty()) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       num((a.left + a.right) / 2), o.height - 8, xml_escape(o.x_label));
  }
  if (!o.y_label.empty()) {
    svg += fmt::format(
        "<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0})\">{1}"
        "</text>\n",
        num((a.top + a.bottom) / 2), xml_escape(o.y_label));
  }
  if (xs.empty() || std::all_of(xs.begin(), xs.end(), [](auto& v) { return v.empty(); })) {
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888\">no data"
        "</text>\n",
        num((a.left + a.right) / 2), num((a.top + a.bottom) / 2));
  }

  // Series: runs of usable points become polylines, lone points dots.
  for (std::size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % 10];
    const std::size_t n = std::min(series[s].x.size(), series[s].y.size());
    std::vector<std::vector<Point>> runs(1);
    for (std::size_t i = 0; i < n; ++i) {
      const double x = series[s].x[i], y = series[s].y[i];
      if (usable(x, o.log_x) && usable(y, o.log_y)) {
        runs.back().push_back({x, y});
      } else if (!runs.back().empty()) {
        runs.emplace_back();
      }
    }
    for (const auto& run : runs) {
      if (run.empty()) continue;
      if (run.size() == 1) {
        svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", num(sx(run[0].x)),
                           num(sy(run[0].y)), color);
        continue;
      }
      std::string pts;
      for (const Point& p : thin(run, o.max_points)) {
        if (!pts.empty()) pts += ' ';
        pts += num(sx(p.x)) + "," + num(sy(p.y));
      }
      svg += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color,
          pts);
    }
  }
  if (o.marker_x && usable(*o.marker_x, o.log_x)) {
    const std::string px = num(sx(*o.marker_x));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#d62728\" "
        "stroke-dasharray=\"4 3\"/>\n",
        px, num(a.top), num(a.bottom));
    if (!o.marker_label.empty()) {
      svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#d62728\">{}</text>\n", px, num(a.top - 3),
                         xml_escape(o.marker_label));
    }
  }
  // Legend in the top right corner of the plot area.
  if (!series.empty()) {
    std::size_t longest = 0;
    for (const auto& s : series) longest = std::max(longest, s.name.size());
    const double w = 28 + 6.5 * static_cast<double>(std::min<std::size_t>(longest, 40));
    const double x = a.right - w - 6, y = a.top + 6;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"white\" fill-opacity=\"0.85\" "
        "stroke=\"#ccc\"/>\n",
        num(x), num(y), num(w), num(series.size() * 15.0 + 6));
    for (std::size_t s = 0; s < series.size(); ++s) {
      const double ly = y + 12 + 15.0 * static_cast<double>(s);
      svg += fmt::format(
          "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"/>"
          "<text x=\"{4}\" y=\"{1}\" dominant-baseline=\"middle\">{5}</text>\n",
          num(x + 5), num(ly), num(x + 21), kColors[s % 10], num(x + 25),
          xml_escape(series[s].name));
    }
  }
  return svg + "</svg>\n";
}

}  // namespace ath::train
