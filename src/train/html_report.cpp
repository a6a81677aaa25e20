#include "athanor/train/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "athanor/core/error.h"
#include "athanor/io/atomic_file.h"
#include "athanor/train/svg_plot.h"

namespace ath::train {
namespace {

const char* const kStyle = R"(<style>
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
td.num { text-align: right; font-family: monospace; }
pre { background: #f6f6f6; padding: 8px; font-size: 12px; overflow-x: auto; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.status { font-weight: bold; }
</style>
)";

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool is_timing(const std::string& key) {
  return key.ends_with("_per_s") || key.ends_with("_per_sec") || contains(key, "time") ||
         contains(key, "throughput");
}

std::string value_text(double v) { return xml_escape(fmt::format("{:.6g}", v)); }

// Nested hyperparameters as dotted keys.
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump());
}

}  // namespace

std::string metric_group(const std::string& key) {
  if (key == "epoch" || key == "step") return "";
  if (contains(key, "loss")) return "loss";
  if (contains(key, "acc")) return "accuracy";
  if (key == "lr" || key.starts_with("lr-") || key.starts_with("lr_")) return "learning rate";
  return key;
}

HtmlReport::HtmlReport(std::string dir, HtmlReportOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {}

void HtmlReport::log_hyperparams(const nlohmann::json& hparams) {
  if (!hparams.is_object()) {
    hparams_["hparams"] = hparams;
    return;
  }
  for (const auto& [k, v] : hparams.items()) hparams_[k] = v;
}

void HtmlReport::log_metrics(const Metrics& metrics, int64_t step) {
  for (const auto& [k, v] : metrics) series_[k].emplace_back(step, v);
}

void HtmlReport::log_text(const std::string& key, const std::string& text) {
  for (auto& [k, t] : texts_) {
    if (k == key) {
      t = text;
      return;
    }
  }
  texts_.emplace_back(key, text);
}

std::string HtmlReport::render() const {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>" + xml_escape(options_.title) + "</title>\n" + kStyle + "</head>\n<body>\n";
  h += "<h1>" + xml_escape(options_.title) + "</h1>\n";
  h += "<p>Status: <span class=\"status\">" + xml_escape(status_) + "</span>";
  int64_t last_step = -1;
  for (const auto& [k, pts] : series_) {
    for (const auto& p : pts) last_step = std::max(last_step, p.first);
  }
  if (last_step >= 0) h += fmt::format(" &middot; last step {}", last_step);
  h += "</p>\n";

  if (!series_.empty()) {
    h += "<h2>Metrics</h2>\n<table>\n<tr><th>metric</th><th>last value</th><th>at step</th></tr>\n";
    for (const auto& [k, pts] : series_) {
      h += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       xml_escape(k), value_text(pts.back().second), pts.back().first);
    }
    h += "</table>\n";
    // Groups in a fixed order: loss, accuracy, learning rate, then the rest by name.
    std::map<std::string, std::vector<std::string>> groups;
    for (const auto& [k, pts] : series_) {
      if (std::string g = metric_group(k); !g.empty()) groups[g].push_back(k);
    }
    std::vector<std::string> order;
    for (const char* g : {"loss", "accuracy", "learning rate"}) {
      if (groups.count(g)) order.push_back(g);
    }
    for (const auto& [g, keys] : groups) {
      if (g != "loss" && g != "accuracy" && g != "learning rate") order.push_back(g);
    }
    h += "<h2>Plots</h2>\n<div class=\"plots\">\n";
    for (const std::string& g : order) {
      std::vector<PlotSeries> series;
      for (const std::string& k : groups[g]) {
        PlotSeries s{.name = k, .x = {}, .y = {}};
        for (const auto& [step, v] : series_.at(k)) {
          s.x.push_back(static_cast<double>(step));
          s.y.push_back(v);
        }
        series.push_back(std::move(s));
      }
      std::string title = g;
      if (!title.empty()) title[0] = static_cast<char>(std::toupper(title[0]));
      h += "<div>" + svg_line_plot(series, {.title = title, .x_label = "step"}) + "</div>\n";
    }
    h += "</div>\n";
  }
  for (const auto& [k, t] : texts_) {
    if (k.ends_with("_svg")) h += "<h2>" + xml_escape(k.substr(0, k.size() - 4)) + "</h2>\n" + t;
  }

  // Throughput and timing: statistics over the finite values.
  std::string timing;
  for (const auto& [k, pts] : series_) {
    if (!is_timing(k)) continue;
    double sum = 0, lo = std::numeric_limits<double>::infinity(), hi = -lo;
    int64_t n = 0;
    for (const auto& p : pts) {
      if (!std::isfinite(p.second)) continue;
      sum += p.second;
      lo = std::min(lo, p.second);
      hi = std::max(hi, p.second);
      ++n;
    }
    if (n == 0) continue;
    timing += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        xml_escape(k), value_text(pts.back().second), value_text(sum / static_cast<double>(n)),
        value_text(lo), value_text(hi));
  }
  if (!timing.empty()) {
    h += "<h2>Throughput and timing</h2>\n<table>\n<tr><th>metric</th><th>last</th>"
         "<th>mean</th><th>min</th><th>max</th></tr>\n" +
         timing + "</table>\n";
  }
  if (!hparams_.empty()) {
    std::vector<std::pair<std::string, std::string>> rows;
    flatten(hparams_, "", rows);
    h += "<h2>Hyperparameters</h2>\n<table>\n<tr><th>name</th><th>value</th></tr>\n";
    for (const auto& [k, v] : rows) {
      h += "<tr><td>" + xml_escape(k) + "</td><td>" + xml_escape(v) + "</td></tr>\n";
    }
    h += "</table>\n";
  }
  for (const auto& [k, t] : texts_) {
    if (k != "model_summary") continue;
    h += "<h2>Model summary</h2>\n<pre>" + xml_escape(t) + "</pre>\n";
  }
  for (const auto& [k, t] : texts_) {
    if (k == "model_summary" || k.ends_with("_svg")) continue;
    h += "<h2>" + xml_escape(k) + "</h2>\n<pre>" + xml_escape(t) + "</pre>\n";
  }
  return h + "</body>\n</html>\n";
}

void HtmlReport::save() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  ATH_CHECK(!ec, IOError, "HtmlReport: cannot create {}: {}", dir_, ec.message());
  const std::string page = render();
  write_file_atomic(path(), {reinterpret_cast<const uint8_t*>(page.data()), page.size()});
}

void HtmlReport::finalize(const std::string& status) {
  status_ = status;
  save();
}

}  // namespace ath::train
