#include "tools/trace/pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ddp::trace::pickle {
namespace {

std::string Hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

// Little-endian unsigned of n bytes at p.
uint64_t Le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

const Value* Value::Get(std::string_view key, uint32_t* hint) const {
  if (kind != Kind::kDict || size_ < 2) return nullptr;
  const uint32_t pairs = size_ / 2;
  const uint32_t start = hint != nullptr && *hint < pairs ? *hint : 0;
  for (uint32_t n = 0; n < pairs; ++n) {
    const uint32_t k = (start + n) % pairs;
    if (items_[2 * k]->kind == Kind::kStr && items_[2 * k]->s == key) {
      if (hint != nullptr) *hint = k + 1;
      return items_[2 * k + 1];
    }
  }
  return nullptr;
}

const char* Value::KindName() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kStr:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
  }
  return "?";
}

Value* PickleDoc::New(Value::Kind kind) {
  if (values_ >= max_values_) {
    throw PickleError("more than " + std::to_string(max_values_) + " objects");
  }
  ++values_;
  auto* v = new (arena_.allocate(sizeof(Value), alignof(Value))) Value();
  v->kind = kind;
  return v;
}

void PickleDoc::Append(Value* c, Value* const* from, std::size_t n) {
  if (c->size_ + n > c->capacity_) {
    // Doubling, in the arena: the old block is simply left behind.
    const std::size_t cap = std::max<std::size_t>({8, 2 * std::size_t{c->capacity_}, c->size_ + n});
    if (cap > max_values_)
      throw PickleError("a container of more than " + std::to_string(max_values_) + " items");
    auto** items =
        static_cast<const Value**>(arena_.allocate(cap * sizeof(Value*), alignof(Value*)));
    std::copy(c->items_, c->items_ + c->size_, items);
    c->items_ = items;
    c->capacity_ = static_cast<uint32_t>(cap);
  }
  std::copy(from, from + n, c->items_ + c->size_);
  c->size_ += static_cast<uint32_t>(n);
}

PickleDoc::PickleDoc(std::string_view bytes, std::size_t max_values, std::size_t max_bytes)
    : max_values_(max_values) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t at = 0;
  std::vector<Value*> stack;
  std::vector<std::size_t> marks;
  std::vector<Value*> memo;
  stack.reserve(64);

  auto fail = [&](std::size_t where, const std::string& what) -> void {
    throw PickleError(what + " at byte " + std::to_string(where));
  };
  auto need = [&](std::size_t k) {
    if (n - at < k) throw PickleError("truncated at byte " + std::to_string(n));
  };
  auto pop = [&](std::size_t where) {
    if (stack.empty() || (!marks.empty() && stack.size() == marks.back()))
      fail(where, "stack underflow");
    Value* v = stack.back();
    stack.pop_back();
    return v;
  };
  auto pop_mark = [&](std::size_t where) {
    if (marks.empty()) fail(where, "no MARK");
    const std::size_t m = marks.back();
    marks.pop_back();
    return m;
  };
  auto top_container = [&](std::size_t where, std::size_t below, Value::Kind kind) {
    if (stack.size() < below + 1) fail(where, "stack underflow");
    Value* c = stack[stack.size() - 1 - below];
    if (c->kind != kind)
      fail(where, std::string("expected a ") + (kind == Value::Kind::kDict ? "dict" : "list"));
    return c;
  };
  auto str = [&](std::size_t len) {
    need(len);
    Value* v = New(Value::Kind::kStr);
    v->s = bytes.substr(at, len);
    at += len;
    stack.push_back(v);
  };
  auto integer = [&](int64_t x) {
    Value* v = New(Value::Kind::kInt);
    v->i = x;
    stack.push_back(v);
  };
  auto tuple_of = [&](std::size_t from) {
    Value* t = New(Value::Kind::kTuple);
    Append(t, stack.data() + from, stack.size() - from);
    stack.resize(from);
    stack.push_back(t);
  };
  auto memo_put = [&](std::size_t where, uint64_t idx) {
    if (stack.empty()) fail(where, "stack underflow");
    // The pickler numbers memo slots 0, 1, 2, ...: a far index is not ours.
    if (idx > memo.size() + 1024)
      fail(where, "memo index " + std::to_string(idx) + " out of range");
    if (idx >= memo.size()) memo.resize(idx + 1, nullptr);
    memo[idx] = stack.back();
  };
  auto memo_get = [&](std::size_t where, uint64_t idx) {
    if (idx >= memo.size() || memo[idx] == nullptr)
      fail(where, "memo index " + std::to_string(idx) + " unset");
    stack.push_back(memo[idx]);
  };

  if (n < 2 || p[0] != 0x80) throw PickleError("not a pickle (no PROTO opcode at byte 0)");
  while (true) {
    need(1);
    const std::size_t op_at = at;
    // Every opcode adds at most one object, one stack slot, one memo slot
    // (or 1024 for a far memo index) or one block of items: checked here,
    // the whole doc's memory stays within max_bytes.
    const std::size_t used = heap_.bytes + sizeof(Value*) * (stack.capacity() + memo.capacity()) +
                             sizeof(std::size_t) * marks.capacity();
    if (used > max_bytes) {
      fail(op_at, "objects taking more than " + std::to_string(max_bytes >> 20) +
                      " MiB of memory for " + std::to_string(n) +
                      " bytes of pickle (a memoised object reused too often)");
    }
    const unsigned char op = p[at++];
    switch (op) {
      case 0x80:  // PROTO
        need(1);
        if (p[at] < 2 || p[at] > 5)
          fail(op_at, "pickle protocol " + std::to_string(p[at]) + " unsupported");
        ++at;
        break;
      case 0x95:  // FRAME (protocol 4+): a length to skip
        need(8);
        at += 8;
        break;
      case '.': {  // STOP
        if (stack.size() != 1 || !marks.empty())
          fail(op_at, "STOP with " + std::to_string(stack.size()) + " objects on the stack");
        root_ = stack.back();
        if (at != n) fail(at, "trailing bytes after STOP");
        return;
      }
      case '(':  // MARK
        marks.push_back(stack.size());
        break;
      case '}':
        stack.push_back(New(Value::Kind::kDict));
        break;
      case ']':
        stack.push_back(New(Value::Kind::kList));
        break;
      case ')':
        stack.push_back(New(Value::Kind::kTuple));
        break;
      case 'N':
        stack.push_back(New(Value::Kind::kNone));
        break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Value* v = New(Value::Kind::kBool);
        v->i = op == 0x88;
        stack.push_back(v);
        break;
      }
      case 's': {  // SETITEM
        Value* value = pop(op_at);
        Value* key = pop(op_at);
        Value* d = top_container(op_at, 0, Value::Kind::kDict);
        Value* const kv[] = {key, value};
        Append(d, kv, 2);
        break;
      }
      case 'u': {  // SETITEMS
        const std::size_t m = pop_mark(op_at);
        if ((stack.size() - m) % 2 != 0) fail(op_at, "odd SETITEMS");
        Value* d = top_container(op_at, stack.size() - m, Value::Kind::kDict);
        Append(d, stack.data() + m, stack.size() - m);
        stack.resize(m);
        break;
      }
      case 'a': {  // APPEND
        Value* v = pop(op_at);
        Append(top_container(op_at, 0, Value::Kind::kList), &v, 1);
        break;
      }
      case 'e': {  // APPENDS
        const std::size_t m = pop_mark(op_at);
        Value* l = top_container(op_at, stack.size() - m, Value::Kind::kList);
        Append(l, stack.data() + m, stack.size() - m);
        stack.resize(m);
        break;
      }
      case 't':  // TUPLE
        tuple_of(pop_mark(op_at));
        break;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const std::size_t k = op - 0x84u;
        if (stack.size() < k || (!marks.empty() && stack.size() - k < marks.back()))
          fail(op_at, "stack underflow");
        tuple_of(stack.size() - k);
        break;
      }
      case 'X':  // BINUNICODE
        need(4);
        at += 4;
        str(Le(p + at - 4, 4));
        break;
      case 0x8c:
        need(1);
        at += 1;
        str(p[at - 1]);
        break;      // SHORT_BINUNICODE
      case 0x8d: {  // BINUNICODE8
        need(8);
        const uint64_t len = Le(p + at, 8);
        at += 8;
        if (len > n) throw PickleError("truncated at byte " + std::to_string(n));
        str(len);
        break;
      }
      case 'B':  // BINBYTES
        need(4);
        at += 4;
        str(Le(p + at - 4, 4));
        break;
      case 'C':  // SHORT_BINBYTES
        need(1);
        at += 1;
        str(p[at - 1]);
        break;
      case 'T':  // BINSTRING
        need(4);
        at += 4;
        str(Le(p + at - 4, 4));
        break;
      case 'U':  // SHORT_BINSTRING
        need(1);
        at += 1;
        str(p[at - 1]);
        break;
      case 'J':  // BININT
        need(4);
        integer(static_cast<int32_t>(Le(p + at, 4)));
        at += 4;
        break;
      case 'K':  // BININT1
        need(1);
        integer(p[at]);
        at += 1;
        break;
      case 'M':
        need(2);
        integer(static_cast<int64_t>(Le(p + at, 2)));
        at += 2;
        break;      // BININT2
      case 0x8a: {  // LONG1: little-endian two's complement of 0..8 bytes
        need(1);
        const int len = p[at++];
        if (len > 8)
          fail(op_at, "integer of " + std::to_string(len) + " bytes (more than 64 bits)");
        need(static_cast<std::size_t>(len));
        uint64_t v = len == 0 ? 0 : Le(p + at, len);
        if (len > 0 && len < 8 && (p[at + len - 1] & 0x80)) v |= ~uint64_t{0} << (8 * len);  // sign
        at += static_cast<std::size_t>(len);
        integer(static_cast<int64_t>(v));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        need(8);
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | p[at + static_cast<std::size_t>(k)];
        at += 8;
        Value* v = New(Value::Kind::kFloat);
        std::memcpy(&v->f, &bits, sizeof bits);
        stack.push_back(v);
        break;
      }
      case 'q':  // BINPUT
        need(1);
        memo_put(op_at, p[at]);
        at += 1;
        break;
      case 'r':  // LONG_BINPUT
        need(4);
        memo_put(op_at, Le(p + at, 4));
        at += 4;
        break;
      case 0x94:  // MEMOIZE
        memo_put(op_at, memo.size());
        break;
      case 'h':  // BINGET
        need(1);
        memo_get(op_at, p[at]);
        at += 1;
        break;
      case 'j':  // LONG_BINGET
        need(4);
        memo_get(op_at, Le(p + at, 4));
        at += 4;
        break;
      default: {
        std::string what = "opcode " + Hex(op);
        if (op >= 0x20 && op < 0x7f) what += std::string(" ('") + static_cast<char>(op) + "')";
        fail(op_at,
             what + " is outside the Flight Recorder subset (a pickle of other Python objects?)");
      }
    }
  }
}

PickleWriter::PickleWriter() { out_ = "\x80\x02"; }

namespace {
void PutLe(std::string& out, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}
}  // namespace

void PickleWriter::None() { out_ += 'N'; }
void PickleWriter::Bool(bool v) { out_ += static_cast<char>(v ? 0x88 : 0x89); }
void PickleWriter::Int(int64_t v) {
  if (v >= 0 && v < 256) {
    out_ += 'K';
    PutLe(out_, static_cast<uint64_t>(v), 1);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += 'J';
    PutLe(out_, static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
  } else {
    out_ += static_cast<char>(0x8a);
    out_ += static_cast<char>(8);
    PutLe(out_, static_cast<uint64_t>(v), 8);
  }
}
void PickleWriter::Float(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  out_ += 'G';
  for (int k = 7; k >= 0; --k) out_.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
}
void PickleWriter::Str(std::string_view v) {
  if (auto it = memo_.find(std::string(v)); it != memo_.end()) {
    if (it->second < 256) {
      out_ += 'h';
      PutLe(out_, it->second, 1);
    } else {
      out_ += 'j';
      PutLe(out_, it->second, 4);
    }
    return;
  }
  out_ += 'X';
  PutLe(out_, v.size(), 4);
  out_ += v;
  const auto idx = static_cast<uint32_t>(memo_.size());
  memo_.emplace(std::string(v), idx);
  if (idx < 256) {
    out_ += 'q';
    PutLe(out_, idx, 1);
  } else {
    out_ += 'r';
    PutLe(out_, idx, 4);
  }
}
void PickleWriter::BeginDict() { out_ += "}("; }
void PickleWriter::EndDict() { out_ += 'u'; }
void PickleWriter::BeginList() { out_ += "]("; }
void PickleWriter::EndList() { out_ += 'e'; }
void PickleWriter::BeginTuple() { out_ += '('; }
void PickleWriter::EndTuple() { out_ += 't'; }
std::string PickleWriter::Finish() {
  out_ += '.';
  return std::move(out_);
}

}  // namespace ddp::trace::pickle
