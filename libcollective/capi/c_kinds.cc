// The C API's collective kinds are the C++ CollectiveKind values and the
// rows of the one table of collectives (collective/in_tree/collectives.h):
// checked here at compile time, so that a collective added to the table
// fails the build until collective_c.h (and the Fortran module, which
// repeats the numbers) names it. The same for the reductions (ReduceOp).
#include "collective/algorithm.h"
#include "collective/collective_c.h"
#include "collective/in_tree/collectives.h"
#include "collective/types.h"

namespace collective::capi {
namespace {

constexpr bool same(int c_kind, CollectiveKind kind) { return c_kind == static_cast<int>(kind); }

static_assert(same(COLLECTIVE_KIND_ALL_REDUCE, CollectiveKind::kAllReduce));
static_assert(same(COLLECTIVE_KIND_REDUCE_SCATTER, CollectiveKind::kReduceScatter));
static_assert(same(COLLECTIVE_KIND_ALL_GATHER, CollectiveKind::kAllGather));
static_assert(same(COLLECTIVE_KIND_BROADCAST, CollectiveKind::kBroadcast));
static_assert(same(COLLECTIVE_KIND_REDUCE, CollectiveKind::kReduce));
static_assert(same(COLLECTIVE_KIND_BARRIER, CollectiveKind::kBarrier));
static_assert(same(COLLECTIVE_KIND_ALL_TO_ALL, CollectiveKind::kAllToAll));
static_assert(same(COLLECTIVE_KIND_ALL_TO_ALL_V, CollectiveKind::kAllToAllV));
static_assert(same(COLLECTIVE_KIND_ALL_GATHER_V, CollectiveKind::kAllGatherV));
static_assert(same(COLLECTIVE_KIND_REDUCE_SCATTER_V, CollectiveKind::kReduceScatterV));
static_assert(same(COLLECTIVE_KIND_GATHER, CollectiveKind::kGather));
static_assert(same(COLLECTIVE_KIND_GATHER_V, CollectiveKind::kGatherV));
static_assert(same(COLLECTIVE_KIND_SCATTER, CollectiveKind::kScatter));
static_assert(same(COLLECTIVE_KIND_SCATTER_V, CollectiveKind::kScatterV));
// COLLECTIVE_KIND_SCATTER_V is the last: collective_comm_choose_algorithm's
// range check and the list above cover every row of the table.
static_assert(COLLECTIVE_KIND_SCATTER_V + 1 == kCollectiveTable.size(),
              "a collective of kCollectiveTable has no COLLECTIVE_KIND_* in collective_c.h "
              "(and collective.f90), or the list above misses one");

// The reductions likewise: COLLECTIVE_BXOR is the last of ReduceOp.
constexpr bool same_op(int c_op, ReduceOp op) { return c_op == static_cast<int>(op); }
static_assert(same_op(COLLECTIVE_SUM, ReduceOp::kSum));
static_assert(same_op(COLLECTIVE_MEAN, ReduceOp::kMean));
static_assert(same_op(COLLECTIVE_MIN, ReduceOp::kMin));
static_assert(same_op(COLLECTIVE_MAX, ReduceOp::kMax));
static_assert(same_op(COLLECTIVE_PROD, ReduceOp::kProd));
static_assert(same_op(COLLECTIVE_BAND, ReduceOp::kBitwiseAnd));
static_assert(same_op(COLLECTIVE_BOR, ReduceOp::kBitwiseOr));
static_assert(same_op(COLLECTIVE_BXOR, ReduceOp::kBitwiseXor));
static_assert(COLLECTIVE_BXOR + 1 == kNumReduceOps,
              "a ReduceOp has no COLLECTIVE_* op in collective_c.h (and collective.f90)");

}  // namespace
}  // namespace collective::capi
