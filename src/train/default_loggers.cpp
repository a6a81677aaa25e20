// The Trainer's defaults: Lightning's CSVLogger layout (root/lightning_logs/version_N), with
// TensorBoard's event file (what Lightning's default logger writes when tensorboard is installed)
// and the HTML report in the same folder, and the progress bar.
#include "athanor/train/default_loggers.h"

#include "athanor/train/callbacks/progress_bar_callback.h"
#include "athanor/train/csv_logger.h"
#include "athanor/train/html_report.h"
#include "athanor/train/tensorboard_logger.h"
#include "athanor/train/trainer.h"

namespace ath::train {

std::vector<std::shared_ptr<Logger>> make_default_loggers(const std::string& root_dir) {
  auto csv = std::make_shared<CSVLogger>(root_dir);
  auto tensorboard = std::make_shared<TensorBoardLogger>(
      root_dir, TensorBoardLoggerOptions{.name = csv->name(), .version = csv->version_number()});
  auto report = std::make_shared<HtmlReport>(csv->log_dir());
  return {csv, tensorboard, report};
}

void add_default_progress_bar(const Trainer& trainer,
                              std::vector<std::shared_ptr<Callback>>& callbacks) {
  if (!trainer.options().enable_progress_bar) return;
  for (const auto& cb : callbacks) {
    if (dynamic_cast<TQDMProgressBar*>(cb.get()) != nullptr) return;
  }
  callbacks.push_back(std::make_shared<TQDMProgressBar>());
}

}  // namespace ath::train
