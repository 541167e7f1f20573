// The process-wide entry points of collective_c.h: MPI start-up, option
// defaults, names and version.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "collective/collective.h"
#include "collective/collective_c.h"
#include "collective/in_tree/collectives.h"
#include "last_error.h"

namespace collective::capi {
namespace {

// collective_init's Environment; finalize destroys it (and MPI with it
// when it started MPI).
std::mutex environment_mutex;
std::unique_ptr<Environment> environment;

// The name as a NUL-terminated C string: to_string's views point at
// string literals, so data() is terminated.
const char* name_or_null(bool known, std::string_view name) {
  return known ? name.data() : nullptr;
}

template <typename Parse>
int parse_into(const char* operation, const char* name, int* value, Parse&& parse) {
  if (name == nullptr) return fail_argument(operation, -1, "name is NULL");
  if (value == nullptr) return fail_argument(operation, -1, "output pointer is NULL");
  auto parsed = parse(std::string_view(name));
  if (!parsed) return fail_argument(operation, -1, "unknown name \"" + std::string(name) + "\"");
  *value = static_cast<int>(*parsed);
  return COLLECTIVE_SUCCESS;
}

}  // namespace
}  // namespace collective::capi

using collective::capi::fail_argument;
using collective::capi::guarded;
using collective::capi::name_or_null;
using collective::capi::parse_into;

extern "C" {

void collective_options_init(collective_options_t* options) {
  if (options == nullptr) return;
  *options = collective_options_t COLLECTIVE_OPTIONS_INIT;
}

int collective_init(int* argc, char*** argv) {
  const char* operation = "collective_init";
  if ((argc == nullptr) != (argv == nullptr)) {
    return fail_argument(operation, -1, "argc and argv must both be NULL or both be given");
  }
  return guarded(operation, -1, [&] {
    std::lock_guard<std::mutex> lock(collective::capi::environment_mutex);
    if (collective::capi::environment) return;  // a second init is a no-op
    try {
      collective::capi::environment = argc != nullptr
                                          ? std::make_unique<collective::Environment>(*argc, *argv)
                                          : std::make_unique<collective::Environment>();
    } catch (const collective::InvalidArgumentError& refused) {
      // After collective_finalize (or MPI_Finalize) MPI cannot start again:
      // the refusal names this function.
      throw collective::InvalidArgumentError(operation, refused.rank(), refused.cause());
    }
  });
}

int collective_finalize(void) {
  return guarded("collective_finalize", -1, [] {
    std::lock_guard<std::mutex> lock(collective::capi::environment_mutex);
    collective::capi::environment.reset();
  });
}

int collective_initialized(void) { return collective::Environment::initialized() ? 1 : 0; }

const char* collective_dtype_name(int dtype) {
  const bool known = dtype >= 0 && dtype < collective::kNumDataTypes;
  return name_or_null(known, known ? collective::to_string(static_cast<collective::DataType>(dtype))
                                   : std::string_view());
}

const char* collective_op_name(int op) {
  const bool known = op >= 0 && op < collective::kNumReduceOps;
  return name_or_null(known, known ? collective::to_string(static_cast<collective::ReduceOp>(op))
                                   : std::string_view());
}

const char* collective_algorithm_name(int algorithm) {
  const bool known = algorithm >= 0 && algorithm < collective::kNumAlgorithms;
  return name_or_null(known,
                      known ? collective::to_string(static_cast<collective::Algorithm>(algorithm))
                            : std::string_view());
}

const char* collective_kind_name(int kind) {
  const bool known = collective::is_collective_kind(kind);  // the table's rows (c_kinds.cc)
  return name_or_null(known,
                      known ? collective::to_string(static_cast<collective::CollectiveKind>(kind))
                            : std::string_view());
}

const char* collective_status_name(int status) {
  switch (status) {
    case COLLECTIVE_SUCCESS: return "success";
    case COLLECTIVE_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case COLLECTIVE_ERR_MISMATCH: return "mismatch";
    case COLLECTIVE_ERR_UNSUPPORTED: return "unsupported";
    case COLLECTIVE_ERR_COMMUNICATION: return "communication";
    case COLLECTIVE_ERR_TIMEOUT: return "timeout";
    case COLLECTIVE_ERR_INTERNAL: return "internal";
    case COLLECTIVE_ERR_PEER_FAILED: return "peer_failed";
    default: return nullptr;
  }
}

int collective_parse_dtype(const char* name, int* dtype) {
  return parse_into("collective_parse_dtype", name, dtype,
                    [](std::string_view n) { return collective::parse_data_type(n); });
}

int collective_parse_op(const char* name, int* op) {
  return parse_into("collective_parse_op", name, op,
                    [](std::string_view n) { return collective::parse_reduce_op(n); });
}

int collective_parse_algorithm(const char* name, int* algorithm) {
  return parse_into("collective_parse_algorithm", name, algorithm,
                    [](std::string_view n) { return collective::parse_algorithm(n); });
}

size_t collective_dtype_size(int dtype) {
  if (dtype < 0 || dtype >= collective::kNumDataTypes) return 0;
  return collective::element_size(static_cast<collective::DataType>(dtype));
}

const char* collective_version_string(void) { return collective::version_string(); }
const char* collective_git_revision(void) { return collective::git_revision(); }
int collective_built_with_nccl(void) { return collective::built_with_nccl() ? 1 : 0; }

}  // extern "C"
