// Every op family's public functions.
#pragma once

#include "athanor/ops/activations.h"
#include "athanor/ops/attention.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/conv.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/losses.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/optimizer_updates.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"
