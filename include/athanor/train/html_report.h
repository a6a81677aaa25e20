// HtmlReport: a Logger that writes one self-contained report.html (inline SVG and CSS, no
// script, nothing fetched from the network) into a directory, rewritten atomically on every
// save() (the Trainer saves at each epoch end), so it can be opened while training runs.
//
//   #include "athanor/nn/linear.h"
//   #include "athanor/nn/summary.h"
//   #include "athanor/train/csv_logger.h"
//   nn::Linear model({.in = 4, .out = 2});
//   auto logger = std::make_shared<train::CSVLogger>("runs");  // runs/lightning_logs/version_N
//   auto report = std::make_shared<train::HtmlReport>(logger->log_dir());
//   report->log_text("model_summary", nn::summarize(model).to_string());
//   report->log_metrics({{"train_loss", 0.41}, {"val_acc", 0.87}}, 100);
//   report->save();                                  // <log_dir>/report.html
//
// The report shows: the run status and last value of every metric; a line plot of every metric
// against step, grouped (every *loss* metric in one plot, *acc* metrics in one, learning rates
// "lr", "lr-*", "lr_*" in one, any other alone; "epoch" is not plotted); throughput and timing
// statistics (metrics named *_per_s, *time*, *throughput*); the hyperparameters; the model
// summary (log_text "model_summary"); other log_text entries as preformatted text, except keys
// ending in "_svg" (e.g. "lr_finder_svg"), which are trusted SVG embedded as-is. Every other user
// string is HTML-escaped.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "athanor/train/logger.h"

namespace ath::train {

struct HtmlReportOptions {
  std::string title = "Training report";
  std::string file_name = "report.html";
};

class HtmlReport : public Logger {
 public:
  // The directory is created on the first save().
  explicit HtmlReport(std::string dir, HtmlReportOptions options = {});

  std::string name() const override { return "html_report"; }
  std::string log_dir() const override { return dir_; }
  std::string path() const { return dir_ + "/" + options_.file_name; }

  void log_hyperparams(const nlohmann::json& hparams) override;  // merged, top-level keys
  void log_metrics(const Metrics& metrics, int64_t step) override;
  void log_text(const std::string& key, const std::string& text) override;  // latest wins
  void save() override;
  void finalize(const std::string& status) override;

  std::string render() const;  // the page save() writes

 private:
  std::string dir_;
  HtmlReportOptions options_;
  nlohmann::json hparams_ = nlohmann::json::object();
  std::map<std::string, std::vector<std::pair<int64_t, double>>> series_;
  std::vector<std::pair<std::string, std::string>> texts_;  // in first-logged order
  std::string status_ = "running";
};

// The plot a metric goes to: "loss", "accuracy", "learning rate", the key itself, or "" (not
// plotted: "epoch", "step").
std::string metric_group(const std::string& key);

}  // namespace ath::train
