// An ETDumpGen that can be paused, so warmup executions leave no trace in the
// ETDump (it then holds the method-load block plus exactly one block per
// measured execution), and that refuses tensors that would overflow the debug
// buffer instead of letting ETDumpGen abort the process.
#pragma once

#include <cstddef>
#include <cstdint>

#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/runtime/core/evalue.h>

namespace etfarm {

using ::executorch::runtime::AllocatorID;
using ::executorch::runtime::ArrayRef;
using ::executorch::runtime::ChainID;
using ::executorch::runtime::DebugHandle;
using ::executorch::runtime::DelegateDebugIntId;
using ::executorch::runtime::EValue;
using ::executorch::runtime::EventTracerEntry;
using ::executorch::runtime::LoggedEValueType;
using ::executorch::runtime::Result;

class GatedETDumpGen : public ::executorch::etdump::ETDumpGen {
 public:
  using Tensor = ::executorch::aten::Tensor;

  void set_recording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }
  // Capacity of the debug buffer handed to set_debug_buffer (0: none).
  void set_debug_capacity(size_t bytes) { debug_capacity_ = bytes; }
  bool debug_buffer_overflowed() const { return overflowed_; }
  // Bytes of the debug buffer holding logged tensors (what is worth writing out).
  size_t debug_bytes_used() {
    auto* sink = get_data_sink();
    return sink == nullptr ? 0 : sink->get_used_bytes();
  }

  void create_event_block(const char* name) override {
    if (recording_) ETDumpGen::create_event_block(name);
  }
  EventTracerEntry start_profiling(const char* name, ChainID chain_id = -1, DebugHandle debug_handle = 0) override {
    return recording_ ? ETDumpGen::start_profiling(name, chain_id, debug_handle) : EventTracerEntry{};
  }
  void end_profiling(EventTracerEntry entry) override {
    if (recording_) ETDumpGen::end_profiling(entry);
  }
  EventTracerEntry start_profiling_delegate(const char* name, DelegateDebugIntId index) override {
    return recording_ ? ETDumpGen::start_profiling_delegate(name, index) : EventTracerEntry{};
  }
  void end_profiling_delegate(EventTracerEntry entry, const void* metadata, size_t metadata_len) override {
    if (recording_) ETDumpGen::end_profiling_delegate(entry, metadata, metadata_len);
  }
  void log_profiling_delegate(const char* name, DelegateDebugIntId index, et_timestamp_t start, et_timestamp_t end,
                              const void* metadata, size_t metadata_len) override {
    if (recording_) ETDumpGen::log_profiling_delegate(name, index, start, end, metadata, metadata_len);
  }
  void track_allocation(AllocatorID id, size_t size) override {
    if (recording_) ETDumpGen::track_allocation(id, size);
  }
  AllocatorID track_allocator(const char* name) override {
    return recording_ ? ETDumpGen::track_allocator(name) : 0;
  }
  Result<bool> log_evalue(const EValue& evalue, LoggedEValueType type = LoggedEValueType::kIntermediateOutput) override {
    if (!recording_ || !fits(evalue_bytes(evalue), evalue_tensors(evalue))) return false;
    return ETDumpGen::log_evalue(evalue, type);
  }
  Result<bool> log_intermediate_output_delegate(const char* name, DelegateDebugIntId index, const Tensor& output) override {
    if (!recording_ || !fits(output.nbytes(), 1)) return false;
    return ETDumpGen::log_intermediate_output_delegate(name, index, output);
  }
  Result<bool> log_intermediate_output_delegate(const char* name, DelegateDebugIntId index,
                                                const ArrayRef<Tensor> output) override {
    size_t bytes = 0;
    for (const Tensor& t : output) bytes += t.nbytes();
    if (!recording_ || !fits(bytes, output.size())) return false;
    return ETDumpGen::log_intermediate_output_delegate(name, index, output);
  }
  Result<bool> log_intermediate_output_delegate(const char* name, DelegateDebugIntId index, const int& output) override {
    if (!recording_) return false;
    return ETDumpGen::log_intermediate_output_delegate(name, index, output);
  }
  Result<bool> log_intermediate_output_delegate(const char* name, DelegateDebugIntId index, const bool& output) override {
    if (!recording_) return false;
    return ETDumpGen::log_intermediate_output_delegate(name, index, output);
  }
  Result<bool> log_intermediate_output_delegate(const char* name, DelegateDebugIntId index, const double& output) override {
    if (!recording_) return false;
    return ETDumpGen::log_intermediate_output_delegate(name, index, output);
  }

 private:
  static size_t evalue_bytes(const EValue& v) {
    if (v.isTensor()) return v.toTensor().nbytes();
    size_t bytes = 0;
    if (v.isTensorList()) {
      for (const Tensor& t : v.toTensorList()) bytes += t.nbytes();
    }
    return bytes;
  }
  static size_t evalue_tensors(const EValue& v) {
    return v.isTensor() ? 1 : (v.isTensorList() ? v.toTensorList().size() : 0);
  }
  // The buffer sink aligns every tensor to 64 bytes; count that padding so a
  // write never fails (ETDumpGen answers a failed write with ET_CHECK -> abort).
  bool fits(size_t bytes, size_t tensors) {
    if (tensors == 0) return true;
    auto* sink = get_data_sink();
    if (sink == nullptr || debug_capacity_ == 0) {
      overflowed_ = true;  // no buffer to hold tensors: drop rather than abort
      return false;
    }
    const size_t needed = sink->get_used_bytes() + bytes + 64 * (tensors + 1);
    if (needed > debug_capacity_) {
      overflowed_ = true;
      return false;
    }
    return true;
  }

  bool recording_ = true;
  bool overflowed_ = false;
  size_t debug_capacity_ = 0;
};

}  // namespace etfarm
