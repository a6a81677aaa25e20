// Internal: how the Trainer calls a hook — every callback first (in order), then the module —
// and the guard that tells TrainingModule::log which hook it is called from.
#pragma once

#include "athanor/train/trainer.h"

namespace ath::train {

template <class F, class G>
void Trainer::call_hooks(F&& callback_hook, G&& module_hook) {
  for (const auto& cb : callbacks_) callback_hook(*cb);
  module_hook();
}

}  // namespace ath::train

// CB(on_x, args...) calls cb.on_x(trainer, module, args...) for every callback, then
// module.on_x(args...). Used only inside Trainer members.
#define ATH_TRAINER_HOOK(hook, ...)                                                        \
  call_hooks([&](Callback& cb_) { cb_.hook(*this, *module_ __VA_OPT__(, ) __VA_ARGS__); }, \
             [&] { module_->hook(__VA_ARGS__); })
