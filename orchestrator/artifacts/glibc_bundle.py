"""The glibc runtime that lets the linux-aarch64 runner run on an Android phone without an NDK.

Android has no glibc and no `/lib/ld-linux-aarch64.so.1`, which is why a glibc program fails
there as is. Started through its own loader,

    ./lib/ld-linux-aarch64.so.1 --library-path ./lib ./bin/etfarm_runner ...

(documented ld.so behaviour: the loader run as a program loads the named program), it needs
nothing from the phone but the kernel. `adb shell` processes come from adbd, not zygote, so
the app seccomp filter that breaks glibc inside terminal apps does not apply to them.

The libraries are not a hand-kept list: they are the transitive closure of the `NEEDED`
entries of the runner and its ExecuTorch libraries, resolved in Debian's aarch64 cross
sysroot (`/usr/aarch64-linux-gnu/lib`, package libc6-arm64-cross and friends), plus the
loader the runner names as its ELF interpreter. Each is stored under the name the binaries
ask for (libstdc++.so.6, not libstdc++.so.6.0.30). pyelftools reads the ELF files.
"""

from __future__ import annotations

import posixpath
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.base import cache
from orchestrator.base.errors import BuildError

SYSROOT_LIB = Path("/usr/aarch64-linux-gnu/lib")
MACHINE = "EM_AARCH64"
LIBRARY_PATH_WORD = "./lib"  # where the bundle sits, relative to the device workdir


@dataclass(frozen=True)
class ElfDeps:
    interpreter: str  # PT_INTERP, e.g. /lib/ld-linux-aarch64.so.1 ("" for a shared library)
    needed: tuple[str, ...]  # DT_NEEDED names, in order


@dataclass(frozen=True)
class GlibcBundle:
    """The glibc files to push beside the runner, and how to start it through them."""

    loader: str  # file name of the ELF interpreter: lib/<loader> starts the runner
    files: tuple[tuple[str, Path], ...]  # (name in lib/, file in the sysroot), sorted by name
    sysroot: Path
    identity: str  # sha256 over every name and content: part of the build key

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.files)

    def launcher(self) -> tuple[str, ...]:
        """argv words before the runner, relative to the device workdir (`./` = the workdir)."""
        return (f"{LIBRARY_PATH_WORD}/{self.loader}", "--library-path", LIBRARY_PATH_WORD)

    def install(self, lib_dir: Path) -> int:
        """Copy the files into lib_dir (the loader executable); returns the bytes copied."""
        lib_dir.mkdir(parents=True, exist_ok=True)
        total = 0
        for name, source in self.files:
            dest = lib_dir / name
            shutil.copyfile(source, dest)
            dest.chmod(0o755 if name == self.loader else 0o644)
            total += dest.stat().st_size
        return total


def elf_deps(path: Path) -> ElfDeps:
    """The interpreter and NEEDED entries of an aarch64 ELF file; BuildError for anything else."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            if elf["e_machine"] != MACHINE:
                raise BuildError(f"{path} is not an aarch64 ELF file ({elf['e_machine']})")
            interpreter = ""
            for segment in elf.iter_segments():
                if segment["p_type"] == "PT_INTERP":
                    interpreter = segment.get_interp_name()
            needed: list[str] = []
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    needed += [tag.needed for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]
            return ElfDeps(interpreter, tuple(needed))
    except (OSError, ELFError) as exc:
        raise BuildError(f"cannot read the ELF file {path}: {exc}") from None


def glibc_bundle(runner: Path, libs: Iterable[Path], sysroot: Path = SYSROOT_LIB) -> GlibcBundle:
    """What the runner (and the libraries pushed beside it) need from glibc, found in `sysroot`.

    Walks NEEDED from the runner through every library it reaches: a name the build already
    ships (`libs`, by file name) is read from there, any other name must be in the sysroot.
    """
    provided = {lib.name: lib for lib in libs}
    deps = elf_deps(runner)
    if not deps.interpreter:
        raise BuildError(f"{runner} names no ELF interpreter: it is not a dynamically linked program")
    loader = posixpath.basename(deps.interpreter)
    bundle: dict[str, Path] = {}
    queue = [loader, *deps.needed]
    seen: set[str] = set()
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name in provided:
            queue += elf_deps(provided[name]).needed
            continue
        source = sysroot / name
        if not source.is_file():
            raise BuildError(f"the runner needs {name}, which neither its build nor {sysroot} has "
                             "(install g++-aarch64-linux-gnu, or the package that ships it for aarch64)")
        bundle[name] = source.resolve()
        queue += elf_deps(source).needed
    files = tuple(sorted(bundle.items()))
    identity = cache.sha256_parts([str(sysroot), *(part for name, path in files for part in (name, cache.sha256_file(path)))])
    return GlibcBundle(loader, files, sysroot, identity)
