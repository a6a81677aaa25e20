// The MPI backend's engine: one process-wide thread that owns every MPI call, from
// MPI_Init_thread to MPI_Finalize (so MPI_THREAD_FUNNELED suffices). Compute threads submit
// Items and get WorkStates; the thread drives them with nonblocking MPI and MPI_Test, which lets
// it enforce every call's deadline.
//
// A collective goes through two phases. Headers: its header goes to every peer, and it waits
// for theirs (the check that all ranks submit the same call, and the record of which ranks have
// not). Data: once every header matched, the MPI_I* collective starts; collectives start and
// report completion in call order. Point-to-point calls start at once and carry no header.
// Any failure poisons the communicator (see communicator.h) and is sent to the peers as an
// abort message.
#pragma once

// mpi.h's deprecated C++ bindings would need libmpi_cxx: athanor uses the C API only.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "control_message.h"
#include "work_state.h"

namespace ath::dist::detail {

// One submitted call. The tensors stay referenced until MPI is done with their memory.
struct Item {
  Collective kind = Collective::Barrier;
  std::string name;
  ReduceOp op = ReduceOp::Sum;
  int peer = -1;  // broadcast's src, send's dst, recv's src
  int tag = 0;
  Tensor a;  // the tensor, or out
  Tensor b;  // in (allgather, reduce_scatter)
  bool in_place = false;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<WorkState> state;

  // Owned by the engine thread.
  enum class Phase { Headers, Data, Finished } phase = Phase::Headers;
  uint64_t seq = 0;
  ControlMessage header;
  MPI_Request request = MPI_REQUEST_NULL;
};

struct EngineInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
};

class MpiEngine {
 public:
  // The process's engine, started (MPI initialised) on the first call. Never destroyed:
  // shutdown() ends it, so no static destructor can run after MPI_Finalize.
  static MpiEngine& start();
  const EngineInfo& info() const { return info_; }

  // Queues a call; throws CommError once the engine has shut down.
  void submit(std::unique_ptr<Item> item);
  // Fails what is pending, leaves MPI (Finalize, or Abort when a collective was left running),
  // joins the thread. Waits at most `finalize_timeout` for MPI_Finalize after a failure, then
  // ends the process (std::_Exit(1)). Idempotent.
  void shutdown(std::chrono::milliseconds finalize_timeout);

 private:
  MpiEngine() = default;
  void run(std::promise<void>* ready);
  void init_mpi();
  void finish_mpi();

  // One pass over everything in flight; true if anything moved.
  bool progress();
  bool take_submissions();
  bool progress_control();
  bool start_ready_collectives();
  bool progress_data();
  void check_deadlines();
  void start_p2p(Item& item);
  void on_started(Item& item, int rc);
  void start_collective(Item& item);
  void post_control_recv(int peer);
  void send_control(int peer, const ControlMessage& m);
  // Poisons the communicator: every pending call fails, the peers get an abort.
  void fail(const std::string& cause, const Item* culprit);
  std::string timeout_message(const Item& item) const;
  std::string mpi_error(int code) const;

  EngineInfo info_;
  std::thread thread_;

  // Shared with submitters.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Item>> submitted_;
  bool stopping_ = false;
  bool stopped_ = false;  // no submissions accepted any more

  // The engine thread's own.
  MPI_Comm data_ = MPI_COMM_NULL;     // collectives and point-to-point data
  MPI_Comm control_ = MPI_COMM_NULL;  // headers and aborts
  uint64_t next_seq_ = 0;
  std::deque<std::unique_ptr<Item>> collectives_;  // in call order, until reported
  std::vector<std::unique_ptr<Item>> p2p_;
  std::vector<std::unique_ptr<Item>> abandoned_;  // failed with MPI still using their memory
  struct PeerControl {
    ControlMessage incoming;
    MPI_Request request = MPI_REQUEST_NULL;
    std::deque<ControlMessage> headers;  // arrived, not yet matched
    std::optional<ControlMessage> last;  // the latest header seen, for reports
    bool aborted = false;                // it sent an abort: it has failed, and listens no more
  };
  std::vector<PeerControl> peers_;
  struct OutgoingControl {
    std::unique_ptr<ControlMessage> message;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::vector<OutgoingControl> outgoing_;
  std::optional<std::string> failure_;
  // A peer's abort, applied after this pass has checked the headers that came before it (so a
  // desync is reported with this rank's own full diagnosis when it has one).
  std::optional<std::string> peer_abort_;
  bool data_left_running_ = false;   // a collective or send MPI could not cancel
  std::atomic<bool> failed_{false};  // failure_ is set (read by shutdown())
  std::atomic<bool> exited_{false};  // the thread has left MPI
};

}  // namespace ath::dist::detail
