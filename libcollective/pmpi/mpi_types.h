// The drop-in's rule for which datatypes and ops libcollective serves
// (docs/embedding.md, "What is served"). A nullopt comes with the reason
// the call goes to PMPI_ instead.
//
// Predefined datatypes are looked up in a table made once, at the first
// lookup (MPI is initialized by then), so a served call asks MPI nothing
// about its datatype; derived datatypes are asked about each time (MPI may
// reuse a freed type's handle for another).
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "collective/types.h"
#include "handle_bits.h"

namespace collective::pmpi {

struct ReductionType {
  DataType type;
  ReduceOp op;
  std::size_t element_bytes;  // element_size(type), from the table
};

// How the reductions treat a predefined datatype.
enum class Reducible : std::uint8_t { kNo, kYes, kSumOnly };

struct TypeFacts {
  MPI_Datatype datatype{};  // zero: an empty slot (no predefined handle is zero)
  Reducible reducible = Reducible::kNo;
  DataType reduced_as = DataType::kUInt8;
  // Bytes per element when contiguous (docs/embedding.md's rule), else -1.
  int contiguous_bytes = -1;
};

// Every predefined datatype a program is likely to pass, hashed by handle
// (open addressing); made once, read-only afterwards, so lookups from any
// thread need no lock.
class PredefinedTypes {
 public:
  PredefinedTypes();

  // The facts of `datatype`, or nullptr when it is not in the table.
  const TypeFacts* find(MPI_Datatype datatype) const {
    for (std::size_t probe = 0, i = slot_of(datatype); probe < kSlots;
         ++probe, i = (i + 1) % kSlots) {
      const TypeFacts& facts = slots_[i];
      if (facts.datatype == MPI_Datatype{}) return nullptr;
      if (facts.datatype == datatype) return &facts;
    }
    return nullptr;
  }

 private:
  static constexpr int kSlotBits = 7;  // 128 slots for at most 64 types: probes stay short
  static constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;

  static std::size_t slot_of(MPI_Datatype datatype) { return hashed_slot<kSlotBits>(datatype); }
  void add_reducible(std::initializer_list<MPI_Datatype> datatypes, Reducible reducible,
                     DataType reduced_as);
  void add_integer(MPI_Datatype datatype, Reducible reducible);
  void add(MPI_Datatype datatype, Reducible reducible, DataType reduced_as);

  std::array<TypeFacts, kSlots> slots_{};
};

// The table, made at the first call (MPI must be initialized); later calls
// read one pointer.
extern std::atomic<const PredefinedTypes*> predefined_types_made;
const PredefinedTypes& make_predefined_types();
inline const PredefinedTypes& predefined_types() {
  const PredefinedTypes* made = predefined_types_made.load(std::memory_order_acquire);
  return made != nullptr ? *made : make_predefined_types();
}

// Why a reduction's datatype and op are not served (the slow path of
// reduction_type).
const char* reduction_pass_reason(MPI_Datatype datatype, std::optional<ReduceOp> op,
                                  const TypeFacts* facts);

inline std::optional<ReduceOp> reduce_op_of(MPI_Op op) {
  if (op == MPI_SUM) return ReduceOp::kSum;
  if (op == MPI_MAX) return ReduceOp::kMax;
  if (op == MPI_MIN) return ReduceOp::kMin;
  if (op == MPI_PROD) return ReduceOp::kProd;
  if (op == MPI_BAND) return ReduceOp::kBitwiseAnd;
  if (op == MPI_BOR) return ReduceOp::kBitwiseOr;
  if (op == MPI_BXOR) return ReduceOp::kBitwiseXor;
  return std::nullopt;
}

// Whether `op` on a datatype with these facts is served.
inline bool reducible_with(const TypeFacts& facts, ReduceOp op) {
  switch (facts.reducible) {
    case Reducible::kYes: return op_applies_to(op, facts.reduced_as);
    // Sums and bits of unsigned integers are those of the signed type.
    case Reducible::kSumOnly: return op == ReduceOp::kSum || is_bitwise(op);
    case Reducible::kNo: return false;
  }
  return false;
}

// A predefined datatype of 1, 4 or 8-byte integers or 4 or 8-byte floats
// with MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX, the integers also with
// MPI_BAND, MPI_BOR or MPI_BXOR; unsigned 32/64-bit integers with MPI_SUM
// and the bitwise ops only (the same bits as the signed type's).
// Otherwise nullopt and `reason` says why.
inline std::optional<ReductionType> reduction_type(MPI_Datatype datatype, MPI_Op op,
                                                   const char*& reason) {
  const std::optional<ReduceOp> reduce_op = reduce_op_of(op);
  const TypeFacts* facts = predefined_types().find(datatype);
  if (reduce_op && facts != nullptr && reducible_with(*facts, *reduce_op)) {
    return ReductionType{facts->reduced_as, *reduce_op,
                         static_cast<std::size_t>(facts->contiguous_bytes)};
  }
  reason = reduction_pass_reason(datatype, reduce_op, facts);
  return std::nullopt;
}

// The bytes of one element when elements lie contiguously without gaps
// (any datatype, predefined or derived, whose size equals its extent and
// true extent, lower bounds 0), else nullopt and `reason`.
std::optional<std::size_t> contiguous_element_bytes_asked(MPI_Datatype datatype,
                                                          const char*& reason);
inline std::optional<std::size_t> contiguous_element_bytes(MPI_Datatype datatype,
                                                           const char*& reason) {
  const TypeFacts* facts = predefined_types().find(datatype);
  if (facts != nullptr && facts->contiguous_bytes >= 0) {
    return static_cast<std::size_t>(facts->contiguous_bytes);
  }
  return contiguous_element_bytes_asked(datatype, reason);
}

}  // namespace collective::pmpi
