// The runner's result line: `ETFARM_RESULT {json}` on stdout, one line, printed last.
// Keys (times in ms, memory in KiB unless named _bytes; -1 where the platform cannot tell):
//   method, load_ms (method load), program_load_ms, warmup, executions, execute_ms [per measured
//   execution; in generation mode per generation: ttft_ms + decode_ms], etdump, cpu_threads,
//   debug_buffer_used, debug_buffer_overflow, peak_rss_load_kb, peak_rss_kb (VmHWM after load /
//   after the measured executions), planned_memory_bytes, program_bytes,
//   backends [the delegate backends this runtime registered],
//   [calibration_rounds, calibration_before_ms, calibration_after_ms], runner_ms,
//   and since issue 20:
//   pss_load_kb, pss_kb      PSS (smaps_rollup "Pss:") after the method load / after the measured
//                            executions, every mode
//   mode                     "forward" (W + N executions of one method) or "generate"
//   warmup_ms                since issue 37: [per warmup execution or generation, as execute_ms],
//                            the first execution's cost (caches, the threadpool's first wake-up),
//                            and what makes the runner's own time outside executions measurable
//   and since issue 37 (absent with --sched_stats=false):
//   contention               an object (etfarm_sched.h): wait_ms [run-queue wait of all threads
//                            during each measured execution or generation], cpu_ms, wall_ms
//                            (process CPU and wall time over the measured loop),
//                            involuntary_switches, migrations, threads, read_ms (cost of reading);
//                            -1 where unreadable, wait_ms [] without schedstats
//   llm                      generation mode only, an object:
//     max_seq_len, max_context_len, vocab_size   the program's metadata methods
//     dynamic_shape          prefill in chunks of prefill_chunk tokens (else token by token)
//     prefill_chunk, prefill_calls               forward calls per prefill = ceil(P / chunk)
//     prompt_len, prompt_seed (null for a prompt file), prompt_tokens [P ids]
//     gen_len, requested_gen_len                 generated tokens (clamped to the context) / asked
//     decode_steps           gen_len - 1: forward calls per generation after the prefill
//     generations            one object per measured generation:
//       ttft_ms, prefill_ms, prefill_tokens_per_s, decode_ms, decode_tokens_per_s,
//       decode_step_ms [decode_steps], total_ms, rss_prefill_kb, pss_prefill_kb,
//       rss_decode_kb, pss_decode_kb (VmRSS / PSS after the prefill / after the last step),
//       tokens [gen_len generated ids]
// ETDump in generation mode: the method-load block, then per measured generation prefill_calls
// prefill blocks followed by decode_steps decode blocks (one block per forward call).
#pragma once

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "etfarm_args.h"
#include "etfarm_backends.h"
#include "etfarm_etft.h"
#include "etfarm_llm.h"
#include "etfarm_sched.h"
#include "etfarm_threadpool.h"
#include "etfarm_tracer.h"
#include "memory_owner.h"

namespace etfarm {

// What loading measured: wall times, planned memory, memory right after the method load.
struct Loaded {
  double program_load_ms = 0, load_ms = 0;
  int64_t planned_bytes = 0, peak_rss_load_kb = -1, pss_load_kb = -1;
};

// What the measured executions (or generations) left.
struct Measured {
  std::vector<double> execute_ms;  // per execution; per generation: ttft_ms + decode_ms
  std::vector<double> warmup_ms;   // the same, per warmup execution or generation
  std::vector<HostTensor> outputs;  // the last execution's outputs (or generated tokens, int64 [1, N])
  llm::Shape shape;  // generation mode only, as the rest below
  std::vector<int64_t> prompt;
  int64_t gen_len = 0;
  std::vector<llm::Generation> generations;
  ContentionFigures contention;  // read around the measured loop (etfarm_sched.h); threads -1: not read
};

// Process facts taken after the measured executions.
struct Facts {
  int64_t peak_rss_kb = -1, pss_kb = -1;
  double calibration_before_ms = -1, calibration_after_ms = -1, runner_ms = 0;
};

inline std::string json_string(const std::string& s) {
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

// A JSON object written key by key, in order.
class JsonObject {
 public:
  JsonObject& raw(const char* key, const std::string& value) {
    out_ += (out_.size() > 1 ? ", " : "") + json_string(key) + ": " + value;
    return *this;
  }
  JsonObject& num(const char* key, double v) { return raw(key, number(v)); }
  JsonObject& integer(const char* key, int64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& text(const char* key, const std::string& v) { return raw(key, json_string(v)); }
  std::string str() const { return out_ + "}"; }

  static std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6f", v);
    return buf;
  }
  template <typename T>
  static std::string array(const std::vector<T>& values) {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ", ";
      if constexpr (std::is_floating_point_v<T>) {
        out += number(values[i]);
      } else {
        out += std::to_string(values[i]);
      }
    }
    return out + "]";
  }

 private:
  std::string out_ = "{";
};

inline double per_second(double count, double ms) { return ms > 0 ? count * 1000.0 / ms : 0.0; }

inline std::string generation_json(const llm::Generation& g, int64_t prompt_len) {
  JsonObject o;
  o.num("ttft_ms", g.ttft_ms).num("prefill_ms", g.prefill_ms);
  o.num("prefill_tokens_per_s", per_second(static_cast<double>(prompt_len), g.prefill_ms));
  o.num("decode_ms", g.decode_ms);
  o.num("decode_tokens_per_s", per_second(static_cast<double>(g.decode_step_ms.size()), g.decode_ms));
  o.raw("decode_step_ms", JsonObject::array(g.decode_step_ms)).num("total_ms", g.ttft_ms + g.decode_ms);
  o.integer("rss_prefill_kb", g.rss_prefill_kb).integer("pss_prefill_kb", g.pss_prefill_kb);
  o.integer("rss_decode_kb", g.rss_decode_kb).integer("pss_decode_kb", g.pss_decode_kb);
  return o.raw("tokens", JsonObject::array(g.tokens)).str();
}

inline std::string llm_json(const Options& opts, const Measured& m) {
  const auto& s = m.shape;
  const auto p = static_cast<int64_t>(m.prompt.size());
  JsonObject o;
  o.integer("max_seq_len", s.max_seq_len).integer("max_context_len", s.max_context_len);
  o.integer("vocab_size", s.vocab_size).boolean("dynamic_shape", s.dynamic_shape);
  o.integer("prefill_chunk", s.prefill_chunk).integer("prefill_calls", (p + s.prefill_chunk - 1) / s.prefill_chunk);
  o.integer("prompt_len", p).raw("prompt_seed", opts.prompt_file.empty() ? std::to_string(opts.prompt_seed) : "null");
  o.raw("prompt_tokens", JsonObject::array(m.prompt));
  o.integer("gen_len", m.gen_len).integer("requested_gen_len", opts.gen_len).integer("decode_steps", m.gen_len - 1);
  std::string gens = "[";
  for (size_t i = 0; i < m.generations.size(); ++i) gens += (i ? ", " : "") + generation_json(m.generations[i], p);
  return o.raw("generations", gens + "]").str();
}

inline std::string contention_json(const ContentionFigures& c) {
  JsonObject o;
  o.raw("wait_ms", JsonObject::array(c.wait_ms)).num("cpu_ms", c.cpu_ms).num("wall_ms", c.wall_ms);
  o.integer("involuntary_switches", c.involuntary_switches).integer("migrations", c.migrations);
  return o.integer("threads", c.threads).num("read_ms", c.read_ms).str();
}

inline std::string result_json(const Options& opts, const Loaded& l, const Measured& m, const Facts& f,
                               GatedETDumpGen* tracer) {
  JsonObject o;
  o.text("method", opts.method_name).num("load_ms", l.load_ms).num("program_load_ms", l.program_load_ms);
  o.integer("warmup", opts.warmup).integer("executions", opts.num_executions);
  o.raw("execute_ms", JsonObject::array(m.execute_ms)).boolean("etdump", tracer != nullptr);
  o.integer("cpu_threads", threadpool_size());
  o.integer("debug_buffer_used", tracer != nullptr ? static_cast<int64_t>(tracer->debug_bytes_used()) : 0);
  o.boolean("debug_buffer_overflow", tracer != nullptr && tracer->debug_buffer_overflowed());
  o.integer("peak_rss_load_kb", l.peak_rss_load_kb).integer("peak_rss_kb", f.peak_rss_kb);
  o.integer("planned_memory_bytes", l.planned_bytes).integer("program_bytes", file_size(opts.model_path));
  o.raw("backends", backends_json());
  if (opts.calibration_rounds > 0) {
    o.integer("calibration_rounds", opts.calibration_rounds);
    o.num("calibration_before_ms", f.calibration_before_ms).num("calibration_after_ms", f.calibration_after_ms);
  }
  o.num("runner_ms", f.runner_ms);
  o.integer("pss_load_kb", l.pss_load_kb).integer("pss_kb", f.pss_kb);
  o.text("mode", opts.generate ? "generate" : "forward");
  if (opts.generate) o.raw("llm", llm_json(opts, m));
  o.raw("memory", memory::json());  // since issue 39: memory by owner (memory_owner.h)
  o.raw("warmup_ms", JsonObject::array(m.warmup_ms));
  if (opts.sched_stats) o.raw("contention", contention_json(m.contention));
  return o.str();
}

}  // namespace etfarm
