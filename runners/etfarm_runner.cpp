// etfarm_runner: loads a .pte with ExecuTorch's Module API, runs W warmup and
// N measured executions of one method, optionally records an ETDump of the
// measured ones, and prints one line "ETFARM_RESULT {json}" on stdout.
//
// Exit codes: 0 ok, 1 load/parse/execute/IO error (one message on stderr),
// 2 bad flags (message + usage). Never aborts on a bad .pte or inputs file.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/exec_aten/util/scalar_type_util.h>
#include <executorch/runtime/platform/runtime.h>

#include "etfarm_args.h"
#include "etfarm_backends.h"
#include "etfarm_etft.h"
#include "etfarm_probe.h"
#include "etfarm_threadpool.h"
#include "etfarm_tracer.h"

namespace {

using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;
using ::executorch::runtime::Error;
using ::executorch::runtime::EValue;
using ::executorch::runtime::EventTracerDebugLogLevel;
using ::executorch::runtime::MethodMeta;
using ::executorch::runtime::Program;
using ::executorch::runtime::Span;
using ::executorch::runtime::Tag;
using Clock = std::chrono::steady_clock;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "etfarm_runner: error: %s\n", message.c_str());
  return kExitError;
}

std::string describe(Error err) {
  char code[16];
  std::snprintf(code, sizeof(code), "0x%" PRIx32, static_cast<uint32_t>(err));
  return std::string(::executorch::runtime::to_string(err)) + " (" + code + ")";
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string dtype_name(uint32_t code) {
  static const char* names[] = {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double",
                                "ComplexHalf", "ComplexFloat", "ComplexDouble", "Bool"};
  return code < sizeof(names) / sizeof(names[0]) ? names[code] : "ScalarType(" + std::to_string(code) + ")";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void fill_ones(ScalarType type, uint8_t* data, size_t numel, size_t elsize) {
  for (size_t i = 0; i < numel; ++i) {
    uint8_t* p = data + i * elsize;
    switch (type) {
      case ScalarType::Float: {
        const float one = 1.0f;
        std::memcpy(p, &one, 4);
        break;
      }
      case ScalarType::Double: {
        const double one = 1.0;
        std::memcpy(p, &one, 8);
        break;
      }
      case ScalarType::Half:
        p[0] = 0x00, p[1] = 0x3C;  // IEEE half 1.0, little-endian
        break;
      case ScalarType::BFloat16:
        p[0] = 0x80, p[1] = 0x3F;
        break;
      default:  // integers and bool: little-endian 1
        std::memset(p, 0, elsize);
        p[0] = 1;
    }
  }
}

// The method's inputs, in buffers this runner owns for the whole run.
struct Inputs {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<TensorPtr> tensors;
  std::vector<std::string> given_shapes;  // for error messages when set_input refuses one
};

bool prepare_inputs(const MethodMeta& meta, const etfarm::Options& opts, Inputs* in, std::string* error) {
  std::vector<etfarm::HostTensor> given;
  const std::string src = opts.inputs.empty() ? "" : "inputs file '" + opts.inputs + "'";
  if (!opts.inputs.empty()) {
    std::vector<uint8_t> raw;
    std::string why;
    if (!etfarm::read_file(opts.inputs, &raw, &why) || !etfarm::parse_etft(raw, &given, &why)) {
      *error = src + ": " + why;
      return false;
    }
    if (given.size() != meta.num_inputs()) {
      *error = src + " holds " + std::to_string(given.size()) + " tensors but method '" + opts.method_name +
          "' takes " + std::to_string(meta.num_inputs()) + " inputs";
      return false;
    }
  }
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    const std::string where = "input " + std::to_string(i) + ": ";
    auto tag = meta.input_tag(i);
    if (!tag.ok() || tag.get() != Tag::Tensor) {
      *error = where + "only tensor inputs are supported";
      return false;
    }
    auto info = meta.input_tensor_meta(i);
    if (!info.ok()) {
      *error = where + "no tensor metadata: " + describe(info.error());
      return false;
    }
    const ScalarType type = info->scalar_type();
    const uint32_t code = static_cast<uint32_t>(type);
    const size_t elsize = ::executorch::runtime::elementSize(type);
    std::vector<int64_t> bound(info->sizes().begin(), info->sizes().end());
    std::vector<uint8_t> dim_order(info->dim_order().begin(), info->dim_order().end());
    std::vector<int64_t> sizes = bound;
    if (!given.empty()) {
      const etfarm::HostTensor& g = given[i];
      if (g.scalar_type != code) {
        *error = where + src + " has dtype " + dtype_name(g.scalar_type) + " but the method expects " +
            dtype_name(code);
        return false;
      }
      bool fits = g.sizes.size() == bound.size();
      for (size_t d = 0; fits && d < bound.size(); ++d) {
        fits = g.sizes[d] <= bound[d];
      }
      if (!fits) {
        *error = where + src + " has shape " + etfarm::shape_str(g.sizes) + " but the method expects " +
            etfarm::shape_str(bound);
        return false;
      }
      sizes = g.sizes;  // below the bound only for dynamic shapes; set_input checks
    }
    size_t numel = 1;
    for (int64_t s : sizes) numel *= static_cast<size_t>(s);
    std::vector<uint8_t> buffer(std::max<size_t>(numel * elsize, 1));
    const std::vector<int64_t> strides = etfarm::strides_from_dim_order(sizes, dim_order);
    if (given.empty()) {
      fill_ones(type, buffer.data(), numel, elsize);
    } else {  // ETFT is row-major; the method may want another dim order
      etfarm::copy_strided(given[i].data.data(), etfarm::contiguous_strides(sizes), buffer.data(), strides, sizes,
                           elsize);
    }
    std::vector<::executorch::aten::SizesType> sizes32(sizes.begin(), sizes.end());
    std::vector<::executorch::aten::StridesType> strides32(strides.begin(), strides.end());
    in->tensors.push_back(::executorch::extension::from_blob(buffer.data(), sizes32, strides32, type));
    in->buffers.push_back(std::move(buffer));
    in->given_shapes.push_back(etfarm::shape_str(sizes) + " (method bound " + etfarm::shape_str(bound) + ")");
  }
  return true;
}

// Re-set before every execution: a method may reuse input memory for
// intermediates, and every execution must see the same inputs.
bool set_inputs(Module& module, const std::string& method, const Inputs& in, std::string* error) {
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    const Error err = module.set_input(method, EValue(*in.tensors[i]), i);
    if (err != Error::Ok) {
      *error = "input " + std::to_string(i) + ": the method refused shape " + in.given_shapes[i] + ": " +
          describe(err);
      return false;
    }
  }
  return true;
}

bool collect_outputs(const std::vector<EValue>& outputs, std::vector<etfarm::HostTensor>* host, std::string* error) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const EValue& v = outputs[i];
    etfarm::HostTensor h;
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      h.scalar_type = static_cast<uint32_t>(t.scalar_type());
      const size_t elsize = etfarm::etft_element_size(h.scalar_type);
      if (elsize == 0) {
        *error = "output " + std::to_string(i) + " has dtype " + dtype_name(h.scalar_type) +
            ", which an ETFT file cannot hold";
        return false;
      }
      h.sizes.assign(t.sizes().begin(), t.sizes().end());
      std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
      h.data.resize(t.numel() * elsize);
      etfarm::copy_strided(static_cast<const uint8_t*>(t.const_data_ptr()), strides, h.data.data(),
                           etfarm::contiguous_strides(h.sizes), h.sizes, elsize);
    } else if (v.isInt()) {  // scalars become 0-dim tensors
      const int64_t x = v.toInt();
      h.scalar_type = static_cast<uint32_t>(ScalarType::Long);
      h.data.assign(reinterpret_cast<const uint8_t*>(&x), reinterpret_cast<const uint8_t*>(&x) + 8);
    } else if (v.isDouble()) {
      const double x = v.toDouble();
      h.scalar_type = static_cast<uint32_t>(ScalarType::Double);
      h.data.assign(reinterpret_cast<const uint8_t*>(&x), reinterpret_cast<const uint8_t*>(&x) + 8);
    } else if (v.isBool()) {
      h.scalar_type = static_cast<uint32_t>(ScalarType::Bool);
      h.data.assign(1, v.toBool() ? 1 : 0);
    } else {
      *error = "output " + std::to_string(i) + " is not a tensor or scalar; it cannot be written as ETFT";
      return false;
    }
    host->push_back(std::move(h));
  }
  return true;
}

std::string method_list(Module& module) {
  auto names = module.method_names();
  if (!names.ok()) return "?";
  std::string out;
  for (const auto& n : names.get()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

int run(const etfarm::Options& opts, Clock::time_point started) {
  ::executorch::runtime::runtime_init();
  etfarm::print_backends();
  // The first calibration runs before the program is loaded; its buffers (2 MiB, mmapped) are
  // released before loading, so they never raise the peak memory reported for the model.
  double calibration_before_ms = -1.0;
  if (opts.calibration_rounds > 0) calibration_before_ms = etfarm::Calibration().run(opts.calibration_rounds);
  if (opts.cpu_threads > 0 && !etfarm::reset_threadpool(opts.cpu_threads)) {
    return fail("cannot set --cpu_threads=" + std::to_string(opts.cpu_threads) + ": no threadpool in this runtime");
  }
  if (FILE* probe = std::fopen(opts.model_path.c_str(), "rb")) {
    std::fclose(probe);
  } else {
    return fail("cannot open model '" + opts.model_path + "': " + std::strerror(errno));
  }

  std::unique_ptr<etfarm::GatedETDumpGen> owned_tracer;
  etfarm::GatedETDumpGen* tracer = nullptr;  // owned by the Module once it is built
  if (!opts.etdump_path.empty()) {
    owned_tracer = std::make_unique<etfarm::GatedETDumpGen>();
    tracer = owned_tracer.get();
  }
  Module module(opts.model_path, Module::LoadMode::File, std::move(owned_tracer));

  // Full flatbuffer verification, so a corrupt file is an error, not a crash.
  auto t0 = Clock::now();
  Error err = module.load(Program::Verification::InternalConsistency);
  const double program_load_ms = ms_since(t0);
  if (err != Error::Ok) {
    return fail("cannot load program '" + opts.model_path + "': " + describe(err));
  }
  auto meta = module.method_meta(opts.method_name);
  if (!meta.ok()) {
    return fail("program '" + opts.model_path + "' has no method '" + opts.method_name + "' (methods: " +
                method_list(module) + ")");
  }
  const std::string missing = etfarm::missing_backend(*meta);
  if (!missing.empty()) return fail(etfarm::missing_backend_message(opts.model_path, missing));
  // What memory planning asked for: the sum of the method's planned buffers (MethodMeta).
  int64_t planned_bytes = 0;
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    auto size = meta->memory_planned_buffer_size(i);
    if (size.ok()) planned_bytes += size.get();
  }
  t0 = Clock::now();
  err = module.load_method(opts.method_name);
  const double load_ms = ms_since(t0);
  if (err != Error::Ok) {
    return fail("cannot load method '" + opts.method_name + "' of '" + opts.model_path + "': " + describe(err));
  }

  const int64_t peak_rss_load_kb = etfarm::peak_rss_kb();

  std::vector<uint8_t> debug_buffer;
  if (tracer != nullptr && (opts.dump_outputs || opts.dump_intermediate_outputs)) {
    debug_buffer.assign(static_cast<size_t>(opts.debug_buffer_size), 0);
    auto ok = tracer->set_debug_buffer(Span<uint8_t>(debug_buffer.data(), debug_buffer.size()));
    if (!ok.ok()) {
      return fail("cannot use a debug buffer of " + std::to_string(opts.debug_buffer_size) + " bytes: " +
                  describe(ok.error()));
    }
    tracer->set_debug_capacity(debug_buffer.size());
    tracer->set_event_tracer_debug_level(opts.dump_intermediate_outputs ? EventTracerDebugLogLevel::kIntermediateOutputs
                                                                        : EventTracerDebugLogLevel::kProgramOutputs);
  }

  Inputs inputs;
  std::string why;
  if (!prepare_inputs(meta.get(), opts, &inputs, &why)) {
    return fail(why);
  }

  if (tracer != nullptr) tracer->set_recording(false);  // warmup leaves no trace
  for (int64_t w = 0; w < opts.warmup; ++w) {
    if (!set_inputs(module, opts.method_name, inputs, &why)) return fail(why);
    auto result = module.execute(opts.method_name);
    if (!result.ok()) {
      return fail("warmup execution " + std::to_string(w) + " of '" + opts.method_name + "' failed: " +
                  describe(result.error()));
    }
  }
  if (tracer != nullptr) tracer->set_recording(true);

  std::vector<double> execute_ms;
  std::vector<etfarm::HostTensor> outputs;
  for (int64_t n = 0; n < opts.num_executions; ++n) {
    if (!set_inputs(module, opts.method_name, inputs, &why)) return fail(why);
    t0 = Clock::now();
    auto result = module.execute(opts.method_name);
    execute_ms.push_back(ms_since(t0));
    if (!result.ok()) {
      return fail("execution " + std::to_string(n) + " of '" + opts.method_name + "' failed: " +
                  describe(result.error()));
    }
    if (n + 1 == opts.num_executions && !opts.output_file.empty() && !collect_outputs(result.get(), &outputs, &why)) {
      return fail(why);
    }
  }

  // Measured before the second calibration allocates its buffers.
  const int64_t peak_rss_kb = etfarm::peak_rss_kb();
  double calibration_after_ms = -1.0;
  if (opts.calibration_rounds > 0) calibration_after_ms = etfarm::Calibration().run(opts.calibration_rounds);

  if (!opts.output_file.empty()) {
    const std::vector<uint8_t> bytes = etfarm::serialize_etft(outputs);
    if (!etfarm::write_file_atomic(opts.output_file, bytes.data(), bytes.size(), &why)) return fail(why);
  }
  if (tracer != nullptr) {
    auto dump = tracer->get_etdump_data();
    if (dump.buf == nullptr || dump.size == 0) return fail("the event tracer produced no ETDump data");
    const bool ok = etfarm::write_file_atomic(opts.etdump_path, dump.buf, dump.size, &why);
    std::free(dump.buf);
    if (!ok) return fail(why);
    // Only the used prefix: tensors are laid out from offset 0, so it is the whole content.
    const size_t debug_used = std::min(debug_buffer.size(), tracer->debug_bytes_used());
    if (!debug_buffer.empty() &&
        !etfarm::write_file_atomic(opts.debug_output_path, debug_buffer.data(), debug_used, &why)) {
      return fail(why);
    }
    if (tracer->debug_buffer_overflowed()) {
      std::fprintf(stderr, "etfarm_runner: warning: debug buffer of %" PRId64
                           " bytes was too small; some tensors were not logged (raise --debug_buffer_size)\n",
                   opts.debug_buffer_size);
    }
  }

  std::string json = "{\"method\": " + json_string(opts.method_name);
  char num[64];
  std::snprintf(num, sizeof(num), "%.6f", load_ms);
  json += ", \"load_ms\": " + std::string(num);
  std::snprintf(num, sizeof(num), "%.6f", program_load_ms);
  json += ", \"program_load_ms\": " + std::string(num);
  json += ", \"warmup\": " + std::to_string(opts.warmup);
  json += ", \"executions\": " + std::to_string(opts.num_executions);
  json += ", \"execute_ms\": [";
  for (size_t i = 0; i < execute_ms.size(); ++i) {
    std::snprintf(num, sizeof(num), "%s%.6f", i ? ", " : "", execute_ms[i]);
    json += num;
  }
  json += "], \"etdump\": " + std::string(tracer != nullptr ? "true" : "false");
  json += ", \"cpu_threads\": " + std::to_string(etfarm::threadpool_size());
  json += ", \"debug_buffer_used\": " + std::to_string(tracer != nullptr ? tracer->debug_bytes_used() : 0);
  json += ", \"debug_buffer_overflow\": " +
      std::string(tracer != nullptr && tracer->debug_buffer_overflowed() ? "true" : "false");
  json += ", \"peak_rss_load_kb\": " + std::to_string(peak_rss_load_kb);
  json += ", \"peak_rss_kb\": " + std::to_string(peak_rss_kb);
  json += ", \"planned_memory_bytes\": " + std::to_string(planned_bytes);
  json += ", \"program_bytes\": " + std::to_string(etfarm::file_size(opts.model_path));
  json += ", \"backends\": " + etfarm::backends_json();
  if (opts.calibration_rounds > 0) {
    json += ", \"calibration_rounds\": " + std::to_string(opts.calibration_rounds);
    std::snprintf(num, sizeof(num), "%.6f", calibration_before_ms);
    json += ", \"calibration_before_ms\": " + std::string(num);
    std::snprintf(num, sizeof(num), "%.6f", calibration_after_ms);
    json += ", \"calibration_after_ms\": " + std::string(num);
  }
  std::snprintf(num, sizeof(num), "%.6f", ms_since(started));
  json += ", \"runner_ms\": " + std::string(num);
  json += "}";
  std::printf("ETFARM_RESULT %s\n", json.c_str());
  std::fflush(stdout);
  if (opts.hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(opts.hold_ms));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto started = Clock::now();
  etfarm::Options opts;
  std::string error;
  if (!etfarm::parse_args(argc, argv, &opts, &error)) {
    std::fprintf(stderr, "etfarm_runner: %s\n\n%s", error.c_str(), etfarm::usage_text());
    return kExitUsage;
  }
  if (opts.help) {
    std::fputs(etfarm::usage_text(), stdout);
    etfarm::print_backends();
    return 0;
  }
  try {
    return run(opts, started);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc for a huge input
    return fail(std::string("unexpected failure: ") + e.what());
  }
}
