// W3's recurrent layer (/work/shared/WORKLOADS.md), forward + backward per iteration, 2 threads:
//   w3_lstm:        LSTM(64 -> 256, batch_first) on x [32, 64, 64], zero initial state;
//                   gradients of <output, gy> w.r.t. x and the four parameters
//   w3_gru:         the same with a GRU
//   w3_lstm_linear: the LSTM followed by W3's Linear(256, 256) at all 64 positions
// bench/lstm_torch.py times the same work in PyTorch; bench/run_lstm_compare.sh runs both
// interleaved and prints athanor / torch.
//
//   ./build/bench/bench_lstm --benchmark_min_time=1
//   ATH_BENCH_THREADS=1 ./build/bench/bench_lstm     # CPU time of the work alone (no idle spin)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/rnn.h"
#include "bench_host.h"

namespace {

constexpr int64_t kBatch = 32, kSeq = 64, kIn = 64, kHidden = 256;

template <class Rnn>
void rnn_fwd_bwd(benchmark::State& state, bool with_linear) {
  const char* threads = std::getenv("ATH_BENCH_THREADS");
  ath::set_num_threads(threads != nullptr ? std::atoi(threads) : 2);
  ath::manual_seed(0);
  Rnn rnn({.input_size = kIn, .hidden_size = kHidden, .batch_first = true});
  ath::nn::Linear fc({.in = kHidden, .out = 256});
  ath::Tensor x = ath::bench::random_normal({kBatch, kSeq, kIn}, 1).requires_grad_();
  ath::Tensor gy = ath::bench::random_normal({kBatch, kSeq, with_linear ? 256 : kHidden}, 2);
  std::vector<ath::Tensor> wrt{x};
  for (const ath::Tensor& p : rnn.parameters()) wrt.push_back(p);
  if (with_linear) {
    wrt.push_back(fc.weight);
    wrt.push_back(fc.bias);
  }
  for (auto _ : state) {
    ath::Tensor y = rnn(x);
    if (with_linear) y = fc(y);
    std::vector<ath::Tensor> g = ath::grad({y}, wrt, {gy});
    benchmark::DoNotOptimize(g[0].data_ptr());
  }
  state.counters["seq/s"] = benchmark::Counter(static_cast<double>(kBatch),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void lstm_fwd_bwd(benchmark::State& state, bool with_linear) {
  rnn_fwd_bwd<ath::nn::LSTM>(state, with_linear);
}
void gru_fwd_bwd(benchmark::State& state, bool with_linear) {
  rnn_fwd_bwd<ath::nn::GRU>(state, with_linear);
}

}  // namespace

BENCHMARK_CAPTURE(lstm_fwd_bwd, w3_lstm, false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(gru_fwd_bwd, w3_gru, false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(lstm_fwd_bwd, w3_lstm_linear, true)->UseRealTime()->Unit(benchmark::kMillisecond);

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();
