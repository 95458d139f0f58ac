import pytest

from podium import competition as registry
from podium.errors import RegistryError, UnknownCompetitionError


def test_unknown_id_suggests_close_matches() -> None:
    with pytest.raises(UnknownCompetitionError) as info:
        registry.get("spaceship-titanik")
    assert "spaceship-titanic" in str(info.value)


def test_versions_are_selectable() -> None:
    latest = registry.get("tgs-salt-identification-challenge")
    first = registry.get("tgs-salt-identification-challenge@1")
    assert latest.version == 2 and first.version == 1
    assert first.metric.options["empty_prediction_credit"] is True
    assert latest.metric.options["empty_prediction_credit"] is False
    assert latest.changes
    with pytest.raises(RegistryError, match="no version 9"):
        registry.get("tgs-salt-identification-challenge@9")


def test_split_names() -> None:
    assert registry.split_ids("lite") == registry.split_ids("low")
    with pytest.raises(RegistryError, match="Unknown split"):
        registry.split_ids("mediun")


def test_show_dict_holds_leaderboard_figures() -> None:
    data = registry.get("lmsys-chatbot-arena").to_dict()
    assert data["metric"] == "log_loss" and data["is_lower_better"] is True
    assert data["n_teams"] > 1000
    assert data["gold_threshold"] <= data["silver_threshold"] <= data["bronze_threshold"] <= data["median_threshold"]
