#!/usr/bin/env bash
# Builds corral's OCI image offline, from `scratch` (no base image is pulled): the static binary
# that scripts/release.sh writes, the CA certificates from Debian's ca-certificates package, a
# non-root user, /plugins and /data volumes, and `corral serve` on 0.0.0.0:8080 by default. One
# image per architecture, both in one image index; optionally pushed, and signed by digest with
# `corral sign` (cosign-compatible: `corral verify` and `cosign verify --key` check it).
#
#   deploy/image/build.sh [options]
#     --dist DIR          where corral-ARCH-linux-musl are (default: dist/)
#     --arch LIST         comma-separated: amd64, arm64 (default: amd64,arm64)
#     --name NAME         the local image name (default: localhost/corral:VERSION)
#     --push REF          push the index, e.g. 127.0.0.1:5000/corral:0.1.0 (plain HTTP is allowed
#                         for loopback registries only, or with --insecure)
#     --insecure          push over plain HTTP to a non-loopback registry
#     --sign-key FILE     sign the pushed index's digest (cosign key; password in COSIGN_PASSWORD)
#     --archive FILE      also write the index as an OCI archive (`podman load -i FILE`)
#     --storage DIR       buildah's storage (default: target/image-storage; vfs, no overlay needed)
#
# Prints `digest: sha256:…` of the pushed index. Timestamps come from SOURCE_DATE_EPOCH (default:
# the last commit's time), so a rebuild of the same binaries gives the same image.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"

dist="dist"
arches="amd64,arm64"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
name="localhost/corral:$version"
push=""
insecure=""
sign_key=""
archive=""
storage="${CARGO_TARGET_DIR:-$root/target}/image-storage"
while [ $# -gt 0 ]; do
    case "$1" in
        --dist) dist="$2"; shift 2 ;;
        --arch) arches="$2"; shift 2 ;;
        --name) name="$2"; shift 2 ;;
        --push) push="$2"; shift 2 ;;
        --insecure) insecure=1; shift ;;
        --sign-key) sign_key="$2"; shift 2 ;;
        --archive) archive="$2"; shift 2 ;;
        --storage) storage="$2"; shift 2 ;;
        *) echo "error: unknown argument $1 (see the comment at the top of $0)" >&2; exit 2 ;;
    esac
done
case "$push" in "" | */*:*) ;; *) echo "error: --push $push: give HOST[:PORT]/REPO:TAG" >&2; exit 2 ;; esac
[ -z "$sign_key" ] || [ -n "$push" ] || { echo "error: --sign-key signs what --push pushed: give --push too" >&2; exit 2; }
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

need=()
command -v buildah >/dev/null || need+=(buildah)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

B=(buildah --root "$storage/root" --runroot "$storage/run" --storage-driver vfs)
mkdir -p "$storage"
# The root filesystem besides the binary: who the non-root user is, the CA bundle, and the two
# volumes owned by that user (a named volume takes the ownership of the directory it is mounted
# on, so the host never has to chown anything).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/root" owned="$work/owned"
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$owned/plugins" "$owned/data"
printf 'root:x:0:0:root:/root:/sbin/nologin\ncorral:x:65532:65532:corral:/data:/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\ncorral:x:65532:\n' > "$rootfs/etc/group"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$rootfs/tmp"
find "$work" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

labels=(
    --label "org.opencontainers.image.title=corral"
    --label "org.opencontainers.image.description=An MCP host that serves tools implemented as sandboxed WebAssembly components"
    --label "org.opencontainers.image.version=$version"
    --label "org.opencontainers.image.licenses=Apache-2.0"
    --label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
    --label "io.modelcontextprotocol.server.name=${CORRAL_MCP_SERVER_NAME:-io.github.corral-mcp/corral}"
)

"${B[@]}" manifest rm "$name" >/dev/null 2>&1 || true
"${B[@]}" rmi -f "$name" >/dev/null 2>&1 || true
"${B[@]}" manifest create "$name" >/dev/null
IFS=, read -r -a arch_list <<< "$arches"
for arch in "${arch_list[@]}"; do
    case "$arch" in
        amd64) binary="$dist/corral-x86_64-linux-musl" ;;
        arm64) binary="$dist/corral-aarch64-linux-musl" ;;
        *) echo "error: unknown architecture $arch (amd64 or arm64)" >&2; exit 2 ;;
    esac
    [ -x "$binary" ] || { echo "error: $binary is missing: run scripts/release.sh first" >&2; exit 1; }
    c="$("${B[@]}" from --arch "$arch" --os linux scratch)"
    "${B[@]}" copy --quiet --chown 0:0 "$c" "$rootfs/" /
    "${B[@]}" copy --quiet --chown 65532:65532 "$c" "$owned/" /
    "${B[@]}" copy --quiet --chmod 0555 "$c" "$binary" /usr/local/bin/corral
    # The image's SBOM is its binary's: nothing else in it is software.
    if [ -f "$binary.cdx.json" ]; then
        "${B[@]}" copy --quiet --chmod 0444 "$c" "$binary.cdx.json" /usr/share/doc/corral/sbom.cdx.json
    fi
    "${B[@]}" config --arch "$arch" --os linux \
        --user 65532:65532 --workingdir /data \
        --env CORRAL_PLUGINS=/plugins --env CORRAL_DB=/data/tasks.db --env CORRAL_CACHE_DIR=/data/cache \
        --env CORRAL_HTTP=0.0.0.0:8080 --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --env HOME=/data \
        --volume /plugins --volume /data --port 8080/tcp \
        --entrypoint '["/usr/local/bin/corral"]' --cmd serve \
        "${labels[@]}" "$c"
    "${B[@]}" commit --quiet --format oci --timestamp "$SOURCE_DATE_EPOCH" --rm "$c" "$name-$arch" >/dev/null
    "${B[@]}" manifest add "$name" "containers-storage:$name-$arch" >/dev/null
    echo "image $name-$arch"
done

if [ -n "$archive" ]; then
    rm -f "$archive"
    "${B[@]}" manifest push --quiet --all --format oci "$name" "oci-archive:$archive"
    echo "archive $archive"
fi
if [ -n "$push" ]; then
    tls=(--tls-verify=true)
    case "${push%%/*}" in 127.0.0.1:* | localhost:* | "[::1]":*) tls=(--tls-verify=false) ;; esac
    [ -z "$insecure" ] || tls=(--tls-verify=false)
    digestfile="$(mktemp)"
    "${B[@]}" manifest push --quiet --all --format oci "${tls[@]}" --digestfile "$digestfile" "$name" "docker://$push"
    digest="$(cat "$digestfile")"
    rm -f "$digestfile"
    echo "pushed $push"
    echo "digest: $digest"
    if [ -n "$sign_key" ]; then
        host_arch="$(uname -m)"
        signer="${CORRAL:-$dist/corral-$host_arch-linux-musl}"
        insecure_flag=()
        [ -z "$insecure" ] || insecure_flag=(--insecure-registry "${push%%/*}")
        "$signer" sign "oci://${push%:*}@$digest" --key "$sign_key" "${insecure_flag[@]}"
    fi
fi
