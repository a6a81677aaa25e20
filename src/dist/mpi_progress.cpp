// One pass of the engine's loop: take new calls, exchange headers, start collectives whose
// headers all matched (in call order), test what is in flight, report completions in call
// order, and fail the first call past its deadline, naming the ranks whose headers are missing.
#include <algorithm>
#include <climits>

#include "mpi_engine.h"
#include "validate.h"

namespace ath::dist::detail {

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int32:
      return MPI_INT32_T;
    default:
      return MPI_INT64_T;  // validate.cpp admits only these four
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
    default:
      return MPI_SUM;  // Mean: the sum, divided once it has arrived
  }
}

HeaderFields header_fields(const Item& item) {
  switch (item.kind) {
    case Collective::Allgather:
      return {item.kind, item.name, item.b.numel(), item.b.dtype(), item.op, -1};
    case Collective::Barrier:
      return {item.kind, item.name, 0, kFloat32, item.op, -1};
    default:
      return {item.kind, item.name, item.a.numel(), item.a.dtype(), item.op, item.peer};
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    s += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  }
  return s;
}

int as_int(std::size_t n) { return static_cast<int>(std::min<std::size_t>(n, INT_MAX)); }

}  // namespace

bool MpiEngine::progress() {
  bool moved = take_submissions();
  moved |= progress_control();
  moved |= start_ready_collectives();
  moved |= progress_data();
  if (peer_abort_ && !failure_) fail(*peer_abort_, nullptr);
  check_deadlines();
  return moved;
}

bool MpiEngine::take_submissions() {
  std::deque<std::unique_ptr<Item>> fresh;
  {
    std::lock_guard lock(mutex_);
    fresh.swap(submitted_);
  }
  for (auto& item : fresh) {
    if (failure_) {
      item->state->fail(fmt::format("{}: not run: the communicator failed earlier: {}",
                                    describe(item->kind, item->name), *failure_));
      continue;
    }
    if (item->kind == Collective::Send || item->kind == Collective::Recv) {
      start_p2p(*item);
      p2p_.push_back(std::move(item));
      continue;
    }
    item->seq = next_seq_++;
    item->header = make_header(item->seq, header_fields(*item));
    for (int p = 0; p < info_.world_size && !failure_; ++p) {
      if (p != info_.rank) send_control(p, item->header);
    }
    collectives_.push_back(std::move(item));
  }
  return !fresh.empty();
}

bool MpiEngine::progress_control() {
  bool moved = false;
  // After a failure the receives stay posted until the exit and what arrives is dropped: a
  // peer's header or abort sent to a rank that stopped listening would never be matched, and
  // with OpenMPI's shared-memory transport such a send can stay incomplete, so that the peer's
  // exit has to call MPI_Abort.
  for (int p = 0; p < info_.world_size; ++p) {
    PeerControl& pc = peers_[p];
    while (pc.request != MPI_REQUEST_NULL) {
      int done = 0;
      int rc = MPI_Test(&pc.request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        pc.request = MPI_REQUEST_NULL;
        fail(fmt::format("receiving control messages from rank {} failed: {}", p, mpi_error(rc)),
             nullptr);
        return true;
      }
      if (!done) break;
      moved = true;
      const ControlMessage m = pc.incoming;
      if (m.type == ControlType::Abort) {
        // Nothing more comes from this peer; its earlier headers are still checked first.
        if (!peer_abort_) peer_abort_ = fmt::format("rank {} failed: {}", p, text_of(m));
        pc.aborted = true;
        break;
      }
      if (!failure_) {
        pc.headers.push_back(m);
        pc.last = m;
      }
      post_control_recv(p);
    }
  }
  std::erase_if(outgoing_, [&](OutgoingControl& out) {
    int done = 0;
    MPI_Test(&out.request, &done, MPI_STATUS_IGNORE);
    moved |= done != 0;
    return done != 0;
  });
  return moved;
}

bool MpiEngine::start_ready_collectives() {
  bool moved = false;
  for (auto& owned : collectives_) {
    Item& item = *owned;
    if (item.phase != Item::Phase::Headers) continue;
    for (int p = 0; p < info_.world_size; ++p) {
      if (p != info_.rank && peers_[p].headers.empty()) return moved;  // start in call order
    }
    for (int p = 0; p < info_.world_size; ++p) {
      if (p == info_.rank) continue;
      const ControlMessage& theirs = peers_[p].headers.front();
      if (auto what = mismatch(item.header, theirs)) {
        fail(fmt::format("{}: desynchronised collectives (they differ in {}): this rank ({}) "
                         "submitted {}, but rank {} submitted {}",
                         describe(item.kind, item.name), *what, info_.rank,
                         describe_header(item.header), p, describe_header(theirs)),
             &item);
        return true;
      }
    }
    for (int p = 0; p < info_.world_size; ++p) {
      if (p != info_.rank) peers_[p].headers.pop_front();
    }
    start_collective(item);
    if (failure_) return true;
    moved = true;
  }
  return moved;
}

void MpiEngine::start_collective(Item& item) {
  void* a = item.a.defined() ? item.a.data_ptr() : nullptr;
  int rc = MPI_SUCCESS;
  switch (item.kind) {
    case Collective::Allreduce:
      rc = MPI_Iallreduce(MPI_IN_PLACE, a, static_cast<int>(item.a.numel()),
                          mpi_type(item.a.dtype()), mpi_op(item.op), data_, &item.request);
      break;
    case Collective::Broadcast:
      rc = MPI_Ibcast(a, as_int(item.a.nbytes()), MPI_BYTE, item.peer, data_, &item.request);
      break;
    case Collective::Allgather: {
      const int bytes = as_int(item.b.nbytes());
      rc = item.in_place ? MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, bytes, MPI_BYTE,
                                          data_, &item.request)
                         : MPI_Iallgather(item.b.data_ptr(), bytes, MPI_BYTE, a, bytes, MPI_BYTE,
                                          data_, &item.request);
      break;
    }
    case Collective::ReduceScatter:
      rc = MPI_Ireduce_scatter_block(item.b.data_ptr(), a, static_cast<int>(item.a.numel()),
                                     mpi_type(item.a.dtype()), mpi_op(item.op), data_,
                                     &item.request);
      break;
    case Collective::Barrier:
      rc = MPI_Ibarrier(data_, &item.request);
      break;
    default:
      break;
  }
  on_started(item, rc);
}

// After an MPI_I* call: the item moves to its data phase, or the communicator fails naming it.
void MpiEngine::on_started(Item& item, int rc) {
  if (rc != MPI_SUCCESS) {
    item.request = MPI_REQUEST_NULL;
    fail(fmt::format("{}: MPI refused to start it: {}", describe(item.kind, item.name),
                     mpi_error(rc)),
         &item);
    return;
  }
  item.phase = Item::Phase::Data;
}

void MpiEngine::start_p2p(Item& item) {
  void* a = item.a.data_ptr();
  const int bytes = as_int(item.a.nbytes());
  int rc = item.kind == Collective::Send
               ? MPI_Isend(a, bytes, MPI_BYTE, item.peer, item.tag, data_, &item.request)
               : MPI_Irecv(a, bytes, MPI_BYTE, item.peer, item.tag, data_, &item.request);
  on_started(item, rc);
}

bool MpiEngine::progress_data() {
  bool moved = false;
  for (auto& owned : collectives_) {
    Item& item = *owned;
    if (item.phase != Item::Phase::Data) continue;
    int done = 0;
    int rc = MPI_Test(&item.request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      fail(fmt::format("{}: MPI failed: {}", describe(item.kind, item.name), mpi_error(rc)), &item);
      return true;
    }
    if (!done) continue;
    moved = true;
    item.phase = Item::Phase::Finished;
    if (item.op == ReduceOp::Mean &&
        (item.kind == Collective::Allreduce || item.kind == Collective::ReduceScatter)) {
      divide_by(item.a, info_.world_size);
    }
    if (item.a.defined()) item.a.bump_version();
  }
  // Completions are reported in call order.
  while (!collectives_.empty() && collectives_.front()->phase == Item::Phase::Finished) {
    collectives_.front()->state->complete();
    collectives_.pop_front();
  }
  for (std::size_t i = 0; i < p2p_.size(); ++i) {
    Item& item = *p2p_[i];
    int done = 0;
    MPI_Status status;
    int rc = MPI_Test(&item.request, &done, &status);
    if (rc != MPI_SUCCESS) {
      fail(fmt::format("{} (rank {}, tag {}): MPI failed: {}", describe(item.kind, item.name),
                       item.peer, item.tag, mpi_error(rc)),
           &item);
      return true;
    }
    if (!done) continue;
    moved = true;
    if (item.kind == Collective::Recv) {
      int got = 0;
      MPI_Get_count(&status, MPI_BYTE, &got);
      if (static_cast<std::size_t>(got) != item.a.nbytes()) {
        item.phase = Item::Phase::Finished;  // nothing of MPI's left to cancel
        fail(fmt::format("{}: the message from rank {} (tag {}) has {} bytes but the receive "
                         "buffer {} ({} x {})",
                         describe(item.kind, item.name), item.peer, item.tag, got, item.a.nbytes(),
                         item.a.numel(), dtype_name(item.a.dtype())),
             &item);
        return true;
      }
      item.a.bump_version();
    }
    item.state->complete();
    p2p_.erase(p2p_.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
  return moved;
}

std::string MpiEngine::timeout_message(const Item& item) const {
  if (item.kind == Collective::Send || item.kind == Collective::Recv) {
    const std::string what = describe(item.kind, item.name);
    const bool send = item.kind == Collective::Send;
    return fmt::format(
        "{} {} rank {} (tag {}, {} bytes) timed out after {} ms: rank {} has not "
        "{} it (stalled, exited or desynchronised)",
        what, send ? "to" : "from", item.peer, item.tag, item.a.nbytes(), item.timeout.count(),
        item.peer, send ? "received" : "sent");
  }
  if (item.phase == Item::Phase::Data) {
    return fmt::format(
        "{} timed out after {} ms in its data exchange: every rank submitted it, so a rank died "
        "or stopped inside it, or the network failed",
        describe_header(item.header), item.timeout.count());
  }
  std::vector<int> missing;
  std::string seen;
  for (int p = 0; p < info_.world_size; ++p) {
    if (p == info_.rank) continue;
    const auto& headers = peers_[p].headers;
    const bool arrived = std::any_of(headers.begin(), headers.end(),
                                     [&](const ControlMessage& h) { return h.seq == item.seq; });
    if (arrived) continue;
    missing.push_back(p);
    const auto& last = peers_[p].last;
    seen += fmt::format("; rank {}'s last call seen: {}", p,
                        last ? describe_header(*last) : std::string("none"));
  }
  if (missing.empty()) {
    return fmt::format("{} timed out after {} ms waiting for an earlier call to start",
                       describe_header(item.header), item.timeout.count());
  }
  return fmt::format(
      "{} timed out after {} ms: {} {} not submitted it (stalled, exited or desynchronised){}",
      describe_header(item.header), item.timeout.count(), rank_list(missing),
      missing.size() == 1 ? "has" : "have", seen);
}

void MpiEngine::check_deadlines() {
  const auto now = WorkState::Clock::now();
  for (auto& item : collectives_) {
    if (item->phase != Item::Phase::Finished && now >= item->state->deadline()) {
      fail(timeout_message(*item), item.get());
      return;
    }
  }
  for (auto& item : p2p_) {
    if (now >= item->state->deadline()) {
      fail(timeout_message(*item), item.get());
      return;
    }
  }
}

void MpiEngine::fail(const std::string& cause, const Item* culprit) {
  if (failure_) return;
  failure_ = cause;
  failed_ = true;
  // A peer that sent an abort knows, and may be in its exit, no longer listening.
  for (int p = 0; p < info_.world_size; ++p) {
    if (p != info_.rank && !peers_[p].aborted) send_control(p, make_abort(cause));
  }
  auto fail_item = [&](std::unique_ptr<Item>& item) {
    item->state->fail(item.get() == culprit
                          ? cause
                          : fmt::format("{}: not completed: the communicator failed: {}",
                                        describe(item->kind, item->name), cause));
    if (item->phase != Item::Phase::Data || item->request == MPI_REQUEST_NULL) return;
    if (item->kind == Collective::Recv) {
      // A receive that has not matched can be cancelled; one that has completes at once.
      MPI_Cancel(&item->request);
      MPI_Wait(&item->request, MPI_STATUS_IGNORE);
      return;
    }
    // MPI cannot cancel a collective (nor reliably a send): its buffers stay alive, and the exit
    // calls MPI_Abort rather than MPI_Finalize.
    data_left_running_ = true;
    abandoned_.push_back(std::move(item));
  };
  for (auto& item : collectives_) fail_item(item);
  for (auto& item : p2p_) fail_item(item);
  collectives_.clear();
  p2p_.clear();
  for (auto& pc : peers_) pc.headers.clear();  // the receives stay posted: progress_control()
}

}  // namespace ath::dist::detail
