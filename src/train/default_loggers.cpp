// TEMPORARY until the loggers branch lands: no default loggers / progress bar yet.
#include "athanor/train/default_loggers.h"

namespace ath::train {

std::vector<std::shared_ptr<Logger>> make_default_loggers(const std::string& /*root_dir*/) {
  return {};
}
void add_default_progress_bar(const Trainer& /*trainer*/,
                              std::vector<std::shared_ptr<Callback>>& /*callbacks*/) {}

}  // namespace ath::train
