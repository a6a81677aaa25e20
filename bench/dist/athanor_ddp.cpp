// athanor side of the data-parallel benchmark (bench/dist/run.sh): one workload of WORKLOADS.md
// trained with DistributedDataParallel, each rank on its share of every global batch.
//
//   mpirun -n 2 athanor_ddp W2 --threads 1 [--steps N] [--trace FILE]   (2 processes x 1 thread)
//   athanor_ddp W2 --threads 2                                          (1 process x 2 threads)
//   ... --compile 1: zero_grad, forward and backward replay as one compiled graph; each bucket's
//   all-reduce starts as the replay completes its gradients (CompileOptions::on_gradient_ready).
//
// Protocol: every rank builds the model from the same seed (DDP broadcasts rank 0's anyway);
// each global batch of the workload is split in contiguous shares, one per rank; the first 5
// steps are warm-up (untimed, on the real model); a barrier; then the timed steps: gather the
// share, zero grads, forward through DDP, loss, backward (bucket all-reduces overlap it),
// finish_gradient_sync, optimizer step, read the loss. Rank 0 prints one JSON line: global
// samples/s, the DDP timeline's summary over the timed steps (all-reduce time and the share of
// it hidden behind the backward), and with --trace the timeline as a Chrome trace.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>

#include "../bench_host.h"
#include "../e2e/workloads.h"
#include "athanor/core/thread_policy.h"
#include "athanor/dist/ddp.h"
#include "athanor/dist/dist.h"
#include "athanor/graph/compile.h"

ATH_SHORT_OPENMP_SPIN();

using namespace ath;
using namespace ath::bench;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: athanor_ddp W1|W2|W3|W4 [--threads N] [--steps N] [--trace FILE] "
                 "[--compile 1]\n");
    return 2;
  }
  const std::string name = argv[1];
  int threads = 1;
  int64_t steps = 0;
  std::string trace_file;
  bool compiled = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--compile") compiled = std::stoi(argv[i + 1]) != 0;
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
    if (flag == "--steps") steps = std::stoll(argv[i + 1]);
    if (flag == "--trace") trace_file = argv[i + 1];
  }
  set_num_threads(threads);
  dist::Communicator& comm = dist::world();
  const int rank = comm.rank(), world = comm.world_size();
  manual_seed(0);
  Workload w = make_workload(name);
  if (steps > 0 && static_cast<std::size_t>(steps) + 5 < w.batches.size())
    w.batches.resize(static_cast<std::size_t>(steps) + 5);
  // This rank's contiguous share of each global batch.
  for (Tensor& b : w.batches) {
    const int64_t n = b.size(0);
    b = b.slice(0, n * rank / world, n * (rank + 1) / world).contiguous();
  }
  empty_cache();
  std::shared_ptr<nn::Module> model = w.make_model();
  const auto timed_steps = static_cast<int64_t>(w.batches.size()) - 5;
  dist::DistributedDataParallel ddp(*model, {.timeline_steps = std::max<int64_t>(timed_steps, 1)});
  auto opt = w.make_optimizer(*model);
  auto forward_backward = [&](const Tensor& x, const Tensor& y) {
    opt->zero_grad();
    Tensor out = ddp(x);
    Tensor loss = cross_entropy(out.reshape({-1, out.size(-1)}), y.reshape({-1}));
    loss.backward();
    return loss;
  };
  // Each gradient's bucket starts as the replay makes it, as the hooks do in an eager backward.
  Compiled<decltype(forward_backward)> compiled_fb(
      forward_backward,
      CompileOptions{.on_gradient_ready = [&](const Tensor& p) { ddp.gradient_ready(p); }});
  auto step = [&](const Tensor& x, const Tensor& y) {
    Tensor loss;
    if (compiled) {
      loss = compiled_fb(x, y);
      ddp.gradients_ready();  // a replay: no hook launched the buckets (a trace: no-op)
    } else {
      loss = forward_backward(x, y);
    }
    ddp.finish_gradient_sync();
    opt->step();
    return loss.item<float>();
  };
  std::vector<float> losses;
  int64_t samples = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < w.batches.size(); ++i) {
    if (i == 5) {  // warm-up done: start together
      comm.barrier("bench start").wait();
      t0 = std::chrono::steady_clock::now();
    }
    auto [x, y] = w.get(w.batches[i]);
    losses.push_back(step(x, y));
    if (i >= 5) samples += x.size(0);
  }
  comm.barrier("bench end").wait();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every rank trained on its share: the global rate is the sum of the shares over the time.
  Tensor total = scalar_tensor(static_cast<double>(samples), kFloat64);
  comm.allreduce(total, dist::ReduceOp::Sum, "bench samples").wait();
  const dist::DDPTimelineSummary summary = ddp.timeline().summary();
  if (rank == 0 && !trace_file.empty())
    std::ofstream(trace_file) << ddp.timeline().chrome_trace_json();
  if (rank != 0) return 0;
  const std::size_t tail = std::min<std::size_t>(20, losses.size());
  const double final_loss =
      std::accumulate(losses.end() - static_cast<std::ptrdiff_t>(tail), losses.end(), 0.0) /
      static_cast<double>(tail);
  const bench::HostInfo host = bench::measure_host(threads);
  std::printf(
      "{\"workload\": \"%s\", \"framework\": \"athanor-ddp%s\", \"processes\": %d, \"threads\": "
      "%d, "
      "\"samples_per_s\": %.3f, \"seconds\": %.4f, \"steps\": %lld, \"final_loss\": %.6f, "
      "\"allreduce_s\": %.4f, \"hidden_s\": %.4f, \"hidden_fraction\": %.4f, "
      "\"isa\": \"%s\", \"sgemm_gflops\": %.1f}\n",
      name.c_str(), compiled ? "-compiled" : "", world, threads, total.item<double>() / seconds,
      seconds, static_cast<long long>(timed_steps), final_loss, summary.allreduce_s,
      summary.hidden_s, summary.hidden_fraction, host.isa.c_str(), host.sgemm_gflops);
  return 0;
}
