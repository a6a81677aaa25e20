#include "mpi_communicator.h"

#include <climits>

#include "validate.h"

namespace ath::dist::detail {

namespace {
// MPI counts are ints; byte-counted calls (broadcast, allgather, send/recv) count bytes.
void check_count(std::size_t n, Collective kind, const std::string& name, const char* unit) {
  ATH_CHECK(n <= static_cast<std::size_t>(INT_MAX), NotImplementedError,
            "{}: {} {} exceed MPI's int count (2^31 - 1); split the tensor", describe(kind, name),
            n, unit);
}
}  // namespace

std::unique_ptr<Item> MpiCommunicator::make_item(Collective kind, std::string name,
                                                 const CallOptions& call) {
  note_communication(kind, name);
  auto item = std::make_unique<Item>();
  item->kind = kind;
  item->timeout = timeout_of(call);
  item->state = std::make_shared<WorkState>(kind, name, WorkState::Clock::now() + item->timeout);
  // Only the engine thread's polls move the call forward; it must get a core while the
  // caller computes (core/yield_point.h).
  item->state->request_yields();
  item->name = std::move(name);
  return item;
}

Work MpiCommunicator::submit(std::unique_ptr<Item> item) {
  Work work(item->state);
  engine_.submit(std::move(item));
  return work;
}

Work MpiCommunicator::allreduce(const Tensor& t, ReduceOp op, std::string name, CallOptions call) {
  check_tensor(t, Collective::Allreduce, name, "tensor", true);
  check_count(static_cast<std::size_t>(t.numel()), Collective::Allreduce, name, "elements");
  auto item = make_item(Collective::Allreduce, std::move(name), call);
  item->a = t;
  item->op = op;
  return submit(std::move(item));
}

Work MpiCommunicator::broadcast(const Tensor& t, int src, std::string name, CallOptions call) {
  check_tensor(t, Collective::Broadcast, name, "tensor", false);
  check_rank(src, world_size(), Collective::Broadcast, name, "src");
  check_count(t.nbytes(), Collective::Broadcast, name, "bytes");
  auto item = make_item(Collective::Broadcast, std::move(name), call);
  item->a = t;
  item->peer = src;
  return submit(std::move(item));
}

Work MpiCommunicator::allgather(const Tensor& out, const Tensor& in, std::string name,
                                CallOptions call) {
  const bool in_place = check_allgather(out, in, world_size(), rank(), name);
  check_count(in.nbytes(), Collective::Allgather, name, "bytes");
  auto item = make_item(Collective::Allgather, std::move(name), call);
  item->a = out;
  item->b = in;
  item->in_place = in_place;
  return submit(std::move(item));
}

Work MpiCommunicator::reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op,
                                     std::string name, CallOptions call) {
  check_reduce_scatter(out, in, world_size(), name);
  check_count(static_cast<std::size_t>(out.numel()), Collective::ReduceScatter, name, "elements");
  auto item = make_item(Collective::ReduceScatter, std::move(name), call);
  item->a = out;
  item->b = in;
  item->op = op;
  return submit(std::move(item));
}

Work MpiCommunicator::barrier(std::string name, CallOptions call) {
  return submit(make_item(Collective::Barrier, std::move(name), call));
}

Work MpiCommunicator::point_to_point(Collective kind, const Tensor& t, int peer, int tag,
                                     std::string name, CallOptions call) {
  const char* peer_name = kind == Collective::Send ? "dst" : "src";
  check_tensor(t, kind, name, "tensor", false);
  check_rank(peer, world_size(), kind, name, peer_name);
  check_tag(tag, kind, name);
  check_count(t.nbytes(), kind, name, "bytes");
  auto item = make_item(kind, std::move(name), call);
  item->a = t;
  item->peer = peer;
  item->tag = tag;
  return submit(std::move(item));
}

Work MpiCommunicator::send(const Tensor& t, int dst, int tag, std::string name, CallOptions call) {
  return point_to_point(Collective::Send, t, dst, tag, std::move(name), call);
}

Work MpiCommunicator::recv(const Tensor& t, int src, int tag, std::string name, CallOptions call) {
  return point_to_point(Collective::Recv, t, src, tag, std::move(name), call);
}

}  // namespace ath::dist::detail
