// `athanor bench MODEL.onnx`: an ONNX model's latency and throughput on athanor's runtime, in the
// manner of trtexec and onnxruntime_perf_test.
//
//   // $ athanor bench resnet.onnx --batch 8 --threads 2 --iterations 200
//   // $ athanor bench bert.onnx --shape input_ids=1x128 --input input_ids=ids.npy --json
//   // $ athanor bench model.onnx --duration 10            # measure for 10 s instead
//   // $ athanor bench model.onnx --plan model.plan        # first_run_ms from a saved plan
//   // $ athanor bench model.onnx --profile 1000           # + where each run's time goes
//
// What it does: loads the model and runs it once (first_run_ms: session construction through
// the first run() — load, trace, optimize, plan, first execution), runs --warmup more times
// untimed, then times each of --iterations runs (or as many as fit in --duration seconds) and
// reports min / mean / p50 / p90 / p99 / max latency in milliseconds (percentiles interpolate
// linearly between the sorted latencies, as numpy.percentile does) and throughput = batch /
// mean latency (samples per second, mean-based as in onnxruntime_perf_test).
// Inputs are random, drawn from a fixed seed: floating inputs standard normal, integer inputs in
// [0, 8), bool inputs fair coins. An input that holds indices or shapes (an embedding's token
// ids, a Reshape's target) may need real values: --input NAME=FILE.npy feeds it from a file.
// Shapes: fixed dimensions as declared; every symbolic first dimension is --batch (default 1);
// --shape NAME=1x3x224x224 sets an input's whole shape (needed for other symbolic dimensions).
// batch, for the throughput, is the first dimension of the model's first input as run (1 for a
// 0-d input).
//
//   #include <sstream>
//   #include <nlohmann/json.hpp>
//   #include "athanor/cli/onnx_bench.h"
//   const std::string model = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx";
//   cli::OnnxBenchOptions options{.model = model, .warmup = 2, .iterations = 5, .json = true};
//   std::ostringstream out, err;
//   int status = cli::onnx_bench_command(options, out, err);  // 0; 2 on a bad model or option
//   nlohmann::json report = nlohmann::json::parse(out.str());
//   assert(status == 0 && report["iterations"] == 5 && report["p50_ms"] > 0);
//   assert(report["replays"] == 7);   // the first run traced; warmup and timed runs replayed
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ath::cli {

struct OnnxBenchOptions {
  std::string model;                        // the .onnx file
  std::vector<std::string> inputs;          // "NAME=FILE.npy" (or "FILE.npy" for a one-input model)
  std::vector<std::string> shapes;          // "NAME=1x3x224x224"
  int64_t batch = 1;                        // every symbolic first dimension
  int64_t warmup = 10;                      // untimed runs after the first
  int64_t iterations = 100;                 // timed runs (ignored when duration is set)
  std::optional<double> duration;           // seconds: time runs until this much has passed
  int threads = 0;                          // intra-op threads; 0: the machine's (OpenMP's default)
  uint64_t seed = 0;                        // of the random inputs
  bool json = false;                        // one JSON object on out instead of the report
  std::string plan;                         // a saved plan (SessionOptions::plan_path); empty: none
  std::string batch_parallel = "auto";      // SessionOptions::batch_parallel: off, auto or on
  std::vector<std::string> disable_passes;  // SessionOptions::disable_passes (by pass name)
  // After the timed runs, this many more with every node timed (graph/profile.h): the report
  // adds the time per op and the costliest nodes, the JSON a "profile" array of
  // {op, us_per_run, nodes}. Not with batch-parallel streams (each has its own graph).
  int64_t profile_runs = 0;
};

// Runs the benchmark and returns its figures as one JSON object: p50_ms p90_ms p99_ms min_ms
// max_ms mean_ms throughput_per_s first_run_ms batch threads iterations warmup duration_s (the
// timed runs' wall time), model, inputs ([{name, type, source: "random" | file}]), and the
// session's stats (runs traces replays eager_runs plan_graphs_loaded plan_writes diagnostics).
// Throws ath::Error subclasses for a bad model, option or input.
nlohmann::json onnx_bench(const OnnxBenchOptions& options);

// The command: prints the report (or, with json, the object on one line) to out; returns the
// exit status (0; 2 with "athanor: error: ..." on err for a refused model, option or input; 1 for
// any other failure).
int onnx_bench_command(const OnnxBenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ath::cli
