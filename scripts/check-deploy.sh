#!/usr/bin/env bash
# Checks the shipped deployment files as their consumers would, offline:
# - deploy/systemd/corral.service: `systemd-analyze verify` clean, and `systemd-analyze security`
#   exposure at most 2.0 ("OK");
# - deploy/kubernetes/: every manifest valid against the Kubernetes schemas (kubernetes-validate,
#   --strict: an unknown or misspelt field fails) for the oldest and newest versions it bundles
#   that the manifests target;
# - deploy/mcp-registry/server.json: valid against the MCP Registry's published schema and its
#   OCI rules (scripts/check_server_json.py).
# The Python tools live in a venv under target/ (made on first use, from PyPI). Needs
# systemd-analyze (Debian's systemd package; .ci/run installs it) but no running systemd.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${CORRAL_DEPLOY_VENV:-target/deploy-venv}"
kubernetes_validate_version=1.37.0
jsonschema_version=4.26.0
if ! "$venv/bin/kubernetes-validate" --version 2>/dev/null | grep -q "$kubernetes_validate_version" \
    || ! "$venv/bin/python" -c "import jsonschema, sys; sys.exit(jsonschema.__version__ != '$jsonschema_version')" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "kubernetes-validate==$kubernetes_validate_version" "jsonschema==$jsonschema_version"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== systemd unit"
command -v systemd-analyze >/dev/null || { echo "error: systemd-analyze is not installed (Debian: apt-get install systemd)" >&2; exit 1; }
# verify wants ExecStart's binary to exist; the unit names where it is installed, not where it
# was built, so check a copy that runs /bin/true and is otherwise the same.
sed 's#^ExecStart=/usr/local/bin/corral #ExecStart=/bin/true #' deploy/systemd/corral.service > "$tmp/corral.service"
grep -q '^ExecStart=/bin/true ' "$tmp/corral.service" || { echo "error: corral.service has no ExecStart=/usr/local/bin/corral line" >&2; exit 1; }
# verify prints its findings and exits 0 on some of them: any output is a failure.
verify=$(cd "$tmp" && systemd-analyze verify --man=no ./corral.service 2>&1) || { echo "$verify" >&2; exit 1; }
[[ -z "$verify" ]] || { echo "error: systemd-analyze verify: $verify" >&2; exit 1; }
# --threshold is in tenths: exit 1 above an exposure of 2.0.
security=$(cd "$tmp" && systemd-analyze security --offline=true --threshold=20 ./corral.service 2>&1) \
    || { echo "$security" >&2; echo "error: corral.service exposure above 2.0" >&2; exit 1; }
echo "$security" | grep 'Overall exposure level'

echo "== Kubernetes manifests"
manifests=(deploy/kubernetes/*.yaml deploy/kubernetes/examples/*.yaml)
for version in 1.29.0 1.37.0; do
    "$venv/bin/kubernetes-validate" --strict --quiet -k "$version" "${manifests[@]}"
done
# The validator must still refuse a misspelt field, or the run above proved nothing.
sed 's/readinessProbe:/readinesProbe:/' deploy/kubernetes/deployment.yaml > "$tmp/misspelt.yaml"
if "$venv/bin/kubernetes-validate" --strict --quiet "$tmp/misspelt.yaml" >/dev/null 2>&1; then
    echo "error: kubernetes-validate accepted a misspelt readinessProbe" >&2
    exit 1
fi
echo "${#manifests[@]} files valid for Kubernetes 1.29 and 1.37"

echo "== MCP Registry server.json"
"$venv/bin/python" scripts/check_server_json.py
