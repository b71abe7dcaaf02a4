"""HTTP helpers."""

import json
import urllib.request


def get_bytes(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


def get_json(url, timeout=5):
    return get_bytes(url, timeout)
