// What an algorithm keeps for one communicator between calls (the node's
// shared-memory segment, NCCL communicators and streams), in a slot of its
// own type. The owner asks for its type and gets it, made on first use;
// CommunicatorState holds the slots without knowing what is in them, so no
// algorithm's state is a public field of the communicator, and this layer
// names none of the layers above it.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace collective::internal {

// Base of every slotted resource. The destructor must not throw: it runs
// when the communicator is released, before its MPI communicator is freed.
class AlgorithmResources {
 public:
  virtual ~AlgorithmResources() = default;
};

template <typename T>
concept SlottedResource = std::derived_from<T, AlgorithmResources>;

class ResourceSlots {
 public:
  ResourceSlots() = default;
  ResourceSlots(const ResourceSlots&) = delete;
  ResourceSlots& operator=(const ResourceSlots&) = delete;
  ~ResourceSlots() { clear(); }

  // The resource of type T, or nullptr when none was made.
  template <SlottedResource T>
  T* find() const {
    const std::size_t index = index_of<T>();
    return index < slots_.size() ? static_cast<T*>(slots_[index].get()) : nullptr;
  }

  // The resource of type T, made by `make()` (a std::unique_ptr<T>) on
  // first use. If make throws, the slot stays empty.
  template <SlottedResource T, typename Make>
  T& get_or_make(Make&& make) {
    if (T* found = find<T>()) return *found;
    const std::size_t index = index_of<T>();
    std::unique_ptr<T> made = std::forward<Make>(make)();
    if (slots_.size() <= index) slots_.resize(index + 1);
    T& result = *made;
    slots_[index] = std::move(made);
    made_order_.push_back(index);
    return result;
  }

  // Destroys every resource, the last made first (a resource may use one
  // made before it).
  void clear() noexcept {
    while (!made_order_.empty()) {
      slots_[made_order_.back()].reset();
      made_order_.pop_back();
    }
  }

 private:
  // One index per resource type, handed out on first use in this process.
  static std::size_t next_index();
  template <SlottedResource T>
  static std::size_t index_of() {
    static const std::size_t index = next_index();
    return index;
  }

  std::vector<std::unique_ptr<AlgorithmResources>> slots_;
  std::vector<std::size_t> made_order_;
};

}  // namespace collective::internal
