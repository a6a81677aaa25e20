// sync_state / compute_synced: a metric's state summed over the strategy's ranks.
#include "athanor/train/metric_sync.h"

#include <algorithm>

namespace ath::train {

void sync_state(Metric& metric, Strategy& strategy) {
  if (strategy.world_size() <= 1) return;
  std::vector<double> state = metric.state();
  // Agree on the longest layout first (a rank that saw fewer classes pads with zeros).
  const double longest = strategy.reduce({static_cast<double>(state.size())}, Reduce::Max,
                                         metric.name() + " state size")[0];
  state.resize(static_cast<std::size_t>(longest), 0.0);
  metric.load_state(strategy.reduce(state, Reduce::Sum, metric.name() + " state"));
}

double compute_synced(ScalarMetric& metric, Strategy& strategy) {
  if (strategy.world_size() <= 1) return metric.compute();
  const std::vector<double> local = metric.state();
  sync_state(metric, strategy);
  const double value = metric.compute();
  metric.load_state(local);
  return value;
}

}  // namespace ath::train
