// athanor: one include for the whole public API.
//
//   #include "athanor/athanor.h"
//   using namespace ath;
//   Tensor x = randn({8, 3}), y = randn({8, 1});
//   Tensor w = randn({3, 1}).requires_grad_();
//   Tensor loss = (matmul(x, w) - y).pow(2).mean();
//   loss.backward();                  // w.grad(): d loss / d w, shape [3, 1]
#pragma once

#include "athanor/autograd/engine.h"
#include "athanor/autograd/gradcheck.h"
#include "athanor/core/allocator.h"
#include "athanor/core/parallel.h"
#include "athanor/core/rng.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/tensor/tensor.h"
