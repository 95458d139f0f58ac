"""verifiers' plugin id for podium's gym episodes: ``vf-eval podium-verifiers ...`` (verifiers finds a plugin by
its top-level module; the environment itself is :mod:`podium.gym.verifiers`)."""

from podium.gym.verifiers import PodiumHarness, PodiumTaskset

__all__ = ["PodiumHarness", "PodiumTaskset"]
