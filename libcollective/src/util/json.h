// A small, strict JSON reader and writer for the library's own files (the
// topology dump, the rules file). No dependency; built to take hostile
// input: every malformed document is an InvalidArgumentError naming the
// origin, line and column, never a crash, and nesting and size are bounded.
#pragma once

#include "collective/in_tree/json_quote.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collective::internal::json {

// Deeper documents are rejected: no file of ours nests more than a few
// levels, and the bound keeps recursion off the end of the stack.
inline constexpr int kMaxDepth = 64;
// Larger documents are rejected: the largest dump (thousands of ranks)
// stays far below this.
inline constexpr std::size_t kMaxDocumentBytes = 64u << 20;

class Value {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, Value>;

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool boolean() const { return boolean_; }
  double number() const { return number_; }
  // The number as written, when it is an integer literal (no fraction, no
  // exponent) that fits in int64; nullopt otherwise.
  std::optional<std::int64_t> integer() const;
  const std::string& text() const { return text_; }  // string value
  const std::vector<Value>& items() const { return items_; }
  const std::vector<Member>& members() const { return members_; }
  // Object member by key; nullptr when absent or when this is not an object.
  const Value* find(std::string_view key) const;

  static const char* kind_name(Kind kind);

 private:
  friend class Parser;
  Kind kind_ = Kind::kNull;
  bool boolean_ = false;
  double number_ = 0.0;
  std::string text_;  // string value, or a number's literal
  std::vector<Value> items_;
  std::vector<Member> members_;
};

// Parses a whole document. `origin` (a file name) starts every error
// message. Duplicate keys, trailing text, control characters in strings,
// lone surrogates, leading zeros, NaN/Infinity and comments are errors.
Value parse(std::string_view text, const std::string& origin);

// `text` as a JSON string literal, quotes included (the public writer).
using ::collective::json_quote;

// Reads the members of one object with type and range checks; every error
// names `where` ("rules.json: rule 3") and the key. finish() rejects keys
// nobody asked for, so a misspelt key is an error, not a silent default.
class ObjectReader {
 public:
  ObjectReader(const Value& object, std::string where);

  bool has(std::string_view key) const;
  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t minimum,
                       std::int64_t maximum);
  std::int64_t required_integer(std::string_view key, std::int64_t minimum, std::int64_t maximum);
  std::string string(std::string_view key, std::string fallback);
  std::string required_string(std::string_view key);
  // The member when it is an array; nullptr when absent.
  const Value* array(std::string_view key);
  const Value* required_array(std::string_view key);
  // The member when it is an object; nullptr when absent.
  const Value* object(std::string_view key);
  const Value* required_object(std::string_view key);
  void finish() const;

  [[noreturn]] void fail(const std::string& why) const;

 private:
  const Value* take(std::string_view key, Value::Kind kind);
  const Value& object_;
  std::string where_;
  std::vector<std::string> taken_;
};

}  // namespace collective::internal::json
