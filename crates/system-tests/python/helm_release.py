"""Installs, upgrades and uninstalls a chart release in a cluster with the Helm v4 engine of the
`helm-python-sdk` package.

Driven by the rollout test of `crates/system-tests` (`src/helm.rs`, `release_action`). Reads one
JSON request from stdin, {"action": "install" | "upgrade" | "uninstall", "kubeconfig": FILE,
"chart": DIR, "release": NAME, "namespace": NS, "values": {...}}, and writes
{"ok": true, "manifest": TEXT} or {"ok": false, "error": TEXT} to stdout. It asserts nothing.
"""

import json
import sys

import helm_python
from helm_python.config import Config


def main() -> int:
    request = json.load(sys.stdin)
    result = {}
    with Config(kubeconfig_path=request["kubeconfig"], namespace=request["namespace"]) as config:
        try:
            action = request["action"]
            if action == "install":
                release = config.install(
                    request["chart"], request["release"], request["values"],
                    namespace=request["namespace"], create_namespace=True, timeout=120,
                )
            elif action == "upgrade":
                release = config.upgrade(
                    request["chart"], request["release"], request["values"],
                    namespace=request["namespace"], timeout=120,
                )
            else:
                release = config.uninstall(request["release"], timeout=120, wait="watcher")
            result["ok"] = True
            result["manifest"] = (release or {}).get("manifest", "") if isinstance(release, dict) else ""
        except helm_python.HelmError as error:
            result["ok"] = False
            result["error"] = f"{type(error).__name__}: {error.detail}"
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
