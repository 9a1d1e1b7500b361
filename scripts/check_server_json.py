#!/usr/bin/env python3
"""Checks deploy/mcp-registry/server.json as the MCP Registry would before publishing it.

First against the registry's published JSON Schema (kept beside it, server.schema.json), then the
rules its publisher adds for OCI packages (internal/validators/registries/oci.go in the registry's
repository): no `version`, `registryBaseUrl` or `fileSha256` on an OCI package, and an image on a
registry it pulls from anonymously. Last, what only this repository knows: the server's version is
Cargo.toml's, and every image is tagged with it.

It first makes sure the schema still refuses what it must (a description over 100 characters, an
OCI package with a version), so a schema file that validates everything cannot pass unnoticed.
Exit 1 on the first problem, naming it.
"""

import copy
import json
import pathlib
import re
import sys
import tomllib

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = ROOT / "deploy" / "mcp-registry"
OCI_HOSTS = ("docker.io", "ghcr.io", "mcr.microsoft.com", "quay.io")
OCI_HOST_SUFFIXES = (".pkg.dev", ".azurecr.io")


def problems(server, schema, cargo_version):
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    for error in sorted(validator.iter_errors(server), key=lambda e: list(e.absolute_path)):
        yield f"schema: {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
    if server.get("$schema") != schema["$id"]:
        yield f"$schema is {server.get('$schema')!r}, not the kept schema's {schema['$id']!r}"
    if server.get("version") != cargo_version:
        yield f"version {server.get('version')!r} is not Cargo.toml's {cargo_version!r}"
    for i, package in enumerate(server.get("packages", [])):
        if package.get("registryType") != "oci":
            continue
        for field in ("version", "registryBaseUrl", "fileSha256"):
            if field in package:
                yield f"packages/{i}: an OCI package may not carry {field}"
        identifier = package.get("identifier", "")
        host = identifier.split("/", 1)[0]
        if host not in OCI_HOSTS and not host.endswith(OCI_HOST_SUFFIXES):
            yield f"packages/{i}: the registry does not pull images from {host!r}"
        match = re.fullmatch(r"[^@]+:([A-Za-z0-9_][A-Za-z0-9._-]*)", identifier)
        if not match or match.group(1) != cargo_version:
            yield f"packages/{i}: the image {identifier!r} is not tagged with the version {cargo_version}"


def main():
    schema = json.loads((DIR / "server.schema.json").read_text())
    server = json.loads((DIR / "server.json").read_text())
    cargo_version = tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"]

    too_long = copy.deepcopy(server)
    too_long["description"] = "x" * 101
    versioned = copy.deepcopy(server)
    versioned["packages"][0]["version"] = "latest"
    for name, broken in (("a 101-character description", too_long), ("an OCI package version", versioned)):
        if not list(problems(broken, schema, cargo_version)):
            print(f"error: the checks let {name} through: server.schema.json is not the registry's schema", file=sys.stderr)
            return 1

    found = list(problems(server, schema, cargo_version))
    for problem in found:
        print(f"error: deploy/mcp-registry/server.json: {problem}", file=sys.stderr)
    if not found:
        print("deploy/mcp-registry/server.json: valid against the 2025-12-11 schema and the registry's OCI rules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
