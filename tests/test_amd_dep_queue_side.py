"""scripts/amd_dep_rows.py: where a measured disaggregated closed loop kept its queue, and the
sequences its decode pool ran at once (issue 29, AMD DEP).

Little's law over the decode pool: each decoding sequence emits one token per TPOT, so the
sequences decoding at once are ``output tok/s x TPOT``. Published InferenceX MI355X points
(data/benchmarks/public_inferencex_history.csv), worked by hand:

* ixh-0055 (2P(DEP8)+1D(DEP8), 4,096 clients, 8k/1k mxfp4): 26,994.05 tok/s x 0.104717 s =
  2,826.74 decoding, 353.3 per DEP8 rank, a share 2,826.74 / 4,096 = 0.690 of the clients:
  the queue sat in the decode pool.
* ixh-0196 (1P(DEP8)+2D(DEP8), 1,024 clients, 8k/1k mxfp4): 4,767.27 x 0.020992 = 100.07
  decoding, 6.25 per rank of the 16, a share 0.0977: the prefill pool set the rate.
"""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO_ROOT

_spec = importlib.util.spec_from_file_location(
    "amd_dep_rows", REPO_ROOT / "scripts" / "amd_dep_rows.py"
)
amd_dep_rows = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(amd_dep_rows)

_HEADER = (
    "id,tpot_id,gpu,lengths,precision,framework,concurrency,n_gpus,kind,config,measured_thr,"
    "measured_tpot_ms,predicted_thr,predicted_tpot_ms,reason\n"
)


@pytest.fixture
def frontier(tmp_path):
    f = tmp_path / "f.csv"
    f.write_text(
        _HEADER + "ixh-0055,ixh-0056,amd-mi355x,8192/1024,mxfp4,sglang,4096,24,disagg,"
        "2P(DEP8)+1D(DEP8),26994.05,104.717,31694.59,28.588,\n"
        + "ixh-0196,ixh-0197,amd-mi355x,8192/1024,mxfp4,sglang,1024,24,disagg,"
        "1P(DEP8)+2D(DEP8),4767.27,20.992,15477.22,17.225,\n"
        + "ixm-0001,ixm-0002,amd-mi355x,8192/1024,fp8,sglang,64,8,TP,TP8,1.0,1.0,1.0,1.0,\n"
    )
    return f


def test_running_sequences_and_queue_side_by_hand(frontier):
    d = amd_dep_rows.queue_side(frontier).set_index("id")
    assert list(d.index) == ["ixh-0055", "ixh-0196"]  # single-node rows are left out
    assert d.loc["ixh-0055", "running"] == pytest.approx(2826.74, rel=1e-5)
    assert d.loc["ixh-0055", "running"] / d.loc["ixh-0055", "decode_ranks"] == pytest.approx(
        353.34, rel=1e-4
    )
    assert d.loc["ixh-0055", "share"] == pytest.approx(0.6901, rel=1e-3)
    assert d.loc["ixh-0055", "side"] == "decode"
    assert d.loc["ixh-0196", "decode_ranks"] == 16  # two DEP8 decode workers
    assert d.loc["ixh-0196", "running"] == pytest.approx(100.07, rel=1e-4)
    assert d.loc["ixh-0196", "share"] == pytest.approx(0.0977, rel=1e-3)
    assert d.loc["ixh-0196", "side"] == "prefill"
    # the predicted / measured ratios the script reports: 31,694.59 / 26,994.05 = 1.1741
    assert d.loc["ixh-0055", "thr_ratio"] == pytest.approx(1.1741, rel=1e-4)
