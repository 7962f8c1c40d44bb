"""Hostile inputs for the security tests."""
from __future__ import annotations


def alias_bomb(levels: int = 6) -> str:
    """The "billion laughs" in YAML: each level repeats the previous one nine times by alias, so a few
    hundred bytes stand for 9**levels strings once anything walks or prints the loaded value."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"answers: *a{levels}")
    lines.append(f"name: *a{levels}")
    return "\n".join(lines) + "\n"
