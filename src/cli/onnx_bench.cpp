#include "athanor/cli/onnx_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "athanor/core/error.h"
#include "athanor/core/parallel.h"
#include "athanor/core/rng.h"
#include "athanor/graph/executor.h"
#include "athanor/graph/profile.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "onnx_common.h"

namespace ath::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// numpy.percentile's default (linear): the value at rank p/100 * (n - 1) of the sorted samples.
double percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(rank);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

void check_options(const OnnxBenchOptions& o) {
  ATH_CHECK(o.batch >= 1, ValueError, "--batch must be at least 1, got {}", o.batch);
  ATH_CHECK(o.warmup >= 0, ValueError, "--warmup must be non-negative, got {}", o.warmup);
  ATH_CHECK(o.profile_runs >= 0, ValueError, "--profile must be non-negative, got {}",
            o.profile_runs);
  ATH_CHECK(o.duration.has_value() || o.iterations >= 1, ValueError,
            "--iterations must be at least 1, got {}", o.iterations);
  ATH_CHECK(!o.duration.has_value() || *o.duration > 0, ValueError,
            "--duration must be positive, got {}", o.duration.value_or(0));
  ATH_CHECK(o.threads >= 0, ValueError, "--threads must be non-negative, got {}", o.threads);
}

// Standard normal floats, integers in [0, 8), fair-coin bools, from `g`.
Tensor random_tensor(DType dtype, const Shape& shape, Generator& g) {
  if (is_floating(dtype)) return to_dtype(randn(shape, {.generator = &g}), dtype);
  const Tensor ints = randint(0, dtype == kBool ? 2 : 8, shape, {.generator = &g});
  return dtype == kInt64 ? ints : to_dtype(ints, dtype);
}

// The shape a random input gets: --shape, or the declaration with symbolic first dimensions
// set to --batch.
Shape random_shape(const onnx::TensorInfo& d, const std::vector<int64_t>* given, int64_t batch,
                   bool& batch_used) {
  if (given != nullptr) return Shape(given->begin(), given->end());
  ATH_CHECK(d.rank_known, ValueError,
            "input '{}' has no declared shape: give one with --shape {}=1x3x224x224 (say) or a "
            "file with --input {}=FILE.npy",
            d.name, d.name, d.name);
  Shape shape;
  for (std::size_t k = 0; k < d.dims.size(); ++k) {
    int64_t n = d.dims[k];
    if (n < 0 && k == 0) {
      n = batch;
      batch_used = true;
    }
    ATH_CHECK(n >= 0, ValueError,
              "input '{}' ({}) has a symbolic dimension {} ('{}'): set the whole shape with "
              "--shape {}=...",
              d.name, d.type_string(), k, k < d.dim_names.size() ? d.dim_names[k] : "?", d.name);
    shape.push_back(n);
  }
  return shape;
}

struct Inputs {
  std::vector<std::pair<std::string, Tensor>> named;
  nlohmann::json described = nlohmann::json::array();
  bool batch_used = false;  // some symbolic first dimension took --batch
};

Inputs make_inputs(const OnnxBenchOptions& o, const std::vector<onnx::TensorInfo>& declared) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  for (const std::string& arg : o.shapes) {
    const std::size_t eq = arg.find('=');
    ATH_CHECK(eq != std::string::npos, ValueError, "--shape '{}': expected NAME=1x3x224x224", arg);
    const std::string name = arg.substr(0, eq);
    ATH_CHECK(std::any_of(declared.begin(), declared.end(),
                          [&](const onnx::TensorInfo& d) { return d.name == name; }),
              ValueError, "--shape '{}': the model has no input '{}'", arg, name);
    shapes.emplace_back(name, detail::parse_dims(arg.substr(eq + 1), "--shape " + name));
  }
  Inputs in;
  const std::vector<detail::InputFile> files = detail::read_input_files(o.inputs, declared);
  auto add = [&](const std::string& name, const Tensor& t, const std::string& source) {
    in.named.emplace_back(name, t);
    in.described.push_back({{"name", name}, {"type", detail::type_string(t)}, {"source", source}});
  };
  Generator g(o.seed);
  for (const onnx::TensorInfo& d : declared) {
    const auto file =
        std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.name == d.name; });
    const auto shape = std::find_if(shapes.begin(), shapes.end(),
                                    [&](const auto& s) { return s.first == d.name; });
    if (file != files.end()) {
      ATH_CHECK(shape == shapes.end(), ValueError,
                "input '{}' has both --input and --shape: the file's shape is used, drop --shape",
                d.name);
      add(d.name, file->tensor, file->path);
      continue;
    }
    ATH_CHECK(d.dtype_known, ValueError,
              "input '{}' has no declared element type: give it a file with --input {}=FILE.npy",
              d.name, d.name);
    const Shape s =
        random_shape(d, shape == shapes.end() ? nullptr : &shape->second, o.batch, in.batch_used);
    add(d.name, random_tensor(d.dtype, s, g), "random");
  }
  // A name given twice goes to run(), whose ValueError says so.
  for (std::size_t k = 0; k < files.size(); ++k) {
    const std::string& name = files[k].name;
    const bool repeated = std::any_of(files.begin(), files.begin() + static_cast<std::ptrdiff_t>(k),
                                      [&](const detail::InputFile& f) { return f.name == name; });
    if (repeated) add(name, files[k].tensor, files[k].path);
  }
  return in;
}

// The first dimension of the model's first input as run.
int64_t batch_of(const Inputs& in, const std::vector<onnx::TensorInfo>& declared) {
  if (declared.empty()) return 1;
  for (const auto& [name, t] : in.named) {
    if (name == declared[0].name) return t.dim() > 0 ? t.size(0) : 1;
  }
  return 1;
}

void print_report(const nlohmann::json& r, std::ostream& out) {
  out << fmt::format("model: {} (opset {})\n", r["model"].get<std::string>(),
                     r["opset"].get<int>());
  for (const auto& in : r["inputs"]) {
    out << fmt::format("input '{}': {} ({})\n", in["name"].get<std::string>(),
                       in["type"].get<std::string>(), in["source"].get<std::string>());
  }
  out << fmt::format("threads: {}, batch: {}\n", r["threads"].get<int>(),
                     r["batch"].get<int64_t>());
  out << fmt::format("first run: {:.3f} ms (load, optimize and the first run)\n",
                     r["first_run_ms"].get<double>());
  out << fmt::format("warmup: {} runs; timed: {} runs in {:.3f} s\n", r["warmup"].get<int64_t>(),
                     r["iterations"].get<int64_t>(), r["duration_s"].get<double>());
  out << fmt::format(
      "latency (ms): min {:.3f}  mean {:.3f}  p50 {:.3f}  p90 {:.3f}  p99 {:.3f}  max {:.3f}\n",
      r["min_ms"].get<double>(), r["mean_ms"].get<double>(), r["p50_ms"].get<double>(),
      r["p90_ms"].get<double>(), r["p99_ms"].get<double>(), r["max_ms"].get<double>());
  out << fmt::format("throughput: {:.2f} samples/s (batch / mean latency)\n",
                     r["throughput_per_s"].get<double>());
  out << fmt::format(
      "session: {} runs, {} traced, {} replayed ({} as batch-parallel streams), {} eager\n",
      r["runs"].get<int64_t>(), r["traces"].get<int64_t>(), r["replays"].get<int64_t>(),
      r["stream_runs"].get<int64_t>(), r["eager_runs"].get<int64_t>());
  if (r["plan_graphs_loaded"].get<int64_t>() > 0 || r["plan_writes"].get<int64_t>() > 0) {
    out << fmt::format("saved plan: {} graphs loaded, written {} times\n",
                       r["plan_graphs_loaded"].get<int64_t>(), r["plan_writes"].get<int64_t>());
  }
  for (const auto& d : r["diagnostics"]) out << "note: " << d.get<std::string>() << "\n";
  out << r["profile_text"].get<std::string>();
}

}  // namespace

nlohmann::json onnx_bench(const OnnxBenchOptions& o) {
  check_options(o);
  const Clock::time_point load_start = Clock::now();
  onnx::InferenceSession session(
      o.model, {.threads = o.threads,
                .disable_passes = o.disable_passes,
                .plan_path = o.plan,
                .batch_parallel = detail::parse_batch_parallel(o.batch_parallel)});
  const Clock::time_point load_end = Clock::now();
  const Inputs in = make_inputs(o, session.inputs());  // untimed: not the model's work

  const Clock::time_point first_start = Clock::now();
  (void)session.run(in.named);
  const double first_run_ms =
      ms_between(load_start, load_end) + ms_between(first_start, Clock::now());
  for (int64_t i = 0; i < o.warmup; ++i) (void)session.run(in.named);

  std::vector<double> latencies;
  const Clock::time_point timed_start = Clock::now();
  for (;;) {
    const Clock::time_point start = Clock::now();
    (void)session.run(in.named);
    const Clock::time_point end = Clock::now();
    latencies.push_back(ms_between(start, end));
    if (o.duration ? ms_between(timed_start, end) >= *o.duration * 1000.0
                   : static_cast<int64_t>(latencies.size()) >= o.iterations)
      break;
  }
  const double duration_s = ms_between(timed_start, Clock::now()) / 1000.0;
  // Profiled runs come after the timed ones, so the clock reads around each node never count.
  std::string profile_text;
  nlohmann::json profile = nlohmann::json::array();
  if (o.profile_runs > 0) {
    const graph::Executor* exec = session.last_executor();
    ATH_CHECK(exec != nullptr, ValueError,
              "--profile: the model's runs {}, so there is no one graph to profile",
              session.last_graph() == nullptr ? "run eagerly"
                                              : "run as batch-parallel streams "
                                                "(--batch-parallel off profiles "
                                                "the whole batch)");
    exec->set_profiling(true);
    for (int64_t i = 0; i < o.profile_runs; ++i) (void)session.run(in.named);
    exec->set_profiling(false);
    const graph::NodeProfile& p = exec->profile();
    profile_text = graph::profile_report(*session.last_graph(), p);
    for (const graph::OpTime& t : graph::profile_by_op(*session.last_graph(), p)) {
      profile.push_back(
          {{"op", t.op}, {"us_per_run", t.seconds_per_run * 1e6}, {"nodes", t.nodes}});
    }
  }

  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  const double mean =
      std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  const int64_t batch = batch_of(in, session.inputs());
  const onnx::SessionStats& stats = session.stats();
  std::vector<std::string> diagnostics = stats.diagnostics;
  if (o.batch != 1 && !in.batch_used) {
    diagnostics.push_back(fmt::format(
        "--batch {} set no dimension: no random input has a symbolic first dimension", o.batch));
  }
  return {{"model", o.model},
          {"opset", session.opset()},
          {"inputs", in.described},
          {"threads", o.threads > 0 ? o.threads : get_num_threads()},  // the session's count
          {"batch", batch},
          {"warmup", o.warmup},
          {"iterations", static_cast<int64_t>(latencies.size())},
          {"duration_s", duration_s},
          {"first_run_ms", first_run_ms},
          {"min_ms", sorted.front()},
          {"mean_ms", mean},
          {"p50_ms", percentile(sorted, 50)},
          {"p90_ms", percentile(sorted, 90)},
          {"p99_ms", percentile(sorted, 99)},
          {"max_ms", sorted.back()},
          {"throughput_per_s", static_cast<double>(batch) * 1000.0 / mean},
          {"runs", stats.runs},
          {"traces", stats.traces},
          {"replays", stats.replays},
          {"eager_runs", stats.eager_runs},
          {"stream_runs", stats.stream_runs},
          {"plan_graphs_loaded", stats.plan_graphs_loaded},
          {"plan_writes", stats.plan_writes},
          {"diagnostics", diagnostics},
          {"profile", profile},
          {"profile_text", profile_text}};
}

int onnx_bench_command(const OnnxBenchOptions& options, std::ostream& out, std::ostream& err) {
  return detail::run_guarded("bench", err, [&] {
    const nlohmann::json report = onnx_bench(options);
    if (options.json) {
      out << report.dump() << "\n";
    } else {
      print_report(report, out);
    }
    return 0;
  });
}

}  // namespace ath::cli
