import pytest

from podium.leaderboard import Leaderboard, medal_positions


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, (1, 1, 1)),
        (20, (2, 4, 8)),
        (99, (9, 19, 39)),
        (100, (10, 20, 40)),
        (249, (10, 49, 99)),
        (250, (10, 50, 100)),
        (999, (11, 50, 100)),
        (1000, (12, 50, 100)),
        (4000, (18, 200, 400)),
    ],
)
def test_medal_positions_follow_kaggle_tiers(n: int, expected: tuple[int, int, int]) -> None:
    assert medal_positions(n) == expected


def test_medal_positions_reject_empty_leaderboard() -> None:
    with pytest.raises(ValueError, match="n_teams=0"):
        medal_positions(0)


def test_thresholds_read_scores_at_medal_positions_higher_is_better() -> None:
    scores = [float(100 - i) for i in range(100)]  # 100 teams: gold pos 10, silver 20, bronze 40
    board = Leaderboard.from_scores(scores[::-1], higher_is_better=True)
    assert (board.gold, board.silver, board.bronze) == (91.0, 81.0, 61.0)
    assert board.median == 50.5
    assert board.place(91.0).gold_medal and not board.place(90.9).gold_medal
    assert board.place(50.6).above_median and not board.place(50.5).above_median


def test_thresholds_lower_is_better() -> None:
    board = Leaderboard.from_scores([0.1 * i for i in range(1, 21)], higher_is_better=False)  # 20 teams
    assert (
        board.gold == pytest.approx(0.2) and board.silver == pytest.approx(0.4) and board.bronze == pytest.approx(0.8)
    )
    placed = board.place(0.15)
    assert placed.gold_medal and placed.any_medal and placed.rank == 2
    worst = board.place(5.0)
    assert not worst.any_medal and worst.percentile == 0.0 and worst.rank == 21


def test_percentile_and_rank_are_monotone() -> None:
    board = Leaderboard.from_scores([float(i) for i in range(1000)], higher_is_better=True)
    previous = -1.0
    for score in [-5, 0, 10, 250.5, 500, 999, 2000]:
        p = board.place(float(score)).percentile
        assert 0.0 <= p <= 1.0 and p >= previous
        previous = p
    assert board.place(500.0).rank == pytest.approx(500, abs=10)
    assert board.place(2000.0).rank == 1


def test_round_trip_through_dict() -> None:
    board = Leaderboard.from_scores([1.0, 2.0, 3.0], higher_is_better=False)
    assert Leaderboard.from_dict(board.to_dict()) == board
