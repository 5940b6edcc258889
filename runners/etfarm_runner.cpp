// etfarm_runner: loads a .pte with ExecuTorch's Module API, runs W warmup and
// N measured executions of one method (or, with --generate, W + N greedy
// generations of a KV-cache LLM: etfarm_llm.h), optionally records an ETDump of
// the measured ones, and prints one line "ETFARM_RESULT {json}" on stdout (keys:
// etfarm_result.h). A program needing operators or backends this runtime lacks
// is refused in one line before its method is loaded.
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
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/exec_aten/util/scalar_type_util.h>
#include <executorch/runtime/kernel/operator_registry.h>
#include <executorch/runtime/platform/runtime.h>

#include "etfarm_args.h"
#include "etfarm_backends.h"
#include "etfarm_etft.h"
#include "etfarm_inputs.h"
#include "etfarm_llm.h"
#include "etfarm_probe.h"
#include "etfarm_pte.h"
#include "etfarm_result.h"
#include "etfarm_sched.h"
#include "etfarm_threadpool.h"
#include "etfarm_tracer.h"
#include "memory_owner.h"

namespace {

using ::etfarm::describe;
using ::etfarm::Inputs;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using ::executorch::runtime::Error;
using ::executorch::runtime::EventTracerDebugLogLevel;
using ::executorch::runtime::MethodMeta;
using ::executorch::runtime::Program;
using ::executorch::runtime::Span;
using Clock = std::chrono::steady_clock;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "etfarm_runner: error: %s\n", message.c_str());
  return kExitError;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string method_list(Module& module) {
  auto names = module.method_names();
  if (!names.ok()) return "?";
  std::string out;
  for (const auto& n : names.get()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Operators and backends the program needs that this runtime lacks, in one line; "" when none
// (or when the program flatbuffer cannot be read here: the Module's own checks then speak).
std::string unsupported(const etfarm::Options& opts) {
  std::vector<etfarm::pte::Method> methods;
  std::string why;
  if (!etfarm::pte::read_methods(opts.model_path, &methods, &why)) return "";
  std::vector<std::string> ops, backends;
  const auto kernels = ::executorch::runtime::get_registered_kernels();
  for (const auto& m : methods) {
    if (m.name != opts.method_name) continue;
    for (const auto& op : m.operators) {
      const bool found = std::any_of(kernels.begin(), kernels.end(),
                                     [&](const auto& k) { return k.name_ != nullptr && op == k.name_; });
      if (!found && std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    }
    for (const auto& id : m.delegates) {
      if (::executorch::runtime::get_backend_class(id.c_str()) == nullptr &&
          std::find(backends.begin(), backends.end(), id) == backends.end()) {
        backends.push_back(id);
      }
    }
  }
  std::string out;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!ops.empty()) out = "operators this runtime does not have: " + join(ops);
  if (!backends.empty()) {
    const auto registered = etfarm::registered_backends();
    out += (out.empty() ? "" : "; ") + std::string("backends it does not register: ") + join(backends) +
           " (registered: " + (registered.empty() ? std::string("none") : join(registered)) +
           "; build the runner against a runtime that has them)";
  }
  if (out.empty()) return "";
  out = "program '" + opts.model_path + "' method '" + opts.method_name + "' needs " + out;
  if (std::any_of(ops.begin(), ops.end(), [](const std::string& op) { return op.rfind("llama::", 0) == 0; })) {
    out += " (ExecuTorch's LLM custom ops, from export_llama --use_sdpa_with_kv_cache: export without that flag,"
           " or build etfarm_runner against your own runtime that registers extension/llm/custom_ops)";
  }
  return out;
}

int measure_forward(Module& module, const etfarm::Options& opts, const MethodMeta& meta,
                    etfarm::GatedETDumpGen* tracer, etfarm::Measured* m) {
  Inputs inputs;
  std::string why;
  if (!etfarm::prepare_inputs(meta, opts, &inputs, &why)) return fail(why);
  if (tracer != nullptr) tracer->set_recording(false);  // warmup leaves no trace
  for (int64_t w = 0; w < opts.warmup; ++w) {
    if (!etfarm::set_inputs(module, opts.method_name, inputs, &why)) return fail(why);
    auto t0 = Clock::now();
    auto result = module.execute(opts.method_name);
    m->warmup_ms.push_back(ms_since(t0));
    if (!result.ok()) {
      return fail("warmup execution " + std::to_string(w) + " of '" + opts.method_name + "' failed: " +
                  describe(result.error()));
    }
  }
  if (tracer != nullptr) tracer->set_recording(true);
  etfarm::SchedProbe sched;
  if (opts.sched_stats) sched.begin();
  for (int64_t n = 0; n < opts.num_executions; ++n) {
    if (!etfarm::set_inputs(module, opts.method_name, inputs, &why)) return fail(why);
    if (opts.sched_stats) sched.before();
    auto t0 = Clock::now();
    auto result = module.execute(opts.method_name);
    m->execute_ms.push_back(ms_since(t0));
    if (opts.sched_stats) sched.after();
    if (!result.ok()) {
      return fail("execution " + std::to_string(n) + " of '" + opts.method_name + "' failed: " +
                  describe(result.error()));
    }
    if (n + 1 == opts.num_executions && !opts.output_file.empty() &&
        !etfarm::collect_outputs(result.get(), &m->outputs, &why)) {
      return fail(why);
    }
  }
  if (opts.sched_stats) m->contention = sched.end();
  return 0;
}

// The prompt and generation length, checked against the program (m->shape must be set).
int prepare_generation(const etfarm::Options& opts, etfarm::Measured* m) {
  const auto& s = m->shape;
  std::string why;
  if (!opts.prompt_file.empty()) {
    if (!etfarm::llm::prompt_from_file(opts.prompt_file, s.vocab_size, &m->prompt, &why)) return fail(why);
  } else {
    m->prompt = etfarm::llm::seeded_prompt(static_cast<uint64_t>(opts.prompt_seed), opts.prompt_len, s.vocab_size);
  }
  const auto p = static_cast<int64_t>(m->prompt.size());
  if (p > s.max_context_len) {
    return fail("a prompt of " + std::to_string(p) + " tokens does not fit the program's context of " +
                std::to_string(s.max_context_len) + " positions");
  }
  m->gen_len = std::min(opts.gen_len, s.max_context_len - p + 1);
  if (m->gen_len < opts.gen_len) {
    std::fprintf(stderr, "etfarm_runner: warning: --gen_len %" PRId64 " clamped to %" PRId64
                         ": prompt + generated tokens must fit the context of %" PRId64 " positions\n",
                 opts.gen_len, m->gen_len, s.max_context_len);
  }
  return 0;
}

int measure_generate(Module& module, const etfarm::Options& opts, etfarm::GatedETDumpGen* tracer, etfarm::Measured* m) {
  if (int rc = prepare_generation(opts, m)) return rc;
  etfarm::llm::Generator generator(module, opts.method_name, m->shape);
  std::string why;
  if (tracer != nullptr) tracer->set_recording(false);  // warmup generations leave no trace
  for (int64_t w = 0; w < opts.warmup; ++w) {
    etfarm::llm::Generation g;
    if (!generator.run(m->prompt, m->gen_len, &g, &why)) return fail("warmup generation: " + why);
    m->warmup_ms.push_back(g.ttft_ms + g.decode_ms);
  }
  if (tracer != nullptr) tracer->set_recording(true);
  etfarm::SchedProbe sched;
  if (opts.sched_stats) sched.begin();
  for (int64_t n = 0; n < opts.num_executions; ++n) {
    etfarm::llm::Generation g;
    if (opts.sched_stats) sched.before();
    if (!generator.run(m->prompt, m->gen_len, &g, &why)) return fail("generation " + std::to_string(n) + ": " + why);
    if (opts.sched_stats) sched.after();
    m->execute_ms.push_back(g.ttft_ms + g.decode_ms);
    m->generations.push_back(std::move(g));
  }
  if (opts.sched_stats) m->contention = sched.end();
  if (!opts.output_file.empty()) {  // the last generation's tokens, int64 [1, N]
    etfarm::HostTensor t;
    t.scalar_type = static_cast<uint32_t>(ScalarType::Long);
    const auto& tokens = m->generations.back().tokens;
    t.sizes = {1, static_cast<int64_t>(tokens.size())};
    t.data.resize(tokens.size() * 8);
    std::memcpy(t.data.data(), tokens.data(), t.data.size());
    m->outputs.push_back(std::move(t));
  }
  return 0;
}

// Loads the program and the method, timing both; in generation mode also reads the LLM's shape.
int load(Module& module, const etfarm::Options& opts, etfarm::GatedETDumpGen* tracer, etfarm::Loaded* l, etfarm::Measured* m) {
  etfarm::memory::before_program_load();  // memory by owner: memory_owner.h
  auto t0 = Clock::now();
  // Full flatbuffer verification, so a corrupt file is an error, not a crash.
  Error err = module.load(Program::Verification::InternalConsistency);
  l->program_load_ms = ms_since(t0);
  etfarm::memory::after_program_load();
  if (err != Error::Ok) return fail("cannot load program '" + opts.model_path + "': " + describe(err));
  auto meta = module.method_meta(opts.method_name);
  if (!meta.ok()) {
    return fail("program '" + opts.model_path + "' has no method '" + opts.method_name + "' (methods: " +
                method_list(module) + ")");
  }
  const std::string missing = unsupported(opts);
  if (!missing.empty()) return fail(missing);
  if (opts.generate) {
    std::string why;
    if (tracer != nullptr) tracer->set_recording(false);  // the metadata methods stay out of the ETDump
    const bool ok = etfarm::llm::read_shape(module, opts.method_name, &m->shape, &why);
    if (tracer != nullptr) tracer->set_recording(true);
    if (!ok) return fail(why);
  }
  // What memory planning asked for: the sum of the method's planned buffers (MethodMeta).
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    auto size = meta->memory_planned_buffer_size(i);
    if (size.ok()) l->planned_bytes += size.get();
  }
  t0 = Clock::now();
  err = module.load_method(opts.method_name);
  l->load_ms = ms_since(t0);
  if (err != Error::Ok) {
    return fail("cannot load method '" + opts.method_name + "' of '" + opts.model_path + "': " + describe(err));
  }
  etfarm::memory::after_method_load(l->planned_bytes, etfarm::memory::calls_delegate(opts.model_path, opts.method_name));
  // PSS first: it is at most the RSS of that moment, which the high-water mark read after it
  // covers, so pss_load_kb <= peak_rss_load_kb holds exactly (runner_contract.py checks it).
  l->pss_load_kb = etfarm::pss_kb();
  l->peak_rss_load_kb = etfarm::peak_rss_kb();
  return 0;
}

int attach_debug_buffer(const etfarm::Options& opts, etfarm::GatedETDumpGen* tracer, std::vector<uint8_t>* buffer) {
  if (tracer == nullptr || !(opts.dump_outputs || opts.dump_intermediate_outputs)) return 0;
  buffer->assign(static_cast<size_t>(opts.debug_buffer_size), 0);
  auto ok = tracer->set_debug_buffer(Span<uint8_t>(buffer->data(), buffer->size()));
  if (!ok.ok()) {
    return fail("cannot use a debug buffer of " + std::to_string(opts.debug_buffer_size) + " bytes: " +
                describe(ok.error()));
  }
  tracer->set_debug_capacity(buffer->size());
  tracer->set_event_tracer_debug_level(opts.dump_intermediate_outputs ? EventTracerDebugLogLevel::kIntermediateOutputs
                                                                      : EventTracerDebugLogLevel::kProgramOutputs);
  return 0;
}

int write_trace(const etfarm::Options& opts, etfarm::GatedETDumpGen* tracer, const std::vector<uint8_t>& debug_buffer) {
  std::string why;
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
  return 0;
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
  std::string why;
  auto loader = etfarm::memory::counting_loader(opts.model_path, &why);  // counted: memory_owner.h
  if (loader == nullptr) return fail(why);
  Module module(std::move(loader), etfarm::memory::counting_allocator(), etfarm::memory::counting_allocator(),
                std::move(owned_tracer));

  etfarm::Loaded loaded;
  etfarm::Measured measured;
  if (int rc = load(module, opts, tracer, &loaded, &measured)) return rc;
  std::vector<uint8_t> debug_buffer;
  if (int rc = attach_debug_buffer(opts, tracer, &debug_buffer)) return rc;
  if (opts.generate) {
    if (int rc = measure_generate(module, opts, tracer, &measured)) return rc;
  } else {
    auto meta = module.method_meta(opts.method_name);
    if (int rc = measure_forward(module, opts, meta.get(), tracer, &measured)) return rc;
  }

  // Measured before the second calibration allocates its buffers.
  etfarm::memory::after_executions(tracer != nullptr);
  etfarm::Facts facts;
  facts.pss_kb = etfarm::pss_kb();  // before the high-water mark, as after the load
  facts.peak_rss_kb = etfarm::peak_rss_kb();
  if (opts.calibration_rounds > 0) facts.calibration_after_ms = etfarm::Calibration().run(opts.calibration_rounds);
  facts.calibration_before_ms = calibration_before_ms;

  if (!opts.output_file.empty()) {
    const std::vector<uint8_t> bytes = etfarm::serialize_etft(measured.outputs);
    if (!etfarm::write_file_atomic(opts.output_file, bytes.data(), bytes.size(), &why)) return fail(why);
  }
  if (tracer != nullptr) {
    if (int rc = write_trace(opts, tracer, debug_buffer)) return rc;
  }
  facts.runner_ms = ms_since(started);
  std::printf("ETFARM_RESULT %s\n", etfarm::result_json(opts, loaded, measured, facts, tracer).c_str());
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
