// COLLECTIVE_IN_TREE_API marks what libcollective exports for the layers
// built with it in this tree (the strategies layer, the benchmark, the MPI
// drop-in, tools, tests), not for users: the headers under in_tree/ are
// never installed, so nothing they declare is API or needs to stay stable.
// The installed library's exports are checked against both marks
// (tests/install/exported_symbols.py).
#pragma once

#include "collective/export.h"

#define COLLECTIVE_IN_TREE_API COLLECTIVE_API
