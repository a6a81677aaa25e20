// All of athanor's metrics (torchmetrics' counterparts), stateful and weighted by sample count:
// - aggregation_metrics.h: MeanMetric, SumMetric, MeanSquaredError
// - classification_metrics.h: Accuracy, Precision, Recall, F1Score, ConfusionMatrix
//
//   train::Accuracy acc({.num_classes = 10, .top_k = 1});
//   acc.update(randn({8, 10}), randint(0, 10, {8}));   // logits, labels: one batch
//   acc.update(randn({4, 10}), randint(0, 10, {4}));   // ... every batch of the epoch
//   double a = acc.compute();                          // over the 12 samples
//   acc.reset();
#pragma once

#include "athanor/train/aggregation_metrics.h"
#include "athanor/train/classification_metrics.h"
#include "athanor/train/metric.h"
