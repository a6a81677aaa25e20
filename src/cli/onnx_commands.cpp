#include "onnx_commands.h"

namespace ath::cli::detail {

namespace {

// The InferenceSession options `athanor run` and `athanor bench` share.
void add_session_options(CLI::App& cmd, int& threads, std::string& plan,
                         std::string& batch_parallel, std::vector<std::string>& disable_passes) {
  cmd.add_option("--threads", threads, "Intra-op threads (0: the machine's cores)")
      ->capture_default_str();
  cmd.add_option("--plan", plan,
                 "A saved optimized plan: loaded when it matches, else written (docs/onnx.md)")
      ->type_name("FILE");
  cmd.add_option("--batch-parallel", batch_parallel,
                 "Batch-parallel streams (SessionOptions::batch_parallel)")
      ->check(CLI::IsMember({"off", "auto", "on"}))
      ->capture_default_str();
  cmd.add_option("--disable-pass", disable_passes,
                 "Skip an optimization pass by name (repeatable; docs/onnx.md lists them)")
      ->allow_extra_args(false)
      ->type_name("NAME");
}

}  // namespace

void add_onnx_commands(CLI::App& app, OnnxCommands& c) {
  c.run = app.add_subcommand("run", "Run an ONNX model on .npy inputs; write .npy outputs");
  OnnxRunOptions& r = c.run_options;
  c.run->add_option("model", r.model, "The .onnx file")->required();
  c.run
      ->add_option("--input", r.inputs,
                   "NAME=FILE.npy (repeat per input); FILE.npy alone for a one-input model")
      ->allow_extra_args(false)
      ->type_name("NAME=FILE");
  c.run
      ->add_option("--output", r.outputs,
                   "NAME=FILE.npy (repeat per output); FILE.npy alone for a one-output model")
      ->allow_extra_args(false)
      ->type_name("NAME=FILE");
  c.run->add_option("--output-dir", r.output_dir, "Write every output as DIR/<name>.npy")
      ->type_name("DIR");
  add_session_options(*c.run, r.threads, r.plan, r.batch_parallel, r.disable_passes);
  c.run->footer("\nExample: athanor run model.onnx --input image=x.npy --output y.npy");

  c.bench = app.add_subcommand("bench", "Measure an ONNX model's latency and throughput");
  OnnxBenchOptions& b = c.bench_options;
  c.bench->add_option("model", b.model, "The .onnx file")->required();
  c.bench
      ->add_option("--input", b.inputs,
                   "NAME=FILE.npy: feed an input from a file instead of random values")
      ->allow_extra_args(false)
      ->type_name("NAME=FILE");
  c.bench->add_option("--shape", b.shapes, "NAME=1x3x224x224: an input's shape (symbolic dims)")
      ->allow_extra_args(false)
      ->type_name("NAME=DIMS");
  c.bench->add_option("--batch", b.batch, "Every symbolic first dimension")->capture_default_str();
  c.bench->add_option("--warmup", b.warmup, "Untimed runs after the first")->capture_default_str();
  CLI::Option* iterations =
      c.bench->add_option("--iterations", b.iterations, "Timed runs")->capture_default_str();
  c.bench->add_option("--duration", c.duration, "Time runs for this many seconds instead")
      ->excludes(iterations)
      ->type_name("SECONDS");
  c.bench->add_option("--seed", b.seed, "Seed of the random inputs")->capture_default_str();
  c.bench->add_flag("--json", b.json, "Print one JSON object instead of the report");
  c.bench
      ->add_option("--profile", b.profile_runs,
                   "After the timed runs, N more with every node timed: time per op and the "
                   "costliest nodes")
      ->type_name("N");
  add_session_options(*c.bench, b.threads, b.plan, b.batch_parallel, b.disable_passes);
  c.bench->footer(
      "\nRandom inputs: floats N(0, 1), integers in [0, 8), bools fair coins; feed index or "
      "shape inputs from files with --input NAME=FILE.npy.\nExample: athanor bench model.onnx "
      "--batch 8 --iterations 200 --json");
}

int run_onnx_commands(OnnxCommands& c, std::ostream& out, std::ostream& err) {
  if (c.run->parsed()) return onnx_run(c.run_options, out, err);
  if (c.bench->parsed()) {
    if (c.bench->count("--duration") > 0) c.bench_options.duration = c.duration;
    return onnx_bench_command(c.bench_options, out, err);
  }
  return -1;
}

}  // namespace ath::cli::detail
