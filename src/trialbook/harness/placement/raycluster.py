"""`--executor ray`: each trial is a Ray task on a node that offers the `docker` resource, against that node's own
Docker daemon. The only module that imports ray (the `ray` extra).

- A task folder travels through Ray's object store (a tar.gz put once per run) and is unpacked on the node
  under a content-hash folder; the node builds the task's image on first use (Backend.ensure_image's
  content-hash tag), so a cluster needs no registry.
- The driver stays the only ledger writer: `results` yields each finished trial to harness/run/execute.py.
- A node or worker lost mid-trial (NodeDiedError, WorkerCrashedError, ...) is the policy's `NodeLostError`:
  the trial is submitted again (Ray's own retries are off, so it runs once per submission) up to `retries`
  times, then recorded as an infra_error; either way each (task, attempt) is yielded exactly once, and the
  run's containers are removed on every node once nothing of the run is in flight.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import grpc  # installed with ray
import ray
from ray.exceptions import RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from trialbook.errors import TrialbookError, UserError
from trialbook.extra_schema import read_extra, with_extra
from trialbook.harness.run.config import PlannedTrial
from trialbook.harness.run.stack import connect
from trialbook.harness.trial.execution import Stopper, TrialResult, TrialSettings, run_trial, trial_name
from trialbook.outcomes import ErrorKind, classify
from trialbook.records import Trial
from trialbook.sandbox import Backend
from trialbook.sandbox.box import tar_bytes
from trialbook.sandbox.docker import LABEL_LEDGER
from trialbook.tasks import TaskError, TaskSpec

DOCKER = "docker"  # the custom resource a node offers per trial it may run at once: ray start --resources
MB = 1024 * 1024
NODE_LOST = ErrorKind.NODE_LOST  # outcomes.POLICY: infra_error, retried on another node
CACHE = Path(tempfile.gettempdir()) / "trialbook-ray" / "tasks"
CALL_TIMEOUT_S = 120.0
PROBE_S = 5.0

_engine: Backend | None = None  # one per Ray worker process, against its node's daemon
_engine_lock = threading.Lock()


def _node_engine() -> Backend:
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = connect("docker")
        return _engine


def _unpack(task: TaskSpec, blob: bytes, digest: str) -> TaskSpec:
    """The task with its folder unpacked on this node (once per content hash)."""
    import tarfile

    dest = CACHE / digest
    if not dest.is_dir():
        tmp = CACHE / f".{digest}-{secrets.token_hex(4)}"
        tmp.mkdir(parents=True)
        with tarfile.open(fileobj=BytesIO(blob), mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        try:
            tmp.rename(dest)
        except OSError:  # another worker unpacked the same folder first
            shutil.rmtree(tmp, ignore_errors=True)
    return task.model_copy(update={"path": dest / task.task_id})


def _node_trial(
    task: TaskSpec | TaskError,
    blob: bytes | None,
    digest: str,
    attempt: int,
    settings: TrialSettings,
    deadline_at: float | None,
) -> TrialResult:
    """Runs on a cluster node: the same `run_trial` as the local executor, plus where it ran."""
    if isinstance(task, TaskSpec) and blob is not None:
        task = _unpack(task, blob, digest)
    stopper = Stopper()
    timer = None
    if deadline_at is not None:
        left = deadline_at - time.time()
        if left <= 0:
            stopper.fire("deadline")
        else:
            timer = threading.Timer(left, stopper.fire, args=("deadline",))
            timer.daemon = True
            timer.start()
    try:
        result = run_trial(_node_engine(), task, attempt, settings, stopper)
    finally:
        if timer is not None:
            timer.cancel()
    node = ray.get_runtime_context().get_node_id()
    extra = with_extra(result.trial.extra, executor="ray", node_id=node, hostname=socket.gethostname())
    result.trial = result.trial.model_copy(update={"extra": extra})
    return result


def _node_clean(run: str | None, images: bool, ledger: str | None) -> tuple[int, int]:
    return connect("docker").clean(run, images=images, ledger=ledger)


def _node_version() -> str:
    return connect("docker").version()


def _where(fn: Any) -> Any:
    """`fn` answering with the node it ran on too (a pinned task is checked to have run where it was sent)."""

    def on_node(*args: Any) -> tuple[str, Any]:
        return ray.get_runtime_context().get_node_id(), fn(*args)

    return on_node


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _reachable(address: str) -> str:
    """The address to hand to ray.init, once its head answers there: ray.init itself retries for ever a head
    that is down, or a port where something else listens. `auto` is the cluster this machine belongs to (the
    file `ray start` leaves)."""
    if address == "auto":
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if not current.is_file():
            raise UserError("no Ray cluster runs on this machine: pass --ray-address HOST:PORT or set RAY_ADDRESS")
        address = current.read_text().strip()
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--ray-address must be HOST:PORT (the head's GCS port, 6379 by default), got '{address}'")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    channel = grpc.insecure_channel(f"{host}:{port}")  # a Ray head (GCS or Ray Client server) speaks gRPC
    try:
        grpc.channel_ready_future(channel).result(timeout=PROBE_S)
    except grpc.FutureTimeoutError:
        raise UserError(
            f"cannot reach the Ray cluster at {address}: something listens there but no Ray head answers"
            f" (no gRPC handshake within {PROBE_S:g} s)"
        ) from None
    finally:
        channel.close()
    return address


class RayExecutor:
    name = "ray"

    def __init__(self, address: str) -> None:
        self.address = address
        try:
            address = _reachable(address) if not ray.is_initialized() else address
            if not ray.is_initialized():
                ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
            docker = ray.cluster_resources().get(DOCKER, 0)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            raise UserError(f"cannot reach the Ray cluster at {address}: {_first_line(exc)}") from None
        if not docker:
            raise UserError(
                f"no node of the Ray cluster at {address} offers the '{DOCKER}' resource: start each node that has "
                f"a Docker daemon with `ray start ... --resources '{{\"{DOCKER}\": N}}'` (N trials at once)"
            )
        self._trial = ray.remote(_node_trial)
        self._blobs: dict[Path, tuple[Any, str]] = {}

    # ---- cluster-wide helpers -------------------------------------------------------------------------

    def nodes(self) -> list[str]:
        """Ids of the live nodes that run trials."""
        return [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(DOCKER)]

    def _on_each_node(self, fn: Any, *args: Any) -> dict[str, Any]:
        """`fn(*args)` on every live node that runs trials, one Ray task pinned to each: node id -> answer.

        A node that dies before it answers (or that the head still listed as alive when it was already gone)
        is left out: what it ran is out of reach until it joins again, when the next `clean`/`resume` covers it.
        """
        remote = ray.remote(_where(fn))
        refs = {
            node: remote.options(
                name=fn.__name__, num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote(*args)
            for node in self.nodes()
        }
        answers: dict[str, Any] = {}
        end = time.monotonic() + CALL_TIMEOUT_S
        for node, ref in refs.items():
            try:
                ran_on, answers[node] = ray.get(ref, timeout=max(end - time.monotonic(), 1.0))
            except RayTaskError as exc:  # fn itself failed there (that node's Docker daemon)
                raise TrialbookError(f"Ray node {node[:12]}: {_first_line(exc.cause or exc)}") from None
            except RayError as exc:
                if node in self.nodes():
                    raise TrialbookError(f"Ray node {node[:12]} did not answer: {_first_line(exc)}") from None
                continue
            if ran_on != node:  # a hard affinity never lets this happen: an answer from elsewhere proves nothing
                raise TrialbookError(f"a task pinned to Ray node {node[:12]} ran on {ran_on[:12]}")
        return answers

    def version(self) -> str:
        versions = sorted(set(self._on_each_node(_node_version).values()))
        if not versions:
            raise TrialbookError(f"no node of the Ray cluster at {self.address} that offers '{DOCKER}' is alive")
        return versions[0] if len(versions) == 1 else "/".join(versions)

    def clean_nodes(
        self, run: str | None, images: bool = True, ledger: str | None = None
    ) -> dict[str, tuple[int, int]]:
        """Every node removes the run's containers (and images) from its own daemon: one Ray task per node.
        Node id -> (containers, images) it removed."""
        return self._on_each_node(_node_clean, run, images, ledger)

    def clean(self, run: str | None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        counts = self.clean_nodes(run, images, ledger).values()
        return sum(c for c, _ in counts), sum(i for _, i in counts)

    # ---- trials ---------------------------------------------------------------------------------------

    def _blob(self, task: TaskSpec) -> tuple[Any, str]:
        if task.path not in self._blobs:
            data = tar_bytes(task.path, task.task_id, gzip=True)
            self._blobs[task.path] = (ray.put(data), hashlib.sha256(data).hexdigest()[:24])
        return self._blobs[task.path]

    def _submit(
        self, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, deadline_at: float | None
    ) -> ray.ObjectRef[TrialResult]:
        if isinstance(task, TaskSpec):
            blob, digest = self._blob(task)
            opts: dict[str, Any] = {"num_cpus": task.cpus, "memory": task.memory_mb * MB, "resources": {DOCKER: 1}}
        else:
            blob, digest = None, ""
            opts = {"num_cpus": 0, "resources": {DOCKER: 0.001}}
        return self._trial.options(max_retries=0, **opts).remote(task, blob, digest, attempt, settings, deadline_at)

    def run_one(
        self, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
    ) -> TrialResult:
        lost: list[str] = []
        while True:
            ref = self._submit(task, attempt, settings, None)
            try:
                return _note_lost(ray.get(ref), lost)
            except RayTaskError as exc:
                return _failed(task, attempt, settings, "unexpected: " + _first_line(exc), lost)
            except RayError as exc:
                lost.append(_first_line(exc))
                if len(lost) > settings.retries or stopper.event.is_set():
                    return _failed(task, attempt, settings, NODE_LOST, lost)

    def results(
        self,
        plans: list[PlannedTrial],
        settings: TrialSettings,
        stopper: Stopper,
        concurrency: int,
        deadline_at: float | None,
    ) -> Iterator[tuple[PlannedTrial, TrialResult | None]]:
        queue = deque(plans)
        inflight: dict[Any, tuple[PlannedTrial, list[str]]] = {}
        any_lost = False
        try:
            while queue or inflight:
                while queue and len(inflight) < concurrency:
                    plan = queue.popleft()
                    inflight[self._submit(plan.task, plan.attempt, settings, deadline_at)] = (plan, [])
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
                for ref in ready:
                    plan, lost = inflight.pop(ref)
                    try:
                        result = _note_lost(ray.get(ref), lost)
                    except RayTaskError as exc:  # run_trial itself failed: a harness bug costs one trial
                        result = _failed(plan.task, plan.attempt, settings, "unexpected: " + _first_line(exc), lost)
                    except RayError as exc:  # the node or its worker died mid-trial
                        any_lost = True
                        lost.append(_first_line(exc))
                        if len(lost) <= settings.retries and not stopper.event.is_set():
                            inflight[self._submit(plan.task, plan.attempt, settings, deadline_at)] = (plan, lost)
                            continue
                        result = _failed(plan.task, plan.attempt, settings, NODE_LOST, lost)
                    yield plan, result
        except BaseException:  # Ctrl-C: stop what runs; the caller removes the run's containers on every node
            stopper.fire("interrupt")
            for ref in inflight:
                ray.cancel(ref, force=True)
            raise
        if any_lost:  # a lost trial's container outlives its worker; nothing of the run is in flight now
            self.clean(settings.run, images=False, ledger=settings.labels.get(LABEL_LEDGER))


def _note_lost(result: TrialResult, lost: list[str]) -> TrialResult:
    """A trial that ran after losing its node(s): the losses count as retries, as the policy says."""
    if lost:
        extra = with_extra(result.trial.extra, retries=read_extra(result.trial).retries + len(lost), lost_nodes=lost)
        result.trial = result.trial.model_copy(update={"extra": extra})
    return result


def _failed(
    task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, kind: str, lost: list[str]
) -> TrialResult:
    """The record of a trial that never came back from the cluster."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    exc_type = NODE_LOST if kind == NODE_LOST else "unexpected"
    message = f"the node running the trial was lost {len(lost)} time(s): {lost[-1]}" if kind == NODE_LOST else kind
    name = trial_name(settings.run, task.task_id, attempt)
    trial = Trial(
        task_id=task.task_id,
        attempt=attempt,
        repo=getattr(task, "repo", None),
        outcome=classify(exc_type, None),
        exception=exc_type,
        exception_message=message[:2000],
        started_at=now,
        finished_at=now,
        extra=with_extra(None, trial_name=name, agent=settings.agent.name, executor="ray",
                         retries=max(len(lost) - 1, 0), lost_nodes=lost),
    )  # fmt: skip
    return TrialResult(trial, name)
