// Memory by owner (issue 39): who holds the runner process's resident memory, after the method load
// and after the measured executions, printed as the result line's `memory` object.
//
// Two kinds of figure, and the result says which is which (`method`):
//  - counted: what the runner owns and hands to ExecuTorch, counted as it is handed out:
//      program  the .pte as loaded, at its peak: the bytes the data loader held at once (the program
//               flatbuffer, and each delegate segment while its backend initialises from it);
//      planned  the method's memory-planned buffers (MethodMeta, which the Module allocates whole);
//      runtime  the method and temp allocators' bytes at their peak (values, the backends' handles,
//               kernels' scratch).
//  - delta: what the runner cannot own (a delegate's own mallocs: XNNPACK's packed weights and its
//      workspace) is the growth of the process's resident set (/proc/self/statm) around the step that
//      allocates it, less what was counted in that step: `delegate` = growth over the method load less
//      planned, runtime, the loader's bytes still held and the freed bytes malloc kept, plus the growth over the executions less
//      the allocators' growth when the method calls a delegate and no event tracer ran. `other` = the
//      resident set before the program load (runner, libraries, threadpool) plus the executions' growth
//      that no delegate explains (the event tracer's buffers in a traced run).
// The owners then add up to the high-water mark (VmHWM) within the transient pages nobody holds.
#pragma once

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/runtime/core/data_loader.h>

#include "etfarm_probe.h"
#include "etfarm_pte.h"

namespace etfarm {
namespace memory {

using ::executorch::runtime::DataLoader;
using ::executorch::runtime::Error;
using ::executorch::runtime::FreeableBuffer;
using ::executorch::runtime::Result;

// Bytes held now, and the most ever held at once (thread-safe: backends may load from threads).
class Counter {
 public:
  void add(int64_t n) {
    const int64_t now = live_.fetch_add(n) + n;
    int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
  }
  void sub(int64_t n) { live_.fetch_sub(n); }
  int64_t live() const { return live_.load(); }
  int64_t peak() const { return peak_.load(); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0};
};

struct Ledger {
  Counter program, runtime;
  int64_t planned = 0;
  bool delegated = false, traced = false;
  int64_t rss_start = -1, rss_program = -1, rss_method = -1, rss_end = -1;
  int64_t held_program = 0, held_method = 0;  // the loader's live bytes at those marks
  int64_t free_program = 0, free_method = 0, free_end = 0;  // freed bytes malloc kept (resident) at those marks
  int64_t runtime_method = 0, runtime_end = 0;  // the allocators' peak at those marks
  int64_t hwm_method = -1, hwm_end = -1;
};

inline Ledger& ledger() {
  static Ledger l;
  return l;
}

// Resident set size in bytes from /proc/self/statm (pages), -1 without it. Cheap: no mapping walk.
inline int64_t rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long long size = 0, resident = -1;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : -1;
}

// Bytes malloc holds free (freed, still mapped and resident: a segment freed into the heap stays in
// the RSS); 0 where the C library cannot tell.
inline int64_t malloc_free_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  return static_cast<int64_t>(mallinfo2().fordblks);
#elif defined(__BIONIC__)
  return static_cast<int64_t>(mallinfo().fordblks);
#else
  return 0;
#endif
}

inline int64_t hwm_bytes() {
  const int64_t kb = peak_rss_kb();
  return kb < 0 ? -1 : kb * 1024;
}

// The method and temp allocators, malloc-backed as the Module's defaults, counted.
class CountingAllocator : public ::executorch::extension::MallocMemoryAllocator {
 public:
  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    void* p = MallocMemoryAllocator::allocate(size, alignment);
    if (p != nullptr) {
      const auto n = static_cast<int64_t>(size + alignment);  // what allocate asks malloc for, at most
      mine_ += n;
      ledger().runtime.add(n);
    }
    return p;
  }
  void reset() override {
    ledger().runtime.sub(mine_);
    mine_ = 0;
    MallocMemoryAllocator::reset();
  }

 private:
  int64_t mine_ = 0;
};

// FileDataLoader, its buffers counted while they are held (a delegate's segment is freed by its backend).
class CountingLoader final : public DataLoader {
 public:
  explicit CountingLoader(::executorch::extension::FileDataLoader inner) : inner_(std::move(inner)) {}

  Result<FreeableBuffer> load(size_t offset, size_t size, const SegmentInfo& info) const override {
    auto loaded = inner_.load(offset, size, info);
    if (!loaded.ok()) return loaded;
    auto* held = new Held{std::move(loaded.get())};
    const void* data = held->buffer.data();
    const size_t n = held->buffer.size();
    ledger().program.add(static_cast<int64_t>(n));
    return FreeableBuffer(data, n, &CountingLoader::release, held);
  }
  Error load_into(size_t offset, size_t size, const SegmentInfo& info, void* buffer) const override {
    return inner_.load_into(offset, size, info, buffer);
  }
  Result<size_t> size() const override { return inner_.size(); }

 private:
  struct Held {
    FreeableBuffer buffer;
  };
  static void release(void* context, void*, size_t) {
    auto* held = static_cast<Held*>(context);
    ledger().program.sub(static_cast<int64_t>(held->buffer.size()));
    held->buffer.Free();
    delete held;
  }
  ::executorch::extension::FileDataLoader inner_;
};

// The counted loader of `path`; nullptr (and `why`) when the file cannot be opened.
inline std::unique_ptr<DataLoader> counting_loader(const std::string& path, std::string* why) {
  auto inner = ::executorch::extension::FileDataLoader::from(path.c_str());
  if (!inner.ok()) {
    *why = "cannot open model '" + path + "' for loading";
    return nullptr;
  }
  return std::make_unique<CountingLoader>(std::move(inner.get()));
}

inline std::unique_ptr<::executorch::runtime::MemoryAllocator> counting_allocator() {
  return std::make_unique<CountingAllocator>();
}

// Whether `method` of the program calls a delegate (its executions' growth is then the delegate's).
inline bool calls_delegate(const std::string& path, const std::string& method) {
  std::vector<pte::Method> methods;
  std::string why;
  if (!pte::read_methods(path, &methods, &why)) return false;
  return std::any_of(methods.begin(), methods.end(),
                     [&](const pte::Method& m) { return m.name == method && !m.delegates.empty(); });
}

// Hooks, in the order the runner reaches them.
inline void before_program_load() { ledger().rss_start = rss_bytes(); }

inline void after_program_load() {
  auto& l = ledger();
  l.rss_program = rss_bytes();
  l.held_program = l.program.live();
  l.free_program = malloc_free_bytes();
}

inline void after_method_load(int64_t planned_bytes, bool delegated) {
  auto& l = ledger();
  l.rss_method = rss_bytes();
  l.hwm_method = hwm_bytes();
  l.held_method = l.program.live();
  l.free_method = malloc_free_bytes();
  l.runtime_method = l.runtime.peak();
  l.planned = planned_bytes;
  l.delegated = delegated;
}

// `traced`: the event tracer grew its buffers during the executions; that growth is not a delegate's.
inline void after_executions(bool traced) {
  auto& l = ledger();
  l.traced = traced;
  l.rss_end = rss_bytes();
  l.free_end = malloc_free_bytes();
  l.hwm_end = hwm_bytes();
  l.runtime_end = l.runtime.peak();
}

struct Split {
  int64_t program = -1, planned = -1, delegate = -1, runtime = -1, other = -1, rss = -1, peak_rss = -1;
};

// After the method load (at_end false) or after the executions.
inline Split split(bool at_end) {
  const auto& l = ledger();
  Split s;
  if (l.rss_start < 0 || l.rss_program < 0 || l.rss_method < 0 || (at_end && l.rss_end < 0)) return s;
  s.program = l.program.peak();
  s.planned = l.planned;
  s.runtime = at_end ? l.runtime_end : l.runtime_method;
  const int64_t load_growth = l.rss_method - l.rss_program;
  // Freed pages malloc kept (a segment freed into the heap) are the program's, counted at its peak.
  s.delegate = std::max<int64_t>(0, load_growth - l.planned - l.runtime_method - (l.held_method - l.held_program) -
                                        std::max<int64_t>(0, l.free_method - l.free_program));
  s.other = l.rss_start;
  if (at_end) {
    const int64_t run_growth = std::max<int64_t>(
        0, (l.rss_end - l.rss_method) - (l.runtime_end - l.runtime_method) - std::max<int64_t>(0, l.free_end - l.free_method));
    (l.delegated && !l.traced ? s.delegate : s.other) += run_growth;
  }
  s.rss = at_end ? l.rss_end : l.rss_method;
  s.peak_rss = at_end ? l.hwm_end : l.hwm_method;
  return s;
}

inline std::string split_json(const Split& s) {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "{\"program\": %lld, \"planned\": %lld, \"delegate\": %lld, \"runtime\": %lld, \"other\": %lld, "
                "\"rss\": %lld, \"peak_rss\": %lld}",
                static_cast<long long>(s.program), static_cast<long long>(s.planned),
                static_cast<long long>(s.delegate), static_cast<long long>(s.runtime),
                static_cast<long long>(s.other), static_cast<long long>(s.rss), static_cast<long long>(s.peak_rss));
  return buf;
}

// The result line's `memory` object (bytes; -1 where /proc could not tell).
inline std::string json() {
  return std::string("{\"counted\": [\"program\", \"planned\", \"runtime\"], \"delta\": [\"delegate\", \"other\"], ") +
         "\"source\": \"statm\", \"delegated\": " + (ledger().delegated ? "true" : "false") +
         ", \"load\": " + split_json(split(false)) + ", \"end\": " + split_json(split(true)) + "}";
}

}  // namespace memory
}  // namespace etfarm
