#include "mpi_types.h"

namespace collective::pmpi {
namespace {

constexpr const char* kInvalidDatatype = "invalid datatype";
constexpr const char* kNotContiguous =
    "datatype is not contiguous (gaps, or a lower bound other than 0)";
constexpr const char* kNotReducible =
    "datatype is not a predefined 1/4/8-byte integer or 4/8-byte float";

// The rule itself, asked of MPI: size == extent == true extent, lower bounds 0.
std::optional<int> contiguous_size(MPI_Datatype datatype, const char*& reason) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(datatype, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(datatype, &true_lb, &true_extent) != MPI_SUCCESS) {
    reason = kInvalidDatatype;
    return std::nullopt;
  }
  if (size != 0 && (lb != 0 || true_lb != 0 || extent != size || true_extent != size)) {
    reason = kNotContiguous;
    return std::nullopt;
  }
  return size;
}

std::optional<DataType> signed_integer_of_size(int bytes) {
  switch (bytes) {
    case 1: return DataType::kInt8;
    case 4: return DataType::kInt32;
    case 8: return DataType::kInt64;
    default: return std::nullopt;
  }
}

}  // namespace

PredefinedTypes::PredefinedTypes() {
  // The reductions' types (docs/embedding.md, "What is served", rule 5).
  add_reducible({MPI_FLOAT, MPI_REAL, MPI_REAL4}, Reducible::kYes, DataType::kFloat32);
  add_reducible({MPI_DOUBLE, MPI_DOUBLE_PRECISION, MPI_REAL8}, Reducible::kYes, DataType::kFloat64);
  add_reducible({MPI_UNSIGNED_CHAR, MPI_UINT8_T}, Reducible::kYes, DataType::kUInt8);
  for (MPI_Datatype datatype : {MPI_SIGNED_CHAR, MPI_INT8_T, MPI_INT, MPI_INT32_T, MPI_LONG,
                                MPI_LONG_LONG, MPI_LONG_LONG_INT, MPI_INT64_T, MPI_AINT, MPI_OFFSET,
                                MPI_COUNT, MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER4, MPI_INTEGER8}) {
    add_integer(datatype, Reducible::kYes);
  }
  for (MPI_Datatype datatype :
       {MPI_UNSIGNED, MPI_UINT32_T, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_UINT64_T}) {
    add_integer(datatype, Reducible::kSumOnly);
  }
  // Types only moved, never reduced: their contiguity is known in advance.
  for (MPI_Datatype datatype :
       {MPI_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT16_T, MPI_UINT16_T, MPI_WCHAR,
        MPI_C_BOOL, MPI_LONG_DOUBLE, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_CHARACTER,
        MPI_LOGICAL, MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_INTEGER2, MPI_PACKED}) {
    add(datatype, Reducible::kNo, DataType::kUInt8);
  }
}

void PredefinedTypes::add_reducible(std::initializer_list<MPI_Datatype> datatypes,
                                    Reducible reducible, DataType reduced_as) {
  for (MPI_Datatype datatype : datatypes) add(datatype, reducible, reduced_as);
}

// Integers are reduced as the signed type of their size (1, 4, 8 bytes).
void PredefinedTypes::add_integer(MPI_Datatype datatype, Reducible reducible) {
  int bytes = 0;
  if (datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &bytes) != MPI_SUCCESS) return;
  const std::optional<DataType> as = signed_integer_of_size(bytes);
  if (!as || (reducible == Reducible::kSumOnly && bytes == 1)) {
    add(datatype, Reducible::kNo, DataType::kUInt8);
  } else {
    add(datatype, reducible, *as);
  }
}

void PredefinedTypes::add(MPI_Datatype datatype, Reducible reducible, DataType reduced_as) {
  // Some builds define an unsupported type as MPI_DATATYPE_NULL; some
  // names are one handle (MPI_LONG_LONG, MPI_LONG_LONG_INT): first wins.
  if (datatype == MPI_DATATYPE_NULL || find(datatype) != nullptr) return;
  const char* ignored = nullptr;
  const std::optional<int> size = contiguous_size(datatype, ignored);
  if (ignored == kInvalidDatatype) return;
  for (std::size_t i = slot_of(datatype);; i = (i + 1) % kSlots) {
    if (slots_[i].datatype != MPI_Datatype{}) continue;
    // A reduction reads whole elements: a type that is not one contiguous
    // element (none of the predefined reducible ones) is not reduced.
    if (!size || *size <= 0) reducible = Reducible::kNo;
    slots_[i] = TypeFacts{datatype, reducible, reduced_as, size ? *size : -1};
    return;
  }
}

std::atomic<const PredefinedTypes*> predefined_types_made{nullptr};

const PredefinedTypes& make_predefined_types() {
  static const PredefinedTypes types;
  predefined_types_made.store(&types, std::memory_order_release);
  return types;
}

const char* reduction_pass_reason(MPI_Datatype datatype, std::optional<ReduceOp> op,
                                  const TypeFacts* facts) {
  if (!op) return "op is not MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR or MPI_BXOR";
  if (facts == nullptr) {
    // Not in the table: say whether it is a valid datatype at all.
    int bytes = 0;
    if (datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &bytes) != MPI_SUCCESS) {
      return kInvalidDatatype;
    }
    return kNotReducible;
  }
  if (facts->reducible == Reducible::kSumOnly)
    return "unsigned integers are served with MPI_SUM, MPI_BAND, MPI_BOR and MPI_BXOR only";
  if (facts->reducible == Reducible::kYes && is_bitwise(*op)) {
    return "a bitwise op on a floating datatype (erroneous in MPI: left to MPI to report)";
  }
  return kNotReducible;
}

std::optional<std::size_t> contiguous_element_bytes_asked(MPI_Datatype datatype,
                                                          const char*& reason) {
  if (const TypeFacts* facts = predefined_types().find(datatype)) {
    if (facts->contiguous_bytes < 0) {
      reason = kNotContiguous;
      return std::nullopt;
    }
    return static_cast<std::size_t>(facts->contiguous_bytes);
  }
  const std::optional<int> size = contiguous_size(datatype, reason);
  if (!size) return std::nullopt;
  return static_cast<std::size_t>(*size);
}

}  // namespace collective::pmpi
