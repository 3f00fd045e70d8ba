"""benchmarks/permutation.py: each implementation named is timed at each size, ratios to the
first; a bad --impl is refused with its name."""
from __future__ import annotations

import pytest

from benchmarks import permutation


def test_times_every_implementation_at_every_size(tmp_path):
    copy = tmp_path / "copy.py"
    copy.write_text("import jax\n\ndef perm(key, n):\n    return jax.random.permutation(key, n)\n")
    result = permutation.main(["--sizes", "8,64", "--rounds", "2", "--draws", "2",
                               "--impl", "jax", "--impl", f"{copy}:perm",
                               "--impl", "agents.minibatches:random_permutation"])
    assert len(result) == 6
    for name, row in result.items():
        assert row["us_median"] > 0 and len(row["us_rounds"]) == 2, (name, row)
        if name.startswith("jax "):
            assert row["ratio_to_jax_median"] == 1.0


@pytest.mark.parametrize("bad", ["nope", "agents.minibatches:missing", "/no/such.py:f"])
def test_a_bad_implementation_is_refused_by_name(bad, capsys):
    with pytest.raises(SystemExit):
        permutation.main(["--impl", bad, "--sizes", "8"])
    assert bad in capsys.readouterr().err
