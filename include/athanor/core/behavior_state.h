// A fingerprint of the flags that change what the same code computes without changing any
// tensor: which modules are in training mode (dropout draws a mask, batch norm updates its
// statistics). Each flip of a flag XORs a hash of its owner into one 64-bit value, so flipping it
// back restores the fingerprint. A compiled step (athanor/graph/compile.h) keys its cache on it,
// because a graph replay does not run the code that reads those flags: it keeps one graph for
// training and one for evaluation, and switching between them costs nothing.
//
//   uint64_t before = behavior_fingerprint();
//   int owner = 0;
//   flip_behavior_flag(&owner);
//   assert(behavior_fingerprint() != before);
//   flip_behavior_flag(&owner);
//   assert(behavior_fingerprint() == before);
//   note_state_replaced();                       // never undone
//   assert(behavior_fingerprint() != before);
#pragma once

#include <cstdint>

namespace ath {

uint64_t behavior_fingerprint();
// Records that a flag of `owner` changed value (call it on every change, both ways).
void flip_behavior_flag(const void* owner);
// Records that state tensors were replaced by new ones (an optimizer's load_state_dict): the
// fingerprint moves to a value it never had, so graphs bound to the old tensors are not reused.
void note_state_replaced();

}  // namespace ath
