"""Renders the chart offline with the Helm v4 engine of the `helm-python-sdk` package.

Driven by the chart tests of `crates/system-tests` (`src/helm.rs`) when no `helm` binary is on
PATH. Reads one JSON request from stdin,
{"chart": DIR, "cases": [{"name", "release", "namespace", "values"}]}, and writes
{"helm": VERSION, "cases": [{"name", "ok", "manifests" | "error"}]} to stdout, where "manifests"
maps each template path (NOTES.txt included) to its rendered text. It asserts nothing: the
assertions live in the Rust tests.
"""

import json
import sys

import helm_python
from helm_python.chart import Chart


def main() -> int:
    request = json.load(sys.stdin)
    results = []
    with Chart.load(request["chart"]) as chart:
        for case in request["cases"]:
            result = {"name": case["name"]}
            try:
                result["manifests"] = chart.render(
                    values=case["values"],
                    name=case["release"],
                    namespace=case["namespace"],
                    is_install=True,
                )
                result["ok"] = True
            except helm_python.HelmError as error:
                result["ok"] = False
                result["error"] = f"{type(error).__name__}: {error.detail}"
            results.append(result)
    json.dump({"helm": helm_python.helm_sdk_version(), "cases": results}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
