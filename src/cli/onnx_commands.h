// The `run` and `bench` subcommands' CLI11 registration, kept out of app.cpp (and out of the
// public headers, which do not include CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>

#include "athanor/cli/onnx_bench.h"
#include "athanor/cli/onnx_run.h"

namespace ath::cli::detail {

struct OnnxCommands {
  CLI::App* run = nullptr;
  CLI::App* bench = nullptr;
  OnnxRunOptions run_options;
  OnnxBenchOptions bench_options;
  double duration = 0;  // --duration, when given
};

void add_onnx_commands(CLI::App& app, OnnxCommands& c);

// The exit status of whichever of the two commands was parsed, or -1 when neither was.
int run_onnx_commands(OnnxCommands& c, std::ostream& out, std::ostream& err);

}  // namespace ath::cli::detail
