// LearningRateFinder: Lightning's LR range test as a callback. At the start of fit it trains for
// num_training_steps steps while raising the learning rate from min_lr to max_lr, records the
// smoothed loss, then puts the module, optimizer and RNG back exactly as they were and (with
// update_attr) sets the optimizer's learning rate to the suggestion: the rate where the loss
// falls fastest.
//
//   #include "athanor/data/data.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/train/tasks.h"
//   #include "athanor/train/trainer.h"
//   auto net = std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 3});
//   train::ClassificationTask model(net, {.name = "sgd", .lr = 0.1});
//   auto dataset = std::make_shared<data::TensorDataset>(
//       data::TensorList{randn({64, 4}), randint(0, 3, {64})});
//   auto train_loader = data::make_loader(dataset, {.batch_size = 8, .shuffle = true});
//   train::TrainerOptions opts;
//   opts.max_epochs = 1;
//   auto finder = std::make_shared<train::LearningRateFinder>(train::LearningRateFinderOptions{
//       .min_lr = 1e-6, .max_lr = 1.0, .num_training_steps = 100});
//   opts.callbacks.push_back(finder);
//   train::Trainer trainer(opts);
//   trainer.fit(model, train_loader);           // trains with lr = *finder->suggestion()
//   finder->results().lrs;  finder->plot_svg();  // the curve (also sent to the loggers)
//
// The search runs its own loop over the training source (start_epoch(0), then the next epochs
// if it needs more batches); the Trainer's epoch 0 restarts the source afterwards, so the real
// run sees the same batches as a run without the finder. Hooks other than training_step do not
// run during the search, and no schedulers step. As in Lightning, only the param groups' lr is
// set: a configured LR scheduler keeps the base lrs it was built with.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "athanor/train/callback.h"

namespace ath::train {

struct LearningRateFinderOptions {
  double min_lr = 1e-8;
  double max_lr = 1.0;
  int64_t num_training_steps = 100;
  std::string mode = "exponential";  // or "linear"
  // Stop when the smoothed loss exceeds threshold * the best one; nullopt: never.
  std::optional<double> early_stop_threshold = 4.0;
  bool update_attr = true;  // set every param group's lr to the suggestion
};

class LearningRateFinder : public Callback {
 public:
  struct Results {
    std::vector<double> lrs;
    std::vector<double> losses;  // smoothed (beta = 0.98, bias-corrected as Lightning)
  };

  explicit LearningRateFinder(LearningRateFinderOptions options = {});

  std::string state_key() const override { return "LearningRateFinder"; }
  void on_fit_start(Trainer& trainer, TrainingModule& module) override;

  // Runs the range test now (on_fit_start calls it); needs fit's optimizer and training source.
  void lr_find(Trainer& trainer, TrainingModule& module);

  const Results& results() const { return results_; }
  // Lightning's suggestion(): the lr at the most negative d(loss)/d(lr) (torch.gradient with the
  // lrs as coordinates), ignoring the first skip_begin and last skip_end points and non-finite
  // losses; nullopt with fewer than two points left.
  std::optional<double> suggestion(int64_t skip_begin = 10, int64_t skip_end = 1) const;
  // The suggestion applied to the optimizer by the last lr_find (nullopt if none).
  std::optional<double> optimal_lr() const { return optimal_lr_; }
  // Whether the last search stopped early on a diverging loss.
  bool stopped_early() const { return stopped_early_; }

  // A self-contained SVG line plot of the curve (log-scaled lr axis) with the suggestion marked.
  std::string plot_svg() const;

 private:
  void search(Trainer& trainer, TrainingModule& module);

  LearningRateFinderOptions options_;
  Results results_;
  std::optional<double> optimal_lr_;
  bool stopped_early_ = false;
};

namespace detail {
// torch.gradient(y, spacing=[x]) (edge_order 1): second-order central differences on the
// non-uniform grid inside, one-sided at the two ends. Needs x strictly monotone and >= 2 points.
std::vector<double> gradient(const std::vector<double>& y, const std::vector<double>& x);
}  // namespace detail

}  // namespace ath::train
