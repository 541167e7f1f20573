// A small input pipeline in the manner of tf.data: a source (in-memory
// slices, a range, a generator or a list of files) followed by
// transformations (map, filter, shard, take, repeat, batch, shuffle,
// prefetch). A Dataset is an
// immutable description; each make_iterator() starts a fresh pass (an
// epoch) over it. Iterators are not thread-safe; the strategies iterate on
// the caller's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/distribute/tensor.h"

namespace collective::distribute {

// One element: its components (e.g. {features, label}). A batched element
// has a leading batch dimension on every component.
using Element = std::vector<Tensor>;

// Produces the elements of one pass; std::nullopt at the end.
using Generator = std::function<std::optional<Element>()>;

// Reads one file into a generator of its elements.
using FileReader = std::function<Generator(const std::string& file)>;

// dtype and shape of each component (without a batch dimension unless the
// dataset is batched).
struct ComponentSpec {
  DataType dtype = DataType::kFloat32;
  Shape shape;
};
using ElementSpec = std::vector<ComponentSpec>;

namespace detail {
struct DatasetNode;
class DatasetIteratorImpl;
}  // namespace detail

class Dataset {
 public:
  // Elements are the slices of the components along their first dimension,
  // which all components must share.
  static Dataset from_tensor_slices(std::vector<Tensor> components);
  // One element made of the components as given (tf.data's from_tensors):
  // from_tensors({features, label}).repeat(100).batch(10).
  static Dataset from_tensors(std::vector<Tensor> components);
  // int64 scalars start, start+1, ..., stop-1.
  static Dataset range(std::int64_t start, std::int64_t stop);
  static Dataset range(std::int64_t stop) { return range(0, stop); }
  // make_generator is called once per pass.
  static Dataset from_generator(std::function<Generator()> make_generator);
  // The elements of each file in order, read by reader. A dataset built
  // from files can be sharded by file across workers.
  static Dataset from_files(std::vector<std::string> files, FileReader reader);
  // A FileReader for text files of numbers: each non-empty line becomes one
  // element with one float32 component of shape [numbers on the line].
  static FileReader float_line_reader();

  Dataset map(std::function<Element(Element)> fn) const;
  // Keeps elements index, index + num_shards, ... (0 <= index < num_shards).
  Dataset shard(std::int64_t num_shards, std::int64_t index) const;
  Dataset take(std::int64_t count) const;
  // count passes over the data (tf.data's repeat): 0 is an empty dataset,
  // -1 repeats forever.
  Dataset repeat(std::int64_t count = -1) const;
  // Stacks batch_size consecutive elements; the last batch may be smaller
  // unless drop_remainder.
  Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const;
  // Keeps the elements for which predicate returns true.
  Dataset filter(std::function<bool(const Element&)> predicate) const;
  // tf.data's shuffle: a buffer of buffer_size elements (>= 1) is filled
  // from the input and each output is drawn uniformly from it, its place
  // taken by the next input element. Deterministic for a seed (the same
  // order on every run and every worker; not TF's random stream). With
  // reshuffle_each_iteration each pass (each make_iterator(), each repeat)
  // draws another order, the k-th pass of this dataset always the same one.
  Dataset shuffle(std::int64_t buffer_size, std::uint64_t seed,
                  bool reshuffle_each_iteration = true) const;
  // Produces up to buffer_size (>= 1) elements ahead on a background thread
  // of the iterator, so the input pipeline (its sources, map and filter
  // functions, which must then be safe to call from that thread) overlaps
  // the consumer's work. The elements and their order are unchanged; an
  // error of the input is raised by the get_next() that would have
  // returned its element.
  Dataset prefetch(std::int64_t buffer_size) const;

  // An iterator owns its pipeline (shared with the Dataset and its copies):
  // it stays valid after the Dataset it came from is destroyed.
  class Iterator {
   public:
    ~Iterator();
    Iterator(Iterator&&) noexcept;
    Iterator& operator=(Iterator&&) noexcept;
    std::optional<Element> get_next();

   private:
    friend class Dataset;
    explicit Iterator(std::unique_ptr<detail::DatasetIteratorImpl> impl);
    std::unique_ptr<detail::DatasetIteratorImpl> impl_;
  };
  Iterator make_iterator() const;

  // Every element of one pass (not for infinite datasets).
  std::vector<Element> collect() const;

  // The spec of the first element of a pass; std::nullopt when empty.
  std::optional<ElementSpec> element_spec() const;

  // What the distribution needs to know about the pipeline.
  // The files of a from_files source (empty otherwise).
  const std::vector<std::string>& files() const;
  // The batch size when the last transformation is batch.
  std::optional<std::int64_t> batch_size() const;
  bool drop_remainder() const;
  // The last batch of the pipeline, wherever it is (transformations after
  // it work on batches): its size and drop_remainder; std::nullopt when the
  // pipeline has no batch.
  std::optional<std::pair<std::int64_t, bool>> last_batch() const;
  // This pipeline with its last batch's size replaced, everything after it
  // kept (InvalidArgumentError if it has no batch).
  Dataset with_batch_size(std::int64_t batch_size) const;
  // This pipeline without its final batch (InvalidArgumentError if it has none).
  Dataset unbatched() const;
  // This pipeline reading other files (InvalidArgumentError unless from_files).
  Dataset with_files(std::vector<std::string> files) const;

  // A short description: "files(4) -> map -> batch(8)".
  std::string describe() const;

 private:
  explicit Dataset(std::shared_ptr<const detail::DatasetNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const detail::DatasetNode> node_;
};

// Rows [begin, end) of every component of a batched element.
Element slice_batch(const Element& batch, std::int64_t begin, std::int64_t end);
// Stacks elements into one batched element (same spec each).
Element stack_elements(const std::vector<Element>& elements);
// A batched element with zero rows.
Element empty_batch(const ElementSpec& spec_of_batched_element);
// The rows of a batched element (its components' shared first dimension).
std::int64_t batch_rows(const Element& batch);

}  // namespace collective::distribute
