// Metrics over every rank's samples in a data-parallel run (torchmetrics' sync on compute). Each
// rank's metric accumulates its own shard of the data; these sum every rank's state (counts and
// sums, Metric::state) through the Trainer's strategy and compute over all of it.
//
//   #include "athanor/train/classification_metrics.h"
//   #include "athanor/train/strategy.h"
//   train::SingleDeviceStrategy one_process;   // in a module: trainer()->strategy()
//   train::Accuracy acc({.num_classes = 3});
//   acc.update(from_vector<int64_t>({0, 1, 2}), from_vector<int64_t>({0, 1, 1}));
//   assert(train::compute_synced(acc, one_process) == acc.compute());   // 2/3 on one process
//
// Both are collectives: under a data-parallel strategy every rank calls them, in the same order
// (one that does not stalls the others until the collective's deadline names it). With one
// process they change nothing.
#pragma once

#include "athanor/train/metric.h"
#include "athanor/train/strategy.h"

namespace ath::train {

// Replaces `metric`'s state with the sum of every rank's. States may differ in length (classes
// that grow with the data): shorter ones count as zeros for the classes they lack.
void sync_state(Metric& metric, Strategy& strategy);

// The metric's value over every rank's samples. The local state is kept: later updates keep
// accumulating this rank's shard, and the next call sums again.
double compute_synced(ScalarMetric& metric, Strategy& strategy);

}  // namespace ath::train
