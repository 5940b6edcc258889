// bare_decode: the plainest C++ greedy-decode loop over an LLM program, for
// benchmarks/bench_llm_decode.py to hold etfarm_runner's decode tokens/s against. No event tracer,
// no per-step clocks, no memory probes, no JSON per step: Module API, from_blob inputs, execute,
// argmax -- what any ExecuTorch LLM runner must do per token. The prompt is the runner's seeded
// prompt (same splitmix64), prefilled in one call (dynamic-shape programs), so both programs
// decode the same tokens at the same positions.
//
//   bare_decode MODEL.pte PROMPT_LEN GEN_LEN GENERATIONS [THREADS]
// prints "BARE {"decode_tokens_per_s": [one per generation], "tokens": [last generation]}".
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/runtime.h>

#include "etfarm_threadpool.h"

using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using ::executorch::runtime::EValue;

static int64_t argmax(const EValue& out) {
  const auto& t = out.toTensor();
  const int64_t vocab = t.size(t.dim() - 1);
  const float* row = t.const_data_ptr<float>() + (t.numel() - vocab);
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bare_decode MODEL.pte PROMPT_LEN GEN_LEN GENERATIONS [THREADS]\n");
    return 2;
  }
  const int64_t prompt_len = std::atoll(argv[2]), gen_len = std::atoll(argv[3]), gens = std::atoll(argv[4]);
  ::executorch::runtime::runtime_init();
  if (argc > 5 && std::atoi(argv[5]) > 0) etfarm::reset_threadpool(std::atoi(argv[5]));
  Module module(argv[1], Module::LoadMode::File);
  if (module.load_method("forward") != ::executorch::runtime::Error::Ok) return 1;
  auto vocab = module.execute("get_vocab_size");
  if (!vocab.ok()) return 1;
  std::vector<int64_t> prompt;
  uint64_t state = 0;  // the runner's seeded prompt, seed 0
  for (int64_t i = 0; i < prompt_len; ++i) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    prompt.push_back(1 + static_cast<int64_t>(z % static_cast<uint64_t>(vocab->at(0).toInt() - 1)));
  }
  std::vector<double> rates;
  std::vector<int64_t> tokens;
  for (int64_t g = 0; g < gens; ++g) {
    int64_t pos = 0;
    auto out = module.execute("forward", {EValue(*from_blob(prompt.data(), {1, static_cast<int32_t>(prompt_len)}, ScalarType::Long)),
                                          EValue(*from_blob(&pos, {1}, ScalarType::Long))});
    if (!out.ok()) return 1;
    int64_t token = argmax(out->at(0));
    tokens.assign(1, token);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i + 1 < gen_len; ++i) {
      pos = prompt_len + i;
      auto step = module.execute("forward", {EValue(*from_blob(&token, {1, 1}, ScalarType::Long)),
                                             EValue(*from_blob(&pos, {1}, ScalarType::Long))});
      if (!step.ok()) return 1;
      token = argmax(step->at(0));
      tokens.push_back(token);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    rates.push_back((gen_len - 1) * 1000.0 / ms);
  }
  std::string json = "{\"decode_tokens_per_s\": [";
  for (size_t i = 0; i < rates.size(); ++i) json += (i ? ", " : "") + std::to_string(rates[i]);
  json += "], \"tokens\": [";
  for (size_t i = 0; i < tokens.size(); ++i) json += (i ? ", " : "") + std::to_string(tokens[i]);
  std::printf("BARE %s]}\n", json.c_str());
  return 0;
}
