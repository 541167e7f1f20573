// The COLLECTIVE_* parameters every rank of a communicator must share (they
// decide message sizes, algorithm choices or whether the cross-rank check
// runs), compared across ranks when a communicator is made. Which ones and
// why: docs/parameters.md. The others (timeout, stall warning, log level,
// kernels, topology dump) are local to each process.
#pragma once

#include <string>
#include <vector>

#include "core/env_params.h"

namespace collective::internal {

// This process's values of the parameters that must agree, as
// "NAME=value" lines in a fixed order; values are canonical (a size in
// bytes whatever its spelling), so only real differences count.
std::string agreed_parameters_text(const EnvParams& params);

// Compares every rank's text (index = rank). Throws InvalidArgumentError
// from `operation` on `rank`, naming each parameter that differs and which
// ranks hold which value. Every rank reaches the same verdict from the same
// texts.
void check_agreed_parameters(const std::vector<std::string>& per_rank, const char* operation,
                             int rank);

}  // namespace collective::internal
