// The optim layer in one include: optimizers, learning-rate schedulers, gradient clipping.
//
//   #include "athanor/optim/optim.h"
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::AdamW opt(model.parameters(), {.lr = 3e-4});
//   optim::OneCycleLR sched(opt, {.max_lr = 3e-3, .total_steps = 1000});
//   model(randn({8, 4})).pow(2).mean().backward();
//   optim::clip_grad_norm_(model.parameters(), 1.0); opt.step(); sched.step();
#pragma once

#include "athanor/optim/adagrad.h"
#include "athanor/optim/adam.h"
#include "athanor/optim/adamax.h"
#include "athanor/optim/clip_grad.h"
#include "athanor/optim/cosine_lr.h"
#include "athanor/optim/grad_scaler.h"
#include "athanor/optim/lr_scheduler.h"
#include "athanor/optim/nadam.h"
#include "athanor/optim/one_cycle_lr.h"
#include "athanor/optim/optimizer.h"
#include "athanor/optim/reduce_lr_on_plateau.h"
#include "athanor/optim/rmsprop.h"
#include "athanor/optim/sequential_lr.h"
#include "athanor/optim/sgd.h"
