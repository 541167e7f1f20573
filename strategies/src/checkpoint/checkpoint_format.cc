#include "checkpoint/checkpoint_format.h"

#include <array>
#include <bit>
#include <cstring>
#include <set>

#include "collective/errors.h"

namespace collective::distribute::detail {

static_assert(std::endian::native == std::endian::little,
              "the checkpoint format is little-endian; a big-endian host needs byte swaps here");

namespace {

constexpr char kMagic[8] = {'C', 'O', 'L', 'L', 'C', 'K', 'P', 'T'};

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

class Out {
 public:
  template <typename T>
  void put(T value) {
    raw(&value, sizeof value);
  }
  void raw(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::byte*>(data);
    bytes.insert(bytes.end(), p, p + n);
  }
  std::vector<std::byte> bytes;
};

class In {
 public:
  In(std::span<const std::byte> bytes, const std::string& file, const std::string& operation)
      : bytes_(bytes), file_(file), operation_(operation) {}
  template <typename T>
  T get(const char* what) {
    T value;
    raw(&value, sizeof value, what);
    return value;
  }
  void raw(void* out, std::size_t n, const std::string& what) {
    if (n > bytes_.size() - offset_) {
      fail("truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(offset_) + " but only " + std::to_string(bytes_.size() - offset_) +
           " remain");
    }
    if (n > 0) std::memcpy(out, bytes_.data() + offset_, n);
    offset_ += n;
  }
  std::size_t remaining() const { return bytes_.size() - offset_; }
  std::size_t offset() const { return offset_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgumentError(operation_, -1, file_ + ": " + what);
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& file_;
  const std::string& operation_;
  std::size_t offset_ = 0;
};

}  // namespace

std::uint32_t crc32(std::span<const std::byte> bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::byte b : bytes) c = kCrcTable[(c ^ static_cast<std::uint32_t>(b)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::vector<std::byte> encode_checkpoint(const CheckpointData& data) {
  Out out;
  out.raw(kMagic, sizeof kMagic);
  out.put<std::uint32_t>(kCheckpointFormatVersion);
  out.put<std::uint32_t>(0);
  out.put<std::int64_t>(data.step);
  out.put<std::int64_t>(data.iterations);
  out.put<std::uint32_t>(static_cast<std::uint32_t>(data.variables.size()));
  for (const auto& [name, tensor] : data.variables) {
    out.put<std::uint32_t>(static_cast<std::uint32_t>(name.size()));
    out.raw(name.data(), name.size());
    out.put<std::uint32_t>(static_cast<std::uint32_t>(tensor.dtype()));
    out.put<std::uint32_t>(static_cast<std::uint32_t>(tensor.rank()));
    for (std::int64_t d : tensor.shape()) out.put<std::int64_t>(d);
    out.put<std::uint64_t>(tensor.num_bytes());
    out.raw(tensor.raw_data(), tensor.num_bytes());
  }
  out.put<std::uint32_t>(crc32(out.bytes));
  return std::move(out.bytes);
}

CheckpointData decode_checkpoint(std::span<const std::byte> bytes, const std::string& file,
                                 const std::string& operation) {
  In in(bytes, file, operation);
  constexpr std::size_t kFixed = sizeof kMagic + 4 + 4 + 8 + 8 + 4 + 4;
  if (bytes.size() < kFixed) {
    in.fail("truncated: " + std::to_string(bytes.size()) + " bytes, a checkpoint has at least " +
            std::to_string(kFixed));
  }
  char magic[sizeof kMagic];
  in.raw(magic, sizeof magic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    in.fail("not a checkpoint file (its first 8 bytes are not \"COLLCKPT\")");
  }
  const auto version = in.get<std::uint32_t>("the version");
  if (version != kCheckpointFormatVersion) {
    in.fail("format version " + std::to_string(version) + "; this build reads version " +
            std::to_string(kCheckpointFormatVersion));
  }
  // The checksum covers everything before its own 4 bytes: a truncated or
  // altered file is caught here, before any field is trusted.
  std::uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  const std::uint32_t computed = crc32(bytes.first(bytes.size() - 4));
  if (stored != computed) {
    char text[96];
    std::snprintf(text, sizeof text, "checksum mismatch (stored %08x, computed %08x)", stored,
                  computed);
    in.fail(std::string(text) + ": the file is truncated or corrupted");
  }
  const std::span<const std::byte> body = bytes.first(bytes.size() - 4);
  In fields(body, file, operation);
  fields.raw(magic, sizeof magic, "the magic");
  (void)fields.get<std::uint32_t>("the version");
  const auto flags = fields.get<std::uint32_t>("the flags");
  if (flags != 0) fields.fail("unknown flags " + std::to_string(flags));
  CheckpointData data;
  data.step = fields.get<std::int64_t>("the step");
  data.iterations = fields.get<std::int64_t>("the optimizer iterations");
  const auto count = fields.get<std::uint32_t>("the variable count");
  std::set<std::string> names;
  for (std::uint32_t v = 0; v < count; ++v) {
    const std::string which = "variable " + std::to_string(v);
    const auto name_bytes = fields.get<std::uint32_t>("a name length");
    if (name_bytes == 0 || name_bytes > kCheckpointMaxNameBytes) {
      fields.fail(which + " has a name of " + std::to_string(name_bytes) + " bytes (1.." +
                  std::to_string(kCheckpointMaxNameBytes) + ")");
    }
    std::string name(name_bytes, '\0');
    fields.raw(name.data(), name_bytes, which + "'s name");
    if (!names.insert(name).second) fields.fail("variable '" + name + "' appears twice");
    const auto dtype = fields.get<std::uint32_t>("a dtype");
    if (dtype >= static_cast<std::uint32_t>(kNumDataTypes)) {
      fields.fail("variable '" + name + "' has unknown dtype " + std::to_string(dtype));
    }
    const auto rank = fields.get<std::uint32_t>("a rank");
    if (rank > kCheckpointMaxRank) {
      fields.fail("variable '" + name + "' has rank " + std::to_string(rank) + " (at most " +
                  std::to_string(kCheckpointMaxRank) + ")");
    }
    Shape shape(rank);
    const std::size_t size = element_size(static_cast<DataType>(dtype));
    // Elements must fit the bytes that remain: checked with each dimension,
    // so a hostile shape cannot overflow or allocate beyond the file.
    std::uint64_t elements = 1;
    bool empty = false;
    for (auto& d : shape) {
      d = fields.get<std::int64_t>("a dimension");
      if (d < 0) fields.fail("variable '" + name + "' has a negative dimension");
      if (d == 0) empty = true;
    }
    if (!empty) {
      for (std::int64_t d : shape) {
        if (static_cast<std::uint64_t>(d) > fields.remaining() / size / elements) {
          fields.fail("variable '" + name + "' of shape " + shape_string(shape) +
                      " is larger than the file");
        }
        elements *= static_cast<std::uint64_t>(d);
      }
    } else {
      elements = 0;
    }
    const auto data_bytes = fields.get<std::uint64_t>("a data size");
    if (data_bytes != elements * size) {
      fields.fail("variable '" + name + "' of shape " + shape_string(shape) + " and dtype " +
                  std::string(to_string(static_cast<DataType>(dtype))) + " carries " +
                  std::to_string(data_bytes) + " bytes, not " + std::to_string(elements * size));
    }
    if (data_bytes > fields.remaining()) {
      fields.fail("truncated: variable '" + name + "' needs " + std::to_string(data_bytes) +
                  " bytes");
    }
    Tensor tensor(static_cast<DataType>(dtype), shape);
    fields.raw(tensor.raw_data(), data_bytes, "variable '" + name + "'s data");
    data.variables.emplace_back(std::move(name), std::move(tensor));
  }
  if (fields.remaining() != 0) {
    fields.fail(std::to_string(fields.remaining()) + " unexpected bytes after the last variable");
  }
  return data;
}

}  // namespace collective::distribute::detail
