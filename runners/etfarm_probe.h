// Process facts the runner reports beside latency: peak, current and proportional resident memory,
// file sizes, and a fixed calibration workload whose time shows throttling or a core shared with
// another task.
#pragma once

#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace etfarm {

namespace detail {

// The first "<key> <n> kB" line of a /proc file, in KiB; -1 when the file or the key is missing.
inline int64_t proc_kb(const char* path, const char* key) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  const size_t key_len = std::strlen(key);
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, key, key_len) == 0) {
      std::sscanf(line + key_len, "%lld", &kb);
      break;
    }
  }
  std::fclose(f);
  return static_cast<int64_t>(kb);
}

}  // namespace detail

// Peak resident set size in KiB: VmHWM from /proc/self/status (what the kernel reports for the
// process), else getrusage's ru_maxrss (KiB on Linux and Android). -1 when neither is available.
inline int64_t peak_rss_kb() {
  const int64_t hwm = detail::proc_kb("/proc/self/status", "VmHWM:");
  if (hwm >= 0) return hwm;
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0) return static_cast<int64_t>(usage.ru_maxrss);
  return -1;
}

// Current resident set size in KiB (VmRSS), -1 without /proc.
inline int64_t rss_kb() { return detail::proc_kb("/proc/self/status", "VmRSS:"); }

// Proportional set size in KiB: the process's share of the pages it maps (shared library pages
// divided among their users), what Android's memory accounting and ExecuTorch's benchmark apps
// report. /proc/self/smaps_rollup (Linux >= 4.14, every supported Android), else the sum over
// /proc/self/smaps; -1 when neither exists. Reading walks the process's mappings: never call it
// inside a timed region.
inline int64_t pss_kb() {
  const int64_t rollup = detail::proc_kb("/proc/self/smaps_rollup", "Pss:");
  if (rollup >= 0) return rollup;
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return -1;
  char line[256];
  long long total = 0, kb = 0;
  bool any = false;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, "Pss:", 4) == 0 && std::sscanf(line + 4, "%lld", &kb) == 1) {
      total += kb;
      any = true;
    }
  }
  std::fclose(f);
  return any ? static_cast<int64_t>(total) : -1;
}

inline int64_t file_size(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// A fixed amount of work like a model's: a 64x64x64 float GEMM plus 2 MiB of memory traffic per
// round. The same rounds take the same time on an idle, unthrottled core; a slower figure later
// in a job means the clock dropped (throttling) or the core was shared (interference).
class Calibration {
 public:
  static constexpr int kN = 64;
  static constexpr size_t kTrafficBytes = 1 << 20;

  Calibration() : a_(kN * kN), b_(kN * kN), c_(kN * kN), src_(kTrafficBytes), dst_(kTrafficBytes) {
    for (int i = 0; i < kN * kN; ++i) {
      a_[i] = static_cast<float>((i * 7) % 13) * 0.01f;
      b_[i] = static_cast<float>((i * 5) % 11) * 0.01f;
    }
    for (size_t i = 0; i < kTrafficBytes; ++i) src_[i] = static_cast<uint8_t>(i * 31);
  }

  // Wall milliseconds for `rounds` rounds.
  double run(int64_t rounds) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < rounds; ++r) {
      for (int i = 0; i < kN; ++i) {
        for (int j = 0; j < kN; ++j) c_[i * kN + j] = 0.0f;
        for (int k = 0; k < kN; ++k) {
          const float x = a_[i * kN + k];
          for (int j = 0; j < kN; ++j) c_[i * kN + j] += x * b_[k * kN + j];
        }
      }
      std::memcpy(dst_.data(), src_.data(), kTrafficBytes);
      std::memcpy(src_.data(), dst_.data(), kTrafficBytes);
      a_[r % (kN * kN)] += c_[(r * 13) % (kN * kN)] * 1e-6f;  // each round depends on the last
    }
    sink_ += c_[kN + 1] + static_cast<float>(src_[r_index(rounds)]);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

  float sink() const { return sink_; }

 private:
  static size_t r_index(int64_t rounds) { return static_cast<size_t>(rounds) % kTrafficBytes; }
  std::vector<float> a_, b_, c_;
  std::vector<uint8_t> src_, dst_;
  volatile float sink_ = 0.0f;
};

}  // namespace etfarm
