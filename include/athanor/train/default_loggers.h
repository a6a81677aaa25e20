// The Trainer's defaults when the user gives none: loggers (CSVLogger, TensorBoardLogger and the
// HTML report, all in one default_root_dir/lightning_logs/version_N) and the progress bar.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "athanor/train/callback.h"
#include "athanor/train/logger.h"

namespace ath::train {

class Trainer;

std::vector<std::shared_ptr<Logger>> make_default_loggers(const std::string& root_dir);
// Adds a progress bar callback unless disabled or one is already there.
void add_default_progress_bar(const Trainer& trainer,
                              std::vector<std::shared_ptr<Callback>>& callbacks);

}  // namespace ath::train
