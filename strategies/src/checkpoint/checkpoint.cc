#include "collective/distribute/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "base/call_purpose.h"
#include "checkpoint/checkpoint_format.h"
#include "checkpoint/checkpoint_temp_files.h"
#include "collective/distribute/strategy.h"
#include "collective/errors.h"
#include "core/strategy_impl.h"
#include "core/variable_state.h"
#include "reduce/worker_calls.h"

namespace collective::distribute {

namespace {

constexpr const char* kLatest = "latest";

std::string errno_text(int error) { return std::strerror(error); }

// Writes bytes to directory/name atomically: a temporary file in the same
// directory, fsync, rename over name, fsync of the directory (so the rename
// itself survives a crash).
void write_atomically(const std::filesystem::path& directory, const std::string& name,
                      const std::vector<std::byte>& bytes, const std::string& operation) {
  const std::filesystem::path final_path = directory / name;
  const std::filesystem::path temporary = detail::checkpoint_temp_path(directory, name);
  const auto fail = [&](const std::string& what, int error) {
    ::unlink(temporary.c_str());
    throw Error(operation, -1, final_path.string() + ": " + what + ": " + errno_text(error));
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create " + temporary.string(), errno);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      fail("write failed", error);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    fail("fsync failed", error);
  }
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(temporary.c_str(), final_path.c_str()) != 0) fail("rename failed", errno);
  const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd >= 0) {
    ::fsync(directory_fd);
    ::close(directory_fd);
  }
}

// What a path is, for messages: "a directory", "a FIFO", ...
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Reads a whole regular file. Every failure (missing, a directory or other
// non-regular file, unreadable, an I/O error) is InvalidArgumentError naming
// the path and what was wrong; nothing else escapes (std::ifstream threw a
// raw std::ios_base::failure on a directory). O_NONBLOCK: opening a FIFO
// must not wait for a writer.
std::vector<std::byte> read_file(const std::filesystem::path& path, const std::string& operation) {
  const auto fail = [&](const std::string& what) -> void {
    throw InvalidArgumentError(operation, -1, path.string() + ": " + what);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("cannot open: " + errno_text(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail("cannot stat: " + errno_text(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail("is " + kind_of(info.st_mode) + ", not a checkpoint file");
  }
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (true) {
    if (done == bytes.size()) bytes.resize(bytes.size() + 4096);  // the file grew
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      fail("read failed after " + std::to_string(done) + " bytes: " + errno_text(error));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

// The file `latest` names, checked to be a plain name in the directory;
// std::nullopt when the directory or its `latest` does not exist (nothing
// saved yet). Any other failure to look (a path through a regular file,
// no permission) is an error, not a fresh start.
std::optional<std::filesystem::path> resolve_latest(const std::filesystem::path& directory,
                                                    const std::string& operation) {
  const std::filesystem::path pointer = directory / kLatest;
  struct stat info {};
  if (::stat(pointer.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) return std::nullopt;
    throw InvalidArgumentError(
        operation, -1,
        pointer.string() + ": cannot look for it: " + errno_text(error) +
            (error == ENOTDIR ? " (" + directory.string() + " is not a directory)" : ""));
  }
  const std::vector<std::byte> bytes = read_file(pointer, operation);
  std::string name(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!name.empty() && name.back() == '\n') name.pop_back();
  const bool plain = !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
                     name.find_first_of(std::string("/\n\0", 3)) == std::string::npos;
  if (!plain) {
    throw InvalidArgumentError(operation, -1,
                               pointer.string() +
                                   ": does not hold a checkpoint file name (one line, "
                                   "a plain name in the same directory)");
  }
  return directory / name;
}

std::vector<std::byte> text_bytes(const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return std::vector<std::byte>(p, p + text.size());
}

// The cross-worker calls of a multi-worker strategy; nullptr elsewhere.
struct Collective {
  detail::WorkerCalls* calls = nullptr;
  int rank() const { return calls ? calls->communicator().rank() : 0; }
};

Collective collective_of(detail::StrategyImpl& impl) {
  Collective result;
  if (impl.worker_calls && !impl.place_variable) result.calls = impl.worker_calls.get();
  return result;
}

// Sends `root`'s bytes to every worker (size first).
void broadcast_bytes(const Collective& group, std::vector<std::byte>& bytes, int root = 0) {
  detail::WorkerCalls::Session calls = group.calls->session();
  BroadcastOptions options;
  options.root = root;
  std::int64_t size = static_cast<std::int64_t>(bytes.size());
  calls.broadcast(&size, 1, DataType::kInt64, options);
  bytes.resize(static_cast<std::size_t>(size));
  if (size > 0) calls.broadcast(bytes.data(), bytes.size(), DataType::kUInt8, options);
}

// Why this worker's tracked variables cannot take the checkpoint's values
// (a name missing on either side, another dtype or shape); empty when they
// can.
std::string disagreement(const detail::CheckpointData& data,
                         const std::vector<std::pair<std::string, Variable>>& variables,
                         const std::string& file) {
  std::map<std::string, const Tensor*> saved;
  for (const auto& [name, tensor] : data.variables) saved[name] = &tensor;
  for (const auto& [name, variable] : variables) {
    const auto it = saved.find(name);
    if (it == saved.end()) return file + ": has no variable '" + name + "'";
    const Tensor& tensor = *it->second;
    if (tensor.dtype() != variable.dtype() || tensor.shape() != variable.shape()) {
      return file + ": variable '" + name + "' is " + std::string(to_string(tensor.dtype())) + " " +
             shape_string(tensor.shape()) + " in the file but " +
             std::string(to_string(variable.dtype())) + " " + shape_string(variable.shape()) +
             " here";
    }
    saved.erase(it);
  }
  if (!saved.empty()) {
    return file + ": holds variable '" + saved.begin()->first +
           "', which this checkpoint does not track";
  }
  return {};
}

// The lowest worker whose `problem` is not empty, and its problem, on every
// worker (one all-reduce, and a broadcast when there is one).
std::optional<std::pair<int, std::string>> first_problem(const Collective& group,
                                                         const std::string& problem) {
  std::int64_t first = problem.empty() ? std::numeric_limits<std::int64_t>::max() : group.rank();
  {
    AllReduceOptions options;
    options.op = ReduceOp::kMin;
    group.calls->session().all_reduce(&first, &first, 1, DataType::kInt64, options);
  }
  if (first == std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  std::vector<std::byte> message = text_bytes(problem);
  broadcast_bytes(group, message, static_cast<int>(first));
  return std::make_pair(static_cast<int>(first),
                        std::string(reinterpret_cast<const char*>(message.data()), message.size()));
}

}  // namespace

Checkpoint::Checkpoint(Strategy& strategy, std::vector<std::pair<std::string, Variable>> variables,
                       SGD* optimizer)
    : strategy_(strategy.extended().shared_impl()),
      variables_(std::move(variables)),
      optimizer_(optimizer) {
  std::set<std::string> names;
  const std::uint64_t serial = strategy.extended().impl().serial;
  for (const auto& [name, variable] : variables_) {
    if (name.empty() || name.size() > detail::kCheckpointMaxNameBytes) {
      throw InvalidArgumentError("Checkpoint", -1,
                                 "variable names must have 1.." +
                                     std::to_string(detail::kCheckpointMaxNameBytes) +
                                     " bytes, got " + std::to_string(name.size()));
    }
    if (!names.insert(name).second) {
      throw InvalidArgumentError("Checkpoint", -1, "the name '" + name + "' is given twice");
    }
    if (variable.state().strategy_serial != serial) {
      throw InvalidArgumentError(
          "Checkpoint", -1,
          "variable '" + name + "' belongs to " + variable.state().strategy_label +
              ", not to the checkpoint's " + strategy.extended().impl().label());
    }
  }
}

std::optional<std::string> Checkpoint::latest_checkpoint(const std::string& directory) {
  std::optional<std::filesystem::path> path =
      resolve_latest(directory, "Checkpoint::latest_checkpoint");
  if (!path) return std::nullopt;
  return path->string();
}

std::string Checkpoint::save(const std::string& directory) {
  const std::string operation = "Checkpoint.save";
  const detail::CallPurpose purpose(operation);
  const Collective group = collective_of(*strategy_);
  const std::string name = "ckpt-" + std::to_string(step_);
  const std::string path = (std::filesystem::path(directory) / name).string();
  std::string error;
  // A sync-on-read variable's value is a reduction over every worker's
  // replicas: every worker reads it; the chief saves it.
  std::vector<Tensor> on_read_values;
  for (const auto& entry : variables_) {
    if (entry.second.is_sync_on_read()) on_read_values.push_back(entry.second.value());
  }
  if (group.rank() == 0) {
    try {
      detail::CheckpointData data;
      data.step = step_;
      data.iterations = optimizer_ ? optimizer_->iterations() : 0;
      std::size_t next_on_read = 0;
      for (const auto& [variable_name, variable] : variables_) {
        data.variables.emplace_back(variable_name, variable.is_sync_on_read()
                                                       ? on_read_values[next_on_read++]
                                                       : variable.value());
      }
      const std::vector<std::byte> bytes = detail::encode_checkpoint(data);
      std::error_code code;
      std::filesystem::create_directories(directory, code);
      if (code)
        throw Error(operation, -1, directory + ": cannot create the directory: " + code.message());
      // A save killed mid-write left its temporary behind: remove those of
      // processes that are gone before writing another.
      detail::remove_abandoned_checkpoint_temps(directory);
      write_atomically(directory, name, bytes, operation);
      const std::string pointer = name + "\n";
      write_atomically(directory, kLatest, text_bytes(pointer), operation);
    } catch (const std::exception& failure) {
      if (!group.calls) throw;
      error = failure.what();
    }
  }
  if (group.calls) {
    // Every worker learns whether the chief's save worked.
    std::vector<std::byte> message = text_bytes(error);
    broadcast_bytes(group, message);
    if (!message.empty()) {
      throw Error(operation, group.rank(),
                  "the chief's save failed: " +
                      std::string(reinterpret_cast<const char*>(message.data()), message.size()));
    }
  }
  return path;
}

bool Checkpoint::restore(const std::string& directory) {
  const std::string operation = "Checkpoint.restore";
  const detail::CallPurpose purpose(operation);
  const Collective group = collective_of(*strategy_);
  // Status the chief broadcasts: 0 nothing saved, 1 the file follows, 2 an
  // error message follows.
  std::vector<std::byte> payload;
  std::int64_t status = 0;
  std::string file;
  if (group.rank() == 0) {
    try {
      detail::remove_abandoned_checkpoint_temps(directory);
      std::optional<std::filesystem::path> path = resolve_latest(directory, operation);
      if (path) {
        file = path->string();
        payload = read_file(*path, operation);
        status = 1;
      }
    } catch (const std::exception& failure) {
      if (!group.calls) throw;
      status = 2;
      payload = text_bytes(failure.what());
    }
  }
  if (group.calls) {
    {
      BroadcastOptions options;
      group.calls->session().broadcast(&status, 1, DataType::kInt64, options);
    }
    broadcast_bytes(group, payload);
    if (status == 2) {
      throw InvalidArgumentError(
          operation, group.rank(),
          std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
    }
  }
  if (status == 0) return false;
  // Every worker decodes the chief's file and checks it against its own
  // variables; all of them learn the first worker that cannot take it
  // before any variable changes, so either every worker restores or none.
  const std::string source = file.empty() ? "the chief's checkpoint" : file;
  std::optional<detail::CheckpointData> data;
  std::string problem;
  try {
    data = detail::decode_checkpoint(payload, source, operation);
    problem = disagreement(*data, variables_, source);
  } catch (const Error& failure) {
    if (!group.calls) throw;
    problem = failure.cause();
  }
  if (!group.calls) {
    if (!problem.empty()) throw InvalidArgumentError(operation, group.rank(), problem);
  } else if (const auto first = first_problem(group, problem)) {
    throw InvalidArgumentError(operation, group.rank(),
                               "worker " + std::to_string(first->first) + ": " + first->second +
                                   "; no worker restored anything (every worker's checkpoint must "
                                   "track the same variables, by name, dtype and shape)");
  }
  std::map<std::string, const Tensor*> saved;
  for (const auto& [name, tensor] : data->variables) saved[name] = &tensor;
  for (auto& [name, variable] : variables_) variable.assign(*saved.at(name));
  if (optimizer_) optimizer_->set_iterations(data->iterations);
  step_ = data->step;
  return true;
}

}  // namespace collective::distribute
