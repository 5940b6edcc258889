// Command-line parsing for etfarm_runner, without gflags (the wheel ships none).
// Accepts --flag=value, --flag value, and a bare --flag for booleans; flag names
// follow ExecuTorch's executor_runner / example_runner.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace etfarm {

constexpr int64_t kDefaultPromptLen = 32;
constexpr int64_t kDefaultGenLen = 32;

struct Options {
  std::string model_path;
  std::string method_name = "forward";
  int64_t num_executions = 1;
  int64_t warmup = 0;
  std::string etdump_path;  // empty: no event tracer at all
  int64_t debug_buffer_size = 256 * 1024;
  bool dump_intermediate_outputs = false;
  bool dump_outputs = false;
  std::string debug_output_path = "debug_output.bin";
  int64_t cpu_threads = 0;  // <= 0: keep the threadpool's default size
  std::string inputs;  // ETFT file; empty: fill inputs with ones
  std::string output_file;  // ETFT file for the last execution's outputs
  int64_t calibration_rounds = 0;  // 0: no calibration workload
  bool sched_stats = true;  // read run-queue waits around each measured execution (etfarm_sched.h)
  int64_t hold_ms = 0;  // sleep this long after printing the result (tests read /proc/<pid>/status)
  // Generation mode (etfarm_llm.h): warmup/num_executions then count generations.
  bool generate = false;
  int64_t prompt_len = -1;  // -1: not given (kDefaultPromptLen)
  int64_t gen_len = -1;  // -1: not given (kDefaultGenLen)
  int64_t prompt_seed = -1;  // -1: not given (0)
  std::string prompt_file;  // ETFT token ids; replaces the seeded prompt
  bool help = false;
};

inline const char* usage_text() {
  return "usage: etfarm_runner --model_path PATH [options]\n"
         "  --model_path PATH          .pte program to run (required)\n"
         "  --method_name NAME         method to run (default forward)\n"
         "  --num_executions N         measured executions (default 1)\n"
         "  --warmup N                 executions run first, not timed, not traced (default 0)\n"
         "  --etdump_path PATH         attach ETDumpGen and write the ETDump here\n"
         "                             (absent: no event tracer, end-to-end timing only)\n"
         "  --debug_buffer_size BYTES  debug buffer for logged tensors (default 262144)\n"
         "  --dump_intermediate_outputs  log intermediate outputs into the debug buffer\n"
         "  --dump_outputs             log program outputs into the debug buffer\n"
         "  --debug_output_path PATH   where the debug buffer is written (default debug_output.bin)\n"
         "  --cpu_threads N            threadpool size (default: leave the runtime's choice)\n"
         "  --inputs FILE              ETFT file with the method's inputs (default: all ones)\n"
         "  --output_file FILE         write the last execution's outputs as ETFT\n"
         "  --calibration_rounds N     time a fixed GEMM + memory-traffic workload of N rounds before\n"
         "                             and after the measured executions (default 0: off)\n"
         "  --sched_stats BOOL         report what took the CPU away from each measured execution\n"
         "                             (run-queue wait of every thread, read outside the timed region;\n"
         "                             default true)\n"
         "  --hold_ms MS               sleep MS after printing the result, before exiting (tests)\n"
         "  --generate                 LLM generation: prefill a prompt of token ids, then greedy decode;\n"
         "                             --warmup/--num_executions count generations (KV-cache programs)\n"
         "  --prompt_len P             seeded prompt of P token ids (default 32)\n"
         "  --prompt_seed S            seed of the prompt's token ids (default 0)\n"
         "  --prompt_file FILE         ETFT file with the prompt's token ids (instead of a seeded one)\n"
         "  --gen_len N                tokens to generate, the first one from prefill (default 32)\n"
         "Prints one line 'ETFARM_RESULT {json}' on stdout. Exit 0 ok, 1 runtime/IO error, 2 bad flags.\n";
}

namespace detail {

enum class Kind { String, Int, Bool };

struct Flag {
  const char* name;
  Kind kind;
  void* target;
};

inline bool parse_int(const std::string& text, int64_t* out) {
  if (text.empty()) {
    return false;
  }
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') {
    return false;
  }
  *out = static_cast<int64_t>(value);
  return true;
}

inline bool parse_bool(const std::string& text, bool* out) {
  if (text == "true" || text == "1" || text == "yes") {
    *out = true;
    return true;
  }
  if (text == "false" || text == "0" || text == "no") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace detail

// Generation flags only with --generate; the prompt is seeded or given, not both.
inline bool check_generation_args(Options* opts, std::string* error) {
  const bool any = opts->prompt_len != -1 || opts->gen_len != -1 || opts->prompt_seed != -1 || !opts->prompt_file.empty();
  if (!opts->generate) {
    if (any) *error = "--prompt_len, --prompt_seed, --prompt_file and --gen_len need --generate";
    return !any;
  }
  if (!opts->inputs.empty()) {
    *error = "--generate makes its own inputs (a prompt of token ids): give --prompt_file, not --inputs";
    return false;
  }
  if (!opts->prompt_file.empty() && (opts->prompt_len != -1 || opts->prompt_seed != -1)) {
    *error = "--prompt_file gives the prompt: drop --prompt_len/--prompt_seed";
    return false;
  }
  if (opts->prompt_len == -1) opts->prompt_len = kDefaultPromptLen;
  if (opts->gen_len == -1) opts->gen_len = kDefaultGenLen;
  if (opts->prompt_seed == -1) opts->prompt_seed = 0;
  if (opts->prompt_len < 1 || opts->gen_len < 1 || opts->prompt_seed < 0) {
    *error = "--prompt_len and --gen_len must be at least 1, --prompt_seed not negative";
    return false;
  }
  return true;
}

// Fills `opts`; on a usage error returns false and sets `error`.
inline bool parse_args(int argc, char** argv, Options* opts, std::string* error) {
  using detail::Flag;
  using detail::Kind;
  const std::vector<Flag> flags = {
      {"model_path", Kind::String, &opts->model_path},
      {"method_name", Kind::String, &opts->method_name},
      {"num_executions", Kind::Int, &opts->num_executions},
      {"warmup", Kind::Int, &opts->warmup},
      {"etdump_path", Kind::String, &opts->etdump_path},
      {"debug_buffer_size", Kind::Int, &opts->debug_buffer_size},
      {"dump_intermediate_outputs", Kind::Bool, &opts->dump_intermediate_outputs},
      {"dump_outputs", Kind::Bool, &opts->dump_outputs},
      {"debug_output_path", Kind::String, &opts->debug_output_path},
      {"cpu_threads", Kind::Int, &opts->cpu_threads},
      {"inputs", Kind::String, &opts->inputs},
      {"output_file", Kind::String, &opts->output_file},
      {"calibration_rounds", Kind::Int, &opts->calibration_rounds},
      {"sched_stats", Kind::Bool, &opts->sched_stats},
      {"hold_ms", Kind::Int, &opts->hold_ms},
      {"generate", Kind::Bool, &opts->generate},
      {"prompt_len", Kind::Int, &opts->prompt_len},
      {"gen_len", Kind::Int, &opts->gen_len},
      {"prompt_seed", Kind::Int, &opts->prompt_seed},
      {"prompt_file", Kind::String, &opts->prompt_file},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      opts->help = true;
      return true;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      *error = "unexpected argument '" + arg + "'";
      return false;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& candidate : flags) {
      if (name == candidate.name) {
        flag = &candidate;
      }
    }
    if (flag == nullptr) {
      *error = "unknown flag '--" + name + "'";
      return false;
    }
    if (flag->kind == Kind::Bool) {
      bool parsed = true;  // a bare boolean flag means true
      if (has_value && !detail::parse_bool(value, &parsed)) {
        *error = "--" + name + " expects true or false, got '" + value + "'";
        return false;
      }
      *static_cast<bool*>(flag->target) = parsed;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (flag->kind == Kind::String) {
      *static_cast<std::string*>(flag->target) = value;
    } else if (!detail::parse_int(value, static_cast<int64_t*>(flag->target))) {
      *error = "--" + name + " expects an integer, got '" + value + "'";
      return false;
    }
  }
  if (opts->model_path.empty()) {
    *error = "--model_path is required";
    return false;
  }
  if (opts->method_name.empty()) {
    *error = "--method_name must not be empty";
    return false;
  }
  if (opts->num_executions < 1) {
    *error = "--num_executions must be at least 1";
    return false;
  }
  if (opts->warmup < 0) {
    *error = "--warmup must not be negative";
    return false;
  }
  if ((opts->dump_outputs || opts->dump_intermediate_outputs) && opts->etdump_path.empty()) {
    *error = "--dump_outputs/--dump_intermediate_outputs need --etdump_path (the event tracer logs them)";
    return false;
  }
  if (opts->calibration_rounds < 0 || opts->hold_ms < 0) {
    *error = "--calibration_rounds and --hold_ms must not be negative";
    return false;
  }
  if (opts->debug_buffer_size < 1) {
    *error = "--debug_buffer_size must be positive";
    return false;
  }
  return check_generation_args(opts, error);
}

}  // namespace etfarm
