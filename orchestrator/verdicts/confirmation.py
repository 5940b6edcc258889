"""What a night's confirmation found (`Confirmation`), and which pairs go to one (`suspected`): the workflow that runs
it is app/confirm_ab.py; pages and the night's record read these.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.verdicts.device_states import DeviceStates
from orchestrator.verdicts.pair_verdicts import PairVerdict
from orchestrator.verdicts.statistics import Verdict
from orchestrator.verdicts.trust import within_states


@dataclass(frozen=True)
class Confirmation:
    """A (device, model) a night found regressed, run again at once: whether the second job showed it too."""

    device: str
    model: str
    first_run: str  # the night's job that found the regression
    confirm_run: str  # the job that ran it again
    confirmed: bool
    verdict: str  # the second comparison's verdict (the night's verdict for the pair)
    how: str = ""  # interleaved with the baseline's program (confirm_ab.py), or alone and why
    suspected: str = "regressed"  # what the night's own job found: regressed, or not judged (and why)

    @property
    def note(self) -> str:
        how = f" ({self.how})" if self.how else ""
        return (f"{self.device} {self.model}: {self.suspected} in run {self.first_run}; "
                + ("confirmed" if self.confirmed else f"NOT confirmed ({self.verdict})") + f" by run {self.confirm_run}{how}")


def suspected(pair: PairVerdict) -> bool:
    """Whether a night's pair goes to the confirmation: regressed, or its own job could not judge it (too noisy, near
    the threshold, or measured under a different load than the baseline's). Only both programs in one job settle
    those: a whole night can run in a slow state (the series then swings with it), and a night that could not judge
    a step would otherwise become the last good baseline, hiding the step from every later night."""
    return pair.regressed or pair.verdict is Verdict.INCONCLUSIVE


def must_show_again(pair: PairVerdict, jobs: int, threshold: float, states: DeviceStates | None) -> bool:
    """Whether a decided verdict of interleaved jobs needs one more job before it stands: a `regressed` or `improved`
    from one job, within the span of the speed states the device has shown (trust.within_states). The sides of one
    job can land in different states: live on the speed-state VM one A/A job read `regressed 1.41x [1.37, 1.45]`
    (app/ab.py `pool_until_confident`)."""
    return (jobs == 1 and pair.verdict in (Verdict.REGRESSED, Verdict.IMPROVED) and pair.estimate is not None
            and within_states(pair.estimate, threshold, states))
