#pragma once

#include <string>
#include <utility>
#include <variant>

namespace hostperf {

// A value or a human-readable error. Used at every component boundary instead
// of exceptions (C++20 has no std::expected).
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  static Result Error(std::string message) { return Result(ErrorTag{}, std::move(message)); }

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(state_); }

 private:
  struct ErrorTag {};
  Result(ErrorTag, std::string message) : state_(std::in_place_index<1>, std::move(message)) {}
  std::variant<T, std::string> state_;
};

}  // namespace hostperf
