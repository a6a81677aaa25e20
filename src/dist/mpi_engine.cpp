// The engine's life: the thread that initialises MPI, runs the progress loop and leaves MPI, and
// the exit policy (see world.h): MPI_Finalize when all went well; after a failure MPI_Finalize
// under a watchdog, since a stalled peer would keep it waiting for ever; MPI_Abort when MPI
// still owns memory of a collective it cannot cancel.
#include "mpi_engine.h"

#include <cstdio>
#include <cstdlib>

#include "validate.h"

namespace ath::dist::detail {

namespace {
constexpr int kControlTag = 1;
// After a failure a peer may never reach MPI_Finalize: how long the exit waits for it at most.
constexpr std::chrono::milliseconds kFinalizeAfterFailure = std::chrono::seconds(30);

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}
}  // namespace

MpiEngine& MpiEngine::start() {
  static MpiEngine* engine = [] {
    auto* e = new MpiEngine();
    std::promise<void> ready;
    std::future<void> started = ready.get_future();
    e->thread_ = std::thread([e, &ready] { e->run(&ready); });
    try {
      started.get();
    } catch (...) {
      e->thread_.join();
      delete e;
      throw;
    }
    return e;
  }();
  return *engine;
}

void MpiEngine::init_mpi() {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  ATH_CHECK(rc == MPI_SUCCESS, dist::CommError, "dist: MPI_Init_thread failed: {}", mpi_error(rc));
  ATH_CHECK(provided >= MPI_THREAD_FUNNELED, dist::CommError,
            "dist: MPI provides thread level {}, below MPI_THREAD_FUNNELED", provided);
  // Errors come back as codes the engine turns into CommErrors, instead of MPI aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &info_.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &info_.world_size);
  // Private communicators: a user's own MPI traffic on MPI_COMM_WORLD never matches ours.
  MPI_Comm_dup(MPI_COMM_WORLD, &data_);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_);
  MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  info_.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("MPI_LOCALRANKID", -1));
  info_.local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", -1));
  if (info_.local_rank < 0 || info_.local_size < 1) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info_.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &info_.local_rank);
    MPI_Comm_size(node, &info_.local_size);
    MPI_Comm_free(&node);
  }
  peers_.resize(info_.world_size);
  for (int p = 0; p < info_.world_size; ++p) {
    if (p != info_.rank) post_control_recv(p);
  }
}

void MpiEngine::run(std::promise<void>* ready) {
  try {
    init_mpi();
  } catch (...) {
    ready->set_exception(std::current_exception());
    return;
  }
  ready->set_value();
  // Polling MPI_Test is what moves nonblocking MPI forward, but a spinning thread would take a
  // core from the compute threads: spin briefly after progress, then back off to 1 ms sleeps,
  // and sleep on the condition variable when nothing is in flight.
  int quiet_passes = 0;
  auto backoff = std::chrono::microseconds(10);
  for (;;) {
    const bool moved = progress();
    if (moved) {
      quiet_passes = 0;
      backoff = std::chrono::microseconds(10);
      continue;
    }
    std::unique_lock lock(mutex_);
    if (stopping_ && submitted_.empty()) break;
    const bool busy = !collectives_.empty() || !p2p_.empty() || !outgoing_.empty();
    if (!busy) {
      cv_.wait_for(lock, std::chrono::milliseconds(50),
                   [&] { return stopping_ || !submitted_.empty(); });
      continue;
    }
    if (++quiet_passes < 64) {
      lock.unlock();
      std::this_thread::yield();
      continue;
    }
    cv_.wait_for(lock, backoff, [&] { return stopping_ || !submitted_.empty(); });
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(1));
  }
  finish_mpi();
  exited_ = true;
}

void MpiEngine::finish_mpi() {
  if (!collectives_.empty() || !p2p_.empty()) {
    fail(fmt::format("rank {} is exiting with {} call(s) still pending", info_.rank,
                     collectives_.size() + p2p_.size()),
         nullptr);
  }
  // Our own control sends are small (eager) messages: they complete locally at once.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!outgoing_.empty() && std::chrono::steady_clock::now() < give_up) progress_control();
  if (data_left_running_ || !outgoing_.empty()) {
    std::fprintf(stderr,
                 "athanor dist: rank %d: MPI still owns the buffers of %s it cannot cancel; "
                 "calling MPI_Abort so that the job ends instead of hanging\n",
                 info_.rank,
                 data_left_running_ ? "a failed call" : "a control message no peer has received");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }
  for (int p = 0; p < info_.world_size; ++p) {
    MPI_Request& r = peers_[p].request;
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  MPI_Comm_free(&control_);
  MPI_Comm_free(&data_);
  MPI_Finalize();
}

void MpiEngine::submit(std::unique_ptr<Item> item) {
  {
    std::lock_guard lock(mutex_);
    ATH_CHECK(!stopped_, dist::CommError,
              "{}: the MPI communicator has shut down (dist::finalize() or process exit)",
              describe(item->kind, item->name));
    submitted_.push_back(std::move(item));
  }
  cv_.notify_all();
}

void MpiEngine::shutdown(std::chrono::milliseconds finalize_timeout) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
  }
  cv_.notify_all();
  // MPI_Finalize waits for every rank. Normally the others are just behind (they get the
  // communicator's timeout); after a failure one may be stalled for good.
  const auto begin = std::chrono::steady_clock::now();
  while (!exited_) {
    const auto limit =
        failed_ ? std::min(finalize_timeout, kFinalizeAfterFailure) : finalize_timeout;
    if (std::chrono::steady_clock::now() - begin > limit) {
      std::fprintf(stderr,
                   "athanor dist: rank %d: MPI_Finalize has not returned after %lld ms (a peer "
                   "is stalled or gone%s); ending the process\n",
                   info_.rank, static_cast<long long>(limit.count()),
                   failed_ ? ", after a failed collective" : "");
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  thread_.join();
}

std::string MpiEngine::mpi_error(int code) const {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<std::size_t>(length));
}

void MpiEngine::post_control_recv(int peer) {
  PeerControl& pc = peers_[peer];
  int rc = MPI_Irecv(&pc.incoming, sizeof(ControlMessage), MPI_BYTE, peer, kControlTag, control_,
                     &pc.request);
  if (rc != MPI_SUCCESS) {
    pc.request = MPI_REQUEST_NULL;
    fail(fmt::format("posting a control receive from rank {} failed: {}", peer, mpi_error(rc)),
         nullptr);
  }
}

void MpiEngine::send_control(int peer, const ControlMessage& m) {
  OutgoingControl out{std::make_unique<ControlMessage>(m)};
  int rc = MPI_Isend(out.message.get(), sizeof(ControlMessage), MPI_BYTE, peer, kControlTag,
                     control_, &out.request);
  if (rc != MPI_SUCCESS) {
    // An abort that cannot be sent is not fatal: the peer then times out by itself.
    if (m.type == ControlType::Header) {
      fail(fmt::format("sending a header to rank {} failed: {}", peer, mpi_error(rc)), nullptr);
    }
    return;
  }
  outgoing_.push_back(std::move(out));
}

}  // namespace ath::dist::detail
