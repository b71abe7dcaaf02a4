"""The agent's patch as kept with the trial: whole, compressed when large, hashed; never silently cut (an audit of
a patch cut at 1,000,000 bytes had not seen a cheat behind 1.2 MB of padding)."""

from __future__ import annotations

import base64
import gzip
import hashlib

from trialbook.sandbox import Box
from trialbook.verify.notes import PatchRecord

PATCH_KEEP = 1_000_000  # bytes of the agent's patch kept as text (agent/patch.diff); a larger one also compressed
PATCH_WHOLE = 256 << 20  # bytes of the agent's patch read back at most (verify/isolation; beyond: `cut` recorded)


def patch_record(patch: str) -> PatchRecord:
    """The agent's patch's record: bytes, sha256, whether it is kept compressed (kept_patch), and `cut` only when it
    ran past PATCH_WHOLE (never silently)."""
    data = patch.encode("utf-8", "surrogateescape")
    info = PatchRecord(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    if len(data) > PATCH_KEEP or data.decode("utf-8", "replace") != patch:
        info["compressed"] = "patch.diff.gz.b64"
    if len(data) >= PATCH_WHOLE:
        info["cut"] = True  # read back up to PATCH_WHOLE bytes: what is kept is that much, and the record says so
    return info


def kept_patch(patch: str) -> dict[str, str]:
    """The agent's patch as kept with the trial, whole: `patch.diff` itself when it is at most PATCH_KEEP bytes, else
    its head with a line naming the rest and `patch.diff.gz.b64` (the whole patch, gzip then base64); so too a patch
    that is not UTF-8 (a file name's bytes), whose exact bytes no text artifact holds."""
    data = patch.encode("utf-8", "surrogateescape")
    text = data.decode("utf-8", "replace")  # what a text artifact can hold; the bytes themselves, compressed, when not
    if len(data) <= PATCH_KEEP and text == patch:
        return {"patch.diff": patch}
    head = data[:PATCH_KEEP].decode("utf-8", "replace")
    note = f"\n# trialbook: the patch is {len(data)} bytes; all of it: patch.diff.gz.b64 (gzip, base64)\n"
    return {"patch.diff": head + note, "patch.diff.gz.b64": base64.b64encode(gzip.compress(data, 6)).decode()}


def whole_patch(box: Box, stage: str, head: str) -> str:
    """The agent's whole patch: `head` when it is all of it, else the file the carry kept aside, read as bytes (up to
    PATCH_WHOLE: verify/kept_patch.patch_record says when it was cut) and removed before the tests run."""
    if len(head.encode("utf-8", "surrogateescape")) < PATCH_KEEP:
        return head
    kept = f"/{stage}.patch"
    data = box.read_file(kept)
    box.run_script(f"rm -f {kept}", 60)
    return head if data is None else data[:PATCH_WHOLE].decode("utf-8", "surrogateescape")
