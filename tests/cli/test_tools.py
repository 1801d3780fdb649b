from __future__ import annotations

import json

import pytest

from embodia.cli import main
from tests.agents.conftest import smol  # noqa: F401  (the shared SmolLM2 fixture)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_tool_list_schema_and_errors(capsys, tmp_path):
    code, out, _ = _run(capsys, "tool", "list", "--json")
    names = {t["name"] for t in json.loads(out)}
    assert code == 0
    assert {"gateskip", "cold_steer", "hybrid_finetune", "emotion_hallucer", "grounding_reliability"} <= names

    code, out, _ = _run(capsys, "tool", "schema", "emotion_hallucer")
    schema = json.loads(out)
    assert (
        code == 0
        and schema["name"] == "emotion_hallucer"
        and "pep_mek" in schema["input_schema"]["properties"]
    )

    for argv, expected in [
        (("tool", "run", "lm_score", "--args", "{prompt:"), "not valid JSON"),
        (
            ("tool", "run", "lm_score", "--args", '{"prompt": "x", "continuations": 3}'),
            "continuations: Input should be a valid list",
        ),
        (("tool", "schema", "gate_skip"), "did you mean gateskip"),
        (("tool", "run", "lm_score", "--args", f"@{tmp_path / 'nope.json'}"), "no such file"),
        (("tool", "run", "lm_score", "--args", "[1, 2]"), "must hold a JSON object"),
    ]:
        code, _, err = _run(capsys, *argv)
        assert code == 2 and expected in err and err.startswith("error:"), (argv, err)

    with pytest.raises(SystemExit):  # argparse: `tool` needs a subcommand
        main(["tool"])


@pytest.mark.usefixtures("smol")  # the model is converted into the cache before the subprocess starts
def test_tool_run_end_to_end(cli, tmp_path):
    """The installed command in a subprocess: arguments from a file, JSON on stdout and in --out."""
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"prompt": "The capital of France is", "continuations": [" Rome", " Paris"]}))
    out = tmp_path / "result.json"
    result = cli("tool", "run", "lm_score", "--args", f"@{args}", "--out", str(out), check=True)
    payload = json.loads(result.stdout)
    assert payload["best"] == " Paris" and payload["best_index"] == 1
    assert json.loads(out.read_text()) == payload
