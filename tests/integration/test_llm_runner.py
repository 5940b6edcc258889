"""LLM generation with the real runner: the shipped tiny Llama exported by ExecuTorch's own
export_llama (once per session, in the suite's shared cache: ETFARM_TEST_CACHE_DIR keeps it between runs), a static-shape KV-cache toy of our own export, and a
program with llama:: custom ops; host build and linux-aarch64 under qemu-aarch64.

Tokens are checked against the eager reference written at export time; the figures against each
other and against the ETDump (read with our reader, and with executorch's Inspector).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from orchestrator.artifacts.build import RunnerBuild, build_runner, runner_env
from orchestrator.artifacts.generation import LlmRunFigures, phase_of_call
from orchestrator.artifacts.llm import LlmReference, check_tokens, seeded_prompt
from orchestrator.artifacts.lowering import ExportedModel, export_model
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.artifacts.pte_info import read_pte_info, unsupported_ops_message
from orchestrator.artifacts.tensorfile import read_tensors, write_tensors
from orchestrator.base import procs
from orchestrator.emulate.fleet import BOARDS, board_prefix
from orchestrator.results.contention import clean_mask
from tests.helpers.tools import missing

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TINY_LLAMA = REPO / "configs" / "models" / "tiny_llama.py"
RUN_TIMEOUT_S = 300
TOY_VOCAB, TOY_CONTEXT = 64, 24


@dataclass(frozen=True)
class Toy:
    pte: Path
    greedy: object  # (prompt, gen_len) -> eager tokens


@pytest.fixture(scope="session")
def host_build(etfarm_cache: Path) -> RunnerBuild:
    return build_runner("host")


@pytest.fixture(scope="session")
def tiny_llama(etfarm_cache: Path) -> ExportedModel:
    """configs/models/tiny_llama.py:build through etfarm's export (export_llama in a subprocess)."""
    model = export_model(parse_model_spec(f"{TINY_LLAMA}:build"))
    assert model.llm_reference is not None and model.inputs is None and model.etrecord is not None
    return model


@pytest.fixture(scope="session")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Toy:
    """A one-token-per-call KV-cache LLM with metadata methods, as a user's own export would be."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    class ToyLlm(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.head = torch.nn.Embedding(TOY_VOCAB, 16), torch.nn.Linear(16, TOY_VOCAB)
            self.register_buffer("cache", torch.zeros(TOY_CONTEXT, 16))
            self.register_buffer("positions", torch.arange(TOY_CONTEXT))

        def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
            self.cache.index_copy_(0, input_pos, self.emb(tokens)[0])
            mask = (self.positions <= input_pos).float().unsqueeze(1)
            return self.head(torch.tanh((self.cache * mask).sum(0, keepdim=True)))

    torch.manual_seed(0)
    model = ToyLlm().eval().requires_grad_(False)
    exported = torch.export.export(model, (torch.tensor([[1]]), torch.tensor([0])))
    metadata = {"get_max_seq_len": TOY_CONTEXT, "get_vocab_size": TOY_VOCAB, "use_kv_cache": True, "enable_dynamic_shape": False}
    program = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()], constant_methods=metadata)
    pte = tmp_path_factory.mktemp("toy") / "toy_llm.pte"
    pte.write_bytes(program.to_executorch().buffer)

    def greedy(prompt: list[int], gen_len: int) -> list[int]:
        with torch.no_grad():
            for pos, token in enumerate(prompt):
                out = model(torch.tensor([[token]]), torch.tensor([pos]))
            tokens = [int(out.argmax())]
            for i in range(gen_len - 1):
                tokens.append(int(model(torch.tensor([[tokens[-1]]]), torch.tensor([len(prompt) + i])).argmax()))
        return tokens

    return Toy(pte, greedy)


def _run(build: RunnerBuild, *args: str | Path, emulator: tuple[str, ...] = ()) -> procs.CommandResult:
    return procs.run([*emulator, str(build.runner), *(str(a) for a in args)], env=runner_env(str(build.root)),
                     timeout_s=RUN_TIMEOUT_S)


def _result(result: procs.CommandResult) -> dict:
    assert result.ok, result.tail()
    lines = [line for line in result.stdout.splitlines() if line.startswith("ETFARM_RESULT ")]
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0].removeprefix("ETFARM_RESULT "))


def _execute_ms_per_block(etdump: Path) -> tuple[list[str], list[float | None]]:
    """Our reader: each run_data block's name and its Method::execute duration (ms), in file order."""
    from orchestrator.profiles.etdump import KIND_PROFILE, read_etdump

    dump = read_etdump(etdump)
    ev, names, times = dump.events, [], []
    for block in range(dump.num_blocks):
        names.append(dump.string(int(dump.block_name[block])))
        rows = [i for i in range(dump.block_slice(block).start, dump.block_slice(block).stop)
                if ev.kind[i] == KIND_PROFILE and dump.string(int(ev.name[i])) == "Method::execute"]
        times.append((int(ev.end_time[rows[0]]) - int(ev.start_time[rows[0]])) / 1e6 if rows else None)
    return names, times


def _check_figures(llm: LlmRunFigures) -> None:
    """What every generation's figures must satisfy, whatever the device."""
    for g in llm.generations:
        assert len(g.tokens) == llm.gen_len and len(g.decode_step_ms) == llm.decode_steps
        assert g.decode_ms == pytest.approx(sum(g.decode_step_ms), abs=1e-5 * (llm.decode_steps + 1))
        assert g.decode_tokens_per_s == pytest.approx(llm.decode_steps / g.decode_ms * 1000, rel=1e-5)
        assert g.prefill_tokens_per_s == pytest.approx(llm.prompt_len / g.prefill_ms * 1000, rel=1e-5)
        assert 0 < g.prefill_ms <= g.ttft_ms and g.total_ms == pytest.approx(g.ttft_ms + g.decode_ms, abs=2e-6)
        assert 0 < g.pss_prefill_kb <= g.rss_prefill_kb and 0 < g.pss_decode_kb <= g.rss_decode_kb


def test_tiny_llama_is_recognised_from_its_pte(tiny_llama: ExportedModel) -> None:
    info = read_pte_info(tiny_llama.pte)
    assert info.identifier == "ET12" and info.program_bytes < info.file_bytes and info.segments > 0
    shape = info.llm
    assert shape is not None and shape.custom_ops == ()
    assert (shape.max_seq_len, shape.max_context_len, shape.vocab_size, shape.n_layers) == (128, 128, 512, 2)
    assert shape.dynamic_shape and shape.prefill_chunk == 127
    assert info.metadata["use_sdpa_with_kv_cache"] is False and "XnnpackBackend" in info.method("forward").delegates


def test_tiny_llama_generates_the_eager_tokens_and_consistent_figures(host_build: RunnerBuild, tiny_llama: ExportedModel,
                                                                      tmp_path: Path) -> None:
    etdump, tokens_file = tmp_path / "gen.etdp", tmp_path / "tokens.etft"
    summary = _result(_run(host_build, "--model_path", tiny_llama.pte, "--generate", "--prompt_len=8", "--gen_len=12",
                           "--warmup=1", "--num_executions=2", "--etdump_path", etdump, "--output_file", tokens_file))
    assert summary["mode"] == "generate" and len(summary["execute_ms"]) == 2
    llm = LlmRunFigures.from_json(summary["llm"])
    assert llm.prompt_tokens == tuple(seeded_prompt(0, 8, 512)), "the runner's seeded prompt is the host's"
    assert (llm.prefill_calls, llm.decode_steps, llm.gen_len) == (1, 11, 12)
    _check_figures(llm)
    reference = LlmReference.load(tiny_llama.llm_reference)  # type: ignore[arg-type]
    for g in llm.generations:
        check = check_tokens(reference, llm.prompt_tokens, g.tokens)
        assert check is not None and check.ok and check.compared == 12, check
    (written,) = read_tensors(tokens_file)
    assert written.dtype == np.int64 and written.tolist() == [list(llm.generations[-1].tokens)]

    # One block per forward call: the method-load block, then per generation 1 prefill + 11 decode blocks.
    names, execute_ms = _execute_ms_per_block(etdump)
    assert names == ["Default"] + ["Execute"] * (2 * llm.calls_per_generation)
    # per generation, whether it waited for no CPU beyond its bound (results/contention.py; all True when unmeasured)
    clean = clean_mask(summary["execute_ms"], (summary.get("contention") or {}).get("wait_ms", []))
    for n, g in enumerate(llm.generations):
        first = 1 + n * llm.calls_per_generation
        phases = [phase_of_call(k - 1, llm.prefill_calls, llm.decode_steps) for k in range(first, first + llm.calls_per_generation)]
        assert phases == ["prefill"] + ["decode"] * 11
        prefill = execute_ms[first]
        assert prefill is not None and prefill <= g.prefill_ms, (prefill, g.prefill_ms)
        # ...and is almost all of it, unless a preemption (ms) fell between the runner's prefill clock and the block
        assert not clean[n] or g.prefill_ms <= prefill + 2.0, (prefill, g.prefill_ms, summary.get("contention"))
        decode = execute_ms[first + 1: first + llm.calls_per_generation]
        assert sum(decode) <= g.decode_ms  # type: ignore[arg-type]
    # Inspector merges the identical Execute blocks into one event block, samples in call order.
    from executorch.devtools import Inspector

    (samples,) = [e.perf_data.raw for b in Inspector(etdump_path=str(etdump)).event_blocks for e in b.events
                  if e.name == "Method::execute" and e.perf_data is not None]
    assert samples == pytest.approx([t for t in execute_ms[1:]], rel=1e-6)


def test_prompt_file_and_seeded_prompt_agree(host_build: RunnerBuild, tiny_llama: ExportedModel, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.etft"
    write_tensors(prompt, [np.array([seeded_prompt(0, 32, 512)], dtype=np.int64)])
    summary = _result(_run(host_build, "--model_path", tiny_llama.pte, "--generate", "--prompt_file", prompt))
    llm = LlmRunFigures.from_json(summary["llm"])
    assert llm.prompt_seed is None and llm.prompt_len == 32 and llm.gen_len == 32
    check = check_tokens(LlmReference.load(tiny_llama.llm_reference), llm.prompt_tokens, llm.generations[0].tokens)  # type: ignore[arg-type]
    assert check is not None and check.ok


def test_static_shape_llm_prefills_token_by_token(host_build: RunnerBuild, toy: Toy, tmp_path: Path) -> None:
    shape = read_pte_info(toy.pte).llm
    assert shape is not None and not shape.dynamic_shape and shape.prefill_chunk == 1 and shape.n_layers is None
    etdump = tmp_path / "toy.etdp"
    summary = _result(_run(host_build, "--model_path", toy.pte, "--generate", "--prompt_len=6", "--gen_len=5",
                           "--prompt_seed=3", "--etdump_path", etdump))
    llm = LlmRunFigures.from_json(summary["llm"])
    assert (llm.prefill_calls, llm.decode_steps, llm.prompt_seed) == (6, 4, 3)
    _check_figures(llm)
    assert list(llm.generations[0].tokens) == toy.greedy(seeded_prompt(3, 6, TOY_VOCAB), 5)  # type: ignore[operator]
    names, _ = _execute_ms_per_block(etdump)
    assert names == ["Default"] + ["Execute"] * 10


def test_generation_never_passes_the_context(host_build: RunnerBuild, toy: Toy) -> None:
    result = _run(host_build, "--model_path", toy.pte, "--generate", "--prompt_len=20", "--gen_len=10")
    llm = LlmRunFigures.from_json(_result(result)["llm"])
    assert (llm.gen_len, llm.requested_gen_len, llm.decode_steps) == (TOY_CONTEXT - 20 + 1, 10, TOY_CONTEXT - 20)
    assert "clamped to 5" in result.stderr
    assert list(llm.generations[0].tokens) == toy.greedy(seeded_prompt(0, 20, TOY_VOCAB), 5)  # type: ignore[operator]
    too_long = _run(host_build, "--model_path", toy.pte, "--generate", "--prompt_len=25")
    assert too_long.exit_code == 1 and "does not fit the program's context of 24" in too_long.stderr


def test_llama_custom_ops_fail_in_one_line(host_build: RunnerBuild, llama_ops_pte: Path) -> None:
    for extra in ((), ("--generate",)):
        result = _run(host_build, "--model_path", llama_ops_pte, *extra)
        # Nothing on stdout but the registered backends, which the runner says first whatever follows.
        assert result.exit_code == 1 and [line.split()[0] for line in result.stdout.splitlines()] == ["ETFARM_BACKENDS"]
        (line,) = result.stderr.strip().splitlines()
        assert "llama::update_cache.out" in line and "--use_sdpa_with_kv_cache" in line and "own runtime" in line
    message = unsupported_ops_message(read_pte_info(llama_ops_pte))
    assert message is not None and "llama::update_cache.out" in message and "\n" not in message


def test_generate_refuses_a_program_that_is_not_an_llm(host_build: RunnerBuild, tmp_path: Path) -> None:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    pte = tmp_path / "linear.pte"
    exported = torch.export.export(torch.nn.Linear(4, 2).eval(), (torch.ones(1, 4),))
    pte.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    assert read_pte_info(pte).llm is None
    result = _run(host_build, "--model_path", pte, "--generate")
    assert result.exit_code == 1 and "--generate needs a KV-cache LLM program" in result.stderr
    for flags, fragment in ((("--gen_len=4",), "need --generate"),
                            (("--generate", "--inputs=x.etft"), "give --prompt_file, not --inputs"),
                            (("--generate", "--prompt_file=p.etft", "--prompt_len=3"), "drop --prompt_len"),
                            (("--generate", "--gen_len=0"), "must be at least 1")):
        usage = _run(host_build, "--model_path", pte, *flags)
        assert usage.exit_code == 2 and fragment in usage.stderr, (flags, usage.stderr)


def test_pss_lies_between_zero_and_peak_rss(host_build: RunnerBuild, tiny_llama: ExportedModel) -> None:
    for extra in ((), ("--generate", "--prompt_len=4", "--gen_len=4")):
        summary = _result(_run(host_build, "--model_path", tiny_llama.pte, "--num_executions=2", *extra))
        assert 0 < summary["pss_load_kb"] <= summary["peak_rss_load_kb"]
        assert 0 < summary["pss_kb"] <= summary["peak_rss_kb"]
        assert summary["mode"] == ("generate" if extra else "forward")


def test_linux_aarch64_generation_under_qemu(etfarm_cache: Path, tiny_llama: ExportedModel) -> None:
    for tool in ("aarch64-linux-gnu-g++", "cmake"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed (run `make testbed`)")
    emulator = board_prefix(BOARDS["rpi5"])  # qemu and the aarch64 sysroot, before the build
    aarch64 = build_runner("linux-aarch64")
    summary = _result(_run(aarch64, "--model_path", tiny_llama.pte, "--generate", "--prompt_len=8", "--gen_len=8",
                           emulator=emulator))
    llm = LlmRunFigures.from_json(summary["llm"])
    _check_figures(llm)
    check = check_tokens(LlmReference.load(tiny_llama.llm_reference), llm.prompt_tokens, llm.generations[0].tokens)  # type: ignore[arg-type]
    assert check is not None and check.ok and check.compared == 8
    assert 0 < summary["pss_kb"] <= summary["peak_rss_kb"]
