#pragma once

#include <string>
#include <utility>
#include <variant>

namespace hostperf {

// Why something failed: a machine reason, snake_case, the label value of
// hostperf_probe_failures_total{reason} and of the run API's "reason", plus a
// message for a person. Every layer reports failures with it.
struct Failure {
  std::string reason;
  std::string message;
};

// The reason of a Failure made from a message alone: bad input that the
// caller turns into its own reason (bad_options, bad_config, ...).
inline constexpr const char* kInvalidReason = "invalid";

// A value or a Failure. Used at every component boundary instead of
// exceptions (C++20 has no std::expected).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}            // NOLINT: implicit by design
  Result(Failure failure) : state_(std::in_place_index<1>, std::move(failure)) {}  // NOLINT: implicit by design
  static Result Error(std::string message) { return Failure{kInvalidReason, std::move(message)}; }
  static Result Error(std::string reason, std::string message) {
    return Failure{std::move(reason), std::move(message)};
  }

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Failure& failure() const { return std::get<1>(state_); }
  const std::string& reason() const { return failure().reason; }
  const std::string& error() const { return failure().message; }

 private:
  std::variant<T, Failure> state_;
};

// The void form: success, or a Failure.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Failure failure) : failure_(std::move(failure)), ok_(false) {}  // NOLINT: implicit by design
  static Result Ok() { return {}; }
  static Result Error(std::string message) { return Failure{kInvalidReason, std::move(message)}; }
  static Result Error(std::string reason, std::string message) {
    return Failure{std::move(reason), std::move(message)};
  }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Failure& failure() const { return failure_; }
  const std::string& reason() const { return failure_.reason; }
  const std::string& error() const { return failure_.message; }

 private:
  Failure failure_;
  bool ok_ = true;
};

}  // namespace hostperf
