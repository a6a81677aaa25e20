// W3's LSTM (/work/shared/WORKLOADS.md: LSTM(64 -> 256), batch_first, batch 32, seq 64, zero
// initial state, float32, 2 threads): athanor's nn::LSTM against oneDNN's fused RNN primitives
// (lstm_forward / lstm_backward, rnn_direction::unidirectional_left2right), issue 14.
//
//   ./build/bench/bench_lstm_dnnl                       # 3 rounds, then the summary (medians)
//   ./build/bench/bench_lstm_dnnl --rounds=5 --benchmark_min_time=2
//
// Three implementations of the same work, timed as a set: every benchmark iteration runs all
// three (rotating which goes first), each timed on its own, so a slow spell of the noisy
// machine hits all of them.
//   athanor:     lstm(x) on x [B, T, 64] (batch_first, autograd recording, as in W3's training
//                step); fwd_bwd adds ath::grad of <y, gy> w.r.t. x and the four parameters.
//   onednn_tnc:  the primitives on time-major memory (tnc), plus the transposes athanor's
//                batch-first layout needs around them: x and gy to [T, B, .], y and dx back.
//   onednn_ntc:  the primitives reading and writing batch-first memory (ntc) directly.
// The oneDNN side runs forward_training (writing the workspace the backward reads), takes an
// explicit zero initial state (src_iter, src_iter_c) and returns diff_src_iter / _c; its outputs,
// workspace and zeroed weight gradients are allocated per call from athanor's allocator, as a
// drop-in would. Its weights (format `any`: the primitives' own blocked layouts, one for forward,
// one for backward) are reordered from athanor's [4H, in] / [4H, H] parameters once, outside the
// timed loop, and its single bias b_ih + b_hh is summed once there too; the gradients it returns
// stay in its own layout. A drop-in would redo the weight reorders every training step (the
// optimizer changes the weights) and reorder the weight gradients back; the summary times those
// reorders separately ("reorders").
//
// Before timing, the oneDNN outputs and all gradients (x, W_ih, W_hh, and the bias gradient
// against both b_ih's and b_hh's) are checked against athanor's: max abs diff <= 1e-4 or abort.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/nn/rnn.h"
#include "bench_host.h"

namespace {

constexpr int kThreads = 2;
constexpr int64_t kBatch = 32, kSeq = 64, kIn = 64, kHidden = 256, kGates = 4;
constexpr double kTolerance = 1e-4;
using Clock = std::chrono::steady_clock;
using dnnl::memory;
using tag = memory::format_tag;

// A float tensor of at least `bytes` bytes (oneDNN's workspace and blocked weight buffers).
ath::Tensor buffer(std::size_t bytes, bool zero) {
  const auto n = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
  return zero ? ath::zeros({n}) : ath::empty({n});
}

// oneDNN's forward and backward LSTM primitives on one layout of the sequence (tnc or ntc).
struct Dnnl {
  tag layout;
  dnnl::engine& eng;
  dnnl::stream& strm;
  dnnl::lstm_forward::primitive_desc fwd_pd;
  dnnl::lstm_backward::primitive_desc bwd_pd;
  dnnl::lstm_forward fwd;
  dnnl::lstm_backward bwd;
  ath::Tensor w_layer_fwd, w_iter_fwd, w_layer_bwd, w_iter_bwd, bias, zero_state;
  // The outputs of the last call (the layout's own order: [T, B, .] for tnc).
  ath::Tensor y, ws, dx, dsrc_iter, dsrc_iter_c, dw_layer, dw_iter, db;

  static memory::desc seq(tag t, int64_t c) {
    return {{kSeq, kBatch, c}, memory::data_type::f32, t};
  }
  static memory::desc state() {
    return {{1, 1, kBatch, kHidden}, memory::data_type::f32, tag::ldnc};
  }
  static memory::desc weights(int64_t in, tag t) {
    return {{1, 1, in, kGates, kHidden}, memory::data_type::f32, t};
  }
  static memory::desc bias_md() {
    return {{1, 1, kGates, kHidden}, memory::data_type::f32, tag::ldgo};
  }

  static dnnl::lstm_forward::primitive_desc make_fwd(tag t, dnnl::engine& eng) {
    dnnl::lstm_forward::desc d(dnnl::prop_kind::forward_training,
                               dnnl::rnn_direction::unidirectional_left2right, seq(t, kIn), state(),
                               state(), weights(kIn, tag::any), weights(kHidden, tag::any),
                               bias_md(), seq(t, kHidden), memory::desc(), memory::desc());
    return {d, eng};
  }
  static dnnl::lstm_backward::primitive_desc make_bwd(
      tag t, dnnl::engine& eng, const dnnl::lstm_forward::primitive_desc& hint) {
    dnnl::lstm_backward::desc d(
        dnnl::prop_kind::backward, dnnl::rnn_direction::unidirectional_left2right, seq(t, kIn),
        state(), state(), weights(kIn, tag::any), weights(kHidden, tag::any), bias_md(),
        seq(t, kHidden), memory::desc(), memory::desc(), seq(t, kIn), state(), state(),
        weights(kIn, tag::any), weights(kHidden, tag::any), bias_md(), seq(t, kHidden),
        memory::desc(), memory::desc());
    return {d, eng, hint};
  }

  // athanor's [4H, in] parameter (gates i, f, g, o: oneDNN's ldgoi) into `dst`'s layout.
  void reorder_in(const ath::Tensor& w, int64_t in, const memory::desc& dst_md, ath::Tensor& dst) {
    if (!dst.defined()) dst = buffer(dst_md.get_size(), false);
    memory src(weights(in, tag::ldgoi), eng, w.data_ptr());
    memory dst_m(dst_md, eng, dst.data_ptr());
    dnnl::reorder(src, dst_m).execute(strm, src, dst_m);
    strm.wait();
  }
  // A gradient in the primitive's layout back to athanor's [4H, in].
  ath::Tensor reorder_out(const ath::Tensor& g, int64_t in, const memory::desc& src_md) {
    ath::Tensor out = ath::empty({kGates * kHidden, in});
    memory src(src_md, eng, g.data_ptr());
    memory dst(weights(in, tag::ldgoi), eng, out.data_ptr());
    dnnl::reorder(src, dst).execute(strm, src, dst);
    strm.wait();
    return out;
  }

  Dnnl(tag t, dnnl::engine& e, dnnl::stream& s, const ath::nn::RNNBase::Weights& w)
      : layout(t),
        eng(e),
        strm(s),
        fwd_pd(make_fwd(t, e)),
        bwd_pd(make_bwd(t, e, fwd_pd)),
        fwd(fwd_pd),
        bwd(bwd_pd) {
    load_weights(w);
    ath::NoGradGuard no_grad;
    bias = (w.b_ih + w.b_hh).contiguous();
    zero_state = ath::zeros({1, 1, kBatch, kHidden});
  }

  // The once-per-training-step cost a drop-in would add: athanor's weights into the forward and
  // backward layouts.
  void load_weights(const ath::nn::RNNBase::Weights& w) {
    reorder_in(w.w_ih, kIn, fwd_pd.weights_layer_desc(), w_layer_fwd);
    reorder_in(w.w_hh, kHidden, fwd_pd.weights_iter_desc(), w_iter_fwd);
    reorder_in(w.w_ih, kIn, bwd_pd.weights_layer_desc(), w_layer_bwd);
    reorder_in(w.w_hh, kHidden, bwd_pd.weights_iter_desc(), w_iter_bwd);
  }

  memory mem(const memory::desc& md, const ath::Tensor& t) const { return {md, eng, t.data_ptr()}; }

  // x: the sequence in this layout's order ([T, B, in] for tnc, [B, T, in] for ntc).
  void forward(const ath::Tensor& x) {
    y = layout == tag::tnc ? ath::empty({kSeq, kBatch, kHidden})
                           : ath::empty({kBatch, kSeq, kHidden});
    ws = buffer(fwd_pd.workspace_desc().get_size(), false);
    fwd.execute(strm, {{DNNL_ARG_SRC_LAYER, mem(fwd_pd.src_layer_desc(), x)},
                       {DNNL_ARG_SRC_ITER, mem(fwd_pd.src_iter_desc(), zero_state)},
                       {DNNL_ARG_SRC_ITER_C, mem(fwd_pd.src_iter_c_desc(), zero_state)},
                       {DNNL_ARG_WEIGHTS_LAYER, mem(fwd_pd.weights_layer_desc(), w_layer_fwd)},
                       {DNNL_ARG_WEIGHTS_ITER, mem(fwd_pd.weights_iter_desc(), w_iter_fwd)},
                       {DNNL_ARG_BIAS, mem(fwd_pd.bias_desc(), bias)},
                       {DNNL_ARG_DST_LAYER, mem(fwd_pd.dst_layer_desc(), y)},
                       {DNNL_ARG_WORKSPACE, mem(fwd_pd.workspace_desc(), ws)}});
    strm.wait();
  }

  // After forward(x); gy in this layout's order. The weight gradients accumulate in oneDNN, so
  // they start from zeros every call.
  void backward(const ath::Tensor& x, const ath::Tensor& gy) {
    dx = layout == tag::tnc ? ath::empty({kSeq, kBatch, kIn}) : ath::empty({kBatch, kSeq, kIn});
    dsrc_iter = ath::empty({1, 1, kBatch, kHidden});
    dsrc_iter_c = ath::empty({1, 1, kBatch, kHidden});
    dw_layer = buffer(bwd_pd.diff_weights_layer_desc().get_size(), true);
    dw_iter = buffer(bwd_pd.diff_weights_iter_desc().get_size(), true);
    db = ath::zeros({kGates * kHidden});
    const auto& p = bwd_pd;
    bwd.execute(strm, {{DNNL_ARG_SRC_LAYER, mem(p.src_layer_desc(), x)},
                       {DNNL_ARG_SRC_ITER, mem(p.src_iter_desc(), zero_state)},
                       {DNNL_ARG_SRC_ITER_C, mem(p.src_iter_c_desc(), zero_state)},
                       {DNNL_ARG_WEIGHTS_LAYER, mem(p.weights_layer_desc(), w_layer_bwd)},
                       {DNNL_ARG_WEIGHTS_ITER, mem(p.weights_iter_desc(), w_iter_bwd)},
                       {DNNL_ARG_BIAS, mem(p.bias_desc(), bias)},
                       {DNNL_ARG_DST_LAYER, mem(p.dst_layer_desc(), y)},
                       {DNNL_ARG_WORKSPACE, mem(p.workspace_desc(), ws)},
                       {DNNL_ARG_DIFF_DST_LAYER, mem(p.diff_dst_layer_desc(), gy)},
                       {DNNL_ARG_DIFF_SRC_LAYER, mem(p.diff_src_layer_desc(), dx)},
                       {DNNL_ARG_DIFF_SRC_ITER, mem(p.diff_src_iter_desc(), dsrc_iter)},
                       {DNNL_ARG_DIFF_SRC_ITER_C, mem(p.diff_src_iter_c_desc(), dsrc_iter_c)},
                       {DNNL_ARG_DIFF_WEIGHTS_LAYER, mem(p.diff_weights_layer_desc(), dw_layer)},
                       {DNNL_ARG_DIFF_WEIGHTS_ITER, mem(p.diff_weights_iter_desc(), dw_iter)},
                       {DNNL_ARG_DIFF_BIAS, mem(p.diff_bias_desc(), db)}});
    strm.wait();
  }
};

// Everything the benchmarks share, built (and checked) once.
struct Setup {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  ath::nn::LSTM lstm{{.input_size = kIn, .hidden_size = kHidden, .batch_first = true}};
  ath::Tensor x = ath::bench::random_normal({kBatch, kSeq, kIn}, 1).requires_grad_();
  ath::Tensor gy = ath::bench::random_normal({kBatch, kSeq, kHidden}, 2);
  std::vector<ath::Tensor> wrt;
  std::unique_ptr<Dnnl> tnc, ntc;

  Setup() {
    const auto& w = lstm.weights(0, 0);
    wrt = {x, w.w_ih, w.w_hh, w.b_ih, w.b_hh};
    tnc = std::make_unique<Dnnl>(tag::tnc, eng, strm, w);
    ntc = std::make_unique<Dnnl>(tag::ntc, eng, strm, w);
  }

  // The three implementations; `backward` adds the gradients.
  void athanor(bool backward) {
    ath::Tensor y = lstm(x);
    if (backward) {
      std::vector<ath::Tensor> g = ath::grad({y}, wrt, {gy});
      benchmark::DoNotOptimize(g[0].data_ptr());
    }
    benchmark::DoNotOptimize(y.data_ptr());
  }
  // Returns y and (with backward) dx in athanor's batch-first order.
  std::pair<ath::Tensor, ath::Tensor> onednn_tnc(bool backward) {
    ath::NoGradGuard no_grad;
    ath::Tensor xt = x.transpose(0, 1).contiguous();
    tnc->forward(xt);
    ath::Tensor y = tnc->y.transpose(0, 1).contiguous(), dx;
    if (backward) {
      tnc->backward(xt, gy.transpose(0, 1).contiguous());
      dx = tnc->dx.transpose(0, 1).contiguous();
    }
    return {y, dx};
  }
  std::pair<ath::Tensor, ath::Tensor> onednn_ntc(bool backward) {
    ath::NoGradGuard no_grad;
    ntc->forward(x);
    if (backward) ntc->backward(x, gy);
    return {ntc->y, ntc->dx};
  }

  static double max_abs_diff(const ath::Tensor& a, const ath::Tensor& b) {
    const std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>();
    if (va.size() != vb.size()) return INFINITY;
    double m = 0;
    for (std::size_t i = 0; i < va.size(); ++i) m = std::max(m, std::fabs(double(va[i]) - vb[i]));
    return m;
  }
  static double max_abs(const ath::Tensor& a) {
    double m = 0;
    for (float v : a.to_vector<float>()) m = std::max(m, std::fabs(double(v)));
    return m;
  }

  // oneDNN's outputs and gradients against athanor's; exits on a mismatch.
  void check() {
    ath::Tensor y = lstm(x);
    std::vector<ath::Tensor> g = ath::grad({y}, wrt, {gy});
    bool ok = true;
    for (Dnnl* d : {tnc.get(), ntc.get()}) {
      auto [dy, ddx] = d == tnc.get() ? onednn_tnc(true) : onednn_ntc(true);
      ath::Tensor dw_ih = d->reorder_out(d->dw_layer, kIn, d->bwd_pd.diff_weights_layer_desc());
      ath::Tensor dw_hh = d->reorder_out(d->dw_iter, kHidden, d->bwd_pd.diff_weights_iter_desc());
      const std::vector<std::pair<const char*, std::pair<ath::Tensor, ath::Tensor>>> pairs{
          {"y", {y, dy}},           {"dx", {g[0], ddx}},      {"dW_ih", {g[1], dw_ih}},
          {"dW_hh", {g[2], dw_hh}}, {"db_ih", {g[3], d->db}}, {"db_hh", {g[4], d->db}}};
      std::printf("oneDNN %s vs athanor, max abs diff (max |athanor|):",
                  d->layout == tag::tnc ? "tnc" : "ntc");
      for (const auto& [name, ab] : pairs) {
        const double diff = max_abs_diff(ab.first, ab.second);
        std::printf(" %s %.2g (%.3g)", name, diff, max_abs(ab.first));
        ok = ok && diff <= kTolerance;
      }
      std::printf("\n");
    }
    if (!ok) {
      std::fprintf(stderr, "oneDNN and athanor disagree by more than %g: not comparable\n",
                   kTolerance);
      std::exit(1);
    }
  }
};

Setup* g_setup = nullptr;

// One set of the three per iteration, in rotating order, each timed alone.
void lstm_set(benchmark::State& state, bool backward) {
  ath::set_num_threads(kThreads);
  Setup& s = *g_setup;
  for (int i = 0; i < 2; ++i) {  // warm all three (JIT, allocator, caches)
    s.athanor(backward);
    s.onednn_tnc(backward);
    s.onednn_ntc(backward);
  }
  double t[3] = {0, 0, 0};
  int64_t iter = 0;
  for (auto _ : state) {
    for (int k = 0; k < 3; ++k) {
      const int which = static_cast<int>((iter + k) % 3);
      const auto t0 = Clock::now();
      if (which == 0) s.athanor(backward);
      if (which == 1) s.onednn_tnc(backward);
      if (which == 2) s.onednn_ntc(backward);
      t[which] += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    ++iter;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["athanor_ms"] = t[0] / n * 1e3;
  state.counters["tnc_ms"] = t[1] / n * 1e3;
  state.counters["ntc_ms"] = t[2] / n * 1e3;
  state.counters["tnc/athanor"] = t[1] / t[0];
  state.counters["ntc/athanor"] = t[2] / t[0];
}

// The per-step weight reorders a drop-in would add (both layouts need the same four).
void reorders(benchmark::State& state) {
  ath::set_num_threads(kThreads);
  Setup& s = *g_setup;
  const auto& w = s.lstm.weights(0, 0);
  Dnnl& d = *s.ntc;
  for (auto _ : state) {
    d.load_weights(w);
    ath::Tensor a = d.reorder_out(d.dw_layer, kIn, d.bwd_pd.diff_weights_layer_desc());
    ath::Tensor b = d.reorder_out(d.dw_iter, kHidden, d.bwd_pd.diff_weights_iter_desc());
    benchmark::DoNotOptimize(a.data_ptr());
    benchmark::DoNotOptimize(b.data_ptr());
  }
}

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      std::string name = r.benchmark_name();  // lstm/round<r>/<mode>/real_time
      name = name.substr(name.find('/', name.find("/round") + 1) + 1);
      name = name.substr(0, name.find('/'));
      if (name == "reorders") {
        results[name]["ms"].push_back(r.GetAdjustedRealTime());
        continue;
      }
      for (const char* k : {"athanor_ms", "tnc_ms", "ntc_ms", "tnc/athanor", "ntc/athanor"})
        results[name][k].push_back(r.counters.at(k).value);
    }
  }
  std::map<std::string, std::map<std::string, std::vector<double>>> results;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  const int rounds = ath::bench::take_rounds_flag(argc, argv, args);
  // First, so that an ATH_MAX_CPU_ISA cap reaches oneDNN before its JIT.
  const ath::bench::HostInfo host = ath::bench::measure_host(kThreads);
  ath::set_num_threads(kThreads);
  ath::manual_seed(0);
  Setup setup;
  g_setup = &setup;
  setup.check();
  for (int r = 0; r < rounds; ++r) {
    const std::string round = "lstm/round" + std::to_string(r);
    benchmark::RegisterBenchmark((round + "/fwd").c_str(), lstm_set, false)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((round + "/fwd_bwd").c_str(), lstm_set, true)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((round + "/reorders").c_str(), reorders)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  int nargs = static_cast<int>(args.size());
  benchmark::Initialize(&nargs, args.data());
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  std::printf("\nhost: %s; SGEMM 512^3 %.1f GFLOP/s\n", host.isa.c_str(), host.sgemm_gflops);
  std::printf("medians over %d rounds, %d threads, W3 LSTM (B %ld, T %ld, %ld -> %ld):\n", rounds,
              kThreads, long(kBatch), long(kSeq), long(kIn), long(kHidden));
  for (const char* mode : {"fwd", "fwd_bwd"}) {
    auto& r = collector.results[mode];
    std::printf(
        "%-8s athanor %6.2f ms | oneDNN tnc %6.2f ms (%.2fx athanor's time) | oneDNN ntc %6.2f ms "
        "(%.2fx)\n",
        mode, ath::bench::median(r["athanor_ms"]), ath::bench::median(r["tnc_ms"]),
        ath::bench::median(r["tnc/athanor"]), ath::bench::median(r["ntc_ms"]),
        ath::bench::median(r["ntc/athanor"]));
  }
  std::printf("reorders (weights in, weight gradients out, per step of a drop-in): %.3f ms\n",
              ath::bench::median(collector.results["reorders"]["ms"]));
  benchmark::Shutdown();
  return 0;
}

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();
