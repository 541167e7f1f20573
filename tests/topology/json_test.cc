// The JSON reader behind the topology dump and the rules file: valid
// documents, every kind of malformed one, and random mutations that must
// end in a value or an InvalidArgumentError, never in a crash.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "collective/errors.h"
#include "util/json.h"

namespace collective::internal {
namespace {

using json::Value;

Value parse(const std::string& text) { return json::parse(text, "test.json"); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InvalidArgumentError& error) {
    return error.what();
  }
  return "";
}

TEST(Json, ParsesEveryKind) {
  const Value value =
      parse(R"( {"a": [1, -2.5e3, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00"},
                                 "e": 0, "f": -0.25, "g": 9007199254740993} )");
  ASSERT_TRUE(value.is_object());
  const Value* a = value.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 5u);
  EXPECT_EQ(a->items()[0].integer(), 1);
  EXPECT_DOUBLE_EQ(a->items()[1].number(), -2500.0);
  EXPECT_FALSE(a->items()[1].integer().has_value());
  EXPECT_TRUE(a->items()[2].boolean());
  EXPECT_FALSE(a->items()[3].boolean());
  EXPECT_TRUE(a->items()[4].is_null());
  EXPECT_EQ(value.find("b")->find("c")->text(), "d\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(value.find("e")->integer(), 0);
  // Integers keep every digit, beyond double precision.
  EXPECT_EQ(value.find("g")->integer(), 9007199254740993LL);
  EXPECT_EQ(value.find("missing"), nullptr);
}

TEST(Json, RejectsMalformedDocumentsWithPosition) {
  const char* bad[] = {
      "",
      "   ",
      "{",
      "}",
      "[1,]",
      "{\"a\":1,}",
      "{\"a\" 1}",
      "{a: 1}",
      "[1 2]",
      "01",
      "1.",
      "1e",
      "-",
      "+1",
      "NaN",
      "Infinity",
      "tru",
      "nul",
      "\"abc",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "\"a\x01\"",
      "[1] 2",
      "{\"a\":1,\"a\":2}",
      "1e999",
      "// comment\n1",
      "[\"\\ud800\\u0041\"]",
  };
  for (const char* text : bad) {
    const std::string error = error_of(text);
    EXPECT_NE(error, "") << "accepted: " << text;
    EXPECT_NE(error.find("test.json"), std::string::npos) << error;
  }
  const std::string error = error_of("{\n  \"a\": [1,\n  2,, 3]}");
  EXPECT_NE(error.find("line 3 column 5"), std::string::npos) << error;
}

TEST(Json, BoundsNesting) {
  std::string deep(json::kMaxDepth + 1, '[');
  deep += std::string(json::kMaxDepth + 1, ']');
  EXPECT_NE(error_of(deep).find("nesting"), std::string::npos);
  std::string fits(json::kMaxDepth, '[');
  fits += std::string(json::kMaxDepth, ']');
  EXPECT_NO_THROW(parse(fits));
  // Far deeper than the stack would allow without the bound.
  const std::string very_deep(100000, '[');
  EXPECT_NE(error_of(very_deep).find("nesting"), std::string::npos);
}

TEST(Json, QuoteRoundTrips) {
  const std::string text = std::string("tab\there \"quoted\" back\\slash\n") + '\x01' + "\xc3\xa9";
  EXPECT_EQ(parse(json::json_quote(text)).text(), text);
}

TEST(Json, ObjectReaderChecksTypesRangesAndUnknownKeys) {
  const Value value = parse(R"({"n": 5, "s": "x", "big": 1e3, "neg": -1, "extra": 1})");
  json::ObjectReader reader(value, "where");
  EXPECT_EQ(reader.integer("n", 0, 0, 10), 5);
  EXPECT_EQ(reader.integer("absent", 7, 0, 10), 7);
  EXPECT_EQ(reader.string("s", ""), "x");
  EXPECT_THROW(reader.integer("big", 0, 0, 10), InvalidArgumentError);  // not an integer literal
  EXPECT_THROW(reader.integer("neg", 0, 0, 10), InvalidArgumentError);  // out of range
  EXPECT_THROW(reader.string("n", ""), InvalidArgumentError);           // wrong kind
  try {
    reader.finish();
    FAIL() << "unknown key accepted";
  } catch (const InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("\"extra\""), std::string::npos) << error.what();
  }
  EXPECT_THROW(json::ObjectReader(parse("[1]"), "where"), InvalidArgumentError);
}

// Random edits of valid documents (the rules file and a topology dump):
// every outcome is a value or an InvalidArgumentError.
TEST(Json, SurvivesRandomMutations) {
  const std::string seeds[] = {
      R"({"version": 1, "rules": [{"collective": "all_reduce", "nodes": 1, "ranks_per_node": 2,
          "min_bytes": 0, "max_bytes": 65536, "algorithm": "recursive_doubling"}]})",
      R"({"format": "collective-topology", "nodes": [{"host": "a\u00e9", "processing_units": 4,
          "gpus": [{"name": "cuda0", "numa_node": -1}], "ranks": [0, 1]}], "placements": []})",
  };
  const char alphabet[] = "{}[]\",:\\u0123456789.eE+-truefalsn \n\t\x01\xff";
  std::mt19937 random(12345);
  int parsed = 0;
  int rejected = 0;
  for (int trial = 0; trial < 50000; ++trial) {
    std::string text = seeds[trial % 2];
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = random() % (text.size() + 1);
      switch (random() % 4) {
        case 0:
          if (!text.empty() && at < text.size()) text.erase(at, 1 + random() % 3);
          break;
        case 1: text.insert(at, 1, alphabet[random() % (sizeof(alphabet) - 1)]); break;
        case 2:
          if (at < text.size()) text[at] = alphabet[random() % (sizeof(alphabet) - 1)];
          break;
        default: text = text.substr(0, at); break;
      }
    }
    try {
      json::parse(text, "mutant");
      ++parsed;
    } catch (const InvalidArgumentError&) {
      ++rejected;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace collective::internal
