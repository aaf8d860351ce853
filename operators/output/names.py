"""What Soft Sim names in a user's file (shape keys, the cache modifier) and the error every output step raises."""
import re

LIVE_KEY = "SoftSim Live"
LIVE_MODIFIER = "SoftSim Live"  # the live display of a body modifiers feed (output/live_cache.py)
BAKE_KEY_PREFIX = "SoftSim f"
STAGED_KEY_PREFIX = "SoftSim staged f"
CACHE_MODIFIER = "SoftSim Cache"
_BAKE_KEY = re.compile(re.escape(BAKE_KEY_PREFIX) + r"(\d{4,})$")  # only the keys a bake names: never a user's "SoftSim fur"


def is_bake_key(name: str) -> bool:
    """Is this shape key named as a shape-key bake names its keys ("SoftSim f0001", ...)?"""
    return _BAKE_KEY.match(name) is not None


def bake_key_name(frame: int) -> str:
    return f"{BAKE_KEY_PREFIX}{frame:04d}"


class OutputError(Exception):
    """Results could not be written; the message says where and what to change."""
