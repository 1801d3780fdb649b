"""DeepFaith: the metrics against hand-computed values on constructed models, the authors' details pinned by
hand (the Bernoulli straight-through gradient, per-input de-duplication and filtering, the variance trigger
and sigmoid decay), the Captum priors, a learning test, save / load, the tool (through the registry and a
real MCP client) and the script's quick run."""

from __future__ import annotations

import csv
import itertools
import json
import math
from typing import Any

import anyio
import pytest
import torch
from mcp import ClientSession, stdio_client
from torch import nn

from embodia.agents.methods.amortized_explainer import METHODS, PRIOR_METHODS
from embodia.agents.methods.amortized_explainer.data import (
    ExplainerError,
    class_probability,
    load_task,
    make_target_model,
    predict,
    train_target_model,
)
from embodia.agents.methods.amortized_explainer.explainer import (
    AmortizedExplainer,
    ExplainerConfig,
    explain,
    load_explainer,
    save_explainer,
    train_explainer,
)
from embodia.agents.methods.amortized_explainer.losses import (
    AlphaSchedule,
    BernoulliSTE,
    faithful_loss,
    minmax,
    pearson_eps,
    supervise_loss,
)
from embodia.agents.methods.amortized_explainer.metrics import (
    deletion_auc,
    faithfulness_correlation,
    faithfulness_estimate,
    insertion_auc,
    mean_interval,
    perturbation_curve,
    region_perturbation,
)
from embodia.agents.methods.amortized_explainer.priors import (
    duplicates_per_input,
    filter_per_input,
    prior_attributions,
    select_priors,
)
from embodia.agents.tools import ToolArgumentError, ToolContext, call_tool, list_tools
from embodia.core.results import default_results_path, layout_differences, read_results
from tests.agents.conftest import mcp_server, run_script


@pytest.fixture(autouse=True)
def one_thread():
    """Small tensors, busy CI machines: a second torch thread mostly waits for a core (10-100x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def linear(w: torch.Tensor):
    """The scorer of f(x) = w . x (the target class is ignored)."""
    return lambda z, t: z.reshape(len(z), -1) @ w


# ---------------------------------------------------------------------------------------------- metrics
def test_deletion_and_insertion_auc_of_a_linear_model_by_hand():
    w = torch.tensor([1.0, 3.0, 2.0])
    x = torch.ones(1, 3)
    t = torch.zeros(1, dtype=torch.long)
    perfect, reverse = w[None] * x, -w[None] * x  # w * x: the exact contributions
    # perfect order removes 3, then 2, then 1: f = 6, 3, 1, 0; trapezoid over thirds: (4.5 + 2 + 0.5) / 3
    curve = perturbation_curve(linear(w), x, perfect, 0.0, t)
    assert curve.tolist() == [[6.0, 3.0, 1.0, 0.0]]
    assert deletion_auc(linear(w), x, perfect, 0.0, t).item() == pytest.approx(7 / 3)
    assert deletion_auc(linear(w), x, reverse, 0.0, t).item() == pytest.approx(11 / 3)  # 6, 5, 3, 0
    assert insertion_auc(linear(w), x, perfect, 0.0, t).item() == pytest.approx(11 / 3)  # 0, 3, 5, 6
    assert insertion_auc(linear(w), x, reverse, 0.0, t).item() == pytest.approx(7 / 3)  # 0, 1, 3, 6
    # two steps over four features remove two at a time: f = 10, 3, 0 -> ((10 + 3) / 2 + 3 / 2) / 2 = 4
    w4 = torch.tensor([4.0, 1.0, 3.0, 2.0])
    assert deletion_auc(linear(w4), torch.ones(1, 4), w4[None], 0.0, t, steps=2).item() == pytest.approx(4.0)
    # a baseline other than zero: x = 3, b = 1 per feature, so each removal takes away 2 w_i
    b = torch.ones(3)
    got = perturbation_curve(linear(w), 3 * torch.ones(1, 3), perfect, b, t)
    assert got.tolist() == [[18.0, 12.0, 8.0, 6.0]]


def test_the_exact_contributions_give_the_lowest_deletion_auc_of_all_orders():
    torch.manual_seed(0)
    w = torch.rand(5) + 0.1  # positive contributions: greedy removal is optimal
    x = torch.rand(2, 5) + 0.5
    t = torch.zeros(2, dtype=torch.long)
    best = deletion_auc(linear(w), x, w * x, 0.0, t)
    for order in itertools.permutations(range(5)):
        ranks = torch.empty(5)
        ranks[list(order)] = torch.arange(5, 0, -1).float()  # attribution: earlier in order = larger
        other = deletion_auc(linear(w), x, ranks.expand(2, 5).clone(), 0.0, t)
        assert (other >= best - 1e-6).all()
    assert (deletion_auc(linear(w), x, -w * x, 0.0, t) > best + 0.1).all()


def test_faithfulness_correlation_of_exact_shuffled_and_flat_attributions():
    torch.manual_seed(1)
    w, x, b = torch.randn(12), torch.randn(3, 12), torch.randn(12)
    t = torch.zeros(3, dtype=torch.long)
    exact = w * (x - b)  # the drop of removing S is exactly the sum of these over S
    assert faithfulness_correlation(linear(w), x, exact, b, t).tolist() == pytest.approx([1.0] * 3, abs=1e-5)
    assert faithfulness_correlation(linear(w), x, -exact, b, t).tolist() == pytest.approx(
        [-1.0] * 3, abs=1e-5
    )
    shuffled = exact[:, torch.randperm(12)]
    assert (faithfulness_correlation(linear(w), x, shuffled, b, t) < 0.9).all()
    flat = torch.ones(3, 12)  # every subset of a fixed size has the same mass: no correlation
    assert faithfulness_correlation(linear(w), x, flat, b, t).tolist() == [0.0] * 3


def test_faithfulness_estimate_and_region_perturbation_by_hand():
    w = torch.tensor([1.0, 3.0, 2.0])
    x = torch.ones(1, 3)
    t = torch.zeros(1, dtype=torch.long)
    # single-feature drops are w * x = (1, 3, 2): the exact attribution correlates 1, its negative -1
    assert faithfulness_estimate(linear(w), x, w[None], 0.0, t).item() == pytest.approx(1.0, abs=1e-6)
    assert faithfulness_estimate(linear(w), x, -w[None], 0.0, t).item() == pytest.approx(-1.0, abs=1e-6)
    # fill in [0, 0] = 0: most relevant first gives f = 6, 3, 1, 0; AOPC over L steps = mean(6 - f_k)
    exact = w[None] * x
    assert region_perturbation(linear(w), x, exact, t, 0.0, 0.0).item() == pytest.approx(1.5)  # L = 1
    assert region_perturbation(linear(w), x, exact, t, 0.0, 0.0, steps=3).item() == pytest.approx(3.5)
    # least relevant first: f = 6, 5, 3, 0, drops 0, 1, 3, 6
    assert region_perturbation(linear(w), x, -exact, t, 0.0, 0.0, steps=3).item() == pytest.approx(2.5)
    # images: 2x2 patches are the regions; a 1x2x2 image is one region, removed at the first step
    image, ones = torch.ones(1, 1, 2, 2), torch.ones(4)
    got = region_perturbation(linear(ones), image, torch.rand(1, 1, 2, 2), t, 0.0, 0.0, patch=2)
    assert got.item() == pytest.approx(2.0)  # mean(4 - 4, 4 - 0)


# ---------------------------------------------------------------------------------------------- losses
def test_the_bernoulli_straight_through_gradient_by_hand():
    # prob 1 and 0 fix the mask; the backward is clamp(grad * mask * prob, -1, 1) (the authors' estimator)
    prob = torch.tensor([1.0, 0.0, 1.0, 0.5], requires_grad=True)
    mask = BernoulliSTE.apply(prob, torch.Generator().manual_seed(0))
    assert mask[:3].tolist() == [1.0, 0.0, 1.0]
    upstream = torch.tensor([0.5, 3.0, 4.0, 1.5])
    (mask * upstream).sum().backward()
    m3 = mask[3].item()
    # 0.5 * 1 * 1 = 0.5; 3 * 0 * 0 = 0; 4 * 1 * 1 = 4 -> clamped to 1; 1.5 * m * 0.5 = 0.75 m
    assert prob.grad.tolist() == pytest.approx([0.5, 0.0, 1.0, 0.75 * m3])
    # through the sigmoid of the explanation: a = 0 -> prob 1/2, d prob / d a = 1/4
    a = torch.zeros(3, requires_grad=True)
    m = BernoulliSTE.apply(torch.sigmoid(a), torch.Generator().manual_seed(1))
    (m * torch.tensor([1.0, -1.0, 8.0])).sum().backward()
    expected = [min(1.0, g * mi * 0.5) * 0.25 for g, mi in zip([1.0, -1.0, 8.0], m.tolist(), strict=True)]
    assert a.grad.tolist() == pytest.approx(expected)


def test_pearson_eps_minmax_and_the_supervise_loss_by_hand():
    u, v = torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[2.0, 4.0, 6.0]])
    # centred: (-1, 0, 1) and (-2, 0, 2): 4 / (sqrt(2 + 1e-5) * sqrt(8 + 1e-5))
    assert pearson_eps(u, v).item() == pytest.approx(4 / (math.sqrt(2 + 1e-5) * math.sqrt(8 + 1e-5)))
    assert minmax(torch.tensor([[2.0, 4.0, 3.0]]))[0].tolist() == pytest.approx([0.0, 1.0, 0.5], abs=1e-6)
    s, p = torch.tensor([[0.0, 1.0, 0.5]]), torch.tensor([[-5.0, 5.0, 0.0]])
    # (1 - r) / 2 with r = 0.5 / (0.5 + 1e-5): the centred sums of squares are 0.5 on both sides
    assert supervise_loss(s, p).item() == pytest.approx((1 - 0.5 / (0.5 + 1e-5)) / 2, abs=1e-7)
    assert supervise_loss(-s, p).item() == pytest.approx((1 + 0.5 / (0.5 + 1e-5)) / 2, abs=1e-7)


def test_the_faithful_loss_rewards_kept_mass_that_tracks_the_drop():
    # the authors' masks mark *kept* features: a removal-faithful attribution anti-correlates with the drop
    torch.manual_seed(4)
    w = torch.tensor([1.0, -0.8, 0.6, 0.5, -0.5, 0.7])
    model = _logistic(w)
    x = torch.randn(16, 6)
    x = x * torch.sign(x @ w)[:, None]  # every input predicted as class 1
    # removal to zero lowers the logit by w_i x_i; scaled to |a| <= 1 so that sigmoid(a) masks vary
    exact = w * x / (w * x).abs().amax(1, keepdim=True)
    kw = {"runs": 100, "fill": "baseline", "baseline": torch.zeros(6)}
    keeps = faithful_loss(model, x, exact, mask_keeps=True, generator=torch.Generator().manual_seed(0), **kw)
    removes = faithful_loss(
        model, x, exact, mask_keeps=False, generator=torch.Generator().manual_seed(0), **kw
    )
    assert removes.item() < 0.2 < 0.8 < keeps.item(), (removes, keeps)
    a = exact.clone().requires_grad_(True)
    faithful_loss(model, x, a, generator=torch.Generator().manual_seed(0), **kw).backward()
    assert torch.isfinite(a.grad).all() and a.grad.abs().sum() > 0


def test_mean_interval_is_the_t_interval():
    v = [1.0, 2.0, 3.0, 4.0]
    got = mean_interval(v)
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2  # t_{0.975, 3} * s / sqrt(n)
    assert (
        got["mean"] == 2.5
        and got["low"] == pytest.approx(2.5 - half)
        and got["high"] == pytest.approx(2.5 + half)
    )
    assert mean_interval([0.3]) == {"mean": 0.3, "low": 0.3, "high": 0.3, "n": 1}


# ---------------------------------------------------------------------------------------------- priors
def _logistic(w: torch.Tensor) -> nn.Module:
    """Two classes with logits (0, w . x): p(class 1) = sigmoid(w . x)."""
    model = nn.Linear(len(w), 2)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
        model.weight[1] = w
    return model.requires_grad_(False)


def test_per_input_deduplication_by_hand():
    e = torch.eye(3)
    stack = torch.stack(
        [
            torch.stack([e[0], 2 * e[0], e[1]]),  # input 0: B duplicates A -> B removed
            torch.stack([e[0], e[1], e[1] + 0.01 * e[2]]),  # input 1: C duplicates B -> C removed
            # input 2, a chain: A ~ B (cos 0.95) and B ~ C (0.95), A !~ C (0.8): A removes B, C stays
            torch.stack([e[0], e[0] + 0.33 * e[1], e[0] + 0.75 * e[1]]),
        ]
    )
    removed = duplicates_per_input(stack, threshold=0.9)
    assert removed.tolist() == [[False, True, False], [False, False, True], [False, True, False]]


def test_per_input_filtering_by_hand():
    # 5 methods, 2 inputs; a higher-is-better metric and a lower-is-better one
    high = torch.tensor([[0.9, 0.1, 0.5, 0.7, 0.3], [0.1, 0.9, 0.5, 0.7, 0.3]])
    low = torch.tensor([[0.2, 0.3, 0.9, 0.1, 0.4], [0.2, 0.3, 0.4, 0.1, 0.9]])
    # input 0: 20 % quantile of high = 0.1 + 0.8 * 0.2 = 0.26 drops method 1; 80 % quantile of low
    # = 0.4 + 0.2 * 0.5 = 0.5 drops method 2. Input 1: method 0 (high) and method 4 (low) are dropped.
    keep = filter_per_input({"h": high, "l": low}, {"h": True, "l": False}, p=0.2)
    assert keep.tolist() == [[True, False, False, True, True], [False, True, True, True, False]]


def test_selection_keeps_the_exact_prior_and_drops_its_duplicate_and_the_noise():
    torch.manual_seed(3)
    w = torch.randn(10) * 0.5
    model = _logistic(w)
    x, b = torch.randn(64, 10), torch.zeros(10)
    t = torch.ones(64, dtype=torch.long)
    exact = w * x
    priors = {
        "exact": exact,
        "rescaled": 3 * exact + 1e-3 * torch.randn(64, 10),  # the same pattern: a duplicate
        "noisy": exact + 1.5 * exact.abs().mean() * torch.randn(64, 10),
        "noise1": torch.randn(64, 10),
        "noise2": torch.randn(64, 10),
    }
    selection = select_priors(model, x, t, priors, b)
    keep = dict(zip(selection.methods, selection.keep.float().mean(0).tolist(), strict=True))
    assert keep["exact"] == 1.0 and keep["rescaled"] == 0.0  # the second of a duplicate pair goes
    # each metric drops only the worst of five (its 20 % quantile lies between the two lowest values)
    assert keep["noisy"] > 0.8 and keep["noise1"] + keep["noise2"] < 1.2
    assert selection.dropped == {"rescaled": "a duplicate on every input"}
    assert selection.faithfulness["exact"]["faithfulness_estimate"] > 0.99
    assert sum(selection.weights.values()) == pytest.approx(1.0)


def test_captum_priors_on_a_logistic_model():
    w = torch.tensor([2.0, -1.0, 0.5])
    model = _logistic(w)
    x, b = torch.tensor([[1.0, 2.0, -1.0]]), torch.zeros(3)
    t = torch.ones(1, dtype=torch.long)
    p = torch.sigmoid(x @ w)
    grad = p * (1 - p) * w
    saliency = prior_attributions(model, x, t, "saliency", b)
    assert saliency[0].tolist() == pytest.approx(grad.abs().tolist(), rel=1e-4)
    ig = prior_attributions(model, x, t, "integrated_gradients", b, ig_steps=200)
    assert ig.sum().item() == pytest.approx((p - 0.5).item(), abs=2e-3)  # completeness: f(x) - f(b)
    occlusion = prior_attributions(model, x, t, "occlusion", b)
    drops = [p.item() - torch.sigmoid(x[0] @ w - x[0, i] * w[i]).item() for i in range(3)]
    assert occlusion[0].tolist() == pytest.approx(drops, rel=1e-4)
    ablation = prior_attributions(model, x, t, "feature_ablation", b)
    assert ablation[0].tolist() == pytest.approx(drops, rel=1e-4)  # on tables: the same computation
    deeplift = prior_attributions(model, x, t, "deeplift", b)
    # summation to delta, up to Captum's handling of the softmax
    assert deeplift.sum().item() == pytest.approx((p - 0.5).item(), abs=2e-3)
    shap = prior_attributions(model, x, t, "kernel_shap", b, samples=300)
    assert shap.sum().item() == pytest.approx((p - 0.5).item(), abs=0.02)  # efficiency, approximately
    assert torch.argsort(shap[0]).tolist() == torch.argsort(occlusion[0]).tolist()
    for method in ("gradient_shap", "lime"):
        assert prior_attributions(model, x, t, method, b).shape == x.shape


# ---------------------------------------------------------------------------------------------- alpha
def test_the_variance_trigger_and_sigmoid_decay_by_hand():
    schedule = AlphaSchedule("dynamic")  # eps 1e-5, divider 10, window 5
    assert [schedule.step(0.3) for _ in range(4)] == [1.0] * 4  # fewer than 5 epochs: no variance yet
    assert schedule.step(0.3) == 0.5 and schedule.triggered == [4]  # var 0 <= 1e-5 at epoch 4: 1 - sigmoid(0)
    assert schedule.step(0.3) == pytest.approx(1 - 1 / (1 + math.exp(-0.1)))  # epoch 5: 0.47502
    # last five 0.3, 0.3, 0.3, 0.3, 0.31: var 1.6e-5, above eps but not above 10 eps: the decay goes on
    assert schedule.step(0.31) == pytest.approx(1 - 1 / (1 + math.exp(-0.2)))
    # a jump: last five 0.3, 0.3, 0.3, 0.31, 0.4, var 1.6e-3 > 1e-4: reset to 1, trigger off
    assert schedule.step(0.4) == 1.0 and not schedule.on
    assert [AlphaSchedule("prior_only").step(0.3) for _ in range(6)] == [1.0] * 6
    faith = AlphaSchedule("faith_only")
    assert faith.alpha == 0.0 and [faith.step(1.0) for _ in range(6)] == [0.0] * 6


# ---------------------------------------------------------------------------------------------- learning
def test_the_explainer_learns_to_be_faithful_on_wine():
    task = load_task("wine", seed=0)
    model, training = train_target_model(task, seed=0, epochs=40)
    assert training.test_accuracy > 0.9
    config = ExplainerConfig(
        epochs=25,
        priors=["integrated_gradients", "occlusion", "saliency"],
        prior_samples=64,
        faith_runs=20,
        mask_keeps=False,
        seed=0,
    )
    explainer, log = train_explainer(model, task.x_train, task.baseline, task.num_classes, config)
    torch.manual_seed(0)
    untrained = AmortizedExplainer(task.shape, task.num_classes, task.baseline, config.hidden, config.layers)
    score, t = class_probability(model), predict(model, task.x_test)

    def deletion(attribution: torch.Tensor) -> float:  # a held-out metric
        return deletion_auc(score, task.x_test, attribution, task.baseline, t).mean().item()

    with torch.no_grad():
        trained = deletion(explainer(task.x_test, t))
        before = deletion(untrained(task.x_test, t))
    noise = deletion(torch.randn(task.x_test.shape, generator=torch.Generator().manual_seed(0)))
    assert trained < before - 0.1 and trained < noise - 0.1, (trained, before, noise)
    assert log.prior_loss[-1] < 0.7 * log.prior_loss[0]
    assert log.alpha[0] == 1.0 and log.selection is not None and log.pairs > 64


# ---------------------------------------------------------------------------------------------- api, files
@pytest.fixture(scope="module")
def iris() -> dict[str, Any]:
    task = load_task("iris", seed=0)
    model, _ = train_target_model(task, seed=0, epochs=30)
    config = ExplainerConfig(epochs=3, alpha_mode="faith_only", faith_runs=8)
    explainer, _ = train_explainer(model, task.x_train, task.baseline, task.num_classes, config)
    return {"task": task, "model": model, "explainer": explainer}


def test_explain_runs_the_explainer_or_a_prior(iris):
    task, model, explainer = iris["task"], iris["model"], iris["explainer"]
    x = task.x_test[:5]
    t = predict(model, x)
    with torch.no_grad():
        assert torch.equal(explain(model, x, explainer=explainer), explainer(x, t))
    other = explain(model, x, explainer=explainer, target=(t[0] + 1) % 3)
    assert not torch.allclose(other, explainer(x, t))  # conditioned on the class
    ig = explain(model, x, method="integrated_gradients", baseline=task.baseline)
    assert torch.allclose(ig, prior_attributions(model, x, t, "integrated_gradients", task.baseline))
    with pytest.raises(ExplainerError, match="needs a trained explainer"):
        explain(model, x)
    with pytest.raises(ExplainerError, match="unknown method 'bogus'"):
        explain(model, x, method="bogus")


def test_save_and_load_give_identical_attributions(iris, tmp_path):
    task, model, explainer = iris["task"], iris["model"], iris["explainer"]
    folder = save_explainer(tmp_path / "saved", explainer, {"task": "iris"}, model)
    fresh = make_target_model(task)
    loaded, metadata = load_explainer(folder, fresh)
    x = task.x_test
    t = predict(model, x)
    assert metadata == {"task": "iris"} and torch.equal(fresh(x), model(x))
    assert torch.equal(loaded(x, t), explainer(x, t))
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(ExplainerError, match="which embodia did not write"):
        save_explainer(folder, explainer)
    with pytest.raises(ExplainerError, match="holds no saved explainer"):
        load_explainer(tmp_path)


def test_csv_tables(tmp_path):
    path = tmp_path / "table.csv"
    rows = [["a", "b", "kind"]] + [[str(i), str(i % 3), "big" if i > 9 else "small"] for i in range(20)]
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")
    task = load_task(csv_path=path, target_column="kind", seed=0)
    assert task.class_names == ["big", "small"] and task.feature_names == ["a", "b"]
    assert len(task.x_train) + len(task.x_test) == 20
    assert task.x_train.mean(0).abs().max() < 1e-5 and torch.allclose(
        task.baseline, torch.zeros(2), atol=1e-6
    )
    with pytest.raises(ExplainerError, match="no target column 'label'"):
        load_task(csv_path=path, target_column="label")
    path.write_text("a,kind\n1,x\noops,y\n3,x\n")
    with pytest.raises(ExplainerError, match="table.csv:3: a feature value is not a number"):
        load_task(csv_path=path, target_column="kind")


# ---------------------------------------------------------------------------------------------- tool
FAST = {"dataset": "iris", "epochs": 2, "prior_samples": 6, "model_epochs": 20, "report_samples": 4}


def test_the_tool_through_the_registry(tmp_path):
    tool = next(t for t in list_tools() if t.name == "explain_features")
    schema = tool.input_schema()["properties"]
    assert schema["method"]["enum"] == list(METHODS)
    out = tmp_path / "attributions.csv"
    result = call_tool(
        "explain_features", {**FAST, "indices": [0, 3], "out": str(out), "save_to": str(tmp_path / "e")}
    )
    assert [s["index"] for s in result["samples"]] == [0, 3] and len(result["samples"][0]["attribution"]) == 4
    assert set(result["report"]) == {*METHODS, "random"} and result["report_samples"] == 4
    with out.open() as handle:
        table = list(csv.reader(handle))
    assert table[0][4:] == result["feature_names"] and len(table) == 3
    assert [float(v) for v in table[1][4:]] == pytest.approx(result["samples"][0]["attribution"])
    # the saved explainer, loaded, gives the same attributions without training
    again = call_tool(
        "explain_features", {**FAST, "indices": [0, 3], "report": False, "explainer_dir": str(tmp_path / "e")}
    )
    assert [s["attribution"] for s in again["samples"]] == [s["attribution"] for s in result["samples"]]
    with pytest.raises(ExplainerError, match="was trained for"):
        call_tool(
            "explain_features", {**FAST, "seed": 1, "report": False, "explainer_dir": str(tmp_path / "e")}
        )
    prior = call_tool("explain_features", {**FAST, "method": "occlusion", "count": 2, "report": False})
    assert "explainer" not in prior and len(prior["samples"]) == 2
    with pytest.raises(ToolArgumentError, match="method: Input should be"):
        call_tool("explain_features", {"method": "bogus"})
    with pytest.raises(ToolArgumentError, match="out: path '../x.json'"):
        call_tool("explain_features", {**FAST, "out": "../x.json"}, context=ToolContext.confined(tmp_path))
    with pytest.raises(ToolArgumentError, match="indices must be < 38"):
        call_tool("explain_features", {**FAST, "indices": [38]})


def test_the_tool_over_mcp(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "table.csv").write_text("a,target\n1,x\n2,y\n3,x\n4,y\n")
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            results["ok"] = await session.call_tool(
                "explain_features", {**FAST, "count": 3, "out": "attr.json"}
            )
            results["enum"] = await session.call_tool("explain_features", {"method": "bogus"})
            results["out"] = await session.call_tool(
                "explain_features", {**FAST, "out": str(outside / "a.json")}
            )
            results["csv"] = await session.call_tool("explain_features", {"csv": "../outside/table.csv"})

    anyio.run(run)
    schema = results["tools"]["explain_features"].input_schema["properties"]
    assert schema["method"]["enum"] == list(METHODS) and schema["dataset"]["enum"][:3] == [
        "breast_cancer",
        "wine",
        "iris",
    ]
    ok = results["ok"]
    assert not ok.is_error, ok.content[0].text
    content = ok.structured_content
    assert len(content["samples"]) == 3 and content["out"] == str((ws / "attr.json").resolve())
    saved = json.loads((ws / "attr.json").read_text())
    assert [s["attribution"] for s in saved["samples"]] == [s["attribution"] for s in content["samples"]]
    assert results["enum"].is_error and "method: Input should be" in results["enum"].content[0].text
    for name, field in (("out", "out"), ("csv", "csv")):
        message = results[name].content[0].text
        assert (
            results[name].is_error and f"{field}: path" in message and "is outside the workspace" in message
        )
    assert sorted(p.name for p in outside.iterdir()) == ["table.csv"]


# ---------------------------------------------------------------------------------------------- script
def test_quick_script(tmp_path):
    out, results = tmp_path / "explainer.json", tmp_path / "explainer_results.json"
    assert (
        run_script("explainer_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results))
        == 0
    )
    # the quick run's results file has the layout of the committed one (what the page renders)
    written = read_results(results)
    assert (
        layout_differences(written, read_results(default_results_path("methods/explainer_deepfaith"))) == []
    )
    assert {r["dataset"] for r in written["tables"]["setup"]["rows"]} == {"iris", "digits"}
    payload = json.loads(out.read_text())
    assert set(payload["results"]) == {"iris", "digits"}
    for table in payload["results"].values():
        assert len(table) == 3 + len(PRIOR_METHODS) + 1
        for entry in table.values():
            assert all(math.isfinite(entry[m]["mean"]) for m in ("deletion_auc", "infidelity"))
            assert entry["seconds_per_explanation"] > 0 and 1 <= entry["rank"] <= 12
    digits = payload["results"]["digits"]
    # integrated gradients is far more faithful than random attributions, even on a two-epoch CNN
    assert digits["integrated_gradients"]["deletion_auc"]["mean"] < digits["random"]["deletion_auc"]["mean"]
    assert digits["integrated_gradients"]["rank"] < digits["random"]["rank"]
