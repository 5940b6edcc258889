// Generation mode of etfarm_runner (--generate): greedy decoding of token ids with a KV-cache LLM
// program, timed per phase. No tokenizer: a prompt is token ids (seeded, or from an ETFT file).
//
// The program (export_llama -kv, optimum-executorch, or one's own export) has the metadata methods
// get_max_seq_len, get_vocab_size and use_kv_cache (true), optionally enable_dynamic_shape and
// get_max_context_len, and a method forward(tokens [1, S] int64, input_pos [1] int64) -> logits
// [1, vocab] (or [1, S, vocab]: the last row is used). One generation:
//   prefill  the P prompt tokens at positions 0..P-1, in chunks of the method's bound on S (one
//            call when the shape is dynamic and P fits, else token by token); the argmax of the
//            last logits is generated token 1;
//   decode   N-1 steps, each feeding the previous token at position P+i and taking the argmax.
// Positions never reach the KV cache's size (get_max_context_len, else get_max_seq_len): N is
// clamped to context - P + 1, with a warning. With an event tracer, each forward call is one ETDump
// block: a generation is `prefill_calls` prefill blocks, then N-1 decode blocks.
//
// Timing (steady clock, per generation): t0 before the first prefill call; prefill_ms = t0 ->
// the last prefill call returned; ttft_ms = t0 -> token 1 known (prefill + argmax); then memory
// is sampled (untimed); decode_step_ms[i] = the previous token known -> this step's token known
// (input, forward, argmax); decode_ms = their sum; total_ms = ttft_ms + decode_ms.
// prefill_tokens_per_s = P / prefill_ms; decode_tokens_per_s = (N-1) / decode_ms (0 when N = 1).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include "etfarm_etft.h"
#include "etfarm_inputs.h"
#include "etfarm_probe.h"

namespace etfarm {
namespace llm {

using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using ::executorch::runtime::EValue;
using ::executorch::runtime::MethodMeta;
using LlmClock = std::chrono::steady_clock;

// What the runner needs to know about the program, from its metadata methods and signature.
struct Shape {
  int64_t max_seq_len = 0;
  int64_t max_context_len = 0;  // KV cache length: positions stay below it
  int64_t vocab_size = 0;
  bool dynamic_shape = false;
  int64_t prefill_chunk = 1;  // tokens per prefill call: the method's bound on S when dynamic, else 1
};

struct Generation {
  double prefill_ms = 0, ttft_ms = 0, decode_ms = 0;
  std::vector<double> decode_step_ms;
  int64_t rss_prefill_kb = -1, pss_prefill_kb = -1, rss_decode_kb = -1, pss_decode_kb = -1;
  std::vector<int64_t> tokens;  // generated token ids, the prompt excluded
};

// Reads a scalar metadata method (Int or Bool constant). False when absent or not a scalar.
inline bool metadata(Module& module, const std::string& name, int64_t* out) {
  auto names = module.method_names();
  if (!names.ok() || names->count(name) == 0) return false;
  auto value = module.execute(name);
  if (!value.ok() || value->empty()) return false;
  const EValue& v = value->at(0);
  if (v.isInt()) *out = v.toInt();
  else if (v.isBool()) *out = v.toBool() ? 1 : 0;
  else return false;
  return true;
}

inline bool is_long_tensor(const MethodMeta& meta, size_t i, size_t rank, std::vector<int64_t>* sizes) {
  auto info = meta.input_tensor_meta(i);
  if (!info.ok() || info->scalar_type() != ScalarType::Long || info->sizes().size() != rank) return false;
  sizes->assign(info->sizes().begin(), info->sizes().end());
  return true;
}

// Checks that `method` is a KV-cache LLM's step and reads its shape. Runs the metadata methods:
// pause the event tracer around this call.
inline bool read_shape(Module& module, const std::string& method, Shape* shape, std::string* error) {
  const std::string what = "--generate needs a KV-cache LLM program (export_llama -kv or alike): ";
  int64_t kv = 0;
  if (!metadata(module, "get_max_seq_len", &shape->max_seq_len) ||
      !metadata(module, "get_vocab_size", &shape->vocab_size) || !metadata(module, "use_kv_cache", &kv)) {
    *error = what + "it lacks the metadata methods get_max_seq_len, get_vocab_size and use_kv_cache";
    return false;
  }
  if (kv == 0 || shape->max_seq_len < 1 || shape->vocab_size < 2) {
    *error = what + "use_kv_cache is false, or get_max_seq_len/get_vocab_size are out of range";
    return false;
  }
  if (!metadata(module, "get_max_context_len", &shape->max_context_len)) shape->max_context_len = shape->max_seq_len;
  int64_t dynamic = 0;
  metadata(module, "enable_dynamic_shape", &dynamic);
  auto meta = module.method_meta(method);
  std::vector<int64_t> tokens, pos;
  if (!meta.ok() || meta->num_inputs() != 2 || !is_long_tensor(meta.get(), 0, 2, &tokens) ||
      !is_long_tensor(meta.get(), 1, 1, &pos) || tokens[0] != 1 || pos[0] != 1) {
    *error = what + "method '" + method + "' must take (tokens [1, S] int64, input_pos [1] int64)";
    return false;
  }
  shape->dynamic_shape = dynamic != 0 && tokens[1] > 1;
  shape->prefill_chunk = shape->dynamic_shape ? tokens[1] : 1;
  if (!shape->dynamic_shape && tokens[1] != 1) {
    *error = "--generate: method '" + method + "' takes a fixed prompt shape " + shape_str(tokens) +
        "; only dynamic-shape or one-token programs are supported";
    return false;
  }
  return true;
}

// The seeded prompt: token i = 1 + splitmix64_i(seed) mod (vocab - 1), never 0 (often a pad or
// BOS id). orchestrator/artifacts/llm.py reproduces it (seeded_prompt) to verify tokens on the host.
inline std::vector<int64_t> seeded_prompt(uint64_t seed, int64_t length, int64_t vocab) {
  std::vector<int64_t> ids;
  uint64_t state = seed;
  for (int64_t i = 0; i < length; ++i) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    ids.push_back(1 + static_cast<int64_t>(z % static_cast<uint64_t>(vocab - 1)));
  }
  return ids;
}

// A prompt from an ETFT file: one int64 (or int32) tensor, any shape, its elements the token ids.
inline bool prompt_from_file(const std::string& path, int64_t vocab, std::vector<int64_t>* ids, std::string* error) {
  std::vector<uint8_t> raw;
  std::vector<HostTensor> tensors;
  std::string why;
  if (!read_file(path, &raw, &why) || !parse_etft(raw, &tensors, &why)) {
    *error = "prompt file '" + path + "': " + why;
    return false;
  }
  const uint32_t kInt = 3, kLong = 4;
  if (tensors.size() != 1 || (tensors[0].scalar_type != kLong && tensors[0].scalar_type != kInt)) {
    *error = "prompt file '" + path + "' must hold one int64 (or int32) tensor of token ids";
    return false;
  }
  const HostTensor& t = tensors[0];
  const size_t width = t.scalar_type == kLong ? 8 : 4;
  for (size_t off = 0; off + width <= t.data.size(); off += width) {
    int64_t id = 0;
    if (width == 8) {
      std::memcpy(&id, t.data.data() + off, 8);
    } else {
      int32_t small = 0;
      std::memcpy(&small, t.data.data() + off, 4);
      id = small;
    }
    if (id < 0 || id >= vocab) {
      *error = "prompt file '" + path + "': token id " + std::to_string(id) + " is outside the vocabulary [0, " +
          std::to_string(vocab) + ")";
      return false;
    }
    ids->push_back(id);
  }
  if (ids->empty()) {
    *error = "prompt file '" + path + "' holds no token ids";
    return false;
  }
  return true;
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
  uint32_t bits = sign | (exp == 31 ? (0xFFu << 23) | (mant << 13) : ((exp + 112) << 23) | (mant << 13));
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Index of the first largest of n values read through `at` (torch.argmax's choice on ties).
template <typename At>
inline int64_t first_max(int64_t n, At at) {
  int64_t best = 0;
  float best_value = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    const float v = at(i);
    if (v > best_value) best_value = v, best = i;
  }
  return best;
}

inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Greedy choice over the last row of the logits (the dtype dispatched once, not per element).
inline bool argmax(const EValue& out, int64_t* token, std::string* error) {
  if (!out.isTensor() || out.toTensor().dim() < 1) {
    *error = "the LLM's first output is not a logits tensor";
    return false;
  }
  const auto& t = out.toTensor();
  const int64_t vocab = t.size(t.dim() - 1);
  const int64_t row = (t.numel() / vocab - 1) * vocab;
  switch (t.scalar_type()) {
    case ScalarType::Float: {
      const float* p = t.const_data_ptr<float>() + row;
      *token = first_max(vocab, [p](int64_t i) { return p[i]; });
      return true;
    }
    case ScalarType::Double: {
      const double* p = t.const_data_ptr<double>() + row;
      *token = first_max(vocab, [p](int64_t i) { return static_cast<float>(p[i]); });
      return true;
    }
    case ScalarType::Half: {
      const uint16_t* p = static_cast<const uint16_t*>(t.const_data_ptr()) + row;
      *token = first_max(vocab, [p](int64_t i) { return half_to_float(p[i]); });
      return true;
    }
    case ScalarType::BFloat16: {
      const uint16_t* p = static_cast<const uint16_t*>(t.const_data_ptr()) + row;
      *token = first_max(vocab, [p](int64_t i) { return bf16_to_float(p[i]); });
      return true;
    }
    default:
      *error = "the LLM's logits have an unsupported dtype (code " + std::to_string(static_cast<int>(t.scalar_type())) +
          ")";
      return false;
  }
}

// Runs generations of one program: one forward call per prefill chunk and per decode step.
class Generator {
 public:
  Generator(Module& module, std::string method, const Shape& shape)
      : module_(module), method_(std::move(method)), shape_(shape), tokens_(shape.prefill_chunk), pos_(1) {}

  bool run(const std::vector<int64_t>& prompt, int64_t gen_len, Generation* g, std::string* error) {
    const auto t0 = LlmClock::now();
    int64_t token = 0;
    for (size_t offset = 0; offset < prompt.size(); offset += static_cast<size_t>(shape_.prefill_chunk)) {
      const size_t n = std::min(prompt.size() - offset, static_cast<size_t>(shape_.prefill_chunk));
      std::copy(prompt.begin() + offset, prompt.begin() + offset + n, tokens_.begin());
      if (!step(static_cast<int64_t>(n), static_cast<int64_t>(offset), nullptr, error)) return false;
    }
    g->prefill_ms = ms(t0, LlmClock::now());
    if (!argmax(last_.at(0), &token, error)) return false;
    auto known = LlmClock::now();
    g->ttft_ms = ms(t0, known);
    g->tokens.assign(1, token);
    g->rss_prefill_kb = rss_kb(), g->pss_prefill_kb = pss_kb();
    known = LlmClock::now();  // memory sampling is not decode time
    for (int64_t i = 0; i + 1 < gen_len; ++i) {
      tokens_[0] = token;
      if (!step(1, static_cast<int64_t>(prompt.size()) + i, &token, error)) return false;
      const auto now = LlmClock::now();
      g->decode_step_ms.push_back(ms(known, now));
      known = now;
      g->tokens.push_back(token);
    }
    g->decode_ms = 0;
    for (double s : g->decode_step_ms) g->decode_ms += s;
    g->rss_decode_kb = rss_kb(), g->pss_decode_kb = pss_kb();
    return true;
  }

 private:
  static double ms(LlmClock::time_point a, LlmClock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  }

  // One forward call over tokens_[0..n) at position `pos`; the argmax into *next when asked.
  bool step(int64_t n, int64_t pos, int64_t* next, std::string* error) {
    pos_[0] = pos;
    auto tokens = ::executorch::extension::from_blob(tokens_.data(), {1, static_cast<int32_t>(n)}, ScalarType::Long);
    auto input_pos = ::executorch::extension::from_blob(pos_.data(), {1}, ScalarType::Long);
    auto out = module_.execute(method_, {EValue(*tokens), EValue(*input_pos)});
    if (!out.ok() || out->empty()) {
      *error = "forward call at position " + std::to_string(pos) + " (" + std::to_string(n) + " tokens) " +
          (out.ok() ? "returned no outputs" : "failed: " + describe(out.error()));
      return false;
    }
    last_ = std::move(out.get());
    return next == nullptr || argmax(last_.at(0), next, error);
  }

  Module& module_;
  std::string method_;
  Shape shape_;
  std::vector<int64_t> tokens_;
  std::vector<int64_t> pos_;
  std::vector<EValue> last_;
};

}  // namespace llm
}  // namespace etfarm
