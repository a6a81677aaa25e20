// Grad mode: whether ops record backward nodes. Thread-local, as in PyTorch, so data-loader
// workers and the main thread do not interfere.
//
//   Tensor w = randn({3, 1}).requires_grad_(), x = randn({2, 3});
//   matmul(x, w).sum().backward();
//   double lr = 0.1;
//   { NoGradGuard g; w.sub_(lr * w.grad()); }   // an optimizer update, not recorded
//   { InferenceMode m; Tensor y = matmul(x, w); }   // no recording, and no version bookkeeping
//   assert(w.is_leaf());   // the update left no history on w
#pragma once

namespace ath {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Disables recording for its scope.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// Enables (or sets) recording for its scope, e.g. inside a NoGradGuard.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

// Inference: no recording, and tensors created inside never require grad. Cheaper than
// NoGradGuard only in that intent is explicit; kept as its own type so later passes (the
// graph compiler) can key on it.
class InferenceMode {
 public:
  InferenceMode();
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_grad_;
  bool prev_inference_;
};

}  // namespace ath
