// Where each task of a parameter-server cluster sits among the ranks of its
// communicator: the chief is rank 0, ps i rank 1 + i, worker w rank
// 1 + num_ps + w; and how messages name them.
#pragma once

#include <string>

namespace collective::distribute::detail {

inline int ps_rank_of(int ps) { return 1 + ps; }
inline int worker_rank_of(int num_ps, int worker) { return 1 + num_ps + worker; }

inline std::string ps_label_of(int ps) {
  return "ps " + std::to_string(ps) + " (rank " + std::to_string(ps_rank_of(ps)) + ")";
}
inline std::string worker_label_of(int num_ps, int worker) {
  return "worker " + std::to_string(worker) + " (rank " +
         std::to_string(worker_rank_of(num_ps, worker)) + ")";
}

}  // namespace collective::distribute::detail
