#!/usr/bin/env python3
"""Compares two catalogue detection-rate tables (scripts/catalogue-rates.sh)
with a one-sided test per scenario: is the new rate lower than the old?

    scripts/catalogue-compare.py OLD.tsv NEW.tsv

Test: two-proportion z-test, H0 "the new engine detects at least as often",
rejected (the scenario LOST power) when z = (p_old - p_new) / se > 1.645
(one-sided, alpha = 0.05), se from the pooled rate. When both rates are 0
or 1 there is nothing to test. Exits 1 if any scenario lost power or a
scenario of one table is missing from the other.
"""
import math
import sys


def table(path):
    rows = {}
    with open(path) as f:
        next(f)
        for line in f:
            name, first, caught, seeds = line.rstrip("\n").split("\t")
            rows[name] = (first, int(caught), int(seeds))
    return rows


def main():
    old, new = table(sys.argv[1]), table(sys.argv[2])
    lost = False
    print("| scenario | old first | old rate | new first | new rate | z | verdict |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            print(f"| {name} | missing from one table |||||")
            lost = True
            continue
        (f0, c0, n0), (f1, c1, n1) = old[name], new[name]
        p0, p1 = c0 / n0, c1 / n1
        pooled = (c0 + c1) / (n0 + n1)
        se = math.sqrt(pooled * (1 - pooled) * (1 / n0 + 1 / n1))
        z = (p0 - p1) / se if se > 0 else 0.0
        verdict = "LOWER" if z > 1.645 else "not lower"
        lost |= z > 1.645
        print(f"| {name} | {f0} | {c0}/{n0} | {f1} | {c1}/{n1} | {z:+.2f} | {verdict} |")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
