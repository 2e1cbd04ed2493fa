// A bounded decoder for the subset of Python's pickle format that PyTorch's
// Flight Recorder writes (torch._C._distributed_c10d._dump_fr_trace(), and
// the dump-on-timeout files): protocol 2 to 5, with dicts, lists, tuples,
// str, bytes, int, float, bool and None only. It never runs code and never
// resolves a class: an opcode outside that subset (GLOBAL, REDUCE, BUILD,
// ...) is a foreign file, reported with one line. Strings point into the
// caller's buffer (no copies), so a PickleDoc must not outlive its bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::trace::pickle {

// What is wrong with the bytes, with the byte offset: "truncated at byte 912",
// "opcode 0x63 ('c') at byte 2 is outside the Flight Recorder subset".
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kList, kTuple, kDict };
  Kind kind = Kind::kNone;
  int64_t i = 0;             // kInt, kBool (0 or 1)
  double f = 0;              // kFloat
  std::string_view s;        // kStr (str and bytes alike)
  std::vector<const Value*> items;  // kList, kTuple; kDict: key, value, key, value, ...

  bool Is(Kind k) const { return kind == k; }
  // kDict: the value under the str key, or null.
  const Value* Get(std::string_view key) const;
  const char* KindName() const;  // "dict", "list", ...
};

// The decoded objects of one pickle; Root() is what the pickle returns.
class PickleDoc {
 public:
  // Throws PickleError. At most `max_values` objects (a bound on memory,
  // whatever the bytes say).
  PickleDoc(std::string_view bytes, std::size_t max_values = 8'000'000);
  PickleDoc(const PickleDoc&) = delete;
  PickleDoc& operator=(const PickleDoc&) = delete;
  const Value& Root() const { return *root_; }

 private:
  Value* New(Value::Kind kind);
  std::deque<Value> values_;
  std::size_t max_values_;
  const Value* root_ = nullptr;
};

// Writes the same subset (protocol 2), for --to-fr: the suite's dumps in
// PyTorch's format. Build the object with the Add* calls in pickle order.
class PickleWriter {
 public:
  PickleWriter();
  void None();
  void Bool(bool v);
  void Int(int64_t v);
  void Float(double v);
  void Str(std::string_view v);
  // Containers: Begin, then the items (dict: key, value, ...), then End.
  void BeginDict();
  void EndDict();
  void BeginList();
  void EndList();
  void BeginTuple();
  void EndTuple();
  // STOP; returns the bytes.
  std::string Finish();

 private:
  std::string out_;
};

}  // namespace ddp::trace::pickle
