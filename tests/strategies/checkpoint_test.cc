// Checkpoints in one process: round trips across strategies and replica
// counts, every kind of bad file (each raising an error that names the file
// and what is wrong, with no variable changed), and a process killed during
// save() leaving the previous checkpoint loadable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "checkpoint/checkpoint_format.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;
namespace fs = std::filesystem;
using collective::DataType;

namespace {

const std::vector<DataType> kDtypes = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                                       DataType::kInt32,    DataType::kInt64};

cd::Tensor pattern(DataType dtype, const cd::Shape& shape, int seed) {
  std::vector<double> values(cd::num_elements(shape));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((i * 5 + seed) % 11);
  return cd::Tensor::from_doubles(dtype, values, shape);
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/collective_checkpoint_XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Variables of every dtype and a few shapes, under the current strategy.
std::vector<std::pair<std::string, cd::Variable>> make_variables(int seed) {
  std::vector<std::pair<std::string, cd::Variable>> variables;
  int index = 0;
  for (DataType dtype : kDtypes) {
    for (const cd::Shape& shape : std::vector<cd::Shape>{{}, {0}, {3, 5}}) {
      const std::string name = "v" + std::to_string(index);
      variables.emplace_back(name,
                             cd::Variable(pattern(dtype, shape, seed + index), {.name = name}));
      ++index;
    }
  }
  return variables;
}

void expect_values(const std::vector<std::pair<std::string, cd::Variable>>& variables, int seed,
                   const std::string& what) {
  int index = 0;
  for (const auto& [name, variable] : variables) {
    const cd::Tensor expected = pattern(variable.dtype(), variable.shape(), seed + index);
    for (const cd::Tensor& copy : variable.local_values()) {
      ASSERT_TRUE(copy.identical(expected)) << what << ": variable " << name;
    }
    ++index;
  }
}

// restore() must raise InvalidArgumentError naming the file and `needle`,
// and leave every variable as it was.
void expect_refused(cd::Checkpoint& checkpoint, const std::string& directory,
                    const std::string& file, const std::string& needle,
                    const std::vector<std::pair<std::string, cd::Variable>>& variables, int seed) {
  try {
    checkpoint.restore(directory);
    ADD_FAILURE() << "restore accepted a bad checkpoint (expected: " << needle << ")";
  } catch (const collective::InvalidArgumentError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(file), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "expected '" << needle << "' in: " << what;
  }
  expect_values(variables, seed, "after a refused restore (" + needle + ")");
}

}  // namespace

TEST(Checkpoint, RestoresAcrossStrategiesAndReplicaCounts) {
  TempDir dir;
  cd::MirroredStrategy mirrored(cd::MirroredStrategy::cpu_devices(2));
  {
    auto scope = mirrored.scope();
    auto variables = make_variables(1);
    cd::SGD optimizer(0.1);
    optimizer.set_iterations(17);
    cd::Checkpoint checkpoint(mirrored, variables, &optimizer);
    EXPECT_FALSE(checkpoint.restore(dir.path())) << "an empty directory has nothing to restore";
    EXPECT_FALSE(cd::Checkpoint::latest_checkpoint(dir.path()));
    checkpoint.set_step(42);
    const std::string path = checkpoint.save(dir.path());
    EXPECT_EQ(path, dir.path() + "/ckpt-42");
    EXPECT_EQ(cd::Checkpoint::latest_checkpoint(dir.path()), path);
  }
  cd::CentralStorageStrategy central(cd::MirroredStrategy::cpu_devices(3));
  cd::MirroredStrategy mirrored3(cd::MirroredStrategy::cpu_devices(3));
  cd::OneDeviceStrategy one("/cpu:0");
  for (cd::Strategy* strategy : std::vector<cd::Strategy*>{&central, &mirrored3, &one}) {
    auto scope = strategy->scope();
    auto variables = make_variables(100);  // other values first
    cd::SGD optimizer(0.1);
    cd::Checkpoint checkpoint(*strategy, variables, &optimizer);
    ASSERT_TRUE(checkpoint.restore(dir.path()));
    expect_values(variables, 1, std::string(strategy->name()));
    EXPECT_EQ(optimizer.iterations(), 17);
    EXPECT_EQ(checkpoint.step(), 42);
  }
}

TEST(Checkpoint, BadFilesAreRefusedBeforeAnyVariableChanges) {
  TempDir dir;
  cd::MirroredStrategy strategy(cd::MirroredStrategy::cpu_devices(2));
  auto scope = strategy.scope();
  auto variables = make_variables(3);
  cd::Checkpoint writer(strategy, variables);
  writer.set_step(5);
  const std::string file = writer.save(dir.path());
  const std::vector<char> good = read_all(file);
  auto current = make_variables(7);
  cd::Checkpoint reader(strategy, current);

  // latest names a file that is gone.
  fs::rename(file, file + ".moved");
  expect_refused(reader, dir.path(), file, "cannot open", current, 7);
  fs::rename(file + ".moved", file);
  // Truncations: every length through the fixed header and the first
  // variable, then every 8th, and the last 8 bytes (inside the checksum).
  for (std::size_t length = 0; length < good.size();
       length += (length < 96 || length + 8 >= good.size()) ? 1 : 8) {
    write_all(file,
              std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(length)));
    expect_refused(reader, dir.path(), file, length < 40 ? "truncated" : "checksum mismatch",
                   current, 7);
  }
  // One flipped bit anywhere after the header.
  for (std::size_t at : {std::size_t{40}, good.size() / 2, good.size() - 5, good.size() - 1}) {
    std::vector<char> corrupted = good;
    corrupted[at] = static_cast<char>(corrupted[at] ^ 0x10);
    write_all(file, corrupted);
    expect_refused(reader, dir.path(), file, "checksum mismatch", current, 7);
  }
  // Another format version (with a valid checksum).
  {
    std::vector<char> other = good;
    other[8] = 2;
    std::vector<std::byte> body(
        reinterpret_cast<const std::byte*>(other.data()),
        reinterpret_cast<const std::byte*>(other.data()) + other.size() - 4);
    const std::uint32_t crc = cd::detail::crc32(body);
    std::memcpy(other.data() + other.size() - 4, &crc, 4);
    write_all(file, other);
    expect_refused(reader, dir.path(), file, "format version 2; this build reads version 1",
                   current, 7);
  }
  write_all(file,
            {'n', 'o', 'p', 'e', '!', '!', '!', '!', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
             0,   0,   0,   0,   0,   0,   0,   0,   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  expect_refused(reader, dir.path(), file, "not a checkpoint file", current, 7);
  write_all(file, good);
  ASSERT_TRUE(reader.restore(dir.path()));
  expect_values(current, 3, "the good file");

  // Names, shapes and dtypes that differ from the tracked variables.
  auto fresh = make_variables(7);
  const auto expect_mismatch = [&](std::vector<std::pair<std::string, cd::Variable>> tracked,
                                   const std::string& needle) {
    cd::Checkpoint checkpoint(strategy, tracked);
    expect_refused(checkpoint, dir.path(), file, needle, fresh, 7);
  };
  {
    auto tracked = fresh;
    tracked.emplace_back("extra", cd::Variable(cd::Tensor::scalar(1.0f)));
    expect_mismatch(tracked, "has no variable 'extra'");
  }
  {
    auto tracked = fresh;
    tracked.pop_back();
    expect_mismatch(tracked, "holds variable 'v23', which this checkpoint does not track");
  }
  {
    auto tracked = fresh;
    tracked[2].second = cd::Variable(cd::Tensor(DataType::kFloat32, {5, 3}));
    expect_mismatch(tracked, "variable 'v2' is float32 [3, 5] in the file but float32 [5, 3] here");
  }
  {
    auto tracked = fresh;
    tracked[0].second = cd::Variable(cd::Tensor(DataType::kInt32, {}));
    expect_mismatch(tracked, "variable 'v0' is float32 [] in the file but int32 [] here");
  }
  // A `latest` that points outside the directory.
  write_all(dir.path() + "/latest", {'.', '.', '/', 'x', '\n'});
  expect_refused(reader, dir.path(), dir.path() + "/latest", "does not hold a checkpoint file name",
                 current, 3);
  // Misuse of the tracked list.
  EXPECT_THROW(cd::Checkpoint(strategy, {{"a", fresh[0].second}, {"a", fresh[1].second}}),
               collective::InvalidArgumentError);
  cd::OneDeviceStrategy other("/cpu:0");
  EXPECT_THROW(cd::Checkpoint(other, fresh), collective::InvalidArgumentError);
}

// Every filesystem failure of reading a checkpoint is the documented
// InvalidArgumentError naming the path and what was wrong: never a raw
// std::ios_base::failure, a hang on a FIFO, or a silent fresh start.
TEST(Checkpoint, FilesystemErrorsOfReadingNameThePath) {
  TempDir dir;
  cd::OneDeviceStrategy strategy("/cpu:0");
  auto scope = strategy.scope();
  auto variables = make_variables(4);
  cd::Checkpoint checkpoint(strategy, variables);
  // `latest` names a directory.
  fs::create_directory(dir.path() + "/ckpt-9");
  write_all(dir.path() + "/latest", {'c', 'k', 'p', 't', '-', '9', '\n'});
  expect_refused(checkpoint, dir.path(), dir.path() + "/ckpt-9",
                 "is a directory, not a checkpoint file", variables, 4);
  try {
    (void)cd::Checkpoint::latest_checkpoint(dir.path());  // names it without reading it
  } catch (const std::exception& error) {
    ADD_FAILURE() << "latest_checkpoint: " << error.what();
  }
  // `latest` is itself a directory.
  {
    TempDir other;
    fs::create_directory(other.path() + "/latest");
    expect_refused(checkpoint, other.path(), other.path() + "/latest", "is a directory", variables,
                   4);
    EXPECT_THROW((void)cd::Checkpoint::latest_checkpoint(other.path()),
                 collective::InvalidArgumentError);
  }
  // The checkpoint directory is a regular file: an error, not "nothing saved".
  {
    const std::string file = dir.path() + "/plain";
    write_all(file, {'x'});
    expect_refused(checkpoint, file, file + "/latest", "is not a directory", variables, 4);
  }
  // `latest` names a FIFO: refused at once, not a wait for a writer
  // (the alarm ends a hung process).
  {
    const std::string fifo = dir.path() + "/ckpt-fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    write_all(dir.path() + "/latest", {'c', 'k', 'p', 't', '-', 'f', 'i', 'f', 'o', '\n'});
    ::alarm(60);
    expect_refused(checkpoint, dir.path(), fifo, "is a FIFO, not a checkpoint file", variables, 4);
    ::alarm(0);
  }
  // A missing directory still means nothing was saved yet.
  EXPECT_FALSE(checkpoint.restore(dir.path() + "/never_made"));
}

// A checkpoint shares its strategy's state: it saves and restores after the
// strategy object is gone (its variables live on as well).
TEST(Checkpoint, OutlivesItsStrategy) {
  TempDir dir;
  std::optional<cd::Checkpoint> checkpoint;
  std::vector<std::pair<std::string, cd::Variable>> variables;
  {
    cd::MirroredStrategy strategy(cd::MirroredStrategy::cpu_devices(2));
    auto scope = strategy.scope();
    variables = make_variables(5);
    checkpoint.emplace(strategy, variables);
  }
  checkpoint->set_step(3);
  EXPECT_EQ(checkpoint->save(dir.path()), dir.path() + "/ckpt-3");
  for (auto& [name, variable] : variables)
    variable.assign(cd::Tensor(variable.dtype(), variable.shape()));
  ASSERT_TRUE(checkpoint->restore(dir.path()));
  expect_values(variables, 5, "restored after the strategy was destroyed");
}

// A process killed while it saves leaves the last complete checkpoint (and
// `latest`) loadable: write aside, fsync, rename.
TEST(Checkpoint, KilledDuringSaveLeavesThePreviousCheckpoint) {
  std::mt19937 random(11);
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    const cd::Shape shape = {1 << 20};  // 4 MiB of float32 per save
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      cd::OneDeviceStrategy strategy("/cpu:0");
      auto scope = strategy.scope();
      cd::Variable big(cd::Tensor(DataType::kFloat32, shape), {.name = "big"});
      cd::Checkpoint checkpoint(strategy, {{"big", big}});
      for (int version = 1;; ++version) {
        big.assign(cd::Tensor(
            std::vector<float>(cd::num_elements(shape), static_cast<float>(version)), shape));
        checkpoint.set_step(version);
        checkpoint.save(dir.path());
      }
    }
    // Once a first checkpoint exists, kill the saver at a random moment.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(dir.path() + "/latest") && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 200)(random)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(fs::exists(dir.path() + "/latest")) << "no checkpoint within 60 s";
    cd::OneDeviceStrategy strategy("/cpu:0");
    auto scope = strategy.scope();
    cd::Variable big(cd::Tensor(DataType::kFloat32, shape), {.name = "big"});
    cd::Checkpoint checkpoint(strategy, {{"big", big}});
    ASSERT_TRUE(checkpoint.restore(dir.path())) << "round " << round;
    const float version = static_cast<float>(checkpoint.step());
    ASSERT_GE(version, 1);
    const cd::Tensor value = big.value();
    for (std::size_t i = 0; i < value.num_elements(); ++i) {
      ASSERT_EQ(value.values<float>()[i], version) << "round " << round << " index " << i;
    }
  }
}

namespace {

// The temporaries ("<name>.tmp.<...>") in directory.
std::vector<std::string> temp_files(const std::string& directory) {
  std::vector<std::string> found;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(directory, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// This process's start time (field 22 of /proc/self/stat).
std::string own_start_time() {
  std::ifstream stat("/proc/self/stat");
  std::string text;
  std::getline(stat, text);
  std::istringstream fields(text.substr(text.rfind(')') + 1));
  std::string field;
  for (int index = 3; index <= 22; ++index) fields >> field;
  return field;
}

// Field 3 of /proc/<pid>/stat: R, S, D, T (stopped), Z, ...
char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
}

std::string own_host() {
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Forks a process that saves 16 MiB checkpoints into directory without
// end, stops it while a temporary is on disk and kills it (SIGKILL): the
// temporary's name is returned.
std::string kill_saver_mid_write(const std::string& directory) {
  const cd::Shape shape = {1 << 22};
  for (int attempt = 0; attempt < 50; ++attempt) {
    const pid_t child = ::fork();
    if (child == 0) {
      cd::OneDeviceStrategy strategy("/cpu:0");
      auto scope = strategy.scope();
      cd::Variable big(cd::Tensor(DataType::kFloat32, shape), {.name = "big"});
      cd::Checkpoint checkpoint(strategy, {{"big", big}});
      for (int version = 1;; ++version) {
        checkpoint.set_step(version);
        checkpoint.save(directory);
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::vector<std::string> seen;
    while ((seen = temp_files(directory)).empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(child, SIGSTOP);
    // kill() may return before the child has stopped: wait for state T,
    // then a temporary still there is one it dies in the middle of.
    for (int poll = 0; poll < 10000 && process_state(child) != 'T'; ++poll) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    const std::vector<std::string> left = temp_files(directory);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    // The child's temporary: ".tmp.<pid>" then the end or ".<start>.<host>".
    const std::string mark = ".tmp." + std::to_string(child);
    for (const std::string& name : left) {
      const std::size_t at = name.find(mark);
      if (at != std::string::npos &&
          (at + mark.size() == name.size() || name[at + mark.size()] == '.')) {
        return name;
      }
    }
  }
  return "";
}

}  // namespace

// A save killed mid-write (SIGKILL of a real process) leaves its temporary;
// the next save or restore in that directory removes the temporaries of
// processes that are gone, and only those (docs/strategies.md).
TEST(Checkpoint, TemporaryOfAKilledSaveIsRemovedByTheNextSaveOrRestore) {
  for (const bool by_save : {false, true}) {
    TempDir dir;
    const std::string abandoned = kill_saver_mid_write(dir.path());
    ASSERT_FALSE(abandoned.empty()) << "no save was caught mid-write";
    ASSERT_TRUE(fs::exists(dir.path() + "/" + abandoned));
    // Kept: a temporary of a running process (this one), and one of a
    // process on another host (a shared filesystem). Removed too: an older
    // name "<name>.tmp.<pid>" whose pid is not running (the killed child's).
    const std::string pid_of_dead = abandoned.substr(
        abandoned.find(".tmp.") + 5,
        abandoned.find('.', abandoned.find(".tmp.") + 5) - abandoned.find(".tmp.") - 5);
    const std::string live =
        "ckpt-77.tmp." + std::to_string(::getpid()) + "." + own_start_time() + "." + own_host();
    const std::string elsewhere = "ckpt-78.tmp." + pid_of_dead + ".1.another-host.example";
    const std::string older = "latest.tmp." + pid_of_dead;
    const std::string unrelated = "notes.tmp." + pid_of_dead;
    for (const std::string& name : {live, elsewhere, older, unrelated})
      write_all(dir.path() + "/" + name, {'x'});

    cd::OneDeviceStrategy strategy("/cpu:0");
    auto scope = strategy.scope();
    cd::Variable big(cd::Tensor(DataType::kFloat32, {1 << 22}), {.name = "big"});
    cd::Checkpoint checkpoint(strategy, {{"big", big}});
    if (by_save) {
      checkpoint.set_step(1000);
      checkpoint.save(dir.path());
    } else {
      // true or false: the saver may have died before its first rename.
      (void)checkpoint.restore(dir.path());
    }
    const std::vector<std::string> expected = [&] {
      std::vector<std::string> kept = {live, elsewhere, unrelated};
      std::sort(kept.begin(), kept.end());
      return kept;
    }();
    const std::vector<std::string> left = temp_files(dir.path());
    EXPECT_EQ(left, expected) << (by_save ? "after save" : "after restore")
                              << ": the killed save's " << abandoned << " and the older " << older
                              << " must be gone, the rest kept";
  }
}
