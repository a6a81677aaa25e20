// Runs the athanor command line in-process (athanor_main) and captures what it prints: the CLI
// tests' one way to call a command.
//
//   const CmdResult r = athanor({"inspect", "model.safetensors"});
//   EXPECT_EQ(r.status, 0) << r.err;
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "athanor/cli/app.h"

namespace ath::cli {

struct CmdResult {
  int status;
  std::string out, err;
};

inline CmdResult athanor(std::vector<std::string> args) {
  args.insert(args.begin(), "athanor");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = athanor_main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

}  // namespace ath::cli
