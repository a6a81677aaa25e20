// OnExceptionCheckpoint (see the header).
#include "athanor/train/callbacks/on_exception_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"
#include "state_key.h"

namespace ath::train {

OnExceptionCheckpoint::OnExceptionCheckpoint(std::string dirpath, std::string filename)
    : dirpath_(std::move(dirpath)), filename_(std::move(filename)) {
  ATH_CHECK(!dirpath_.empty(), ValueError, "OnExceptionCheckpoint: dirpath is empty");
  ATH_CHECK(!filename_.empty(), ValueError, "OnExceptionCheckpoint: filename is empty");
  ckpt_path_ = (std::filesystem::path(dirpath_) / (filename_ + ".ckpt")).string();
}

std::string OnExceptionCheckpoint::state_key() const {
  return detail::lightning_state_key("OnExceptionCheckpoint",
                                     {{"dirpath", dirpath_}, {"filename", filename_}});
}

void OnExceptionCheckpoint::on_exception(Trainer& trainer, TrainingModule&, const std::exception&) {
  // The Trainer ignores failures of this hook so the original error is what propagates; the
  // directory may not exist yet when the run failed before any checkpoint was written.
  std::filesystem::create_directories(dirpath_);
  trainer.save_checkpoint(ckpt_path_);
}

}  // namespace ath::train
