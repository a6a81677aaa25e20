// DistributedDataParallel's construction (rank 0's state to every rank, buckets, hooks), its
// forward and buffer synchronisation, and the no_sync switch. The reduction itself is in
// ddp_reducer.cpp.
#include "athanor/dist/ddp.h"

#include <set>

#include "athanor/dist/world.h"
#include "athanor/ops/creation.h"
#include "athanor/tensor/grad_mode.h"
#include "ddp_state.h"

namespace ath::dist {

namespace detail {

namespace {

// Broadcasts every tensor from rank 0 (all submitted, then all awaited) as "<what> <name>".
// Non-contiguous tensors go through a contiguous copy.
void broadcast_from_rank0(Communicator& comm, const nn::NamedTensors& tensors,
                          const std::string& what) {
  std::vector<std::pair<Tensor, Tensor>> staged;  // (destination, contiguous buffer)
  std::vector<Work> works;
  for (const auto& entry : tensors) {
    const Tensor& t = entry.second;
    if (!t.defined()) continue;
    Tensor buffer = t.is_contiguous() ? t : t.contiguous();
    works.push_back(comm.broadcast(buffer, 0, what + " " + entry.first));
    staged.emplace_back(t, buffer);
  }
  for (const Work& w : works) w.wait();
  NoGradGuard no_grad;
  for (auto& [dst, buffer] : staged) {
    if (!dst.is_same(buffer)) dst.copy_(buffer);
    dst.bump_version();
  }
}

}  // namespace

DDPState::DDPState(nn::Module& m, DDPOptions o, Communicator& c)
    : module(m),
      options(o),
      comm(c),
      single(c.world_size() == 1),
      timeline(o.timeline_steps, c.rank()) {
  // The trained parameters, each once (a tensor registered under two names is one parameter).
  std::set<const TensorImpl*> seen;
  for (auto& [name, p] : module.named_parameters()) {
    if (!p.defined() || !p.requires_grad() || !seen.insert(p.impl()).second) continue;
    ATH_CHECK(p.dtype() == kFloat32 || p.dtype() == kFloat64, DTypeError,
              "DistributedDataParallel: parameter '{}' is {}; gradients are all-reduced in "
              "float32 or float64 (keep the weights in float32 and use a mixed precision)",
              name, dtype_name(p.dtype()));
    index_of.emplace(p.impl(), static_cast<int64_t>(params.size()));
    params.push_back({.name = name, .param = p});
    sizes.push_back({.numel = p.numel(), .dtype = p.dtype()});
  }
  assign(assign_buckets(sizes, {.bucket_cap_bytes = options.bucket_cap_bytes,
                                .first_bucket_cap_bytes = options.first_bucket_cap_bytes}));
}

void DDPState::assign(const std::vector<std::vector<int64_t>>& assignment) {
  buckets.clear();
  info.clear();
  for (const auto& members : assignment) {
    DDPBucket bucket;
    DDPBucketInfo description;
    const int64_t b = static_cast<int64_t>(buckets.size());
    description.dtype = params[static_cast<std::size_t>(members.front())].param.dtype();
    for (int64_t i : members) {
      DDPParam& p = params[static_cast<std::size_t>(i)];
      p.bucket = b;
      p.offset = description.numel;
      description.numel += p.param.numel();
      description.names.push_back(p.name);
    }
    description.bytes = description.numel * static_cast<int64_t>(element_size(description.dtype));
    bucket.members = members;
    if (!single) bucket.flat = zeros({description.numel}, description.dtype);
    buckets.push_back(std::move(bucket));
    info.push_back(std::move(description));
  }
}

// Registration order is only a guess at the order backward produces gradients (a pre-norm
// transformer layer registers its LayerNorms last and uses them first, so a first bucket that
// holds one waits for nearly the whole backward). As PyTorch's _rebuild_buckets: after the first
// synchronised step the buckets are refilled in the order the gradients actually arrived.
// Every rank takes rank 0's order, so all submit the same all-reduces even if their orders
// differed. Parameters that got no gradient (find_unused_parameters) follow, in reverse
// registration order. Each element's mean is the same wherever its bucket puts it.
void DDPState::rebuild_buckets() {
  buckets_rebuilt = true;
  std::vector<int64_t> order = std::move(ready_order);
  ready_order = {};
  if (!options.rebuild_buckets) return;
  std::vector<bool> arrived(params.size(), false);
  for (int64_t i : order) arrived[static_cast<std::size_t>(i)] = true;
  for (auto i = static_cast<int64_t>(params.size()) - 1; i >= 0; --i) {
    if (!arrived[static_cast<std::size_t>(i)]) order.push_back(i);
  }
  if (!single) {
    Tensor shared = from_vector(order);
    comm.broadcast(shared, 0, "ddp bucket order").wait();
    order = shared.to_vector<int64_t>();
  }
  auto assignment =
      assign_buckets_in_order(sizes, order,
                              {.bucket_cap_bytes = options.bucket_cap_bytes,
                               .first_bucket_cap_bytes = options.first_bucket_cap_bytes});
  std::vector<std::vector<int64_t>> current;
  for (const auto& b : buckets) current.push_back(b.members);
  if (assignment != current) assign(assignment);
}

}  // namespace detail

DistributedDataParallel::DistributedDataParallel(nn::Module& module, DDPOptions options) {
  Communicator& comm = options.communicator ? *options.communicator : world();
  state_ = std::make_unique<detail::DDPState>(module, options, comm);
  detail::DDPState* s = state_.get();
  if (!s->single) {
    detail::broadcast_from_rank0(comm, module.named_parameters(), "ddp parameter");
    detail::broadcast_from_rank0(comm, module.named_buffers(), "ddp buffer");
  }
  for (std::size_t i = 0; i < s->params.size(); ++i) {
    const auto index = static_cast<int64_t>(i);
    s->params[i].hook = s->params[i].param.register_post_accumulate_grad_hook(
        [s, index](const Tensor&) { s->on_gradient(index); });
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& p : state_->params) {
    if (p.hook >= 0) p.param.remove_hook(p.hook);
  }
  // In-flight all-reduces keep their flat buffers alive (Work holds them): nothing to wait for.
}

Tensor DistributedDataParallel::operator()(const Tensor& input) {
  if (state_->options.broadcast_buffers) sync_buffers();
  return state_->module(input);
}

nn::Module& DistributedDataParallel::module() const { return state_->module; }
Communicator& DistributedDataParallel::communicator() const { return state_->comm; }
const DDPOptions& DistributedDataParallel::options() const { return state_->options; }

void DistributedDataParallel::sync_buffers() {
  if (state_->single) return;
  detail::broadcast_from_rank0(state_->comm, state_->module.named_buffers(), "ddp buffer");
}

void DistributedDataParallel::finish_gradient_sync() { state_->finish(); }

void DistributedDataParallel::gradients_ready() { state_->all_gradients_ready(); }

void DistributedDataParallel::gradient_ready(const Tensor& parameter) {
  const auto it = state_->index_of.find(parameter.impl());
  if (it == state_->index_of.end()) return;  // not one of the wrapped module's parameters
  // Not from a hook: the engine does not run this backward.
  state_->on_gradient(it->second, /*from_engine=*/false);
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.require_gradient_sync()) {
  ddp_.set_require_gradient_sync(false);
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.set_require_gradient_sync(previous_); }

void DistributedDataParallel::set_require_gradient_sync(bool on) { state_->require_sync = on; }
bool DistributedDataParallel::require_gradient_sync() const { return state_->require_sync; }

const std::vector<DDPBucketInfo>& DistributedDataParallel::buckets() const { return state_->info; }
const DDPTimeline& DistributedDataParallel::timeline() const { return state_->timeline; }
DDPTimeline& DistributedDataParallel::timeline() { return state_->timeline; }

}  // namespace ath::dist
