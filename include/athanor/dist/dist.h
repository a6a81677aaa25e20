// The dist layer in one include: the Communicator (collectives with deadlines) and the world.
// See docs/distributed.md.
#pragma once

#include "athanor/dist/communicator.h"
#include "athanor/dist/world.h"
