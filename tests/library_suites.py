"""Run JAX libraries' own test suites on real JAX and on xform (compat mode), and compare.

A manual run, not part of the suite (each library's tests take minutes to hours):

    python tests/library_suites.py numpyro blackjax haiku --sample 400

For each library: its pinned version's source distribution is downloaded from PyPI (the test
files ship in it) into ``--workdir``; its tests are collected under real JAX and a fixed,
evenly spaced sample of ``--sample`` test ids is taken (all of them with ``--sample 0``); the
sample runs once with real JAX and once under ``python -m xform.run -m pytest``; the report
gives, per library, the tests passed under JAX, how many of those pass under xform, and each
xform-only failure with the first line of its error (also written to
``<workdir>/<library>/report.json``). ``-k`` narrows the tests as pytest's ``-k`` does; a
run past ``--timeout`` seconds is interrupted and reports the tests it ran (those JAX did not
run are not counted).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

# library -> (PyPI name, version, test folder inside the source distribution)
LIBRARIES = {
    "numpyro": ("numpyro", "0.22.0", "test"),
    "blackjax": ("blackjax", "1.7.1", "tests"),
    "haiku": ("dm-haiku", "0.0.17", "haiku/_src"),
    "optax": ("optax", "0.2.8", "optax"),
    "flax": ("flax", "0.12.8", "tests"),
}  # (equinox's source distribution ships no tests)


def _sources(lib, workdir):
    name, version, tests = LIBRARIES[lib]
    folder = os.path.join(workdir, lib)
    os.makedirs(folder, exist_ok=True)
    root = os.path.join(folder, "src")
    if not os.path.isdir(root):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{name}=={version}",
                "-d",
                folder,
            ],
            check=True,
        )
        archive = next(f for f in os.listdir(folder) if f.endswith(".tar.gz"))
        with tarfile.open(os.path.join(folder, archive)) as tar:
            tar.extractall(folder, filter="data")
        os.rename(os.path.join(folder, archive[: -len(".tar.gz")]), root)
    return folder, root, tests


def _pytest(root, args, compat, junit, timeout):
    """Run pytest (under compat mode when ``compat``); past ``timeout`` seconds it is
    interrupted as Ctrl-C does, so that it still writes the results of the tests it ran.
    Returns whether it finished in time."""
    runner = ["-m", "xform.run", "-m", "pytest"] if compat else ["-m", "pytest"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    cmd = [
        sys.executable,
        *runner,
        "-p",
        "no:cacheprovider",
        "-q",
        "-o",
        "addopts=",
        f"--junitxml={junit}",
        *args,
    ]
    with subprocess.Popen(
        cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
            return False


def _collect(root, tests, keyword):
    args = ["--collect-only", "-q", tests] + (["-k", keyword] if keyword else [])
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", *args],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
    )
    return sorted(line.strip() for line in out.stdout.splitlines() if "::" in line)


def _outcomes(junit):
    """test id -> "passed" | "failed" | "skipped", and the first line of each failure."""
    results, errors = {}, {}
    if not os.path.exists(junit):
        return results, errors
    for case in ET.parse(junit).iter("testcase"):
        key = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            results[key] = "failed"
            errors[key] = (bad.get("message") or "").strip().splitlines()[:1]
        elif case.find("skipped") is not None:
            results[key] = "skipped"
        else:
            results[key] = "passed"
    return results, errors


def run(lib, workdir, sample, keyword, timeout):
    """Run ``lib``'s sampled tests on JAX and on xform; returns the report."""
    folder, root, tests = _sources(lib, workdir)
    ids = _collect(root, tests, keyword)
    if sample and len(ids) > sample:
        step = len(ids) / sample
        ids = [ids[int(i * step)] for i in range(sample)]
    args_file = os.path.join(folder, "ids.txt")
    with open(args_file, "w") as f:
        f.write("\n".join(ids))
    report = {"library": lib, "sampled": len(ids)}
    outcomes = {}
    for engine, compat in (("jax", False), ("xform", True)):
        junit = os.path.join(folder, f"{engine}.xml")
        if os.path.exists(junit):
            os.remove(junit)
        finished = _pytest(root, [f"@{args_file}"], compat, junit, timeout)
        outcomes[engine] = _outcomes(junit)
        report[f"{engine}_timed_out"] = not finished
    jax_results = outcomes["jax"][0]
    xform_results, xform_errors = outcomes["xform"]
    passed = sorted(k for k, v in jax_results.items() if v == "passed")
    lost = [k for k in passed if xform_results.get(k) != "passed"]
    report.update(
        passed_jax=len(passed),
        passed_xform=len(passed) - len(lost),
        xform_only_failures={
            k: (xform_errors.get(k) or [xform_results.get(k, "not run")])[0] for k in lost
        },
    )
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("libraries", nargs="+", choices=sorted(LIBRARIES))
    parser.add_argument("--sample", type=int, default=400, help="tests per library (0: all)")
    parser.add_argument(
        "--workdir", default=os.path.join(os.path.expanduser("~"), ".cache", "xform-library-suites")
    )
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per engine run")
    options = parser.parse_args()
    for lib in options.libraries:
        report = run(lib, options.workdir, options.sample, options.keyword, options.timeout)
        share = report["passed_xform"] / max(report["passed_jax"], 1)
        print(
            f"{lib}: {report['sampled']} sampled, {report['passed_jax']} pass under JAX, "
            f"{report['passed_xform']} of them under xform ({share:.0%})"
        )
        for test, error in report["xform_only_failures"].items():
            print(f"  {test}: {error}")


if __name__ == "__main__":
    main()
