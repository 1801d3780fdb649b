"""The recorder's episode assembly under the orders a loaded machine delivers messages in (no ROS needed)."""

from __future__ import annotations

import numpy as np

from embodia.robot.record import EpisodeAssembler


def lockstep_stream(episodes: int, length: int):
    """What a lockstep bridge and a policy node publish: per episode a start event, then per step an
    observation stamped t and the command answering it (stamped t); the terminal observation goes
    unanswered; then an end event announcing the commands."""
    stamp = 0
    for episode in range(episodes):
        stamp += 1
        start = {"event": "start", "episode": episode, "seed": episode, "env_id": "e", "stamp_ns": stamp}
        steps = []
        for t in range(length):
            steps.append(("obs", stamp, float(episode * 100 + t)))
            steps.append(("cmd", stamp, float(-(episode * 100 + t))))
            stamp += 1
        steps.append(("obs", stamp, float(episode * 100 + length)))  # terminal: no command
        end = {"event": "end", "episode": episode, "success": True, "length": length, "commands": length}
        yield start, steps, end


def assembler_into(written: list) -> EpisodeAssembler:
    return EpisodeAssembler(["state", "action"], "action", lambda data, info: written.append((data, info)))


def test_episodes_are_written_once_complete_even_when_every_end_event_overtakes_the_data():
    written: list = []
    assembler = assembler_into(written)
    stream = list(lockstep_stream(6, 5))
    # under load the small episode topic runs ahead: every start and end event arrives first...
    for start, _, end in stream:
        assembler.event(start)
        assembler.event(end)
    assert assembler.ended == 6 and assembler.episodes == 0  # ended is not written
    # ...then the data, late
    for _, steps, _ in stream:
        for kind, stamp, value in steps:
            assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    # all six are written without waiting for a next episode or for the recording to stop
    assert assembler.episodes == 6 and len(written) == 6
    for episode, (data, info) in enumerate(written):
        assert info["seed"] == episode
        np.testing.assert_array_equal(data["state"][:, 0], episode * 100 + np.arange(5))
        np.testing.assert_array_equal(data["action"][:, 0], -(episode * 100 + np.arange(5)))


def test_an_ended_episode_waits_for_its_last_commands_and_their_observations():
    written: list = []
    assembler = assembler_into(written)
    (start, steps, end), *_ = lockstep_stream(1, 4)
    assembler.event(start)
    for kind, stamp, value in steps[:-3]:  # the last command and its observation are still on their way
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(end)
    assert assembler.episodes == 0
    # the command arrives before the observation it answers: still not complete
    assembler.value("action", np.array([-3.0]), steps[-2][1])
    assert assembler.episodes == 0
    assembler.value("state", np.array([3.0]), steps[-3][1])
    assert assembler.episodes == 1
    np.testing.assert_array_equal(written[0][0]["state"][:, 0], [0, 1, 2, 3])


def test_a_second_answer_to_a_republished_observation_is_not_a_second_row():
    written: list = []
    assembler = assembler_into(written)
    (start, steps, end), *_ = lockstep_stream(1, 3)
    assembler.event(start)
    for kind, stamp, value in steps:
        key = "state" if kind == "obs" else "action"
        assembler.value(key, np.array([value]), stamp)
        if kind == "cmd":  # the bridge republished the observation and the policy answered twice
            assembler.value(key, np.array([value + 0.5]), stamp)
    assembler.event(end)
    # a late repeat of the last answer after the episode was written is not a row of the next one
    assembler.value("action", np.array([7.0]), steps[-2][1])
    assembler.finish()
    assert assembler.duplicates == 4
    ((data, _),) = written
    np.testing.assert_array_equal(data["action"][:, 0], [0, -1, -2])  # the first answers, as the bridge took


def test_end_events_without_a_count_keep_the_next_row_rule():
    written: list = []
    assembler = assembler_into(written)
    for start, steps, end in lockstep_stream(2, 3):
        end.pop("commands")
        assembler.event(start)
        for kind, stamp, value in steps:
            assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
        assembler.event(end)
    assert assembler.episodes == 1  # the first is written once the second has a row; the last waits
    assembler.finish()
    assert assembler.episodes == 2
