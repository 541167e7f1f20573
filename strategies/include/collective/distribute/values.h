// Distributed values: one value per local replica of a strategy.
//
//   DistributedValues<T>  the common base: values(), one per local replica
//   PerReplica<T>         values that differ per replica (inputs, results of
//                         Strategy::run, per-replica gradients)
//   Mirrored<T>           values that are the same on every replica (the
//                         result of an all-reduce)
//
// They hold this worker's replicas only (local replica i at index i); the
// replicas of other workers live in other processes.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace collective::distribute {

template <typename T>
class DistributedValues {
 public:
  using value_type = T;

  DistributedValues() = default;
  explicit DistributedValues(std::vector<T> values) : values_(std::move(values)) {}

  // One value per local replica, in local replica order.
  const std::vector<T>& values() const { return values_; }
  std::vector<T>& values() { return values_; }

  std::size_t num_replicas() const { return values_.size(); }
  const T& operator[](std::size_t local_replica) const { return values_[local_replica]; }
  T& operator[](std::size_t local_replica) { return values_[local_replica]; }

 private:
  std::vector<T> values_;
};

template <typename T>
class PerReplica : public DistributedValues<T> {
 public:
  using DistributedValues<T>::DistributedValues;
};

template <typename T>
class Mirrored : public DistributedValues<T> {
 public:
  using DistributedValues<T>::DistributedValues;
};

namespace detail {
template <typename T>
struct IsDistributedValues : std::false_type {};
template <typename T>
struct IsDistributedValues<PerReplica<T>> : std::true_type {};
template <typename T>
struct IsDistributedValues<Mirrored<T>> : std::true_type {};
template <typename T>
struct IsDistributedValues<DistributedValues<T>> : std::true_type {};
}  // namespace detail

template <typename T>
inline constexpr bool is_distributed_values_v =
    detail::IsDistributedValues<std::remove_cvref_t<T>>::value;

}  // namespace collective::distribute
