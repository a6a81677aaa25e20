// The world communicator: MPI's when launched by mpirun/mpiexec, one process otherwise (MPI is
// then never initialised, so a plain run needs no MPI runtime at all). Both live for the whole
// process (never destroyed): the MPI engine is ended by an atexit handler registered once MPI
// is up, which runs before the static destructors of everything constructed earlier.
#include "athanor/dist/world.h"

#include <cstdlib>
#include <mutex>

#include "mpi_communicator.h"
#include "single_process.h"

namespace ath::dist {

namespace {
std::mutex g_mutex;
Communicator* g_world = nullptr;  // never deleted: see above
detail::MpiEngine* g_engine = nullptr;
CommOptions g_options;

void finalize_at_exit() { finalize(); }
}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

Communicator& init(const CommOptions& options) {
  std::lock_guard lock(g_mutex);
  if (g_world != nullptr) {
    ATH_CHECK(options.timeout == g_options.timeout, ValueError,
              "dist::init: the world already exists with timeout {} ms, not {} ms (the first "
              "init() or world() call sets it)",
              g_options.timeout.count(), options.timeout.count());
    return *g_world;
  }
  ATH_CHECK(options.timeout.count() > 0, ValueError,
            "dist::init: timeout must be positive, got "
            "{} ms",
            options.timeout.count());
  g_options = options;
  if (launched_by_mpi()) {
    g_engine = &detail::MpiEngine::start();
    g_world = new detail::MpiCommunicator(*g_engine, options);
    std::atexit(finalize_at_exit);
  } else {
    g_world = new detail::SingleProcessCommunicator(options);
  }
  return *g_world;
}

Communicator& world() {
  {
    std::lock_guard lock(g_mutex);
    if (g_world != nullptr) return *g_world;
  }
  return init();
}

bool initialized() {
  std::lock_guard lock(g_mutex);
  return g_world != nullptr;
}

void finalize() {
  detail::MpiEngine* engine = nullptr;
  {
    std::lock_guard lock(g_mutex);
    engine = g_engine;
  }
  if (engine != nullptr) engine->shutdown(g_options.timeout);
}

}  // namespace ath::dist
