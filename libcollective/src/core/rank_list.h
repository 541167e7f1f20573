// Ranks as messages name them: "rank 3", "ranks 0-2 and 5",
// "ranks 0, 2 and 4-7" (runs of consecutive ranks folded).
#pragma once

#include <string>
#include <vector>

namespace collective::internal {

// `ranks` ascending, not empty.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace collective::internal
