// What took the CPU away from the runner during its measured executions, read from the kernel's
// scheduler statistics (orchestrator/results/contention.py says how the host uses it):
//   - per execution, the run-queue wait of every thread of the process: the second field of
//     /proc/self/task/<tid>/schedstat (ns runnable but not running; needs CONFIG_SCHEDSTATS, on in
//     every Android and most distribution kernels), summed over the main thread and the threadpool's
//     workers. The files are opened once (a scan of /proc/self/task before the measured loop) and
//     re-read with pread, a few us per thread, once between two executions: the reads sit outside
//     the timed region;
//   - over the measured loop, the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) and wall time,
//     involuntary context switches (getrusage: every thread of the process) and migrations
//     (se.nr_migrations of /proc/self/task/<tid>/sched, needs CONFIG_SCHED_DEBUG; read twice only).
// A figure the platform cannot give is -1 (the per-execution waits: an empty list).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace etfarm {

namespace detail {

inline std::vector<std::string> task_ids() {
  std::vector<std::string> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') out.emplace_back(entry->d_name);
  }
  closedir(dir);
  return out;
}

inline double cpu_clock_ms() {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return -1.0;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

inline int64_t involuntary_switches() {
  struct rusage usage;
  return getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<int64_t>(usage.ru_nivcsw) : -1;
}

// Sum of se.nr_migrations over the process's threads; -1 when no thread's sched file says it.
inline int64_t migrations() {
  int64_t total = -1;
  for (const auto& tid : task_ids()) {
    const std::string path = "/proc/self/task/" + tid + "/sched";
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) continue;
    char line[256];
    while (std::fgets(line, sizeof(line), f)) {
      if (std::strncmp(line, "se.nr_migrations", 16) != 0) continue;
      const char* colon = std::strchr(line, ':');
      long long n = 0;
      if (colon != nullptr && std::sscanf(colon + 1, "%lld", &n) == 1) total = (total < 0 ? 0 : total) + n;
      break;
    }
    std::fclose(f);
  }
  return total;
}

}  // namespace detail

// The contention figures of one process run, as the result line prints them.
struct ContentionFigures {
  std::vector<double> wait_ms;  // per measured execution; empty when schedstat is unreadable
  double cpu_ms = -1, wall_ms = -1, read_ms = 0;
  int64_t involuntary_switches = -1, migrations = -1, threads = -1;
};

// Reads the figures around the measured loop: begin(), then before()/after() around each execution
// (outside its timed region), then end().
class SchedProbe {
 public:
  SchedProbe() = default;
  SchedProbe(const SchedProbe&) = delete;
  SchedProbe& operator=(const SchedProbe&) = delete;
  ~SchedProbe() { close_all(); }

  void begin() {
    const auto t0 = Clock::now();
    for (const auto& tid : detail::task_ids()) {
      const std::string path = "/proc/self/task/" + tid + "/schedstat";
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) fds_.push_back(fd);
    }
    readable_ = !fds_.empty() && wait_ns() >= 0;
    out_.threads = static_cast<int64_t>(fds_.size());
    switches0_ = detail::involuntary_switches();
    migrations0_ = detail::migrations();
    cpu0_ = detail::cpu_clock_ms();
    read_ns_ += elapsed_ns(t0);
    wall0_ = Clock::now();
  }

  // One read per boundary: an execution's reading after it is the next one's reading before it. The
  // few us between (setting the inputs) count towards the next execution's wait, which can only flag
  // it, never hide a wait; it halves the reads (issue 37: measuring costs at most 2 % of a run).
  void before() {
    if (!readable_ || wait0_ >= 0) return;
    const auto t0 = Clock::now();
    wait0_ = wait_ns();
    read_ns_ += elapsed_ns(t0);
  }

  void after() {
    if (!readable_) return;
    const auto t0 = Clock::now();
    const int64_t wait = wait_ns();
    out_.wait_ms.push_back(wait >= wait0_ && wait0_ >= 0 ? static_cast<double>(wait - wait0_) / 1e6 : 0.0);
    wait0_ = wait;
    read_ns_ += elapsed_ns(t0);
  }

  ContentionFigures end() {
    const double wall = std::chrono::duration<double, std::milli>(Clock::now() - wall0_).count();
    const auto t0 = Clock::now();
    const double cpu = detail::cpu_clock_ms();
    if (cpu >= 0 && cpu0_ >= 0) out_.cpu_ms = cpu - cpu0_;
    out_.wall_ms = wall;
    const int64_t switches = detail::involuntary_switches();
    if (switches >= 0 && switches0_ >= 0) out_.involuntary_switches = switches - switches0_;
    const int64_t moved = detail::migrations();
    if (moved >= 0 && migrations0_ >= 0 && moved >= migrations0_) out_.migrations = moved - migrations0_;
    if (!readable_) out_.wait_ms.clear();
    read_ns_ += elapsed_ns(t0);
    out_.read_ms = static_cast<double>(read_ns_) / 1e6;
    close_all();
    return out_;
  }

 private:
  using Clock = std::chrono::steady_clock;

  static int64_t elapsed_ns(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  }

  // Run-queue wait of every opened thread, summed, in ns; -1 when a file cannot be read. A thread
  // that ended reads as nothing (its wait is gone with it; the pool's workers live as long as we do).
  int64_t wait_ns() const {
    int64_t total = 0;
    char buf[128];
    for (const int fd : fds_) {
      const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
      if (n <= 0) continue;
      buf[n] = '\0';
      unsigned long long on_cpu = 0, waited = 0;
      if (std::sscanf(buf, "%llu %llu", &on_cpu, &waited) != 2) return -1;
      total += static_cast<int64_t>(waited);
    }
    return total;
  }

  void close_all() {
    for (const int fd : fds_) ::close(fd);
    fds_.clear();
  }

  std::vector<int> fds_;
  bool readable_ = false;
  int64_t wait0_ = -1, switches0_ = -1, migrations0_ = -1, read_ns_ = 0;
  double cpu0_ = -1;
  Clock::time_point wall0_;
  ContentionFigures out_;
};

}  // namespace etfarm
