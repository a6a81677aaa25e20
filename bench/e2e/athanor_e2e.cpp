// athanor side of the end-to-end training benchmark (bench/e2e/run.sh): one workload of
// WORKLOADS.md under the common protocol, printing one JSON line with the same keys as
// bench/e2e/torch_ref.py.
//
//   athanor_e2e W1 [--threads 2] [--steps N] [--seed S] [--precision P] [--compile]
//               [--no-arena] [--memory-budget-mb M] [--disable-pass NAME]... [--no-interop]
//               [--interop-report] [--interop-margin X] [--interop-ab N] [--profile]
//               [--ab N --ab-disable-pass NAME...]
//   athanor_e2e --calibrate-interop [--threads 2]
//
// --compile: the step (zero grads, forward, loss, backward, optimizer step) runs through
// ath::compile (graph/compile.h). Its first calls trace; like torch.compile's warm-up, they run
// before the timed region, on the timed model (so both columns train on the same batches), and
// their time is reported as "trace_s" (each traced call runs the step eagerly while recording
// it); "passes_s" is the time of the passes, memory planning and executor preparation.
// --no-arena: the compiled replays allocate through the caching allocator instead of the memory
// plan's arena (CompileOptions::arena = false), for comparing the two.
// --memory-budget-mb: the compiled step's arena may use M MB (CompileOptions::memory_budget):
// cheap activations are recomputed in the backward instead of saved (the "remat" pass).
// --disable-pass: skips a compiler pass (graph/passes.h), to measure what it is worth.
// --no-interop: the same as --disable-pass interop: no independent nodes run at the same time
// (graph/interop.h). --interop-report prints the pairs the schedule chose to stderr.
// --interop-margin X: the cost model's margin (InteropCosts::margin); a large negative one
// (-100) pairs every independent candidate, to measure what the model turns down.
// --ab N --ab-disable-pass NAME: as --interop-ab (below), for any passes: the compiled step as
// configured and with NAME (repeatable) also off, in alternating blocks of N steps.
// --profile: times every node of the compiled step's replays (graph/profile.h) and prints the
// time per op and the costliest nodes to stderr, each with its distance from the machine's
// limits: the SGEMM rate and the read bandwidth, both measured after the run.
// --calibrate-interop: measures the rates of the inter-op cost model (InteropCosts) and exits.
// seed: the initialisation's (default 0); precision: 32-true (default), bf16-mixed, 16-mixed,
// bf16-true — the Trainer's precision plugin (train/mixed_precision.h) drives the step, as in fit.
//
// Protocol: data decoded into RAM first; model built after seeding; 5 warm-up steps on a copy
// of the model (same weights, its own optimizer), discarded; timed region = per step: gather
// the batch by index, zero grads, forward, loss, backward, optimizer step, read the loss.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "../bench_host.h"
#include "athanor/athanor.h"
#include "athanor/core/thread_policy.h"
#include "athanor/graph/compile.h"
#include "athanor/graph/profile.h"
#include "athanor/train/mixed_precision.h"
#include "workloads.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;
using namespace ath::bench;

namespace {

// A "Name:   123 kB" line of /proc/self/status (VmRSS, VmHWM), in MB; -1 if it is not there.
double rss_mb(const std::string& name) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.compare(0, name.size() + 1, name + ":") == 0)
      return std::stod(line.substr(name.size() + 1)) / 1024.0;
  return -1;
}

int usage(const char* why) {
  std::fprintf(
      stderr,
      "athanor_e2e: %s\n"
      "usage: athanor_e2e W1|W2|W3|W4 [--threads N] [--steps N] [--seed S] "
      "[--precision 32-true|bf16-mixed|16-mixed|bf16-true] [--compile] [--no-arena] "
      "[--memory-budget-mb M] [--disable-pass NAME] [--no-interop] [--interop-report] [--profile] "
      "[--interop-margin X] [--interop-ab N] [--ab N --ab-disable-pass NAME...]\n"
      "       athanor_e2e --calibrate-interop [--threads N]\n",
      why);
  return 2;
}

}  // namespace

// --interop-ab N: the compiled step with the inter-op schedule and without it (--ab N with
// `without` = {"interop"}), on two copies of the model, in one process: blocks of N steps over
// the same batches, alternating which runs first, so that a load that changes over seconds
// affects both alike. Prints the samples/s of each and the median over blocks of the ratio
// with / without. `disabled`: passes off in both.
int run_ab(Workload& w, nn::Module& model, const std::string& precision_name,
           std::optional<graph::InteropCosts> costs, int block,
           const std::vector<std::string>& disabled, const std::vector<std::string>& without) {
  struct Variant {
    std::shared_ptr<nn::Module> model;
    std::shared_ptr<train::PrecisionPlugin> precision;
    std::unique_ptr<optim::Optimizer> opt;
    std::function<Tensor(const Tensor&, const Tensor&)> step;
    double seconds = 0;
  };
  Variant v[2];
  for (int k = 0; k < 2; ++k) {
    v[k].model = w.make_model();
    v[k].model->load_state_dict(model.state_dict());
    v[k].precision = train::make_precision(precision_name);
    v[k].precision->convert_module(*v[k].model);
    v[k].opt = w.make_optimizer(*v[k].model);
    Variant* me = &v[k];
    auto eager = [me](const Tensor& x, const Tensor& y) {
      return train_step(*me->model, *me->opt, *me->precision, x, y);
    };
    CompileOptions o{.disable_passes = disabled, .interop_costs = costs};
    if (k == 1) o.disable_passes.insert(o.disable_passes.end(), without.begin(), without.end());
    auto compiled = std::make_shared<Compiled<decltype(eager)>>(eager, o);
    v[k].step = [compiled](const Tensor& x, const Tensor& y) { return (*compiled)(x, y); };
  }
  for (int k = 0; k < 2; ++k) {  // warm-up: trace and compile both
    for (std::size_t i = 0; i < 3; ++i) {
      auto [x, y] = w.get(w.batches[i % w.batches.size()]);
      (void)v[k].step(x, y).item<float>();
    }
  }
  std::vector<double> ratios;
  int64_t samples = 0;
  for (std::size_t b0 = 0, blk = 0; b0 + static_cast<std::size_t>(block) <= w.batches.size();
       b0 += static_cast<std::size_t>(block), ++blk) {
    double t[2] = {0, 0};
    for (int o = 0; o < 2; ++o) {
      const int k = (static_cast<int>(blk) + o) % 2;
      const auto t0 = std::chrono::steady_clock::now();
      for (std::size_t i = b0; i < b0 + static_cast<std::size_t>(block); ++i) {
        auto [x, y] = w.get(w.batches[i]);
        (void)v[k].step(x, y).item<float>();
        if (o == 0) samples += x.size(0);
      }
      t[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      v[k].seconds += t[k];
    }
    ratios.push_back(t[1] / t[0]);
  }
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
  std::printf(
      "{\"interop_ab\": %s, \"without\": \"%s\", \"blocks\": %zu, \"block_steps\": %d, "
      "\"with_samples_per_s\": %.3f, \"without_samples_per_s\": %.3f, "
      "\"median_block_speedup\": %.4f}\n",
      without == std::vector<std::string>{"interop"} ? "true" : "false",
      fmt::format("{}", fmt::join(without, ",")).c_str(), ratios.size(), block,
      static_cast<double>(samples) / v[0].seconds, static_cast<double>(samples) / v[1].seconds,
      median);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return usage("no workload given");
  const std::string name = argv[1];
  if (name == "--calibrate-interop") {
    set_num_threads(argc > 3 && std::string(argv[2]) == "--threads" ? std::stoi(argv[3]) : 2);
    const graph::InteropCosts c = graph::measure_interop_costs();
    std::printf(
        "{\"gemm_1_gflops\": %.1f, \"gemm_n_gflops\": %.1f, \"bw_1_gbs\": %.2f, "
        "\"bw_n_gbs\": %.2f, \"region_us\": %.2f}\n",
        c.gemm_1 / 1e9, c.gemm_n / 1e9, c.bw_1 / 1e9, c.bw_n / 1e9, c.region * 1e6);
    return 0;
  }
  // make_workload treats any other name as W4: a typo must not silently benchmark W4.
  if (name != "W1" && name != "W2" && name != "W3" && name != "W4")
    return usage(("unknown workload '" + name + "'").c_str());
  int threads = 2;
  int64_t steps = 0;
  uint64_t seed = 0;
  std::string precision_name = "32-true";
  bool compiled = false;
  bool arena = true;
  double budget_mb = 0;
  std::vector<std::string> disabled_passes;
  bool interop_report = false;
  bool profile = false;
  std::optional<double> interop_margin;
  int interop_ab = 0;
  int ab = 0;
  std::vector<std::string> ab_without;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-arena") {
      arena = false;
      continue;
    }
    if (flag == "--no-interop") {
      disabled_passes.emplace_back("interop");
      continue;
    }
    if (flag == "--interop-report") {
      interop_report = true;
      continue;
    }
    if (flag == "--profile") {
      profile = true;
      continue;
    }
    if (flag == "--compile") {
      compiled = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing the value of " + flag).c_str());
    if (flag == "--threads") {
      threads = std::stoi(argv[i + 1]);
    } else if (flag == "--steps") {
      steps = std::stoll(argv[i + 1]);
    } else if (flag == "--seed") {
      seed = std::stoull(argv[i + 1]);
    } else if (flag == "--precision") {
      precision_name = argv[i + 1];
    } else if (flag == "--memory-budget-mb") {
      budget_mb = std::stod(argv[i + 1]);
    } else if (flag == "--interop-ab") {
      interop_ab = std::stoi(argv[i + 1]);
    } else if (flag == "--ab") {
      ab = std::stoi(argv[i + 1]);
    } else if (flag == "--ab-disable-pass") {
      ab_without.emplace_back(argv[i + 1]);
    } else if (flag == "--interop-margin") {
      interop_margin = std::stod(argv[i + 1]);
    } else if (flag == "--disable-pass") {
      disabled_passes.emplace_back(argv[i + 1]);
    } else {
      return usage(("unknown option " + flag).c_str());
    }
    ++i;
  }
  set_num_threads(threads);
  manual_seed(seed);
  Workload w = make_workload(name);
  if (steps > 0 && static_cast<std::size_t>(steps) < w.batches.size()) w.batches.resize(steps);

  // PyTorch's CPU allocator keeps nothing cached; hand the loading temporaries back likewise.
  empty_cache();
  std::shared_ptr<nn::Module> model = w.make_model();
  {
    // The warm-up holds two models' state at once (the copy's and the timed model's), so with a
    // cache warmed on it, it, and not the training, would set the process's peak RSS, eager or
    // compiled alike; bounded by its live bytes, it holds what PyTorch's uncached allocator
    // would (allocator.h).
    PeakBoundedCache bounded;
    std::shared_ptr<nn::Module> warm = w.make_model();
    warm->load_state_dict(model->state_dict());
    std::shared_ptr<train::PrecisionPlugin> warm_precision = train::make_precision(precision_name);
    warm_precision->convert_module(*warm);
    auto warm_opt = w.make_optimizer(*warm);
    for (std::size_t i = 0; i < 5 && i < w.batches.size(); ++i) {
      auto [x, y] = w.get(w.batches[i]);
      (void)train_step(*warm, *warm_opt, *warm_precision, x, y).item<float>();
    }
  }
  // ATH_E2E_MEMORY=1: the allocator's and the process's memory at points of the run.
  auto report_memory = [](const std::string& when) {
    if (std::getenv("ATH_E2E_MEMORY") == nullptr) return;
    const MemoryStats m = memory_stats();
    std::fprintf(stderr,
                 "%s: live %.1f MB, peak %.1f MB, cached %.1f MB, RSS %.1f MB (anonymous %.1f, "
                 "file %.1f), RSS peak %.1f MB\n",
                 when.c_str(), m.current_bytes / 1e6, m.peak_bytes / 1e6, m.cached_bytes / 1e6,
                 rss_mb("VmRSS"), rss_mb("RssAnon"), rss_mb("RssFile"), rss_mb("VmHWM"));
  };
  report_memory("after warm-up");
  std::shared_ptr<train::PrecisionPlugin> precision = train::make_precision(precision_name);
  precision->convert_module(*model);
  auto opt = w.make_optimizer(*model);
  auto eager_step = [&](const Tensor& x, const Tensor& y) {
    return train_step(*model, *opt, *precision, x, y);
  };
  std::optional<Compiled<decltype(eager_step)>> compiled_step;
  std::optional<graph::InteropCosts> interop_costs;
  if (compiled && interop_margin) {
    interop_costs = graph::calibrated_interop_costs();
    interop_costs->margin = *interop_margin;
  }
  if (compiled)
    compiled_step.emplace(eager_step,
                          CompileOptions{.disable_passes = disabled_passes,
                                         .arena = arena,
                                         .memory_budget = static_cast<int64_t>(budget_mb * 1e6),
                                         .interop_costs = interop_costs});
  auto step = [&](const Tensor& x, const Tensor& y) {
    return compiled_step ? (*compiled_step)(x, y) : eager_step(x, y);
  };
  if (compiled && interop_ab > 0)
    return run_ab(w, *model, precision_name, interop_costs, interop_ab, disabled_passes,
                  {"interop"});
  if (compiled && ab > 0) {
    if (ab_without.empty()) return usage("--ab needs --ab-disable-pass");
    return run_ab(w, *model, precision_name, interop_costs, ab, disabled_passes, ab_without);
  }
  std::vector<float> losses;
  int64_t samples = 0, timed_steps = 0;
  double trace_seconds = 0;
  auto t0 = std::chrono::steady_clock::now();
  int64_t step_peak_live = 0;  // the last step's peak of live tensor bytes (memory_stats)
  for (std::size_t i = 0; i < w.batches.size(); ++i) {
    auto [x, y] = w.get(w.batches[i]);
    const bool last = i + 1 == w.batches.size();
    if (last) reset_peak_memory_stats();
    losses.push_back(step(x, y).item<float>());
    if (last) step_peak_live = memory_stats().peak_bytes;
    if (i < 3) report_memory(fmt::format("step {}", i));
    if (compiled_step && compiled_step->stats().replays == 0) {  // still tracing: warm-up, untimed
      const auto now = std::chrono::steady_clock::now();
      trace_seconds += std::chrono::duration<double>(now - t0).count();
      t0 = now;
      if (profile && compiled_step->executor() != nullptr)
        compiled_step->executor()->set_profiling(true);  // from the first replay on
      continue;
    }
    samples += x.size(0);
    ++timed_steps;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  report_memory("after training");
  // The training step's cached blocks are no use to the evaluation's batch-1000 tensors; hand
  // them back first (PyTorch's CPU allocator caches nothing, so this is what it does too), and
  // the compiled step's arena with them.
  if (compiled_step) compiled_step->release_memory();
  empty_cache();
  std::string acc = "null";
  if (w.test) {
    model->eval();
    InferenceMode no_record;
    int64_t correct = 0;
    const int64_t n = w.test->y.size(0);
    for (int64_t i = 0; i < n; i += 1000) {
      Tensor x = convert_input(*precision, normalize(w.test->images.slice(0, i, i + 1000)));
      Tensor logits;
      precision->eval_step([&] { logits = (*model)(x); });
      correct += eq(argmax(logits, 1), w.test->y.slice(0, i, i + 1000)).sum().item<int64_t>();
    }
    acc = fmt::format("{:.4f}", static_cast<double>(correct) / static_cast<double>(n));
    report_memory("after evaluation");
  }
  const std::size_t tail = std::min<std::size_t>(20, losses.size());
  const double final_loss =
      std::accumulate(losses.end() - static_cast<std::ptrdiff_t>(tail), losses.end(), 0.0) /
      static_cast<double>(tail);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  // The compiled graph's memory plan (graph/memory_plan.h), in MB; "null" when eager.
  auto planned = [&](int64_t graph::MemoryPlan::*field) -> std::string {
    const graph::MemoryPlan* plan = compiled_step ? compiled_step->memory_plan() : nullptr;
    if (plan == nullptr) return "null";
    const int64_t b = field != nullptr ? plan->*field : plan->total_bytes();
    return fmt::format("{:.2f}", static_cast<double>(b) / 1e6);
  };
  const bench::HostInfo host = bench::measure_host(threads);  // after the peak RSS is read
  // The first 50 steps' losses, for the compiled-vs-eager check (summarize.py: "first 50
  // losses"), with every digit a float has.
  std::string first_losses;
  for (std::size_t i = 0; i < std::min<std::size_t>(50, losses.size()); ++i)
    first_losses += fmt::format("{}{:.9g}", i == 0 ? "" : ", ", losses[i]);
  std::printf(
      "{\"workload\": \"%s\", \"framework\": \"athanor-%s\", \"precision\": \"%s\", "
      "\"samples_per_s\": %.3f, "
      "\"seconds\": %.4f, \"steps\": %zu, \"final_loss\": %.6f, \"test_acc\": %s, "
      "\"peak_rss_mb\": %.1f, \"threads\": %d, \"isa\": \"%s\", \"sgemm_gflops\": %.1f, "
      "\"compiled\": %s, \"trace_s\": %.3f, \"step_peak_live_mb\": %.2f, "
      "\"planned_arena_mb\": %s, \"planned_total_mb\": %s, \"passes_s\": %.4f, "
      "\"traces\": %lld, \"recomputed\": %zu, \"interop_pairs\": %zu, "
      "\"first_losses\": [%s]}\n",
      name.c_str(), (ATH_VERSION_STRING + std::string(compiled ? "-compiled" : "")).c_str(),
      precision_name.c_str(), static_cast<double>(samples) / seconds, seconds,
      static_cast<std::size_t>(timed_steps), final_loss, acc.c_str(),
      static_cast<double>(ru.ru_maxrss) / 1024.0, threads, host.isa.c_str(), host.sgemm_gflops,
      compiled ? "true" : "false", trace_seconds, static_cast<double>(step_peak_live) / 1e6,
      planned(&graph::MemoryPlan::arena_bytes).c_str(), planned(nullptr).c_str(),
      compiled_step ? compiled_step->stats().pass_seconds : 0.0,
      static_cast<long long>(compiled_step ? compiled_step->stats().traces : 0),
      compiled_step && compiled_step->memory_plan()
          ? compiled_step->memory_plan()->recomputed.size()
          : std::size_t{0},
      compiled_step && compiled_step->pass_report()
          ? compiled_step->pass_report()->interop.pairs.size()
          : std::size_t{0},
      first_losses.c_str());
  if (compiled_step && interop_report && compiled_step->pass_report() != nullptr)
    std::fprintf(stderr, "%s",
                 compiled_step->pass_report()->interop.report(*compiled_step->graph()).c_str());
  if (compiled_step && profile && compiled_step->executor() != nullptr) {
    const graph::MachineLimits limits{.gemm_flops = host.sgemm_gflops * 1e9,
                                      .bytes_per_s = bench::measure_read_bandwidth(threads)};
    std::fprintf(stderr, "%s",
                 graph::profile_report(*compiled_step->graph(),
                                       compiled_step->executor()->profile(), 15, limits)
                     .c_str());
  }
  if (compiled_step) {
    for (const std::string& d : compiled_step->stats().diagnostics)
      std::fprintf(stderr, "compile: %s\n", d.c_str());
  }
  return 0;
}
