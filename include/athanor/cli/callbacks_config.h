// trainer.callbacks in a config (LightningCLI's `class_path` + `init_args` entries) -> the
// callback objects. The accepted classes and their arguments are default_callback_classes()
// in athanor_schema.h; the config was validated against them before it gets here.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "athanor/train/callback.h"

namespace ath::cli {

std::vector<std::shared_ptr<train::Callback>> build_callbacks(const nlohmann::json& list);

}  // namespace ath::cli
