"""Harbor-compatible task folders: loading and validation."""

from trialbook.tasks.loader import TaskError, TaskSpec, load_task, load_tasks

__all__ = ["TaskError", "TaskSpec", "load_task", "load_tasks"]
