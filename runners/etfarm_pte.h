// A small, bounds-checked reader of a .pte's program flatbuffer (ExecuTorch's schema/program.fbs),
// without generated code (the wheel ships no program_generated.h nor flatbuffers headers): method
// names, each method's operators ("ns::op.overload") and delegate backend ids. The runner uses it to
// refuse, in one line, a program whose operators or backends this runtime lacks, before loading the
// method (loading would log one line per missing operator and fail with OperatorMissing).
// The host-side twin is orchestrator/artifacts/pte_info.py (same slots, same rules).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace etfarm {
namespace pte {

// Field slots, in declaration order in program.fbs.
constexpr int kProgramExecutionPlan = 1;
constexpr int kPlanName = 0, kPlanOperators = 6, kPlanDelegates = 7;
constexpr int kOperatorName = 0, kOperatorOverload = 1;
constexpr int kDelegateId = 0;
constexpr size_t kHeadBytes = 64;  // ExecuTorch's kNumHeadBytes: enough for the extended header

// A flatbuffer over bytes this view does not own. Every read is bounds-checked; a failed read
// returns false (or an empty result) and never touches memory outside the buffer.
class Flat {
 public:
  Flat(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool u32(size_t pos, uint32_t* out) const { return get(pos, out); }

  bool root(size_t* table) const {
    uint32_t off = 0;
    return get(0, &off) && within(off, 4) && (*table = off, true);
  }
  // Position of field `slot` of the table at `table`, or false when absent.
  bool field(size_t table, int slot, size_t* pos) const {
    int32_t soff = 0;
    uint16_t vsize = 0, voff = 0;
    if (!get(table, &soff)) return false;
    const int64_t vt = static_cast<int64_t>(table) - soff;
    if (vt < 0 || !get(static_cast<size_t>(vt), &vsize)) return false;
    const size_t entry = 4 + 2 * static_cast<size_t>(slot);
    if (entry + 2 > vsize || !get(static_cast<size_t>(vt) + entry, &voff) || voff == 0) return false;
    *pos = table + voff;
    return within(*pos, 1);
  }
  // Follows the uoffset stored in field `slot` (a table, vector or string).
  bool ref(size_t table, int slot, size_t* target) const {
    size_t pos = 0;
    uint32_t rel = 0;
    return field(table, slot, &pos) && get(pos, &rel) && within(pos + rel, 4) && (*target = pos + rel, true);
  }
  bool vector(size_t table, int slot, size_t* first, uint32_t* count) const {
    size_t vec = 0;
    if (!ref(table, slot, &vec) || !get(vec, count)) return false;
    *first = vec + 4;
    return *count <= (size_ - *first) / 4;
  }
  // Element i of a vector of tables (uoffsets).
  bool element(size_t first, uint32_t i, size_t* table) const {
    const size_t pos = first + 4 * static_cast<size_t>(i);
    uint32_t rel = 0;
    return get(pos, &rel) && within(pos + rel, 4) && (*table = pos + rel, true);
  }
  bool string(size_t table, int slot, std::string* out) const {
    size_t pos = 0;
    uint32_t len = 0;
    if (!ref(table, slot, &pos) || !get(pos, &len) || len > size_ - pos - 4) return false;
    out->assign(reinterpret_cast<const char*>(data_ + pos + 4), len);
    return true;
  }

 private:
  template <typename T>
  bool get(size_t pos, T* out) const {
    if (pos > size_ || size_ - pos < sizeof(T)) return false;
    std::memcpy(out, data_ + pos, sizeof(T));  // flatbuffers are little-endian, like our targets
    return true;
  }
  bool within(size_t pos, size_t bytes) const { return pos <= size_ && size_ - pos >= bytes; }

  const uint8_t* data_;
  size_t size_;
};

struct Method {
  std::string name;
  std::vector<std::string> operators;  // "name.overload" (or "name" without an overload)
  std::vector<std::string> delegates;  // backend ids, e.g. XnnpackBackend
};

// Reads the program flatbuffer at the head of `path` (only its bytes: segments with weights and
// delegate blobs follow it and are not read) and lists its methods. False with `error` set when
// the file is not a program ExecuTorch would recognise.
inline bool read_methods(const std::string& path, std::vector<Method>* methods, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = "cannot open '" + path + "'";
    return false;
  }
  std::vector<uint8_t> buf(kHeadBytes);
  buf.resize(std::fread(buf.data(), 1, buf.size(), f));
  size_t program_size = 0;  // 0: no extended header, read the whole file
  if (buf.size() >= 24 && std::memcmp(buf.data() + 8, "eh00", 4) == 0) {
    uint64_t size = 0;
    std::memcpy(&size, buf.data() + 16, 8);
    program_size = static_cast<size_t>(size);
  }
  if (buf.size() < 8 || std::memcmp(buf.data() + 4, "ET", 2) != 0) {
    std::fclose(f);
    *error = "'" + path + "' is not an ExecuTorch program (no ET.. file identifier)";
    return false;
  }
  uint8_t chunk[1 << 16];
  size_t n = 0;
  while ((program_size == 0 || buf.size() < program_size) && (n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) {
    buf.insert(buf.end(), chunk, chunk + n);
  }
  std::fclose(f);
  if (program_size != 0 && buf.size() > program_size) buf.resize(program_size);
  const Flat fb(buf.data(), buf.size());
  size_t program = 0, plans = 0;
  uint32_t count = 0;
  if (!fb.root(&program) || !fb.vector(program, kProgramExecutionPlan, &plans, &count)) {
    *error = "'" + path + "': cannot read the program's execution plans";
    return false;
  }
  for (uint32_t i = 0; i < count; ++i) {
    size_t plan = 0, list = 0;
    uint32_t items = 0;
    Method m;
    if (!fb.element(plans, i, &plan) || !fb.string(plan, kPlanName, &m.name)) {
      *error = "'" + path + "': execution plan " + std::to_string(i) + " is damaged";
      return false;
    }
    if (fb.vector(plan, kPlanOperators, &list, &items)) {
      for (uint32_t k = 0; k < items; ++k) {
        size_t op = 0;
        std::string name, overload;
        if (!fb.element(list, k, &op) || !fb.string(op, kOperatorName, &name)) continue;
        fb.string(op, kOperatorOverload, &overload);
        m.operators.push_back(overload.empty() ? name : name + "." + overload);
      }
    }
    if (fb.vector(plan, kPlanDelegates, &list, &items)) {
      for (uint32_t k = 0; k < items; ++k) {
        size_t del = 0;
        std::string id;
        if (fb.element(list, k, &del) && fb.string(del, kDelegateId, &id)) m.delegates.push_back(id);
      }
    }
    methods->push_back(std::move(m));
  }
  return true;
}

}  // namespace pte
}  // namespace etfarm
