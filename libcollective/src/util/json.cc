#include "util/json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "collective/errors.h"

namespace collective::internal::json {

const char* Value::kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "a boolean";
    case Kind::kNumber: return "a number";
    case Kind::kString: return "a string";
    case Kind::kArray: return "an array";
    case Kind::kObject: return "an object";
  }
  return "?";
}

std::optional<std::int64_t> Value::integer() const {
  if (kind_ != Kind::kNumber) return std::nullopt;
  if (text_.find_first_of(".eE") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text_.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<std::int64_t>(value);
}

const Value* Value::find(std::string_view key) const {
  for (const Member& member : members_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  Value document() {
    if (text_.size() > kMaxDocumentBytes) {
      fail("document of " + std::to_string(text_.size()) + " bytes exceeds the limit of " +
           std::to_string(kMaxDocumentBytes));
    }
    skip_space();
    Value value = parse_value(0);
    skip_space();
    if (at_ < text_.size()) fail("unexpected text after the document");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < at_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InvalidArgumentError(
        origin_, -1,
        "JSON line " + std::to_string(line) + " column " + std::to_string(column) + ": " + what);
  }

  bool done() const { return at_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[at_]; }

  void skip_space() {
    while (!done()) {
      const char c = text_[at_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++at_;
    }
  }

  void expect_word(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) fail("invalid literal");
    at_ += word.size();
  }

  Value parse_value(int depth) {
    if (depth >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (done()) fail("unexpected end of document, a value was expected");
    Value value;
    switch (peek()) {
      case '{':
        value.kind_ = Value::Kind::kObject;
        parse_object(value, depth);
        return value;
      case '[':
        value.kind_ = Value::Kind::kArray;
        parse_array(value, depth);
        return value;
      case '"':
        value.kind_ = Value::Kind::kString;
        value.text_ = parse_string();
        return value;
      case 't':
        expect_word("true");
        value.kind_ = Value::Kind::kBool;
        value.boolean_ = true;
        return value;
      case 'f':
        expect_word("false");
        value.kind_ = Value::Kind::kBool;
        return value;
      case 'n': expect_word("null"); return value;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          value.kind_ = Value::Kind::kNumber;
          parse_number(value);
          return value;
        }
        fail(std::string("unexpected character '") + printable(peek()) + "'");
    }
  }

  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    char code[8];
    std::snprintf(code, sizeof(code), "\\x%02x", u);
    return code;
  }

  void parse_object(Value& object, int depth) {
    ++at_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++at_;
      return;
    }
    while (true) {
      skip_space();
      if (peek() != '"') fail("an object key (a string) was expected");
      std::string key = parse_string();
      if (object.find(key) != nullptr) fail("duplicate key " + json_quote(key));
      skip_space();
      if (peek() != ':') fail("':' was expected after key " + json_quote(key));
      ++at_;
      skip_space();
      Value member = parse_value(depth + 1);
      object.members_.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() == '}') {
        ++at_;
        return;
      }
      fail("',' or '}' was expected in an object");
    }
  }

  void parse_array(Value& array, int depth) {
    ++at_;  // '['
    skip_space();
    if (peek() == ']') {
      ++at_;
      return;
    }
    while (true) {
      skip_space();
      array.items_.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() == ']') {
        ++at_;
        return;
      }
      fail("',' or ']' was expected in an array");
    }
  }

  unsigned hex4() {
    if (text_.size() - at_ < 4) fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return value;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string parse_string() {
    ++at_;  // opening quote
    std::string out;
    while (true) {
      if (done()) fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (done()) fail("unterminated escape");
      const char e = text_[at_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xDC00 && code <= 0xDFFF) fail("lone low surrogate in \\u escape");
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (text_.substr(at_, 2) != "\\u") fail("high surrogate without its low surrogate");
            at_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without its low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default: fail(std::string("invalid escape '\\") + printable(e) + "'");
      }
    }
  }

  void parse_number(Value& value) {
    const std::size_t start = at_;
    auto digits = [&] {
      const std::size_t first = at_;
      while (!done() && peek() >= '0' && peek() <= '9') ++at_;
      return at_ - first;
    };
    if (peek() == '-') ++at_;
    if (peek() == '0') {
      ++at_;
      if (peek() >= '0' && peek() <= '9') fail("leading zero in a number");
    } else if (digits() == 0) {
      fail("digits were expected in a number");
    }
    if (peek() == '.') {
      ++at_;
      if (digits() == 0) fail("digits were expected after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++at_;
      if (peek() == '+' || peek() == '-') ++at_;
      if (digits() == 0) fail("digits were expected in an exponent");
    }
    value.text_ = std::string(text_.substr(start, at_ - start));
    errno = 0;
    value.number_ = std::strtod(value.text_.c_str(), nullptr);
    if (!std::isfinite(value.number_)) fail("number " + value.text_ + " is out of range");
  }

  std::string_view text_;
  const std::string& origin_;
  std::size_t at_ = 0;
};

Value parse(std::string_view text, const std::string& origin) {
  return Parser(text, origin).document();
}

}  // namespace collective::internal::json

namespace collective {

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof(code), "\\u%04x", static_cast<unsigned>(c));
          out += code;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace collective

namespace collective::internal::json {

ObjectReader::ObjectReader(const Value& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object.is_object()) {
    fail(std::string("expected an object, found ") + Value::kind_name(object.kind()));
  }
}

void ObjectReader::fail(const std::string& why) const {
  throw InvalidArgumentError(where_, -1, why);
}

bool ObjectReader::has(std::string_view key) const { return object_.find(key) != nullptr; }

const Value* ObjectReader::take(std::string_view key, Value::Kind kind) {
  const Value* value = object_.find(key);
  if (value == nullptr) return nullptr;
  taken_.emplace_back(key);
  if (value->kind() != kind) {
    fail(json_quote(key) + " must be " + Value::kind_name(kind) + ", not " +
         Value::kind_name(value->kind()));
  }
  return value;
}

std::int64_t ObjectReader::integer(std::string_view key, std::int64_t fallback,
                                   std::int64_t minimum, std::int64_t maximum) {
  const Value* value = take(key, Value::Kind::kNumber);
  if (value == nullptr) return fallback;
  const std::optional<std::int64_t> parsed = value->integer();
  if (!parsed) {
    fail(json_quote(key) + " must be a whole number that fits in 64 bits, not " + value->text());
  }
  if (*parsed < minimum || *parsed > maximum) {
    fail(json_quote(key) + " = " + std::to_string(*parsed) + " is outside [" +
         std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
  }
  return *parsed;
}

std::int64_t ObjectReader::required_integer(std::string_view key, std::int64_t minimum,
                                            std::int64_t maximum) {
  if (!has(key)) fail(json_quote(key) + " is required");
  return integer(key, 0, minimum, maximum);
}

std::string ObjectReader::string(std::string_view key, std::string fallback) {
  const Value* value = take(key, Value::Kind::kString);
  return value == nullptr ? fallback : value->text();
}

std::string ObjectReader::required_string(std::string_view key) {
  if (!has(key)) fail(json_quote(key) + " is required");
  return string(key, "");
}

const Value* ObjectReader::array(std::string_view key) { return take(key, Value::Kind::kArray); }

const Value* ObjectReader::required_array(std::string_view key) {
  if (!has(key)) fail(json_quote(key) + " is required");
  return array(key);
}

const Value* ObjectReader::object(std::string_view key) { return take(key, Value::Kind::kObject); }

const Value* ObjectReader::required_object(std::string_view key) {
  if (!has(key)) fail(json_quote(key) + " is required");
  return object(key);
}

void ObjectReader::finish() const {
  for (const Value::Member& member : object_.members()) {
    if (std::find(taken_.begin(), taken_.end(), member.first) == taken_.end()) {
      fail("unknown key " + json_quote(member.first));
    }
  }
}

}  // namespace collective::internal::json
