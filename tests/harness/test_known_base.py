"""The image's side of the carried diff, learnt once per image (verify/isolation.py _BASES), on the real daemon.

A verifier container indexes the image's working tree before it applies the agent's change (two git processes, a
hash of every file of a repository). When a fresh container's index of that tree is the image repository's own HEAD
tree, later containers of the image skip it: the tree's objects are in the image's repository already. What the
verifier sees must not change: the same change carried with and without the learnt base gives the same names,
patch and working tree; an image whose tree has changes of its own is never taken for its HEAD; and nothing an
agent does in its own container takes part in the learning."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from trialbook.sandbox import BoxSpec, DockerEngine
from trialbook.sandbox.docker import LABEL_RUN
from trialbook.tasks import TaskSpec
from trialbook.verify import isolation
from trialbook.verify.isolation import _BASES, apply_change, base_preparer, capture

pytestmark = pytest.mark.docker

CLEAN = """FROM trialbook-base:bookworm
WORKDIR /testbed
RUN git init -q && mkdir pkg && echo 'def f(): return 1' > pkg/m.py && echo keep > README \\
 && git add -A && git -c user.name=t -c user.email=t@example.invalid commit -qm base
"""
# the same repository with a change of the image's own on top (an edited tracked file, an untracked one)
DIRTY = CLEAN + "RUN echo 'def f(): return 2' > pkg/m.py && echo extra > notes.txt\n"
# the agent's work: a fix, a new file in a new folder, a deleted file; and an attempt on the image's repository
AGENT = (
    "cd /testbed && echo 'def f(): return 42' > pkg/m.py && mkdir -p new && echo hi > new/n.txt && rm README"
    " && git -c user.name=a -c user.email=a@example.invalid commit -qam 'agent' && echo 'ref: refs/heads/x' > .git/HEAD"
)
SHOW = (
    "cd /testbed && for f in pkg/m.py new/n.txt README notes.txt; do printf '%s=' $f; cat $f 2>/dev/null || echo -;"
    " done"
)


@pytest.fixture()
def tb(engine, tmp_path):
    run = f"base-{secrets.token_hex(3)}"
    eng = DockerEngine()
    images = {}
    for name, dockerfile in (("clean", CLEAN), ("dirty", DIRTY)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Dockerfile").write_text(dockerfile)
        images[name] = eng.ensure_image(f"base-{name}", None, tmp_path / name, secrets.token_hex(6), run, False)
    eng.test = (run, images)  # type: ignore[attr-defined]
    yield eng
    for _ref, image_id in images.values():
        _BASES.pop((image_id, "/testbed"), None)
    eng.clean(run, images=True)
    assert engine.containers.list(all=True, sparse=True, filters={"label": f"{LABEL_RUN}={run}"}) == []


def _start(tb: DockerEngine, ref: str):
    run = tb.test[0]  # type: ignore[attr-defined]
    return tb.start(BoxSpec(ref, {LABEL_RUN: run}, 1.0, 256, 128, False), f"tb-{run}-{secrets.token_hex(3)}")


def _carry(tb: DockerEngine, kind: str, image_id: str, prepared: object = None) -> tuple[list[str], str, str]:
    """The agent's work carried into a fresh verifier container: (names, patch, what the verifier's tree holds)."""
    ref = tb.test[1][kind][0]  # type: ignore[attr-defined]
    agent = _start(tb, ref)
    assert agent.run_script(AGENT, 60).exit_code == 0
    change = capture(agent, "/testbed")
    agent.remove()
    task = TaskSpec.model_construct(path=Path("/nonexistent"), task_id="t", verifier_hash="-")  # no tests of its own
    box = _start(tb, ref)
    try:
        box.prepared = prepared
        apply_change(box, change, task, [], 60, image_id)
        shown = box.run_script(SHOW, 60).output
    finally:
        box.remove()
        change.tree.close()
    return sorted(change.files), change.patch, shown


def test_a_clean_images_base_is_learnt_once_and_the_carry_is_the_same(tb, monkeypatch):
    ref, image_id = tb.test[1]["clean"]
    unlearnt = _carry(tb, "clean", "")
    assert (image_id, "/testbed") not in _BASES
    learnt_in_carry = _carry(tb, "clean", image_id)  # the first container of the image indexes it and learns
    head = _start(tb, ref)
    tree = head.run_script("cd /testbed && git rev-parse 'HEAD^{tree}'", 60).output.strip()
    head.remove()
    assert _BASES[(image_id, "/testbed")] == tree

    def never(*_a, **_k):
        raise AssertionError("the image's tree was indexed again")

    monkeypatch.setattr(isolation, "_base_script", never)
    known = _carry(tb, "clean", image_id)
    box = _start(tb, ref)
    assert base_preparer("/testbed", 60, image_id)(box) is True  # a warm container has nothing to compute
    box.remove()
    warm_known = _carry(tb, "clean", image_id, prepared=True)
    assert unlearnt == learnt_in_carry == known == warm_known
    names, patch, shown = known
    assert names == ["README", "new/n.txt", "pkg/m.py"]
    assert "return 42" in patch and "deleted file mode" in patch
    assert shown.split() == ["pkg/m.py=def", "f():", "return", "42", "new/n.txt=hi", "README=-", "notes.txt=-"]


def test_an_image_with_changes_of_its_own_is_indexed_every_time(tb):
    _, image_id = tb.test[1]["dirty"]
    unlearnt = _carry(tb, "dirty", "")
    first = _carry(tb, "dirty", image_id)
    assert _BASES[(image_id, "/testbed")] == ""  # its tree is not its HEAD tree: nothing to skip
    again = _carry(tb, "dirty", image_id)
    assert unlearnt == first == again
    names, _, shown = again
    assert names == ["README", "new/n.txt", "pkg/m.py"]  # the image's own notes.txt and edit are not the agent's
    assert "notes.txt=extra" in shown and "return 42" in shown


def test_the_warm_preparation_learns_from_a_fresh_container(tb):
    ref, image_id = tb.test[1]["clean"]
    box = _start(tb, ref)
    stage = base_preparer("/testbed", 60, image_id)(box)
    box.remove()
    assert isinstance(stage, str) and stage  # the first one indexed the tree and left its stage
    assert _BASES[(image_id, "/testbed")]
    assert _carry(tb, "clean", image_id, prepared=True)[0] == ["README", "new/n.txt", "pkg/m.py"]
