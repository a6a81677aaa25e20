// svg_line_plot: a self-contained SVG line chart (no script, no external resources) for the HTML
// report and the LR finder: axes with "nice" ticks and labels, one polyline per series, a legend.
//
//   std::vector<double> steps = {0, 50, 100}, losses = {2.3, 0.9, 0.6};
//   std::vector<double> s2 = {100}, v2 = {0.7};                    // one point: drawn as a dot
//   std::string svg = train::svg_line_plot(
//       {{.name = "train_loss", .x = steps, .y = losses}, {.name = "val_loss", .x = s2, .y = v2}},
//       {.title = "Loss", .x_label = "step"});
//
// The data's range maps exactly onto the plot area (smallest x to its left edge, largest y to its
// top). Non-finite points (and points <= 0 on a log axis) are skipped and break the line; a
// series with a single point is drawn as a dot; a constant series is centred vertically. Series
// longer than max_points are thinned keeping each bucket's minimum and maximum, so spikes stay.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "athanor/core/xml_escape.h"

namespace ath::train {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;  // same length (the shorter one bounds the series)
};

struct PlotOptions {
  std::string title, x_label = "step", y_label;
  bool log_x = false, log_y = false;
  int width = 640, height = 320;
  std::optional<double> marker_x;  // a dashed vertical line, e.g. the LR finder's suggestion
  std::string marker_label;
  std::size_t max_points = 2000;  // per series
};

std::string svg_line_plot(const std::vector<PlotSeries>& series, const PlotOptions& options = {});

// Plot geometry, exposed for tests and for callers that annotate plots.
struct PlotArea {
  double left, top, right, bottom;  // pixels; y grows downwards
};
PlotArea plot_area(const PlotOptions& options);

// Maps data values onto [pix_lo, pix_hi], linearly or by log10.
class AxisScale {
 public:
  AxisScale(double lo, double hi, double pix_lo, double pix_hi, bool log);
  double operator()(double v) const;
  // Up to about max_ticks round values inside [lo, hi] (1-2-5 steps; powers of ten on a log
  // axis, with 2x and 5x when the range spans under two decades).
  std::vector<double> ticks(int max_ticks = 6) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }

 private:
  double lo_, hi_, pix_lo_, pix_hi_;
  bool log_;
};

// The range of the finite values in `values` (only > 0 when log), widened around a single value
// so that it is never empty: {v - 10%, v + 10%} ({-1, 1} for 0; {v / 2, v * 2} when log).
// No finite value: {0, 1} ({1, 10} when log).
std::pair<double, double> data_range(const std::vector<const std::vector<double>*>& values,
                                     bool log);

using ath::xml_escape;  // core/xml_escape.h

}  // namespace ath::train
