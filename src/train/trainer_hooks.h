// Internal: how the Trainer calls a hook — every callback first (in order), then the module —
// and the guard that tells TrainingModule::log which hook it is called from.
#pragma once

#include "athanor/core/error.h"
#include "athanor/train/trainer.h"

namespace ath::train {

template <class F, class G>
void Trainer::call_hooks(F&& callback_hook, G&& module_hook) {
  for (const auto& cb : callbacks_) callback_hook(*cb);
  module_hook();
}

// Runs one of the module's steps. When an op refuses the batch — a shape, dtype or index that
// does not fit the model (ShapeError, DTypeError, IndexError), reported by the layer that noticed
// — the error gains the step, the batch and where the data came from. Other errors (the user's
// own) pass unchanged.
template <class F>
decltype(auto) run_module_step(const char* step, int64_t batch_idx, const data::BatchSource* source,
                               F&& f) {
  auto add_context = [&](Error& e) {
    const std::string data = source != nullptr ? source->describe() : std::string();
    e.prepend(fmt::format("{} (batch {}{}): ", step, batch_idx, data.empty() ? "" : " of " + data));
  };
  try {
    return f();
  } catch (ShapeError& e) {
    add_context(e);
    throw;
  } catch (DTypeError& e) {
    add_context(e);
    throw;
  } catch (IndexError& e) {
    add_context(e);
    throw;
  }
}

}  // namespace ath::train

// CB(on_x, args...) calls cb.on_x(trainer, module, args...) for every callback, then
// module.on_x(args...). Used only inside Trainer members.
#define ATH_TRAINER_HOOK(hook, ...)                                                        \
  call_hooks([&](Callback& cb_) { cb_.hook(*this, *module_ __VA_OPT__(, ) __VA_ARGS__); }, \
             [&] { module_->hook(__VA_ARGS__); })
