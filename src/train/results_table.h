// Internal: the results box validate() and test() print, in Lightning's plain-text layout
// (_EvaluationLoop._print_results without rich):
//
//   ────────────────────────────────── … (terminal width, 120 when unknown)
//          Test metric             DataLoader 0
//   ──────────────────────────────────
//           test_acc                  0.8515
//           test_loss           0.4190939664840698
//   ──────────────────────────────────
#pragma once

#include <string>

#include "athanor/train/logger.h"

namespace ath::train::detail {

// `stage` is "test" or "validate"; `width` the terminal's columns. Metrics in name order.
std::string results_table(const Metrics& metrics, const std::string& stage, int width);

// The width Python's shutil.get_terminal_size() would report for stdout: $COLUMNS, the
// terminal's, or 120.
int terminal_columns();

}  // namespace ath::train::detail
