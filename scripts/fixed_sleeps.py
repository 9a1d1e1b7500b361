#!/usr/bin/env python3
"""Lists each `sleep(` under tests/ that no enclosing loop (loop/while/for) surrounds: a fixed wait
instead of a wait for a condition. Run from the tree's root; prints the count on stderr."""
import re, subprocess, sys
# The tests' own sources: not the clients and toolchains the suites install beside them.
skip = ["--exclude-dir=node_modules", "--exclude-dir=target", "--exclude-dir=.venv*", "--exclude-dir=venv*", "--exclude-dir=dist"]
kinds = ["--include=*.rs", "--include=*.mjs", "--include=*.js", "--include=*.py", "--include=*.sh"]
hits = subprocess.run(["grep", "-rn", *skip, *kinds, "sleep(", "tests/"], capture_output=True, text=True).stdout.splitlines()
fixed = []
for h in hits:
    path, no, text = h.split(":", 2)
    lines = open(path).read().split("\n")
    i = int(no) - 1
    ind = len(lines[i]) - len(lines[i].lstrip())
    inloop = bool(re.search(r"\b(loop|while|for)\b", lines[i].split("sleep(")[0]))
    j = i - 1
    while j >= 0 and not inloop:
        l = lines[j]
        if l.strip():
            li = len(l) - len(l.lstrip())
            if li < ind:
                ind = li
                s = l.strip()
                if re.match(r"^(.*=\s*)?(loop\b|while\b|for\b|.*\)\.and_then\(\|\(\)\| loop)", s) or "loop {" in s:
                    inloop = True
                    break
                if re.match(r"^(pub )?(async )?(fn|def|function)\b", s) or s.startswith("await check(") or li == 0:
                    break
        j -= 1
    if not inloop:
        fixed.append(h)
print("\n".join(fixed)); print(len(fixed), "fixed of", len(hits), file=sys.stderr)
