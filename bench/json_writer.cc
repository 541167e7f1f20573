#include "json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "collective/in_tree/json_quote.h"

namespace collective::bench {

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    // Elements of the two outer levels one per line, so that rows read one
    // per line; deeper ones inline.
    const bool multiline = has_element_.size() <= 2;
    if (has_element_.back()) out_ << (multiline ? "," : ", ");
    has_element_.back() = true;
    if (multiline) out_ << '\n' << std::string(2 * has_element_.size(), ' ');
  }
}

void JsonWriter::begin_object() {
  before_value();
  out_ << '{';
  has_element_.push_back(false);
}

void JsonWriter::end_object() {
  const bool multiline = has_element_.size() <= 2 && has_element_.back();
  has_element_.pop_back();
  if (multiline) out_ << '\n' << std::string(2 * has_element_.size(), ' ');
  out_ << '}';
  if (has_element_.empty()) out_ << '\n';
}

void JsonWriter::begin_array() {
  before_value();
  out_ << '[';
  has_element_.push_back(false);
}

void JsonWriter::end_array() {
  const bool multiline = has_element_.size() <= 2 && has_element_.back();
  has_element_.pop_back();
  if (multiline) out_ << '\n' << std::string(2 * has_element_.size(), ' ');
  out_ << ']';
  if (has_element_.empty()) out_ << '\n';
}

void JsonWriter::key(std::string_view name) {
  before_value();
  out_ << json_quote(name) << ": ";
  after_key_ = true;
}

void JsonWriter::value(std::string_view text) {
  before_value();
  out_ << json_quote(text);
}

void JsonWriter::value(double number) {
  before_value();
  if (!std::isfinite(number)) {
    out_ << "null";
    return;
  }
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), number);
  out_ << std::string_view(text, static_cast<std::size_t>(result.ptr - text));
}

void JsonWriter::value(std::int64_t number) {
  before_value();
  out_ << number;
}

void JsonWriter::value(std::uint64_t number) {
  before_value();
  out_ << number;
}

void JsonWriter::value(bool flag) {
  before_value();
  out_ << (flag ? "true" : "false");
}

void JsonWriter::null() {
  before_value();
  out_ << "null";
}

}  // namespace collective::bench
