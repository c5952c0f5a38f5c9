"""SGLang >= 0.4.0 no longer reads --num-continuous-decode-steps (sgl-project/sglang PR #2095
removed the loop it set): behind ``CONTINUOUS_DECODE_STEPS_BY_RELEASE`` (on since the tenth pass), a run of such a
release has no admission gate from the flag (docs/changes/2026-12-07f/sglttft.md)."""

import pytest

import planner.benchmarks.scheduler_waits as sw

AMD_NOTES = "python3 -m sglang.launch_server ... --num-continuous-decode-steps=4 --max-prefill-tokens=131072"


@pytest.fixture
def release_rule(monkeypatch):
    monkeypatch.setattr(sw, "CONTINUOUS_DECODE_STEPS_BY_RELEASE", True)


def test_off_every_stated_value_gates(monkeypatch):
    # on by default since the tenth pass; off, the stated value gates whatever the release
    assert sw.CONTINUOUS_DECODE_STEPS_BY_RELEASE is True
    monkeypatch.setattr(sw, "CONTINUOUS_DECODE_STEPS_BY_RELEASE", False)
    g = sw.admission_gate(AMD_NOTES, "0.5.7 (image lmsysorg/sglang:v0.5.7-rocm700-mi30x)")
    assert g.continuous_decode_steps == 4
    # the gate's longest wait: 4 x 1 - 1 = 3 decode iterations
    assert sw.window_iterations(g) == 3


@pytest.mark.usefixtures("release_rule")
@pytest.mark.parametrize(
    ("version", "steps"),
    [
        ("0.5.7 (image lmsysorg/sglang:v0.5.7-rocm700-mi30x) | client x", 1),
        ("0.5.12 (image lmsysorg/sglang:v0.5.12-rocm700-mi30x)", 1),
        ("v0.4.0.post1", 1),
        ("0.4", 1),
        ("0.3.6", 4),  # before PR #2095 the loop ran the stated steps
        ("", 4),  # no release named: the flag as stated
        ("nightly", 4),
    ],
)
def test_release_decides(version, steps):
    g = sw.admission_gate(AMD_NOTES, version)
    assert g.continuous_decode_steps == steps
    assert g.off is (steps == 1)


@pytest.mark.usefixtures("release_rule")
def test_other_gates_untouched():
    notes = AMD_NOTES + " --scheduler-recv-interval 10"
    g = sw.admission_gate(notes, "0.5.9")
    assert (g.continuous_decode_steps, g.recv_interval) == (1, 10)
    # only the receive interval gates: 1 x 10 - 1 = 9 iterations
    assert sw.window_iterations(g) == 9
    assert sw.admission_gate("no flags", "0.5.9").off
