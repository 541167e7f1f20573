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
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "collective/errors.h"

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

  // With one replica (the default strategy, OneDeviceStrategy, one-device
  // mirrored strategies) the value is the plain value, as tf.distribute
  // returns it: `Tensor loss = strategy.run(step, x);` or `value()->...`.
  // With several replicas there is no single value: InvalidArgumentError
  // (reduce it with Strategy::reduce, or pick one with operator[]).
  const T& value() const& { return values_[single_index()]; }
  T& value() & { return values_[single_index()]; }
  T value() && { return std::move(values_[single_index()]); }
  operator const T&() const& { return value(); }
  operator T&() & { return value(); }
  operator T() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::size_t single_index() const {
    if (values_.size() != 1) {
      throw InvalidArgumentError(
          "DistributedValues::value", -1,
          "this value has " + std::to_string(values_.size()) +
              " per-replica values, not one; only a single-replica value converts to its plain "
              "value (reduce it with Strategy::reduce, or pick a replica's with operator[])");
    }
    return 0;
  }

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
