"""Ctrl-C at safe points: held until a critical section ends, or turned into a flag; a store write that
Ctrl-C lands in is finished, and its episode kept."""

from __future__ import annotations

import os
import signal

import pytest

import embodia
from embodia.core.interrupts import held_interrupt, interrupt_flag
from embodia.data.store import TrajectoryStore


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def test_held_interrupt_finishes_the_block_then_interrupts():
    finished = []
    with pytest.raises(KeyboardInterrupt), held_interrupt():
        _ctrl_c()
        finished.append(True)  # still runs: the interrupt waits for the block's end
    assert finished == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_held_interrupt_without_ctrl_c_changes_nothing():
    with held_interrupt():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_interrupt_flag_sets_the_flag_once_then_interrupts():
    with interrupt_flag() as stop:
        assert not stop.requested
        _ctrl_c()
        assert stop.requested  # no exception: the loop decides where to stop
        with pytest.raises(KeyboardInterrupt):
            _ctrl_c()  # a second Ctrl-C does not wait
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_held_interrupt_inside_a_flagged_loop_sets_the_flag():
    with interrupt_flag() as stop:
        with held_interrupt():
            _ctrl_c()
            assert not stop.requested
        assert stop.requested


def test_ctrl_c_in_a_store_write_keeps_the_episode(tmp_path, monkeypatch):
    """Ctrl-C arrives as the recorder starts writing the third episode: the write completes, the rollout
    stops as interrupted, and the store holds every finished episode once (before: the third was lost)."""
    write = TrajectoryStore.add_episodes

    def add_episodes(self, episodes):
        if self.num_episodes == 2:
            _ctrl_c()
        write(self, episodes)

    monkeypatch.setattr(TrajectoryStore, "add_episodes", add_episodes)
    result = embodia.rollout(
        "embodia/PointMaze-Medium-v0",
        "random",
        episodes=6,
        seed=0,
        max_steps=20,
        record=tmp_path / "kept.zarr",
        commit_every=0.0,
    )
    assert result.interrupted
    kept = TrajectoryStore(tmp_path / "kept.zarr")
    assert kept.episodes_table()["seed"].tolist() == [0, 1, 2]
    # the interrupt surfaced as the third episode was being handed over: it finished and is stored, so the
    # result lists it too (the result and the store agree)
    assert [e.seed for e in result.episodes] == [0, 1, 2]
    kept.verify()
