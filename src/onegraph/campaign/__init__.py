"""A fuzzing campaign over every command and public function that reads a model (the proof of issue 14).

Mutants of valid seeds (``onegraph.check.fuzz``'s own plus models onegraph builds, calibrates and quantizes,
and PyTorch exports) are handed, one case at a time, to supervised runner processes that run one target each:
a command (``onegraph score``, ``convert --fp16``, ``meta set``...) through the CLI's own ``main()``, or a
public function (``onegraph.score``, ``convert_opset``...). A case fails when the runner (the caller) crashes
on a signal, hangs past its time limit, prints a traceback, ends in an internal error (a non-onegraph
exception), runs out of memory, opens a file outside the model's folder (canary files watched with inotify),
or changes its input files.

* :mod:`.targets`: the commands and functions, and what each may write;
* :mod:`.mutations`: structure-level mutations beyond ``check.fuzz``'s (metadata JSON, names, functions,
  nested If, duplicates, domains);
* :mod:`.seeds`: the valid models mutated, and the data files the targets read;
* :mod:`.runner`: the runner process (``python -m onegraph.campaign.runner``);
* :mod:`.canary`: files outside the model's folder, and who opened them;
* :mod:`.supervisor`: the cases, the runners, the tally (:func:`run`).

``bench/fuzz.py`` runs long campaigns; ``tests/test_check_campaign.py`` a fixed-seed budget on every CI run.
"""

from onegraph import _lazy

__all__ = ["run", "CampaignReport", "TARGETS"]
_lazy.exports(__name__, {
    "run": "onegraph.campaign.supervisor", "CampaignReport": "onegraph.campaign.supervisor",
    "TARGETS": "onegraph.campaign.targets",
})
