#include "collective/distribute/dataset.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "collective/errors.h"

namespace collective::distribute {

namespace detail {

struct DatasetNode {
  enum class Kind {
    kTensorSlices,
    kRange,
    kGenerator,
    kFiles,
    kMap,
    kShard,
    kTake,
    kRepeat,
    kBatch,
    kFilter,
    kShuffle,
    kPrefetch,
  };
  Kind kind = Kind::kTensorSlices;
  std::shared_ptr<const DatasetNode> input;  // nullptr for sources

  std::vector<Tensor> components;  // kTensorSlices
  std::int64_t first = 0;          // kRange start; kShard count; kTake/kRepeat count; kBatch size
  std::int64_t second = 0;         // kRange stop; kShard index
  bool drop_remainder = false;     // kBatch
  std::function<Generator()> make_generator;      // kGenerator
  std::vector<std::string> files;                 // kFiles
  FileReader reader;                              // kFiles
  std::function<Element(Element)> map_fn;         // kMap
  std::function<bool(const Element&)> predicate;  // kFilter
  std::uint64_t seed = 0;                         // kShuffle (first: buffer size)
  bool reshuffle = true;                          // kShuffle
  // kShuffle: passes begun so far (shared by copies of the node).
  std::shared_ptr<std::atomic<std::int64_t>> passes;
  // kPrefetch: first is the buffer size.
};

class DatasetIteratorImpl {
 public:
  virtual ~DatasetIteratorImpl() = default;
  virtual std::optional<Element> next() = 0;
};

namespace {

using Kind = DatasetNode::Kind;

// Every iterator holds its node (and through it the whole upstream graph)
// by shared ownership, so an iterator outlives the Dataset it came from.
using NodePtr = std::shared_ptr<const DatasetNode>;
std::unique_ptr<DatasetIteratorImpl> make_iterator(const NodePtr& node);

// Rows [begin, end) along the first dimension.
Tensor slice_rows(const Tensor& tensor, std::int64_t begin, std::int64_t end) {
  Shape shape = tensor.shape();
  shape[0] = end - begin;
  Tensor result(tensor.dtype(), shape);
  const std::size_t row_bytes =
      tensor.dim(0) == 0 ? 0 : tensor.num_bytes() / static_cast<std::size_t>(tensor.dim(0));
  if (result.num_bytes() > 0) {
    std::memcpy(result.raw_data(),
                static_cast<const std::byte*>(tensor.raw_data()) +
                    static_cast<std::size_t>(begin) * row_bytes,
                result.num_bytes());
  }
  return result;
}

class TensorSlicesIterator final : public DatasetIteratorImpl {
 public:
  explicit TensorSlicesIterator(NodePtr node) : node_(std::move(node)) {}
  std::optional<Element> next() override {
    if (index_ >= node_->components.front().dim(0)) return std::nullopt;
    Element element;
    for (const Tensor& component : node_->components) {
      Tensor row = slice_rows(component, index_, index_ + 1);
      Shape shape(component.shape().begin() + 1, component.shape().end());
      element.push_back(row.reshape(std::move(shape)));
    }
    ++index_;
    return element;
  }

 private:
  const NodePtr node_;
  std::int64_t index_ = 0;
};

class RangeIterator final : public DatasetIteratorImpl {
 public:
  explicit RangeIterator(const NodePtr& node) : next_(node->first), stop_(node->second) {}
  std::optional<Element> next() override {
    if (next_ >= stop_) return std::nullopt;
    return Element{Tensor::scalar<std::int64_t>(next_++)};
  }

 private:
  std::int64_t next_;
  std::int64_t stop_;
};

class GeneratorIterator final : public DatasetIteratorImpl {
 public:
  // The node stays alive with the generator: a generator may refer to
  // what the node's make_generator function holds.
  explicit GeneratorIterator(NodePtr node)
      : node_(std::move(node)), generator_(node_->make_generator()) {}
  std::optional<Element> next() override { return generator_ ? generator_() : std::nullopt; }

 private:
  const NodePtr node_;
  Generator generator_;
};

class FilesIterator final : public DatasetIteratorImpl {
 public:
  explicit FilesIterator(NodePtr node) : node_(std::move(node)) {}
  std::optional<Element> next() override {
    while (true) {
      if (current_) {
        if (std::optional<Element> element = current_()) return element;
        current_ = nullptr;
      }
      if (file_ >= node_->files.size()) return std::nullopt;
      current_ = node_->reader(node_->files[file_++]);
    }
  }

 private:
  const NodePtr node_;
  std::size_t file_ = 0;
  Generator current_;
};

class MapIterator final : public DatasetIteratorImpl {
 public:
  explicit MapIterator(NodePtr node)
      : node_(std::move(node)), input_(make_iterator(node_->input)) {}
  std::optional<Element> next() override {
    std::optional<Element> element = input_->next();
    if (!element) return std::nullopt;
    return node_->map_fn(std::move(*element));
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
};

class ShardIterator final : public DatasetIteratorImpl {
 public:
  explicit ShardIterator(NodePtr node)
      : node_(std::move(node)), input_(make_iterator(node_->input)) {}
  std::optional<Element> next() override {
    while (std::optional<Element> element = input_->next()) {
      if (position_++ % node_->first == node_->second) return element;
    }
    return std::nullopt;
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
  std::int64_t position_ = 0;
};

class TakeIterator final : public DatasetIteratorImpl {
 public:
  explicit TakeIterator(NodePtr node)
      : node_(std::move(node)), input_(make_iterator(node_->input)) {}
  std::optional<Element> next() override {
    if (node_->first >= 0 && taken_ >= node_->first) return std::nullopt;
    std::optional<Element> element = input_->next();
    if (element) ++taken_;
    return element;
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
  std::int64_t taken_ = 0;
};

class RepeatIterator final : public DatasetIteratorImpl {
 public:
  // repeat(0) is empty (tf.data): its input is never opened, so it starts
  // no prefetch thread and takes no shuffle pass.
  explicit RepeatIterator(NodePtr node)
      : node_(std::move(node)), input_(node_->first == 0 ? nullptr : make_iterator(node_->input)) {}
  std::optional<Element> next() override {
    if (!input_) return std::nullopt;
    while (true) {
      if (std::optional<Element> element = input_->next()) {
        produced_in_pass_ = true;
        return element;
      }
      ++passes_;
      // An empty input would make an infinite repeat spin forever.
      if (!produced_in_pass_ || (node_->first >= 0 && passes_ >= node_->first)) return std::nullopt;
      produced_in_pass_ = false;
      input_ = make_iterator(node_->input);
    }
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
  std::int64_t passes_ = 0;
  bool produced_in_pass_ = false;
};

class BatchIterator final : public DatasetIteratorImpl {
 public:
  explicit BatchIterator(NodePtr node)
      : node_(std::move(node)), input_(make_iterator(node_->input)) {}
  std::optional<Element> next() override {
    std::vector<Element> elements;
    while (static_cast<std::int64_t>(elements.size()) < node_->first) {
      std::optional<Element> element = input_->next();
      if (!element) break;
      elements.push_back(std::move(*element));
    }
    if (elements.empty()) return std::nullopt;
    if (node_->drop_remainder && static_cast<std::int64_t>(elements.size()) < node_->first) {
      return std::nullopt;
    }
    return stack_elements(elements);
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
};

class FilterIterator final : public DatasetIteratorImpl {
 public:
  explicit FilterIterator(NodePtr node)
      : node_(std::move(node)), input_(make_iterator(node_->input)) {}
  std::optional<Element> next() override {
    while (std::optional<Element> element = input_->next()) {
      if (node_->predicate(*element)) return element;
    }
    return std::nullopt;
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
};

// Set while element_spec() peeks, so the peek does not count as a pass
// of a shuffle (workers that peek and workers that do not must agree on
// every pass's order).
thread_local bool t_peeking = false;

class ShuffleIterator final : public DatasetIteratorImpl {
 public:
  explicit ShuffleIterator(NodePtr node)
      : node_(std::move(node)), input_(make_iterator(node_->input)) {
    std::int64_t pass = 0;
    if (node_->reshuffle) pass = t_peeking ? node_->passes->load() : node_->passes->fetch_add(1);
    // SplitMix64 of (seed, pass): distinct, well-mixed seeds per pass.
    std::uint64_t z = node_->seed + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(pass + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    random_.seed(z ^ (z >> 31));
  }
  std::optional<Element> next() override {
    while (!exhausted_ && static_cast<std::int64_t>(buffer_.size()) < node_->first) {
      std::optional<Element> element = input_->next();
      if (!element) {
        exhausted_ = true;
        break;
      }
      buffer_.push_back(std::move(*element));
    }
    if (buffer_.empty()) return std::nullopt;
    // The modulo of a 64-bit draw: the same on every standard library
    // (std::uniform_int_distribution is not), bias below 2^-40 here.
    const std::size_t pick = static_cast<std::size_t>(random_() % buffer_.size());
    std::swap(buffer_[pick], buffer_.back());
    Element element = std::move(buffer_.back());
    buffer_.pop_back();
    return element;
  }

 private:
  const NodePtr node_;
  std::unique_ptr<DatasetIteratorImpl> input_;
  std::vector<Element> buffer_;
  std::mt19937_64 random_;
  bool exhausted_ = false;
};

// The input runs on a producer thread, up to buffer size elements ahead.
class PrefetchIterator final : public DatasetIteratorImpl {
 public:
  explicit PrefetchIterator(const NodePtr& node)
      : capacity_(static_cast<std::size_t>(node->first)), input_(make_iterator(node->input)) {
    producer_ = std::thread([this] { produce(); });
  }
  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    // The producer finishes the element it is making, then stops.
    producer_.join();
  }
  std::optional<Element> next() override {
    std::unique_lock<std::mutex> lock(mutex_);
    // The producer always ends: with an element, the end or an error.
    changed_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (!queue_.empty()) {
      Element element = std::move(queue_.front());
      queue_.pop_front();
      changed_.notify_all();
      return element;
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::nullopt;
  }

 private:
  void produce() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stopping_ || queue_.size() < capacity_; });
        if (stopping_) return;
      }
      std::optional<Element> element;
      std::exception_ptr error;
      try {
        element = input_->next();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (error || !element) {
        // Moved, not copied: the consumer holds the last reference and
        // destroys the exception in its own thread (a copy released here
        // after the unlock could end the exception's life in this thread
        // while the consumer still reads it, ordered only by the standard
        // library's reference count, which ThreadSanitizer cannot see).
        error_ = std::move(error);
        done_ = true;
        changed_.notify_all();
        return;
      }
      queue_.push_back(std::move(*element));
      changed_.notify_all();
    }
  }

  const std::size_t capacity_;
  std::unique_ptr<DatasetIteratorImpl> input_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Element> queue_;
  bool done_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread producer_;
};

std::unique_ptr<DatasetIteratorImpl> make_iterator(const NodePtr& node) {
  switch (node->kind) {
    case Kind::kFilter: return std::make_unique<FilterIterator>(node);
    case Kind::kShuffle: return std::make_unique<ShuffleIterator>(node);
    case Kind::kPrefetch: return std::make_unique<PrefetchIterator>(node);
    case Kind::kTensorSlices: return std::make_unique<TensorSlicesIterator>(node);
    case Kind::kRange: return std::make_unique<RangeIterator>(node);
    case Kind::kGenerator: return std::make_unique<GeneratorIterator>(node);
    case Kind::kFiles: return std::make_unique<FilesIterator>(node);
    case Kind::kMap: return std::make_unique<MapIterator>(node);
    case Kind::kShard: return std::make_unique<ShardIterator>(node);
    case Kind::kTake: return std::make_unique<TakeIterator>(node);
    case Kind::kRepeat: return std::make_unique<RepeatIterator>(node);
    case Kind::kBatch: return std::make_unique<BatchIterator>(node);
  }
  return nullptr;
}

std::shared_ptr<DatasetNode> derive(const std::shared_ptr<const DatasetNode>& input, Kind kind) {
  auto node = std::make_shared<DatasetNode>();
  node->kind = kind;
  node->input = input;
  return node;
}

const DatasetNode& source_of(const DatasetNode& node) {
  const DatasetNode* current = &node;
  while (current->input) current = current->input.get();
  return *current;
}

std::shared_ptr<const DatasetNode> replace_source(
    const std::shared_ptr<const DatasetNode>& node,
    const std::shared_ptr<const DatasetNode>& source) {
  if (!node->input) return source;
  auto copy = std::make_shared<DatasetNode>(*node);
  copy->input = replace_source(node->input, source);
  return copy;
}

}  // namespace
}  // namespace detail

using detail::DatasetNode;
using Kind = DatasetNode::Kind;

Dataset Dataset::from_tensor_slices(std::vector<Tensor> components) {
  if (components.empty()) {
    throw InvalidArgumentError("Dataset::from_tensor_slices", -1, "needs at least one component");
  }
  for (std::size_t i = 0; i < components.size(); ++i) {
    if (components[i].rank() == 0 || components[i].dim(0) != components[0].dim(0) ||
        components[0].rank() == 0) {
      throw InvalidArgumentError("Dataset::from_tensor_slices", -1,
                                 "component " + std::to_string(i) + " is " +
                                     components[i].debug_string() +
                                     "; every component needs a "
                                     "first dimension of the same size (component 0 is " +
                                     components[0].debug_string() + ")");
    }
  }
  auto node = std::make_shared<DatasetNode>();
  node->kind = Kind::kTensorSlices;
  node->components = std::move(components);
  return Dataset(node);
}

Dataset Dataset::from_tensors(std::vector<Tensor> components) {
  if (components.empty()) {
    throw InvalidArgumentError("Dataset::from_tensors", -1, "needs at least one component");
  }
  // The one element is the only slice of each component with a leading
  // dimension of 1 added.
  for (Tensor& component : components) {
    Shape shape{1};
    shape.insert(shape.end(), component.shape().begin(), component.shape().end());
    component = component.reshape(std::move(shape));
  }
  return from_tensor_slices(std::move(components));
}

Dataset Dataset::range(std::int64_t start, std::int64_t stop) {
  auto node = std::make_shared<DatasetNode>();
  node->kind = Kind::kRange;
  node->first = start;
  node->second = stop;
  return Dataset(node);
}

Dataset Dataset::from_generator(std::function<Generator()> make_generator) {
  if (!make_generator) {
    throw InvalidArgumentError("Dataset::from_generator", -1, "make_generator is empty");
  }
  auto node = std::make_shared<DatasetNode>();
  node->kind = Kind::kGenerator;
  node->make_generator = std::move(make_generator);
  return Dataset(node);
}

Dataset Dataset::from_files(std::vector<std::string> files, FileReader reader) {
  if (!reader) throw InvalidArgumentError("Dataset::from_files", -1, "reader is empty");
  auto node = std::make_shared<DatasetNode>();
  node->kind = Kind::kFiles;
  node->files = std::move(files);
  node->reader = std::move(reader);
  return Dataset(node);
}

FileReader Dataset::float_line_reader() {
  return [](const std::string& file) -> Generator {
    auto stream = std::make_shared<std::ifstream>(file);
    if (!*stream) {
      throw InvalidArgumentError("Dataset::float_line_reader", -1, "cannot open \"" + file + "\"");
    }
    auto line_number = std::make_shared<std::size_t>(0);
    return [stream, line_number, file]() -> std::optional<Element> {
      std::string line;
      while (std::getline(*stream, line)) {
        ++*line_number;
        std::istringstream numbers(line);
        std::vector<float> values;
        float value = 0;
        while (numbers >> value) values.push_back(value);
        if (!numbers.eof()) {
          throw InvalidArgumentError(
              "Dataset::float_line_reader", -1,
              file + ":" + std::to_string(*line_number) + ": not a number in \"" + line + "\"");
        }
        if (values.empty()) continue;
        const auto size = static_cast<std::int64_t>(values.size());
        return Element{Tensor(std::move(values), Shape{size})};
      }
      return std::nullopt;
    };
  };
}

Dataset Dataset::map(std::function<Element(Element)> fn) const {
  if (!fn) throw InvalidArgumentError("Dataset::map", -1, "the function is empty");
  auto node = detail::derive(node_, Kind::kMap);
  node->map_fn = std::move(fn);
  return Dataset(node);
}

Dataset Dataset::shard(std::int64_t num_shards, std::int64_t index) const {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    throw InvalidArgumentError("Dataset::shard", -1,
                               "needs num_shards >= 1 and 0 <= index < num_shards; got " +
                                   std::to_string(num_shards) + ", " + std::to_string(index));
  }
  auto node = detail::derive(node_, Kind::kShard);
  node->first = num_shards;
  node->second = index;
  return Dataset(node);
}

Dataset Dataset::take(std::int64_t count) const {
  auto node = detail::derive(node_, Kind::kTake);
  node->first = count;
  return Dataset(node);
}

Dataset Dataset::repeat(std::int64_t count) const {
  if (count < -1) {
    throw InvalidArgumentError("Dataset::repeat", -1,
                               "count must be -1 (forever) or >= 0, got " + std::to_string(count));
  }
  auto node = detail::derive(node_, Kind::kRepeat);
  node->first = count;
  return Dataset(node);
}

Dataset Dataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1) {
    throw InvalidArgumentError("Dataset::batch", -1,
                               "batch_size must be at least 1, got " + std::to_string(batch_size));
  }
  auto node = detail::derive(node_, Kind::kBatch);
  node->first = batch_size;
  node->drop_remainder = drop_remainder;
  return Dataset(node);
}

Dataset Dataset::filter(std::function<bool(const Element&)> predicate) const {
  if (!predicate) throw InvalidArgumentError("Dataset::filter", -1, "the predicate is empty");
  auto node = detail::derive(node_, Kind::kFilter);
  node->predicate = std::move(predicate);
  return Dataset(node);
}

Dataset Dataset::shuffle(std::int64_t buffer_size, std::uint64_t seed,
                         bool reshuffle_each_iteration) const {
  if (buffer_size < 1) {
    throw InvalidArgumentError(
        "Dataset::shuffle", -1,
        "buffer_size must be at least 1, got " + std::to_string(buffer_size));
  }
  auto node = detail::derive(node_, Kind::kShuffle);
  node->first = buffer_size;
  node->seed = seed;
  node->reshuffle = reshuffle_each_iteration;
  node->passes = std::make_shared<std::atomic<std::int64_t>>(0);
  return Dataset(node);
}

Dataset Dataset::prefetch(std::int64_t buffer_size) const {
  if (buffer_size < 1) {
    throw InvalidArgumentError(
        "Dataset::prefetch", -1,
        "buffer_size must be at least 1, got " + std::to_string(buffer_size));
  }
  auto node = detail::derive(node_, Kind::kPrefetch);
  node->first = buffer_size;
  return Dataset(node);
}

Dataset::Iterator::Iterator(std::unique_ptr<detail::DatasetIteratorImpl> impl)
    : impl_(std::move(impl)) {}
Dataset::Iterator::~Iterator() = default;
Dataset::Iterator::Iterator(Iterator&&) noexcept = default;
Dataset::Iterator& Dataset::Iterator::operator=(Iterator&&) noexcept = default;
std::optional<Element> Dataset::Iterator::get_next() { return impl_->next(); }

Dataset::Iterator Dataset::make_iterator() const { return Iterator(detail::make_iterator(node_)); }

std::vector<Element> Dataset::collect() const {
  std::vector<Element> elements;
  Iterator iterator = make_iterator();
  while (std::optional<Element> element = iterator.get_next())
    elements.push_back(std::move(*element));
  return elements;
}

std::optional<ElementSpec> Dataset::element_spec() const {
  struct Peek {
    Peek() { detail::t_peeking = true; }
    ~Peek() { detail::t_peeking = false; }
  } peek;
  Iterator iterator = make_iterator();
  std::optional<Element> element = iterator.get_next();
  if (!element) return std::nullopt;
  ElementSpec spec;
  for (const Tensor& component : *element)
    spec.push_back(ComponentSpec{component.dtype(), component.shape()});
  return spec;
}

const std::vector<std::string>& Dataset::files() const {
  static const std::vector<std::string> kNone;
  const DatasetNode& source = detail::source_of(*node_);
  return source.kind == Kind::kFiles ? source.files : kNone;
}

std::optional<std::int64_t> Dataset::batch_size() const {
  if (node_->kind != Kind::kBatch) return std::nullopt;
  return node_->first;
}

bool Dataset::drop_remainder() const {
  return node_->kind == Kind::kBatch && node_->drop_remainder;
}

std::optional<std::pair<std::int64_t, bool>> Dataset::last_batch() const {
  for (const DatasetNode* node = node_.get(); node != nullptr; node = node->input.get()) {
    if (node->kind == Kind::kBatch) return std::make_pair(node->first, node->drop_remainder);
  }
  return std::nullopt;
}

namespace {
std::shared_ptr<const DatasetNode> resize_last_batch(const std::shared_ptr<const DatasetNode>& node,
                                                     std::int64_t batch_size) {
  if (!node) return nullptr;
  auto copy = std::make_shared<DatasetNode>(*node);
  if (node->kind == Kind::kBatch) {
    copy->first = batch_size;
  } else {
    copy->input = resize_last_batch(node->input, batch_size);
    if (!copy->input) return nullptr;
  }
  return copy;
}
}  // namespace

Dataset Dataset::with_batch_size(std::int64_t batch_size) const {
  if (batch_size < 1) {
    throw InvalidArgumentError("Dataset::with_batch_size", -1,
                               "batch_size must be at least 1, got " + std::to_string(batch_size));
  }
  std::shared_ptr<const DatasetNode> resized = resize_last_batch(node_, batch_size);
  if (!resized) {
    throw InvalidArgumentError("Dataset::with_batch_size", -1,
                               "the pipeline " + describe() + " has no batch");
  }
  return Dataset(resized);
}

Dataset Dataset::unbatched() const {
  if (node_->kind != Kind::kBatch) {
    throw InvalidArgumentError("Dataset::unbatched", -1,
                               "the pipeline " + describe() + " does not end with batch");
  }
  return Dataset(node_->input);
}

Dataset Dataset::with_files(std::vector<std::string> files) const {
  const DatasetNode& source = detail::source_of(*node_);
  if (source.kind != Kind::kFiles) {
    throw InvalidArgumentError("Dataset::with_files", -1,
                               "the pipeline " + describe() + " does not read files");
  }
  auto replacement = std::make_shared<DatasetNode>(source);
  replacement->files = std::move(files);
  return Dataset(detail::replace_source(node_, replacement));
}

std::string Dataset::describe() const {
  std::vector<std::string> steps;
  for (const DatasetNode* node = node_.get(); node != nullptr; node = node->input.get()) {
    switch (node->kind) {
      case Kind::kTensorSlices:
        steps.push_back("tensor_slices(" + std::to_string(node->components.front().dim(0)) + ")");
        break;
      case Kind::kRange:
        steps.push_back("range(" + std::to_string(node->first) + ", " +
                        std::to_string(node->second) + ")");
        break;
      case Kind::kGenerator: steps.push_back("generator"); break;
      case Kind::kFiles:
        steps.push_back("files(" + std::to_string(node->files.size()) + ")");
        break;
      case Kind::kMap: steps.push_back("map"); break;
      case Kind::kShard:
        steps.push_back("shard(" + std::to_string(node->first) + ", " +
                        std::to_string(node->second) + ")");
        break;
      case Kind::kTake: steps.push_back("take(" + std::to_string(node->first) + ")"); break;
      case Kind::kRepeat: steps.push_back("repeat(" + std::to_string(node->first) + ")"); break;
      case Kind::kBatch:
        steps.push_back("batch(" + std::to_string(node->first) +
                        (node->drop_remainder ? ", drop_remainder" : "") + ")");
        break;
      case Kind::kFilter: steps.push_back("filter"); break;
      case Kind::kShuffle:
        steps.push_back("shuffle(" + std::to_string(node->first) + ", seed " +
                        std::to_string(node->seed) + ")");
        break;
      case Kind::kPrefetch: steps.push_back("prefetch(" + std::to_string(node->first) + ")"); break;
    }
  }
  std::string text;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    text += (text.empty() ? "" : " -> ") + *it;
  return text;
}

std::int64_t batch_rows(const Element& batch) {
  if (batch.empty() || batch.front().rank() == 0) {
    throw InvalidArgumentError("batch_rows", -1,
                               "the element is not batched (no leading dimension)");
  }
  const std::int64_t rows = batch.front().dim(0);
  for (std::size_t i = 1; i < batch.size(); ++i) {
    if (batch[i].rank() == 0 || batch[i].dim(0) != rows) {
      throw InvalidArgumentError("batch_rows", -1,
                                 "component " + std::to_string(i) + " is " +
                                     batch[i].debug_string() + " but component 0 has " +
                                     std::to_string(rows) + " rows");
    }
  }
  return rows;
}

Element slice_batch(const Element& batch, std::int64_t begin, std::int64_t end) {
  const std::int64_t rows = batch_rows(batch);
  if (begin < 0 || end < begin || end > rows) {
    throw InvalidArgumentError("slice_batch", -1,
                               "rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                   ") out of range for " + std::to_string(rows) + " rows");
  }
  Element slice;
  for (const Tensor& component : batch) slice.push_back(detail::slice_rows(component, begin, end));
  return slice;
}

Element stack_elements(const std::vector<Element>& elements) {
  if (elements.empty()) throw InvalidArgumentError("batch", -1, "no elements to stack");
  const Element& first = elements.front();
  Element batch;
  for (std::size_t c = 0; c < first.size(); ++c) {
    Shape shape = first[c].shape();
    shape.insert(shape.begin(), static_cast<std::int64_t>(elements.size()));
    Tensor stacked(first[c].dtype(), shape);
    const std::size_t row_bytes = first[c].num_bytes();
    for (std::size_t e = 0; e < elements.size(); ++e) {
      const Element& element = elements[e];
      if (element.size() != first.size() || element[c].dtype() != first[c].dtype() ||
          element[c].shape() != first[c].shape()) {
        throw InvalidArgumentError(
            "batch", -1,
            "element " + std::to_string(e) + " does not match element 0 (component " +
                std::to_string(c) + ": " +
                (c < element.size() ? element[c].debug_string() : std::string("missing")) + " vs " +
                first[c].debug_string() + "); batched elements need the same structure");
      }
      if (row_bytes > 0) {
        std::memcpy(static_cast<std::byte*>(stacked.raw_data()) + e * row_bytes,
                    element[c].raw_data(), row_bytes);
      }
    }
    batch.push_back(std::move(stacked));
  }
  return batch;
}

Element empty_batch(const ElementSpec& spec) {
  Element batch;
  for (const ComponentSpec& component : spec) {
    Shape shape = component.shape;
    if (shape.empty()) {
      throw InvalidArgumentError("empty_batch", -1, "the spec is not of a batched element");
    }
    shape[0] = 0;
    batch.emplace_back(component.dtype, shape);
  }
  return batch;
}

}  // namespace collective::distribute
