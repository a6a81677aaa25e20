// OnExceptionCheckpoint: Lightning's callback — when fit fails (an exception escapes it, an
// interrupt turned into one included), saves a full checkpoint to `<dirpath>/<filename>.ckpt`
// before the error propagates, so the run can be inspected or resumed from where it broke.
//
//   auto on_crash = std::make_shared<OnExceptionCheckpoint>("runs/ckpt");
//   trainer.fit(model, train);           // throws; runs/ckpt/on_exception.ckpt now exists
//   trainer.fit(model, train, {}, "runs/ckpt/on_exception.ckpt");   // resume
//
// The checkpoint records the step reached: optimizer steps that completed are in it, the
// failing batch's partial work is not.
#pragma once

#include <string>

#include "athanor/train/callback.h"

namespace ath::train {

class OnExceptionCheckpoint : public Callback {
 public:
  explicit OnExceptionCheckpoint(std::string dirpath, std::string filename = "on_exception");

  std::string state_key() const override;
  void on_exception(Trainer& trainer, TrainingModule& module, const std::exception& e) override;

  // `<dirpath>/<filename>.ckpt`.
  const std::string& ckpt_path() const { return ckpt_path_; }

 private:
  std::string dirpath_;
  std::string filename_;
  std::string ckpt_path_;
};

}  // namespace ath::train
