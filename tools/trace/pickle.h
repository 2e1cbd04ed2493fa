// A bounded decoder for the subset of Python's pickle format that PyTorch's
// Flight Recorder writes (torch._C._distributed_c10d._dump_fr_trace(), and
// the dump-on-timeout files): protocol 2 to 5, with dicts, lists, tuples,
// str, bytes, int, float, bool and None only. It never runs code and never
// resolves a class: an opcode outside that subset (GLOBAL, REDUCE, BUILD,
// ...) is a foreign file, reported with one line. Strings point into the
// caller's buffer (no copies), so a PickleDoc must not outlive its bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
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
  int64_t i = 0;       // kInt, kBool (0 or 1)
  double f = 0;        // kFloat
  std::string_view s;  // kStr (str and bytes alike)

  // kList, kTuple; kDict: key, value, key, value, ... (in the doc's arena).
  std::span<const Value* const> items() const { return {items_, size_}; }
  bool Is(Kind k) const { return kind == k; }
  // kDict: the value under the str key, or null. With `hint`, the search
  // starts at *hint and leaves it just past the key found: reading keys in
  // the dict's own order costs one comparison each.
  const Value* Get(std::string_view key, uint32_t* hint = nullptr) const;
  const char* KindName() const;  // "dict", "list", ...

 private:
  friend class PickleDoc;
  const Value** items_ = nullptr;
  uint32_t size_ = 0, capacity_ = 0;
};

// The decoded objects of one pickle; Root() is what the pickle returns.
class PickleDoc {
 public:
  // Throws PickleError. At most `max_values` objects, and at most
  // `max_bytes` of memory for the objects, their items, the stack and the
  // memo together (checked before every opcode): a bound on memory whatever
  // the bytes say, however often they reuse a memoised object.
  PickleDoc(std::string_view bytes, std::size_t max_values = 8'000'000,
            std::size_t max_bytes = SIZE_MAX);
  PickleDoc(const PickleDoc&) = delete;
  PickleDoc& operator=(const PickleDoc&) = delete;
  const Value& Root() const { return *root_; }

 private:
  Value* New(Value::Kind kind);
  void Append(Value* container, Value* const* from, std::size_t n);
  // Every object and every container's items come from one arena, freed at
  // once (Value is trivially destructible): a 2000-entry dump is about a
  // million small objects.
  // What the arena took from the heap, counted (its blocks grow, so it
  // holds more than the objects themselves).
  class Counting : public std::pmr::memory_resource {
   public:
    std::size_t bytes = 0;

   private:
    void* do_allocate(std::size_t n, std::size_t align) override {
      bytes += n;
      return std::pmr::new_delete_resource()->allocate(n, align);
    }
    void do_deallocate(void* p, std::size_t n, std::size_t align) override {
      std::pmr::new_delete_resource()->deallocate(p, n, align);
    }
    bool do_is_equal(const memory_resource& o) const noexcept override { return this == &o; }
  };
  Counting heap_;
  std::pmr::monotonic_buffer_resource arena_{&heap_};
  std::size_t values_ = 0;
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
  // Each distinct string is written once and referred back to after (the
  // memo, as Python's pickler does for a shared str object).
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
  std::unordered_map<std::string, uint32_t> memo_;
};

}  // namespace ddp::trace::pickle
