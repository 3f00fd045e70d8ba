"""benchmarks/action_masks.py: the table recomputed from the per-seed CSV (mean and 95%
t-interval over seeds, each seed's values), checked against values worked by hand."""
from benchmarks import action_masks

ROWS = """condition,seed,env_steps,return,illegal_move,won,wall_s
masked,0,1000,0.5,0.0,0.7,10
masked,1,1000,0.7,0.0,0.9,10
unmasked,0,1000,-0.2,0.3,0.4,9
"""


def test_the_table_is_recomputed_from_the_per_seed_csv(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(ROWS)
    lines = action_masks.table(str(path)).splitlines()
    masked = [c.strip() for c in lines[2].strip("|").split("|")]
    # mean 0.6, sd 0.1414, t(0.975, 1) = 12.706: half-width 12.706 * 0.1414 / sqrt(2) = 1.271
    assert masked[:6] == ["masked", "2", "1,000", "0.600 +- 1.271", "0.000 +- 0.000",
                          "0.800 +- 1.271"]
    assert masked[6] == "0.50 / 0.000 / 0.70; 0.70 / 0.000 / 0.90"
    unmasked = [c.strip() for c in lines[3].strip("|").split("|")]
    assert unmasked[1] == "1" and unmasked[3] == "-0.200 +- nan"  # one seed: no interval
