#include "single_process.h"

#include <cstring>

#include "validate.h"
#include "work_state.h"

namespace ath::dist::detail {

namespace {
void copy_bytes(const Tensor& dst, const Tensor& src) {
  if (src.nbytes() > 0 && dst.data_ptr() != src.data_ptr()) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
  }
  dst.bump_version();
}

void check_same_size(const Tensor& a, const Tensor& b, Collective kind, const std::string& name) {
  ATH_CHECK(a.dtype() == b.dtype() && a.numel() == b.numel(), ShapeError,
            "{}: the message is {} elements of {} but the receive buffer is {} elements of {}",
            describe(kind, name), b.numel(), dtype_name(b.dtype()), a.numel(),
            dtype_name(a.dtype()));
}
}  // namespace

Work SingleProcessCommunicator::finished(Collective kind, std::string name,
                                         const CallOptions& call) {
  note_communication(kind, name);
  auto state = std::make_shared<WorkState>(kind, std::move(name),
                                           WorkState::Clock::now() + timeout_of(call));
  state->complete();
  return Work(std::move(state));
}

Work SingleProcessCommunicator::allreduce(const Tensor& t, ReduceOp, std::string name,
                                          CallOptions call) {
  check_tensor(t, Collective::Allreduce, name, "tensor", true);
  // One rank: sum, max and min of one value are that value, and the mean divides by one.
  return finished(Collective::Allreduce, std::move(name), call);
}

Work SingleProcessCommunicator::broadcast(const Tensor& t, int src, std::string name,
                                          CallOptions call) {
  check_tensor(t, Collective::Broadcast, name, "tensor", false);
  check_rank(src, 1, Collective::Broadcast, name, "src");
  return finished(Collective::Broadcast, std::move(name), call);
}

Work SingleProcessCommunicator::allgather(const Tensor& out, const Tensor& in, std::string name,
                                          CallOptions call) {
  check_allgather(out, in, 1, 0, name);
  copy_bytes(out, in);
  return finished(Collective::Allgather, std::move(name), call);
}

Work SingleProcessCommunicator::reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp,
                                               std::string name, CallOptions call) {
  check_reduce_scatter(out, in, 1, name);
  copy_bytes(out, in);
  return finished(Collective::ReduceScatter, std::move(name), call);
}

Work SingleProcessCommunicator::barrier(std::string name, CallOptions call) {
  return finished(Collective::Barrier, std::move(name), call);
}

Work SingleProcessCommunicator::send(const Tensor& t, int dst, int tag, std::string name,
                                     CallOptions call) {
  check_tensor(t, Collective::Send, name, "tensor", false);
  check_rank(dst, 1, Collective::Send, name, "dst");
  check_tag(tag, Collective::Send, name);
  std::shared_ptr<WorkState> receiver;
  {
    std::lock_guard lock(mutex_);
    auto& waiting = waiting_[tag];
    // A recv whose wait() already failed at its deadline takes no message.
    while (!waiting.empty() && waiting.front().state->finished()) waiting.pop_front();
    if (!waiting.empty()) {
      PendingRecv r = std::move(waiting.front());
      waiting.pop_front();
      if (r.t.dtype() != t.dtype() || r.t.numel() != t.numel()) {
        r.state->fail(fmt::format(
            "{}: the message from rank 0 (tag {}) is {} elements of {} but the receive buffer "
            "is {} elements of {}",
            describe(Collective::Recv, r.state->name()), tag, t.numel(), dtype_name(t.dtype()),
            r.t.numel(), dtype_name(r.t.dtype())));
      } else {
        copy_bytes(r.t, t);
        receiver = r.state;
      }
    } else {
      Tensor copy = empty(t.shape(), t.dtype());
      copy_bytes(copy, t);
      sent_[tag].push_back(std::move(copy));
    }
  }
  if (receiver) receiver->complete();
  return finished(Collective::Send, std::move(name), call);
}

Work SingleProcessCommunicator::recv(const Tensor& t, int src, int tag, std::string name,
                                     CallOptions call) {
  check_tensor(t, Collective::Recv, name, "tensor", false);
  check_rank(src, 1, Collective::Recv, name, "src");
  check_tag(tag, Collective::Recv, name);
  std::lock_guard lock(mutex_);
  auto& sent = sent_[tag];
  if (!sent.empty()) {
    Tensor message = std::move(sent.front());
    sent.pop_front();
    check_same_size(t, message, Collective::Recv, name);
    copy_bytes(t, message);
    return finished(Collective::Recv, std::move(name), call);
  }
  // No send yet: the Work completes when one arrives, or wait() fails at the deadline.
  auto state = std::make_shared<WorkState>(Collective::Recv, std::move(name),
                                           WorkState::Clock::now() + timeout_of(call));
  waiting_[tag].push_back({t, state});
  return Work(state);
}

}  // namespace ath::dist::detail
