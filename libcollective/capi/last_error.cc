#include "last_error.h"

#include <cstring>
#include <new>

#include "collective/errors.h"

namespace collective::capi {
namespace {

struct LastError {
  int status = COLLECTIVE_SUCCESS;
  std::string message;
};

LastError& last_error() {
  thread_local LastError error;
  return error;
}

}  // namespace

int fail(int status, std::string message) {
  try {
    last_error().message = std::move(message);
  } catch (...) {
    last_error().message.clear();  // out of memory while keeping the message
  }
  last_error().status = status;
  return status;
}

int fail_argument(const char* operation, int rank, const std::string& cause) {
  return fail(COLLECTIVE_ERR_INVALID_ARGUMENT,
              std::string(operation) + " (rank " + std::to_string(rank) + "): " + cause);
}

int fail_from_current_exception(const char* operation, int rank) noexcept {
  // Most derived first: MismatchError is an InvalidArgumentError and
  // TimeoutError and PeerFailedError are CommunicationErrors.
  try {
    throw;
  } catch (const MismatchError& e) {
    return fail(COLLECTIVE_ERR_MISMATCH, e.what());
  } catch (const InvalidArgumentError& e) {
    return fail(COLLECTIVE_ERR_INVALID_ARGUMENT, e.what());
  } catch (const UnsupportedError& e) {
    return fail(COLLECTIVE_ERR_UNSUPPORTED, e.what());
  } catch (const PeerFailedError& e) {
    return fail(COLLECTIVE_ERR_PEER_FAILED, e.what());
  } catch (const TimeoutError& e) {
    return fail(COLLECTIVE_ERR_TIMEOUT, e.what());
  } catch (const CommunicationError& e) {
    return fail(COLLECTIVE_ERR_COMMUNICATION, e.what());
  } catch (const Error& e) {
    return fail(COLLECTIVE_ERR_INTERNAL, e.what());
  } catch (const std::bad_alloc&) {
    return fail(COLLECTIVE_ERR_INTERNAL,
                std::string(operation) + " (rank " + std::to_string(rank) + "): out of memory");
  } catch (const std::exception& e) {
    return fail(COLLECTIVE_ERR_INTERNAL,
                std::string(operation) + " (rank " + std::to_string(rank) + "): " + e.what());
  } catch (...) {
    return fail(COLLECTIVE_ERR_INTERNAL,
                std::string(operation) + " (rank " + std::to_string(rank) + "): unknown exception");
  }
}

}  // namespace collective::capi

extern "C" {

const char* collective_last_error(void) { return collective::capi::last_error().message.c_str(); }

size_t collective_copy_last_error(char* buffer, size_t length) {
  const std::string& message = collective::capi::last_error().message;
  if (buffer != nullptr && length > 0) {
    const size_t copied = message.size() < length - 1 ? message.size() : length - 1;
    std::memcpy(buffer, message.data(), copied);
    buffer[copied] = '\0';
  }
  return message.size();
}

size_t collective_copy_last_error_padded(char* buffer, size_t length) {
  const std::string& message = collective::capi::last_error().message;
  if (buffer != nullptr) {
    const size_t copied = message.size() < length ? message.size() : length;
    std::memcpy(buffer, message.data(), copied);
    std::memset(buffer + copied, ' ', length - copied);
  }
  return message.size();
}

int collective_last_status(void) { return collective::capi::last_error().status; }

void collective_clear_last_error(void) {
  collective::capi::last_error().status = COLLECTIVE_SUCCESS;
  collective::capi::last_error().message.clear();
}

}  // extern "C"
