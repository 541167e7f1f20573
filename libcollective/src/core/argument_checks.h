// Argument checks that run before any buffer is touched or any message is
// sent. Each failure raises InvalidArgumentError naming the call and rank.
#pragma once

#include "core/request.h"

namespace collective::internal {

// `size` is the communicator's size, `rank` this process's rank.
void validate_request(const Request& request, int rank, int size);

}  // namespace collective::internal
