#include "core/request.h"

namespace collective::internal {

std::size_t Request::element_bytes() const { return element_size(type); }

bool Request::in_place() const { return send == static_cast<const void*>(recv); }

std::string Request::label() const {
  return std::string(to_string(kind)) + " #" + std::to_string(sequence);
}

}  // namespace collective::internal
