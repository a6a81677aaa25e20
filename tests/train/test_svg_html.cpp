// svg_line_plot's value mapping and edge cases, and the HTML report built from synthetic metrics.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "athanor/train/html_report.h"
#include "athanor/train/svg_plot.h"
#include "io/temp_dir.h"

namespace ath::train {
namespace {

std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

// The points of every polyline, in order.
std::vector<std::vector<std::pair<double, double>>> polylines(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> out;
  std::regex re("<polyline[^>]*points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    std::vector<std::pair<double, double>> pts;
    std::istringstream ss((*it)[1].str());
    std::string tok;
    while (ss >> tok) {
      const auto comma = tok.find(',');
      pts.emplace_back(std::stod(tok.substr(0, comma)), std::stod(tok.substr(comma + 1)));
    }
    out.push_back(pts);
  }
  return out;
}

TEST(SvgPlot, MapsDataRangeOntoPlotArea) {
  PlotOptions o;
  const PlotArea a = plot_area(o);
  std::string svg = svg_line_plot({{.name = "y", .x = {0, 1, 2, 3, 4}, .y = {3, 1, 4, 1, 5}}}, o);
  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), 5u);
  EXPECT_NEAR(lines[0][0].first, a.left, 0.01);
  EXPECT_NEAR(lines[0][4].first, a.right, 0.01);
  EXPECT_NEAR(lines[0][2].first, (a.left + a.right) / 2, 0.01);
  EXPECT_NEAR(lines[0][4].second, a.top, 0.01);     // max y at the top
  EXPECT_NEAR(lines[0][1].second, a.bottom, 0.01);  // min y at the bottom
  EXPECT_NEAR(lines[0][0].second, a.bottom + (a.top - a.bottom) * 0.5, 0.01);
  EXPECT_EQ(count(svg, "<script"), 0u);
  EXPECT_NE(svg.find(">y</text>"), std::string::npos);  // legend entry
}

TEST(SvgPlot, SkipsNonFiniteAndHandlesDegenerateSeries) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  PlotOptions o;
  const PlotArea a = plot_area(o);
  // NaN and inf break the line and are left out of the range: the range is y in [1, 3].
  std::string svg = svg_line_plot({{.name = "s", .x = {0, 1, 2, 3, 4}, .y = {1, nan, 2, inf, 3}}});
  EXPECT_EQ(count(svg, "<polyline"), 0u);  // every run is a single point
  EXPECT_EQ(count(svg, "<circle"), 3u);
  svg = svg_line_plot({{.name = "s", .x = {0, 1, 2, 3}, .y = {1, nan, 2, 3}}});
  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].size(), 2u);
  EXPECT_NEAR(lines[0][1].second, a.top, 0.01);
  EXPECT_EQ(count(svg, "<circle"), 1u);
  EXPECT_FALSE(std::regex_search(svg, std::regex("[\"\\s,>](-?nan|-?inf)")));
  // A single point sits in the middle of the plot.
  svg = svg_line_plot({{.name = "one", .x = {7}, .y = {0.5}}});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<circle cx=\"([^\"]+)\" cy=\"([^\"]+)\"")));
  EXPECT_NEAR(std::stod(m[1]), (a.left + a.right) / 2, 0.01);
  EXPECT_NEAR(std::stod(m[2]), (a.top + a.bottom) / 2, 0.01);
  // A constant series is a horizontal line through the middle.
  lines = polylines(svg_line_plot({{.name = "c", .x = {0, 1, 2}, .y = {2, 2, 2}}}));
  ASSERT_EQ(lines.size(), 1u);
  for (auto& p : lines[0]) EXPECT_NEAR(p.second, (a.top + a.bottom) / 2, 0.01);
  // No data at all still gives a valid, empty plot.
  svg = svg_line_plot({{.name = "empty", .x = {}, .y = {}}});
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(SvgPlot, LogAxisAndTicks) {
  PlotOptions o{.title = "LR finder", .x_label = "learning rate", .log_x = true};
  const PlotArea a = plot_area(o);
  std::string svg = svg_line_plot(
      {{.name = "loss", .x = {1e-4, 1e-3, 1e-2, 1e-1, 0, -1}, .y = {2, 1.5, 1, 3, 9, 9}}}, o);
  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 1u);  // x <= 0 cannot be shown on a log axis: dropped
  ASSERT_EQ(lines[0].size(), 4u);
  EXPECT_NEAR(lines[0][0].first, a.left, 0.01);
  EXPECT_NEAR(lines[0][2].first, a.left + (a.right - a.left) * 2 / 3, 0.01);
  EXPECT_NEAR(lines[0][3].first, a.right, 0.01);
  EXPECT_NEAR(lines[0][3].second, a.top, 0.01);  // the dropped y = 9 did not widen the range
  for (const char* label : {">0.0001<", ">0.001<", ">0.01<", ">0.1<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  EXPECT_EQ(AxisScale(0, 1, 0, 100, false).ticks(6),
            (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(AxisScale(-3, 17, 0, 100, false).ticks(6), (std::vector<double>{0, 5, 10, 15}));
  EXPECT_EQ(AxisScale(1, 30, 0, 100, true).ticks(6), (std::vector<double>{1, 2, 5, 10, 20}));
  EXPECT_DOUBLE_EQ(AxisScale(2, 4, 10, 30, false)(3), 20);
  EXPECT_DOUBLE_EQ(AxisScale(1, 100, 0, 100, true)(10), 50);
  EXPECT_EQ(data_range({}, false), (std::pair<double, double>{0, 1}));
  EXPECT_EQ(xml_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
}

TEST(SvgPlot, ThinsLongSeriesKeepingSpikes) {
  PlotSeries s{.name = "long", .x = {}, .y = {}};
  for (int i = 0; i < 10000; ++i) {
    s.x.push_back(i);
    s.y.push_back(i == 4321 ? 100.0 : std::sin(i * 0.01));
  }
  auto lines = polylines(svg_line_plot({s}, {.max_points = 200}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LE(lines[0].size(), 200u);
  const PlotArea a = plot_area({});
  bool spike = false;
  for (auto& p : lines[0]) spike |= std::abs(p.second - a.top) < 0.01;
  EXPECT_TRUE(spike);
}

TEST(HtmlReport, Groups) {
  EXPECT_EQ(metric_group("train_loss_step"), "loss");
  EXPECT_EQ(metric_group("val_loss"), "loss");
  EXPECT_EQ(metric_group("val_acc"), "accuracy");
  EXPECT_EQ(metric_group("train_accuracy_epoch"), "accuracy");
  EXPECT_EQ(metric_group("lr-SGD"), "learning rate");
  EXPECT_EQ(metric_group("lr"), "learning rate");
  EXPECT_EQ(metric_group("grad_norm"), "grad_norm");
  EXPECT_EQ(metric_group("epoch"), "");
}

TEST(HtmlReport, WritesSelfContainedPage) {
  testing::TempDir dir;
  const std::string out = (dir.path() / "run").string();
  HtmlReport report(out);
  report.log_hyperparams({{"lr", 0.1}, {"model", {{"hidden", 128}, {"act", "<relu>"}}}});
  for (int step = 0; step < 20; ++step) {
    report.log_metrics({{"train_loss_step", 2.0 / (step + 1)},
                        {"lr-SGD", 0.1 * (1 - step / 20.0)},
                        {"epoch", step / 10}},
                       step);
    if (step % 10 == 9) {
      report.log_metrics({{"val_loss", 1.0 / (step + 1)},
                          {"val_acc", step / 20.0},
                          {"samples_per_s", 1000.0 + step},
                          {"epoch_time_s", 1.5},
                          {"x<b>&y", step == 9 ? std::nan("") : 1.0}},
                         step);
    }
  }
  report.log_text("model_summary", "  | Name | Type\n0 | fc   | <Linear>\n");
  report.log_text("lr_finder_svg", "<svg id=\"lrf\"><circle r=\"1\"/></svg>");
  report.log_text("notes", "a < b & c");
  report.save();
  std::ifstream f(report.path());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string html = ss.str();
  EXPECT_EQ(html, report.render());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "http://"), count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  // Plots: loss (2 series), accuracy, learning rate, samples_per_s, epoch_time_s, x<b>&y.
  EXPECT_EQ(count(html, "<svg xmlns"), 6u);
  EXPECT_EQ(count(html, "<polyline"), 6u);  // x<b>&y: NaN then one value, a lone dot
  EXPECT_NE(html.find("x&lt;b&gt;&amp;y"), std::string::npos);
  EXPECT_EQ(html.find("x<b>&y"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"lrf\"><circle r=\"1\"/></svg>"), std::string::npos);
  EXPECT_NE(html.find("&lt;Linear&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &lt; b &amp; c"), std::string::npos);
  EXPECT_NE(html.find("<td>model.act</td><td>&lt;relu&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("Throughput and timing"), std::string::npos);
  EXPECT_NE(html.find("<td>samples_per_s</td><td class=\"num\">1019</td>"
                      "<td class=\"num\">1014</td>"),
            std::string::npos);
  EXPECT_NE(html.find("Status: <span class=\"status\">running</span>"), std::string::npos);
  report.finalize("success");
  std::ifstream g(report.path());
  std::stringstream s2;
  s2 << g.rdbuf();
  EXPECT_NE(s2.str().find("Status: <span class=\"status\">success</span>"), std::string::npos);
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    entries.push_back(e.path().filename().string());
  }
  EXPECT_EQ(entries, std::vector<std::string>{"report.html"});  // no temporary left behind
}

}  // namespace
}  // namespace ath::train
