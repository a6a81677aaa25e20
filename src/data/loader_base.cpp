// DataLoader machinery. With workers: persistent std::threads take the next batch index to
// produce (at most num_workers * prefetch_factor batches ahead of the one next() waits for) and
// file results by index; next() hands them out strictly in order. Each epoch bumps a generation
// number: a worker still busy with a batch of an abandoned epoch throws its result away.
#include "athanor/data/loader_base.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::data::detail {

struct LoaderBase::Engine {
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  LoaderConfig config;
  BatchProducer producer;

  mutable std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  std::vector<std::thread> workers;
  bool stop = false;
  bool started = false;
  uint64_t generation = 0;
  int64_t epoch = 0;
  std::shared_ptr<const std::vector<int64_t>> order;
  int64_t end = 0;     // batches this epoch
  int64_t next = 0;    // the batch next() returns next
  int64_t submit = 0;  // the next batch a worker picks up
  std::map<int64_t, Result> results;
  std::optional<std::pair<int64_t, int64_t>> resume;  // loaded (epoch, next_batch)
  // What ended a worker thread outside a batch (the producer's own errors travel with their
  // batch): next() rethrows it instead of waiting forever; nothing leaves a thread as terminate.
  std::exception_ptr worker_failure;

  int64_t batches_for(int64_t n) const {
    const int64_t bs = config.batch_size;
    return config.drop_last ? n / bs : (n + bs - 1) / bs;
  }

  Result run(int64_t ep, const std::vector<int64_t>& ord, int64_t k) const {
    const int64_t bs = config.batch_size, n = static_cast<int64_t>(ord.size());
    const int64_t first = k * bs, count = std::min(bs, n - first);
    const std::string context = fmt::format("DataLoader: batch {} of epoch {}: ", k, ep);
    Result r;
    try {
      r.batch = producer(ep, first,
                         std::span<const int64_t>(ord.data() + first, static_cast<size_t>(count)));
    } catch (Error& e) {
      e.prepend(context);  // keeps the error's kind
      r.error = std::current_exception();
    } catch (const std::exception& e) {
      r.error = std::make_exception_ptr(ValueError(context + e.what()));
    } catch (...) {
      r.error = std::make_exception_ptr(ValueError(context + "unknown exception"));
    }
    return r;
  }

  void worker_loop() {
    try {
      serve();
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!worker_failure) worker_failure = std::current_exception();
      done_cv.notify_all();
    }
  }

  void serve() {
    NoGradGuard no_grad;  // loading never records autograd history
    std::unique_lock lock(mutex);
    const int64_t window = config.num_workers * config.prefetch_factor;
    while (true) {
      work_cv.wait(lock, [&] { return stop || (submit < end && submit - next < window); });
      if (stop) return;
      const int64_t k = submit++, ep = epoch;
      const uint64_t gen = generation;
      auto ord = order;
      lock.unlock();
      Result r = run(ep, *ord, k);
      lock.lock();
      if (gen == generation) {
        results.emplace(k, std::move(r));
        done_cv.notify_all();
      } else {
        lock.unlock();  // an abandoned epoch's batch: free it outside the lock
        r = Result{};
        lock.lock();
      }
    }
  }
};

LoaderBase::LoaderBase(LoaderConfig config, BatchProducer producer)
    : engine_(std::make_unique<Engine>()) {
  ATH_CHECK(config.batch_size >= 1, ValueError, "DataLoader: batch_size must be >= 1, got {}",
            config.batch_size);
  ATH_CHECK(config.num_workers >= 0 && config.num_workers <= kMaxNumWorkers, ValueError,
            "DataLoader: num_workers must be in [0, {}], got {} (one thread each; this machine "
            "has {} cores)",
            kMaxNumWorkers, config.num_workers, std::thread::hardware_concurrency());
  ATH_CHECK(config.prefetch_factor >= 1 && config.prefetch_factor <= kMaxPrefetchFactor, ValueError,
            "DataLoader: prefetch_factor must be in [1, {}], got {}", kMaxPrefetchFactor,
            config.prefetch_factor);
  ATH_CHECK(config.sampler != nullptr, ValueError, "DataLoader: no sampler");
  engine_->config = std::move(config);
  engine_->producer = std::move(producer);
}

LoaderBase::~LoaderBase() { shutdown(); }

void LoaderBase::shutdown() {
  Engine& e = *engine_;
  {
    std::lock_guard lock(e.mutex);
    e.stop = true;
  }
  e.work_cv.notify_all();
  for (auto& t : e.workers) {
    if (t.joinable()) t.join();
  }
  e.workers.clear();
}

int64_t LoaderBase::num_batches() const {
  return engine_->batches_for(engine_->config.sampler->size());
}

int64_t LoaderBase::epoch() const {
  std::lock_guard lock(engine_->mutex);
  return engine_->epoch;
}

Sampler& LoaderBase::sampler() const { return *engine_->config.sampler; }
std::shared_ptr<Sampler> LoaderBase::sampler_ptr() const { return engine_->config.sampler; }
uint64_t LoaderBase::seed() const { return engine_->config.seed; }

void LoaderBase::set_sampler(std::shared_ptr<Sampler> sampler) {
  ATH_CHECK(sampler != nullptr, ValueError, "DataLoader::set_sampler: no sampler");
  std::lock_guard lock(engine_->mutex);
  engine_->config.sampler = std::move(sampler);
}

void LoaderBase::start_epoch(int64_t epoch) {
  Engine& e = *engine_;
  ATH_CHECK(epoch >= 0, ValueError, "DataLoader::start_epoch: epoch must be >= 0, got {}", epoch);
  // The order is computed outside the lock; workers keep running on the old epoch meanwhile.
  e.config.sampler->set_epoch(epoch);
  auto order = std::make_shared<const std::vector<int64_t>>(e.config.sampler->indices());
  std::map<int64_t, Engine::Result> dropped;
  {
    std::lock_guard lock(e.mutex);
    ATH_CHECK(!e.stop, ValueError, "DataLoader::start_epoch: the loader was shut down");
    int64_t first = 0;
    if (e.resume && e.resume->first == epoch) first = e.resume->second;
    e.resume.reset();
    ++e.generation;
    dropped.swap(e.results);
    e.epoch = epoch;
    e.order = std::move(order);
    e.end = e.batches_for(static_cast<int64_t>(e.order->size()));
    e.next = e.submit = std::min(first, e.end);
    e.started = true;
  }
  // Workers start once, outside the lock (a failed start joins the ones already running).
  if (e.workers.empty() && e.config.num_workers > 0) {
    try {
      for (int64_t i = 0; i < e.config.num_workers; ++i) {
        e.workers.emplace_back([&e] { e.worker_loop(); });
      }
    } catch (const std::system_error& err) {
      const std::size_t started = e.workers.size();
      shutdown();
      ATH_THROW(ValueError,
                "DataLoader: could not start worker thread {} of num_workers={}: {} (lower "
                "num_workers)",
                started + 1, e.config.num_workers, err.what());
    }
  }
  e.work_cv.notify_all();
}

std::optional<Batch> LoaderBase::next() {
  Engine& e = *engine_;
  std::unique_lock lock(e.mutex);
  ATH_CHECK(e.started, ValueError, "DataLoader::next: call start_epoch(epoch) first");
  if (e.next >= e.end) return std::nullopt;
  Engine::Result r;
  if (e.workers.empty()) {
    const int64_t k = e.next++;
    auto order = e.order;
    const int64_t ep = e.epoch;
    lock.unlock();
    r = e.run(ep, *order, k);
  } else {
    e.done_cv.wait(lock, [&] { return e.results.count(e.next) != 0 || e.worker_failure; });
    if (e.results.count(e.next) == 0) {
      try {
        std::rethrow_exception(e.worker_failure);
      } catch (const std::exception& err) {
        ATH_THROW(ValueError,
                  "DataLoader: a worker thread stopped while loading batch {} of "
                  "epoch {}: {}",
                  e.next, e.epoch, err.what());
      }
    }
    auto node = e.results.extract(e.next);
    ++e.next;
    lock.unlock();
    e.work_cv.notify_all();  // a slot in the prefetch window is free
    r = std::move(node.mapped());
  }
  if (r.error) std::rethrow_exception(r.error);
  return std::move(r.batch);
}

nlohmann::json LoaderBase::state_dict() const {
  const Engine& e = *engine_;
  std::lock_guard lock(e.mutex);
  int64_t epoch = e.epoch, next = e.next;
  if (e.resume) std::tie(epoch, next) = *e.resume;  // loaded, not yet started: hand it back
  return {{"epoch", epoch},
          {"next_batch", next},
          {"num_batches", e.batches_for(e.config.sampler->size())},
          {"batch_size", e.config.batch_size},
          {"seed", e.config.seed}};
}

void LoaderBase::load_state_dict(const nlohmann::json& state) {
  Engine& e = *engine_;
  for (const char* key : {"epoch", "next_batch"}) {
    ATH_CHECK(state.contains(key), KeyError, "DataLoader::load_state_dict: no \"{}\" in {}", key,
              state.dump());
  }
  const auto epoch = state.at("epoch").get<int64_t>();
  const auto next = state.at("next_batch").get<int64_t>();
  const int64_t nb = num_batches();
  if (state.contains("batch_size")) {
    const auto bs = state.at("batch_size").get<int64_t>();
    ATH_CHECK(bs == e.config.batch_size, ValueError,
              "DataLoader::load_state_dict: the state has batch_size {}, this loader {}", bs,
              e.config.batch_size);
  }
  if (state.contains("seed")) {
    const auto seed = state.at("seed").get<uint64_t>();
    ATH_CHECK(seed == e.config.seed, ValueError,
              "DataLoader::load_state_dict: the state has seed {}, this loader {}", seed,
              e.config.seed);
  }
  if (state.contains("num_batches")) {
    const auto n = state.at("num_batches").get<int64_t>();
    ATH_CHECK(n == nb, ValueError,
              "DataLoader::load_state_dict: the state has {} batches per epoch, this loader {} "
              "(a different dataset or sampler?)",
              n, nb);
  }
  ATH_CHECK(epoch >= 0 && next >= 0 && next <= nb, ValueError,
            "DataLoader::load_state_dict: position (epoch {}, batch {}) out of range for {} "
            "batches per epoch",
            epoch, next, nb);
  std::lock_guard lock(e.mutex);
  e.resume = {epoch, next};
}

}  // namespace ath::data::detail
