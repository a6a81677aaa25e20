// Errors: every failure athanor reports is a typed `ath::Error` whose message names the op or
// file, the argument, and the shapes/dtypes involved.
//
//   Tensor a = zeros({2, 3, 4});
//   try {
//     ATH_CHECK(a.dim() == 2, ShapeError, "expected a 2-D matrix, got shape {}", a.shape());
//   } catch (const ath::Error& e) {
//     assert(std::string(e.what()) == "expected a 2-D matrix, got shape [2, 3, 4]");
//   }
//
// The dispatcher prefixes messages thrown inside an op with "<op>: ", so checks inside kernels
// and shape rules only say what was wrong. Catch `ath::Error` for any athanor failure, or a
// subclass for one kind.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace ath {

class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const noexcept { return message_; }
  // Adds context in front of the message ("add: " + ...), keeping the dynamic type when the
  // caller rethrows with `throw;`.
  void prepend(const std::string& context) { message_ = context + message_; }

 private:
  std::string message_;
};

// Shapes that do not fit the op (mismatch, not broadcastable, negative sizes, bad view).
class ShapeError : public Error {
  using Error::Error;
};
// A dtype the op does not accept, or a promotion that is not allowed.
class DTypeError : public Error {
  using Error::Error;
};
// A dimension or element index out of range.
class IndexError : public Error {
  using Error::Error;
};
// An argument value out of its domain (negative probability, zero step, bad option).
class ValueError : public Error {
  using Error::Error;
};
// A file or buffer whose contents are malformed.
class FormatError : public Error {
  using Error::Error;
};
// A name that is not there (a state-dict key, a config key, a registered module).
class KeyError : public Error {
  using Error::Error;
};
// A file that cannot be opened, read, written or renamed (the message names the path and the
// system's reason). Malformed contents are a FormatError instead.
class IOError : public Error {
  using Error::Error;
};
// A combination that exists in PyTorch but not (yet) here, e.g. a missing kernel for a dtype.
class NotImplementedError : public Error {
  using Error::Error;
};
// Misuse of autograd: backward twice, in-place on a saved tensor, NaN in anomaly mode.
class AutogradError : public Error {
  using Error::Error;
};

namespace detail {
template <class E, class... Args>
[[noreturn]] void throw_error(fmt::format_string<Args...> f, Args&&... args) {
  throw E(fmt::format(f, std::forward<Args>(args)...));
}
}  // namespace detail

}  // namespace ath

// Throws `ath::Kind(fmt::format(...))` when `cond` is false. The message is only formatted on
// failure, so checks cost one branch on the hot path.
#define ATH_CHECK(cond, Kind, ...)                          \
  do {                                                      \
    if (!(cond)) [[unlikely]] {                             \
      ::ath::detail::throw_error<::ath::Kind>(__VA_ARGS__); \
    }                                                       \
  } while (0)

#define ATH_THROW(Kind, ...) ::ath::detail::throw_error<::ath::Kind>(__VA_ARGS__)
