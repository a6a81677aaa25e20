// One encoder block of the W4 char-transformer (/work/shared/WORKLOADS.md): pre-LayerNorm,
// d_model 128, 4 heads, feed-forward 512, GELU, dropout 0, causal, batch_first, on [16, 128, 128]:
// forward + backward (gradients of <y, gy> w.r.t. the input and every parameter) per iteration,
// on 2 threads (OMP_NUM_THREADS overrides).
//   w4_layer            nn::TransformerEncoderLayer with is_causal (the fused causal softmax)
//   w4_layer_float_mask the same with an explicit [L, L] -inf float mask, as PyTorch 1.13 takes it
//   w4_attention        its nn::MultiheadAttention alone (need_weights = false)
//   w4_model            the whole W4 model (token + position embeddings, 2 such blocks, final
//                       LayerNorm, Linear(128, 256), mean cross-entropy over 16 x 128 tokens):
//                       forward + backward of one training step, without the optimizer update
//   w4_kernel/...       one float32 kernel alone, called as a compiled step calls it (outputs
//                       allocated once): layer_norm and its backwards on [16, 128, 128] rows of
//                       128, attention_softmax and its backward on [16, 4, 128, 128] causal,
//                       self_attention (the fused attention of training and the inference
//                       runtime) on the packed projection [B, 128, 384], 4 heads, causal, at
//                       batch 16 and 1, and its backward at batch 16; GB/s
//                       counts the bytes the kernel must read and write once
// bench/transformer_torch.py times the same work in PyTorch; bench/run_transformer_compare.sh
// runs both interleaved and prints athanor / torch.
//
//   ./build/bench/bench_transformer --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/nn/embedding.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/normalization.h"
#include "athanor/nn/transformer.h"
#include "bench_host.h"

namespace {

constexpr int64_t kB = 16, kL = 128, kD = 128;

ath::nn::TransformerEncoderLayerOptions w4_block() {
  return {.d_model = kD,
          .nhead = 4,
          .dim_feedforward = 512,
          .dropout = 0.0,
          .activation = "gelu",
          .batch_first = true,
          .norm_first = true};
}

enum class Case { Layer, LayerFloatMask, Attention };

void w4_fwd_bwd(benchmark::State& state, Case c) {
  const char* threads = std::getenv("OMP_NUM_THREADS");  // 2 unless told otherwise
  ath::set_num_threads(threads != nullptr ? std::max(1, std::atoi(threads)) : 2);
  ath::manual_seed(0);
  ath::nn::TransformerEncoderLayer layer(w4_block());
  ath::Tensor x = ath::bench::random_normal({kB, kL, kD}, 1).requires_grad_();
  ath::Tensor gy = ath::bench::random_normal({kB, kL, kD}, 2);
  ath::Tensor mask = ath::triu(ath::full({kL, kL}, -std::numeric_limits<double>::infinity()), 1);
  std::vector<ath::Tensor> wrt{x};
  ath::nn::Module& params =
      c == Case::Attention ? static_cast<ath::nn::Module&>(layer.self_attn) : layer;
  for (const ath::Tensor& p : params.parameters()) wrt.push_back(p);
  auto step = [&] {
    ath::Tensor y;
    if (c == Case::Attention) {
      y = layer.self_attn(x, x, x, {.need_weights = false, .is_causal = true}).output;
    } else if (c == Case::Layer) {
      y = layer(x, {.is_causal = true});
    } else {
      y = layer(x, {.src_mask = mask});
    }
    return ath::grad({y}, wrt, {gy});
  };
  for (int i = 0; i < 3; ++i) step();  // warm the allocator and oneDNN's primitive cache
  for (auto _ : state) {
    std::vector<ath::Tensor> g = step();
    benchmark::DoNotOptimize(g[0].data_ptr());
  }
}

struct W4Model : ath::nn::Module {
  ath::nn::Embedding tok{{.num = 256, .dim = kD}}, pos{{.num = kL, .dim = kD}};
  ath::nn::TransformerEncoder blocks{{.layer = w4_block(), .num_layers = 2}};
  ath::nn::LayerNorm norm{{.shape = {kD}}};
  ath::nn::Linear head{{.in = kD, .out = 256}};
  W4Model() : Module("W4Model") {
    register_module("tok", tok);
    register_module("pos", pos);
    register_module("blocks", blocks);
    register_module("norm", norm);
    register_module("head", head);
  }
  ath::Tensor forward(const ath::Tensor& ids) override {
    ath::Tensor h = tok(ids) + pos(ath::arange(ids.size(1)));
    return head(norm(blocks(h, {.is_causal = true})));
  }
};

void w4_model(benchmark::State& state) {
  const char* threads = std::getenv("OMP_NUM_THREADS");
  ath::set_num_threads(threads != nullptr ? std::max(1, std::atoi(threads)) : 2);
  ath::manual_seed(0);
  W4Model model;
  ath::Tensor x = ath::randint(0, 256, {kB, kL}), y = ath::randint(0, 256, {kB, kL, 1});
  auto step = [&] {
    ath::Tensor logp = ath::log_softmax(model(x), -1);
    ath::Tensor loss = -ath::gather(logp, -1, y).mean();
    model.zero_grad();
    loss.backward();
    return loss.item<double>();
  };
  for (int i = 0; i < 3; ++i) step();
  for (auto _ : state) benchmark::DoNotOptimize(step());
  state.counters["seq/s"] =
      benchmark::Counter(static_cast<double>(kB) * state.iterations(), benchmark::Counter::kIsRate);
}

// One kernel call per iteration on preallocated outputs; `bytes` = what it must read + write.
template <class A>
void run_kernel(benchmark::State& state, const ath::Op<A>& op, const std::vector<ath::Tensor>& in,
                std::vector<ath::Tensor> out, const A& attrs, double bytes) {
  const char* threads = std::getenv("OMP_NUM_THREADS");
  ath::set_num_threads(threads != nullptr ? std::max(1, std::atoi(threads)) : 2);
  auto kernel = op.typed_kernel(ath::DeviceType::CPU, ath::DType::Float32);
  auto once = [&] { kernel(ath::TensorSpan(in), std::span<ath::Tensor>(out), attrs); };
  for (int i = 0; i < 3; ++i) once();
  for (auto _ : state) {
    once();
    benchmark::DoNotOptimize(out[0].data_ptr());
  }
  state.counters["GB/s"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate);
}

enum class Ln { Forward, Backward, BackwardAdd };

// layer_norm over W4's [16, 128, 128] activations (2048 rows of 128), weight and bias present.
void w4_layer_norm(benchmark::State& state, Ln which) {
  const int64_t rows = kB * kL;
  const double act = static_cast<double>(rows * kD) * 4, stats = static_cast<double>(rows) * 8;
  const double params = static_cast<double>(kD) * 4;
  ath::Tensor x = ath::bench::random_normal({kB, kL, kD}, 1);
  ath::Tensor w = ath::bench::random_normal({kD}, 2), b = ath::bench::random_normal({kD}, 3);
  const ath::LayerNormAttrs fa{.normalized_shape = {kD}, .has_weight = true, .has_bias = true};
  if (which == Ln::Forward) {
    run_kernel(state, ath::op_layer_norm(), {x, w, b},
               {ath::empty({kB, kL, kD}), ath::empty({kB, kL, 1}), ath::empty({kB, kL, 1})}, fa,
               2 * act + stats + 2 * params);
    return;
  }
  ath::Outputs f = ath::call(ath::op_layer_norm(), std::vector<ath::Tensor>{x, w, b}, fa);
  ath::Tensor g = ath::bench::random_normal({kB, kL, kD}, 4);
  std::vector<ath::Tensor> in{g, x, f[1], f[2], w};
  // g, x, mean, rstd, weight read; dx, dweight, dbias written (+ the addend read)
  double bytes = 3 * act + stats + 3 * params;
  if (which == Ln::BackwardAdd) {
    in.push_back(ath::bench::random_normal({kB, kL, kD}, 5));
    bytes += act;
  }
  const ath::LayerNormBackwardAttrs ba{.normalized_shape = {kD}, .has_weight = true};
  run_kernel(
      state,
      which == Ln::Backward ? ath::op_layer_norm_backward() : ath::op_layer_norm_backward_add(), in,
      {ath::empty({kB, kL, kD}), ath::empty({kD}), ath::empty({kD})}, ba, bytes);
}

// attention_softmax over W4's scores [16, 4 heads, 128, 128], causal, scale 1/sqrt(32). Bytes:
// the kept (lower-triangle) entries read, every entry written (the masked ones as 0).
void w4_attention_softmax(benchmark::State& state, bool backward) {
  const ath::Shape shape{kB, 4, kL, kL};
  const double all = static_cast<double>(ath::numel(shape)) * 4;
  const double kept = all * static_cast<double>(kL + 1) / (2.0 * kL);
  const ath::AttentionSoftmaxAttrs a{.scale = 0.17677669529663687, .causal = true};
  ath::Tensor x = ath::bench::random_normal(shape, 1);
  if (!backward) {
    run_kernel(state, ath::op_attention_softmax(), {x}, {ath::empty(shape)}, a, kept + all);
    return;
  }
  ath::Outputs y = ath::call(ath::op_attention_softmax(), std::vector<ath::Tensor>{x}, a);
  ath::Tensor g = ath::bench::random_normal(shape, 2);
  run_kernel(state, ath::op_attention_softmax_backward(), {g, y[0]}, {ath::empty(shape)}, a,
             2 * kept + all);
}

// self_attention over W4's packed q/k/v projection [batch, 128, 3 * 128], 4 heads of 32, causal,
// scale 1/sqrt(32), as the inference runtime calls it. Bytes: x read, the output written.
void w4_self_attention(benchmark::State& state, int64_t batch) {
  const ath::SelfAttentionAttrs a{.heads = 4, .scale = 0.17677669529663687, .causal = true};
  ath::Tensor x = ath::bench::random_normal({batch, kL, 3 * kD}, 1);
  const double bytes = static_cast<double>(batch * kL * 4 * kD) * 4;
  run_kernel(state, ath::op_self_attention(), {x}, {ath::empty({batch, kL, kD})}, a, bytes);
}

// self_attention_backward, the gradient of the above with respect to the projection, as training
// calls it (nn::MultiheadAttention with grad mode on). Bytes: x and dy read, dx written.
void w4_self_attention_backward(benchmark::State& state, int64_t batch) {
  const ath::SelfAttentionAttrs a{.heads = 4, .scale = 0.17677669529663687, .causal = true};
  ath::Tensor x = ath::bench::random_normal({batch, kL, 3 * kD}, 1);
  ath::Tensor dy = ath::bench::random_normal({batch, kL, kD}, 2);
  const double bytes = static_cast<double>(batch * kL * 7 * kD) * 4;
  run_kernel(state, ath::op_self_attention_backward(), {dy, x}, {ath::empty({batch, kL, 3 * kD})},
             a, bytes);
}

}  // namespace

BENCHMARK_CAPTURE(w4_layer_norm, w4_kernel / layer_norm, Ln::Forward)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(w4_layer_norm, w4_kernel / layer_norm_backward, Ln::Backward)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(w4_layer_norm, w4_kernel / layer_norm_backward_add, Ln::BackwardAdd)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(w4_attention_softmax, w4_kernel / attention_softmax, false)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(w4_attention_softmax, w4_kernel / attention_softmax_backward, true)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(w4_model)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(w4_fwd_bwd, w4_layer, Case::Layer)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(w4_fwd_bwd, w4_layer_float_mask, Case::LayerFloatMask)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(w4_fwd_bwd, w4_attention, Case::Attention)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();
BENCHMARK_CAPTURE(w4_self_attention, w4_kernel / self_attention_b16, 16)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(w4_self_attention, w4_kernel / self_attention_b1, 1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(w4_self_attention_backward, w4_kernel / self_attention_backward_b16, 16)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
