#!/usr/bin/env bash
# Checks the images deploy/image.sh wrote (deploy/release.sh runs it):
#
#   deploy/image-check.sh DIR VERSION
#
# - skopeo reads each layout (oci:DIR/NAME:VERSION) and each archive (oci-archive:), every
#   platform of its index: the architecture, the user 65532:65532, the entrypoint, the layer's
#   files (binary, CA bundle, passwd, the data directory owned by nonroot); an agent's compressed
#   layer is at most 8 MB;
# - with Debian's containerd installed (apt-get install containerd), a private containerd imports
#   each archive for each platform with `ctr images import`, the importer `k3s ctr images import`
#   is, under the name a pod's `image: NAME:VERSION` means, and unpacks it; the host's platform
#   then runs in it as a container (runc) when this machine can run one.
set -euo pipefail
dir=${1:?usage: $0 DIR VERSION} version=${2:?usage: $0 DIR VERSION}
agent_max_layer=$((8 * 1000 * 1000))
fail() { echo "error: $*" >&2; exit 1; }

for image in ocm-edge-agent ocm-edge-hub; do
  # The hub's image runs `ocm-edge` (its `hub` subcommand, and the operators' commands).
  binary=/usr/local/bin/${image%-hub}
  layout="$dir/$image" archive="$dir/$image-$version.oci.tar"
  raw=$(skopeo inspect --raw "oci:$layout:$version")
  [ "$(jq -r .mediaType <<< "$raw")" = application/vnd.oci.image.index.v1+json ] || fail "$image: not a multi-arch index: $raw"
  while read -r arch variant; do
    override=(--override-os linux --override-arch "$arch")
    [ -z "$variant" ] || override+=(--override-variant "$variant")
    for ref in "oci:$layout:$version" "oci-archive:$archive"; do
      config=$(skopeo inspect "${override[@]}" --config "$ref")
      [ "$(jq -r .architecture <<< "$config")" = "$arch" ] || fail "$ref for $arch: $(jq -c . <<< "$config")"
      [ "$(jq -r .config.User <<< "$config")" = 65532:65532 ] || fail "$ref: not run as 65532:65532"
      [ "$(jq -r '.config.Entrypoint[0]' <<< "$config")" = "$binary" ] || fail "$ref: entrypoint is not $binary"
    done
    # This platform's manifest, from the layout (skopeo's --raw gives the index).
    digest=$(jq -r --arg a "$arch" --arg v "$variant" \
      '.manifests[] | select(.platform.architecture == $a and (.platform.variant // "") == $v) | .digest' <<< "$raw")
    manifest=$(cat "$layout/blobs/sha256/${digest#sha256:}")
    layer=$(jq -r '.layers[0].digest' <<< "$manifest")
    size=$(jq -r '.layers[0].size' <<< "$manifest")
    if [ "$image" = ocm-edge-agent ] && [ "$size" -gt "$agent_max_layer" ]; then
      fail "$image for $arch: its compressed layer is $size bytes, over 8 MB"
    fi
    listing=$(tar -tvzf "$layout/blobs/sha256/${layer#sha256:}")
    for entry in "${binary#/}" etc/ssl/certs/ca-certificates.crt etc/passwd etc/group; do
      grep -q " $entry\$" <<< "$listing" || fail "$image for $arch: no $entry in its layer"
    done
    grep -q '^drwx------ 65532/65532 .* var/lib/ocm-edge/$' <<< "$listing" || fail "$image for $arch: /var/lib/ocm-edge is not nonroot's"
    echo "$image:$version $arch${variant:+/$variant}: $digest, layer $size bytes compressed" >&2
  done < <(jq -r '.manifests[].platform | "\(.architecture) \(.variant // "")"' <<< "$raw")
done

if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null; then
  echo "containerd not installed: the ctr import is not checked (apt-get install containerd)" >&2
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ocm-edge-ctr.XXXXXX")
printf 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n' > "$work/config.toml"
containerd --config "$work/config.toml" --root "$work/root" --state "$work/state" \
  --address "$work/sock" > "$work/log" 2>&1 &
containerd_pid=$!
trap 'kill "$containerd_pid" 2>/dev/null; wait "$containerd_pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$work/sock" ] && break; sleep 0.1; done
ctr=(ctr --address "$work/sock")
for image in ocm-edge-agent ocm-edge-hub; do
  archive="$dir/$image-$version.oci.tar" name="docker.io/library/$image:$version"
  for plat in $(jq -r '.manifests[].platform | "\(.os)/\(.architecture)\(if .variant then "/" + .variant else "" end)"' \
    <<< "$(skopeo inspect --raw "oci-archive:$archive")"); do
    # A containerd namespace per platform, as each is a machine of its own architecture.
    namespace=${plat//\//-}
    imported=$("${ctr[@]}" -n "$namespace" images import --snapshotter native --platform "$plat" "$archive")
    [[ $imported == "unpacking $name "*done ]] || fail "ctr: $name for $plat was not unpacked: $imported"
    "${ctr[@]}" -n "$namespace" images ls -q | grep -qx "$name" || fail "ctr: no image $name after the import"
    echo "ctr images import: $name for $plat imported and unpacked" >&2
  done
done
# The host's agent as a container, as a pod would run it: as nonroot, with the data directory
# writable (`hold` writes a file there).
name=docker.io/library/ocm-edge-agent:$version
if "${ctr[@]}" -n linux-amd64 run --rm --snapshotter native "$name" ocm-edge-check /usr/local/bin/ocm-edge-agent hold > "$work/run" 2>&1; then
  echo "ctr run: the agent image runs as nonroot and writes its data directory: $(cat "$work/run")" >&2
else
  echo "ctr run: this machine cannot run a container ($(tail -n 1 "$work/run")); the import is checked" >&2
fi
