import pytest

from podium import registry
from podium.errors import UnknownCompetitionError, UnknownVersionError, UsageError


def test_unknown_id_suggests_close_matches() -> None:
    with pytest.raises(UnknownCompetitionError) as info:
        registry.get("spaceship-titanik")
    assert "spaceship-titanic" in str(info.value)


def test_versions_are_selectable() -> None:
    first = registry.get("tgs-salt-identification-challenge")
    latest = registry.get("tgs-salt-identification-challenge", latest=True)
    assert first.version == 1 and first.is_published, "an id without @N is the published definition"
    assert latest.version == 2 and registry.get("tgs-salt-identification-challenge@2") == latest
    assert registry.get("tgs-salt-identification-challenge@1", latest=True) == first, "an explicit @N wins"
    assert first.metric.options["empty_prediction_credit"] is True
    assert latest.metric.options["empty_prediction_credit"] is False
    assert latest.changes
    with pytest.raises(UnknownVersionError, match="no version 9"):
        registry.get("tgs-salt-identification-challenge@9")


def test_versions_that_only_change_grading_share_the_data() -> None:
    tgs = registry.get("tgs-salt-identification-challenge")
    assert tgs.same_data_versions == (2,) and registry.get(tgs.id, 2).same_data_versions == (1,)
    assert registry.get(tgs.id, 2).data_version == 1 and tgs.shares_data_with(2)
    pizza = registry.get("random-acts-of-pizza")  # version 2 removes a leaking field from the public data
    assert pizza.same_data_versions == () and registry.get(pizza.id, 2).data_version == 2
    assert not pizza.shares_data_with(2)


def test_every_id_without_a_version_is_the_published_one() -> None:
    for comp in registry.load_all("all"):
        assert comp.version == 1
    assert {c.version for c in registry.load_all("all", latest=True)} >= {1, 2}


def test_split_names() -> None:
    assert registry.split_ids("lite") == registry.split_ids("low")
    with pytest.raises(UsageError, match="Unknown split"):
        registry.split_ids("mediun")


def test_show_dict_holds_leaderboard_figures() -> None:
    data = registry.get("lmsys-chatbot-arena").to_dict()
    assert data["metric"] == "log_loss" and data["is_lower_better"] is True
    assert data["n_teams"] > 1000
    assert data["gold_threshold"] <= data["silver_threshold"] <= data["bronze_threshold"] <= data["median_threshold"]
