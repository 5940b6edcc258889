"""The run page's closing sections: numerics, what the devices were, how the numbers were computed."""

from __future__ import annotations

from orchestrator.report.page.blocks import Bullets, Paragraph, RunView, Section, Table, badge, muted, strong, text


def facts_section(view: RunView) -> tuple[Section, ...]:
    report = view.report
    emulated = (" ", badge("emulated", "warn", "qemu on a host: timings are emulation, not the hardware's"))
    rows = tuple((text(strong(f.device), *(emulated if f.device in report.emulated else ()),
                       *((" ", badge("error", "bad", f.error), " ", f.error) if f.error else ())),
                  text(f.transport), text(f.target), text(f.status), text(f.abi), text(f.cores), text(f.frequencies),
                  text(f.governor), text(f.temperatures), text(f.load), text(f.product)) for f in report.facts)
    headers = ("device", "transport", "target", "status", "abi", "cores", "frequencies", "governor", "temperatures",
               "load (1/5/15 min)", "product")
    note = text(muted('Facts at the start of the job; temperatures over the readings taken before every process run. '
                      '"-": the device does not expose it.'))
    return (Section(text("What the devices were" + view.label), f"{view.prefix}devices", (Table(headers, rows), Paragraph(note)),
                    nav="devices"),)


def methods_section(methods: tuple[str, ...], versions: tuple[tuple[str, str], ...]) -> Section:
    listed = ", ".join(f"{k} {v}" for k, v in versions)
    return Section(text("How these numbers were computed"), "methods",
                   (Bullets(tuple(text(m) for m in methods)), Paragraph(text(f"Versions: {listed}"))), collapsed=True,
                   nav="method")


def numerics_section(view: RunView) -> tuple[Section, ...]:
    """Which devices diverge, on which ops, where divergence starts; empty for runs made without --numerics."""
    report, prefix = view.report, view.prefix
    if report.numerics is None:
        if report.numerics_error is None:
            return ()
        return (Section(text("Numerics"), f"{prefix}numerics",
                        (Paragraph(text(muted(f"not available: {report.numerics_error}"))),), nav="numerics"),)
    n = report.numerics
    verdict = text(strong(", ".join(n.diverging_devices)), " diverge") if n.diverges else text("no op crosses the threshold")
    rows = []
    for m in n.models:
        for c in m.comparisons:
            first = c.first_divergence
            against = "AOT reference" if c.against == "aot" else c.against.replace("device:", "device ")
            where = (text(f"op {first.index} {' '.join(first.runtime_ops) or ' '.join(first.aot_ops)} ",
                          muted(f"{first.module_path or ''} {first.source or ''}")) if first else text("-"))
            status = (text(badge(f"{len(c.diverging)} diverging", "bad")) if c.diverging
                      else text(c.error) if c.error else text(badge("within threshold", "good")))
            rows.append((text(m.device), text(m.model), text(against), status, where, text(m.verification or "-")))
        if m.error:
            rows.append((text(m.device), text(m.model), text("-"), text(m.error), text("-"), text(m.verification or "-")))
    return (Section(text("Numerics: which op diverges, on which device"), f"{prefix}numerics", (
        Paragraph(text(f"{n.metric.value.upper()} of each op's intermediate outputs, threshold {n.threshold:g}: ",
                       verdict, ".")),
        Table(("device", "model", "against", "ops", "divergence starts at", "outputs verified"), tuple(rows))),
                    nav="numerics"),)
