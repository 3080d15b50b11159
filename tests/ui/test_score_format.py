from ui.shared.trace_view import fmt


def test_a_score_reads_as_a_number_never_as_minus_zero():
    assert fmt(-0.0) == "0"  # an advantage at the group's mean, as the samples table showed it
    assert fmt(0.0) == "0"
    assert fmt(-0.25) == "-0.25"
    assert fmt(1 / 3) == "0.333"
    assert fmt(None) == "–"
