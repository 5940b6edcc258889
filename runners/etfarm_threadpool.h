// Sizing ExecuTorch's shared threadpool (XNNPACK and the optimized kernels use it).
// The wheel ships libexecutorch_threadpool.so but not threadpool.h (which also
// needs pthreadpool.h), so declare the two entry points we call ourselves; the
// mangled names match extension/threadpool/threadpool.h. ETFARM_HAVE_THREADPOOL
// is set by CMakeLists.txt when a threadpool library is linked.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(ETFARM_HAVE_THREADPOOL)
namespace executorch::extension::threadpool {
class ThreadPool final {
 public:
  size_t get_thread_count() const;
  bool _unsafe_reset_threadpool(uint32_t num_threads);
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool
#endif

namespace etfarm {

// Resizes the pool; must run before any method is loaded, because XNNPACK
// keeps the pthreadpool pointer it was initialised with.
inline bool reset_threadpool(int64_t threads) {
#if defined(ETFARM_HAVE_THREADPOOL)
  auto* pool = ::executorch::extension::threadpool::get_threadpool();
  return pool != nullptr && pool->_unsafe_reset_threadpool(static_cast<uint32_t>(threads));
#else
  (void)threads;
  return false;
#endif
}

// Current pool size, or -1 when the runner has no threadpool.
inline int64_t threadpool_size() {
#if defined(ETFARM_HAVE_THREADPOOL)
  auto* pool = ::executorch::extension::threadpool::get_threadpool();
  return pool == nullptr ? -1 : static_cast<int64_t>(pool->get_thread_count());
#else
  return -1;
#endif
}

}  // namespace etfarm
