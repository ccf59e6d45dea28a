"""Evaluates the opa-diff corpus with real OPA (PyPI opa-golib-python-bindings), for the
`opa_live` test of `crates/system-tests`.

Reads {"cases": [{"name", "package", "source", "input", "rules"}]} on stdin and writes
{"<case>": {"<rule>": {"value": v} | {"undefined": true} | {"error": "..."}}} on stdout.
"""

import json
import sys

from opa_bindings import OpaEngine, OpaError, OpaUndefinedError


def evaluate(case):
    engine = OpaEngine()
    answers = {}
    try:
        engine.add_policy(case["name"] + ".rego", case["source"])
    except OpaError as error:
        return {rule: {"error": str(error)} for rule in case["rules"]}
    for rule in case["rules"]:
        path = case["package"] + "." + rule
        try:
            answers[rule] = {"value": engine.eval_document(path, case["input"])}
        except OpaUndefinedError:
            answers[rule] = {"undefined": True}
        except OpaError as error:
            answers[rule] = {"error": str(error)}
    engine.close()
    return answers


def main():
    request = json.load(sys.stdin)
    out = {case["name"]: evaluate(case) for case in request["cases"]}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


main()
