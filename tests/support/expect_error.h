// Checks for bad-input tests: a call throws an ath::Error whose message names something (the
// op, function or class), which is how a user finds what was wrong.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "athanor/core/error.h"

namespace ath::testing {

inline void expect_error_naming(const std::function<void()>& call, const std::string& name) {
  try {
    call();
    ADD_FAILURE() << "no error (expected one naming " << name << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
        << "error does not name " << name << ": " << e.what();
  }
}

}  // namespace ath::testing
