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
        end = {
            "event": "end",
            "episode": episode,
            "success": True,
            "length": length,
            "commands": length,
            "stamp_ns": stamp,  # the terminal observation's: the first stamp that is not this episode's
        }
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


def test_what_ended_episodes_wait_for_is_not_reduced_by_commands_after_them():
    """A drain ends on silence about what the ended episodes wait for, not on silence of the topics:
    safe stops a policy node keeps publishing (stamped now) after the last episode are no progress."""
    written: list = []
    assembler = assembler_into(written)
    (start, steps, end), *_ = lockstep_stream(1, 4)
    stamped_end = dict(end)
    del end["stamp_ns"]  # an end event without the episode's end stamp
    assembler.event(start)
    for kind, stamp, value in steps[2:]:  # the first command (and its observation) were lost
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(end)
    assert assembler.episodes == 0 and assembler.outstanding() == 1
    after = steps[-1][1] + 1
    waits = []
    for i in range(50):  # safe stops, each stamped with the node's clock
        assembler.value("action", np.array([0.0]), after + i)
        waits.append(assembler.outstanding())
    assert assembler.episodes == 0 and min(waits) == 1  # never less to wait for than before them
    # with the end stamp (what the bridge sends) a safe stop is a command of after the episode, on the same
    # topic: the lost command cannot come any more, and the episode is written with the rows that came
    stamped: list = []
    assembler = assembler_into(stamped)
    assembler.event(start)
    for kind, stamp, value in steps[2:]:
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(stamped_end)
    assert assembler.episodes == 0
    assembler.value("action", np.array([0.0]), after)
    assert assembler.episodes == 1 and len(stamped[0][0]["action"]) == 3
    # an episode without a count has nothing to wait for that can be counted
    unannounced = assembler_into([])
    unannounced.event(start)
    unannounced.event({"event": "end", "success": False})
    assert unannounced.outstanding() is None


def test_an_episode_is_not_written_before_its_last_observation_even_when_the_next_one_has_begun():
    """Under load the next episode's first command can overtake the observation the last command of
    the previous episode answers (another topic): the row must still hold that observation, not the
    newest value at hand."""
    written: list = []
    assembler = assembler_into(written)
    (start0, steps0, end0), (start1, steps1, _) = lockstep_stream(2, 3)
    assembler.event(start0)
    late = steps0[-3]  # the last answered observation of episode 0
    for kind, stamp, value in steps0:
        if (kind, stamp) != late[:2]:
            assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(end0)
    assembler.event(start1)
    for kind, stamp, value in steps1[:2]:  # episode 1's first observation and command
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assert assembler.episodes == 0  # episode 0 still waits for its observation
    assembler.value("state", np.array([late[2]]), late[1])
    assert assembler.episodes == 1
    np.testing.assert_array_equal(written[0][0]["state"][:, 0], [0, 1, 2])


def test_the_next_episodes_first_command_ahead_of_its_start_event_is_not_a_row_of_the_ended_one():
    """The recorder takes data topics before the episode topic in a wait cycle, so the next episode's first
    command can come between an ``end`` event and the next ``start``: with the end's stamp it is held for
    the next episode, and the ended one keeps exactly its announced rows (under load it got one more)."""
    written: list = []
    assembler = assembler_into(written)
    (start0, steps0, end0), (start1, steps1, end1) = lockstep_stream(2, 3)
    assembler.event(start0)
    late = steps0[-3]  # the observation the last command answers is still on its way (another topic)
    for kind, stamp, value in steps0[:-1]:
        if (kind, stamp) != late[:2]:
            assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(end0)
    for kind, stamp, value in steps1[:2]:  # episode 1's first observation and command, before its start event
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.value("state", np.array([late[2]]), late[1])
    assert assembler.episodes == 1 and len(written[0][0]["action"]) == 3
    assembler.event(start1)
    for kind, stamp, value in steps1[2:]:
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(end1)
    assert assembler.episodes == 2
    np.testing.assert_array_equal(written[1][0]["action"][:, 0], [-100, -101, -102])
    assert written[1][1]["seed"] == 1


def test_commands_stamped_past_the_end_that_came_before_the_end_event_leave_the_ended_episode():
    """The next episode's first command, and a safe stop (stamped with the node's wall clock), taken before
    the end event: neither is a row of the ended episode, and the safe stop is a row of no episode."""
    written: list = []
    assembler = assembler_into(written)
    (start0, steps0, end0), (start1, steps1, end1), (start2, *_) = lockstep_stream(3, 3)
    wall_clock = 10**18
    assembler.event(start0)
    for kind, stamp, value in steps0[:-1] + steps1[:2]:  # through episode 1's first command
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.value("action", np.array([0.0]), wall_clock)  # a safe stop
    assembler.event(end0)
    assert assembler.episodes == 1
    np.testing.assert_array_equal(written[0][0]["action"][:, 0], [0, -1, -2])
    assembler.event(start1)
    for kind, stamp, value in steps1[2:-1]:
        assembler.value("state" if kind == "obs" else "action", np.array([value]), stamp)
    assembler.event(end1)
    assembler.event(start2)
    assert assembler.episodes == 2
    np.testing.assert_array_equal(written[1][0]["action"][:, 0], [-100, -101, -102])
