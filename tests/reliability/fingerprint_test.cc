// The verdicts of the cross-rank check, without MPI: which calls agree,
// and what the messages say when they do not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cross_rank_check/call_fingerprint.h"

namespace collective::internal {
namespace {

Request call(CollectiveKind kind, std::size_t count, DataType type = DataType::kFloat32,
             ReduceOp op = ReduceOp::kSum, int root = 0) {
  Request request;
  request.kind = kind;
  request.count = count;
  request.type = type;
  request.op = op;
  request.root = root;
  request.sequence = 17;
  return request;
}

std::vector<CallFingerprint> prints(const std::vector<Request>& requests,
                                    Algorithm algorithm = Algorithm::kRing) {
  std::vector<CallFingerprint> all;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    all.push_back(fingerprint_of(requests[r], algorithm, static_cast<int>(r)));
  }
  return all;
}

TEST(FingerprintTest, IdenticalCallsAgree) {
  const auto all = prints({call(CollectiveKind::kAllReduce, 4), call(CollectiveKind::kAllReduce, 4),
                           call(CollectiveKind::kAllReduce, 4)});
  EXPECT_EQ(judge(all).kind, Verdict::kAgree);
}

TEST(FingerprintTest, FieldsThatDoNotApplyAreIgnored) {
  // all_gather has no op, all_reduce no root, barrier no count or type.
  auto a = call(CollectiveKind::kAllGather, 4, DataType::kInt8, ReduceOp::kSum, 0);
  auto b = call(CollectiveKind::kAllGather, 4, DataType::kInt8, ReduceOp::kMax, 3);
  EXPECT_EQ(judge(prints({a, b})).kind, Verdict::kAgree);
  auto c = call(CollectiveKind::kBarrier, 0);
  auto d = call(CollectiveKind::kBarrier, 99, DataType::kInt64);
  EXPECT_EQ(judge(prints({c, d})).kind, Verdict::kAgree);
}

TEST(FingerprintTest, MismatchNamesOnlyTheFieldsThatDiffer) {
  const auto verdict =
      judge(prints({call(CollectiveKind::kAllReduce, 4, DataType::kFloat32, ReduceOp::kSum),
                    call(CollectiveKind::kAllReduce, 8, DataType::kFloat32, ReduceOp::kMax)}));
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("rank 0 count=4 op=sum, rank 1 count=8 op=max"), std::string::npos)
      << verdict.cause;
  EXPECT_EQ(verdict.cause.find("type="), std::string::npos) << verdict.cause;
}

// A deterministic call runs another protocol than a plain one.
TEST(FingerprintTest, DeterministicMustAgreeOnReductionsOnly) {
  auto plain = call(CollectiveKind::kAllReduce, 4);
  auto ordered = plain;
  ordered.deterministic = true;
  const auto verdict = judge(prints({plain, ordered}));
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("rank 0 deterministic=false, rank 1 deterministic=true"),
            std::string::npos)
      << verdict.cause;
  auto gather = call(CollectiveKind::kAllGather, 4);
  auto gather_flagged = gather;
  gather_flagged.deterministic = true;  // dispatch never sets it; ignored if it did
  EXPECT_EQ(judge(prints({gather, gather_flagged})).kind, Verdict::kAgree);
}

// The caller's tag: compared on every kind, printed in hex, "none" for 0.
TEST(FingerprintTest, CallTagsMustAgree) {
  auto step_two = call(CollectiveKind::kAllReduce, 4);
  step_two.call_tag = 0x22;
  auto step_three = step_two;
  step_three.call_tag = 0x33;
  auto verdict = judge(prints({step_two, step_three}));
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("rank 0 tag=0x0000000000000022, rank 1 tag=0x0000000000000033"),
            std::string::npos)
      << verdict.cause;
  auto untagged = call(CollectiveKind::kBarrier, 0);
  auto tagged = untagged;
  tagged.call_tag = 1;
  verdict = judge(prints({untagged, tagged}));
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("rank 0 tag=none, rank 1 tag=0x0000000000000001"), std::string::npos)
      << verdict.cause;
  EXPECT_EQ(judge(prints({step_two, step_two})).kind, Verdict::kAgree);
  const auto print = fingerprint_of(step_three, Algorithm::kRing, 0);
  EXPECT_TRUE(agrees_with(fingerprint_of(step_three, Algorithm::kRing, 1), 1, print));
  EXPECT_FALSE(agrees_with(fingerprint_of(step_two, Algorithm::kRing, 1), 1, print));
}

TEST(FingerprintTest, RanksWithTheSameCallAreGroupedInRuns) {
  std::vector<Request> requests(7, call(CollectiveKind::kAllReduce, 4));
  requests[3].count = 5;
  requests[6].count = 5;
  const auto verdict = judge(prints(requests));
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("ranks 0-2 and 4-5 count=4, ranks 3 and 6 count=5"),
            std::string::npos)
      << verdict.cause;
}

TEST(FingerprintTest, DifferentCollectivesAreSpelledOutInFull) {
  const auto verdict =
      judge(prints({call(CollectiveKind::kAllReduce, 4),
                    call(CollectiveKind::kBroadcast, 4, DataType::kFloat32, ReduceOp::kSum, 1)}));
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("rank 0 all_reduce count=4 type=float32 op=sum, rank 1 broadcast "
                               "count=4 type=float32 root=1"),
            std::string::npos)
      << verdict.cause;
}

TEST(FingerprintTest, AlgorithmShowsWhatWasRequested) {
  auto all = prints({call(CollectiveKind::kAllReduce, 4), call(CollectiveKind::kAllReduce, 4)});
  all[1].algorithm = static_cast<std::int8_t>(Algorithm::kMpi);
  all[1].requested = static_cast<std::int8_t>(Algorithm::kAuto);
  const auto verdict = judge(all);
  ASSERT_EQ(verdict.kind, Verdict::kMismatch);
  EXPECT_NE(verdict.cause.find("rank 1 algorithm=mpi (requested auto)"), std::string::npos)
      << verdict.cause;
}

TEST(FingerprintTest, RejectionsComeFirstAndCarryTheCause) {
  auto all = prints({call(CollectiveKind::kAllReduce, 4), call(CollectiveKind::kAllReduce, 8),
                     call(CollectiveKind::kAllReduce, 4)});
  all[2] = rejected_fingerprint(call(CollectiveKind::kAllReduce, 4), 2, false,
                                "send buffer is null with count 4");
  const auto verdict = judge(all);
  ASSERT_EQ(verdict.kind, Verdict::kRejected);
  EXPECT_FALSE(verdict.unsupported);
  EXPECT_NE(verdict.cause.find("rank 2 rejected its arguments"), std::string::npos)
      << verdict.cause;
  EXPECT_NE(verdict.cause.find("rank 2: send buffer is null with count 4"), std::string::npos)
      << verdict.cause;
}

TEST(FingerprintTest, LongCausesAreTruncatedVisibly) {
  const std::string cause(300, 'x');
  const auto print = rejected_fingerprint(call(CollectiveKind::kAllReduce, 4), 0, true, cause);
  const std::string kept(print.rejection);
  EXPECT_EQ(kept.size(), sizeof(print.rejection) - 1);
  EXPECT_EQ(kept.substr(kept.size() - 3), "...");
  const std::vector<CallFingerprint> all = {print};
  EXPECT_TRUE(judge(all).unsupported);
}

TEST(FingerprintTest, TooManyDistinctCallsAreSummarized) {
  std::vector<Request> requests;
  for (int r = 0; r < 20; ++r)
    requests.push_back(call(CollectiveKind::kAllReduce, static_cast<std::size_t>(r)));
  const auto verdict = judge(prints(requests));
  EXPECT_NE(verdict.cause.find("and 12 more different calls"), std::string::npos) << verdict.cause;
}

// The per-pair counts of all_to_all_v: each rank's term differs, their sum
// is zero exactly when every pair agrees (vector_counts_check.h); 3 ranks.
TEST(FingerprintTest, PairCountsAgreeOnlyWhenEveryPairDoes) {
  // counts[i][j]: what rank i sends rank j.
  std::vector<std::vector<std::size_t>> counts = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  auto judge_counts = [&](std::size_t changed_sender, std::size_t changed_receiver,
                          std::size_t delta) {
    std::vector<std::vector<std::size_t>> send(3), recv(3);
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        send[i].push_back(counts[i][j]);
        recv[i].push_back(counts[j][i]);
      }
    }
    send[changed_sender][changed_receiver] += delta;
    std::vector<Request> requests;
    for (std::size_t r = 0; r < 3; ++r) {
      Request request = call(CollectiveKind::kAllToAllV, 0);
      request.send_counts = send[r];
      request.recv_counts = recv[r];
      requests.push_back(request);
    }
    return judge(prints(requests)).kind;
  };
  EXPECT_EQ(judge_counts(0, 1, 0), Verdict::kAgree);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      if (i == j) continue;
      for (const std::size_t delta : {1ul, 2ul, 1ul << 40}) {
        EXPECT_EQ(judge_counts(i, j, delta), Verdict::kCountsDisagree)
            << "rank " << i << " sends " << delta << " more to rank " << j;
      }
    }
  }
}

// recv_counts that differ, and nothing else: named by an exchange, not a
// hash; with another field differing too, the usual message.
TEST(FingerprintTest, RecvCountsAloneDifferByEntry) {
  const std::vector<std::size_t> mine = {2, 2}, theirs = {2, 3};
  Request a = call(CollectiveKind::kAllGatherV, 2);
  a.recv_counts = mine;
  Request b = a;
  b.recv_counts = theirs;
  EXPECT_EQ(judge(prints({a, a})).kind, Verdict::kAgree);
  EXPECT_EQ(judge(prints({a, b})).kind, Verdict::kCountsDisagree);
  b.type = DataType::kFloat64;
  EXPECT_EQ(judge(prints({a, b})).kind, Verdict::kMismatch);
}

}  // namespace
}  // namespace collective::internal
