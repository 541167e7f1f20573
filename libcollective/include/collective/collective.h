// libcollective: collective communication over MPI, shared memory and NCCL.
#pragma once

#include "collective/algorithm.h"
#include "collective/communicator.h"
#include "collective/diagnostics.h"
#include "collective/environment.h"
#include "collective/errors.h"
#include "collective/options.h"
#include "collective/topology.h"
#include "collective/types.h"
#include "collective/version.h"
#include "collective/plan.h"
#include "collective/work.h"
