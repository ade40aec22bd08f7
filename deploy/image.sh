#!/usr/bin/env bash
# Builds one multi-arch OCI image of a static binary, FROM scratch, without Docker:
#
#   deploy/image.sh NAME VERSION OUT_DIR PLATFORM=BINARY...
#   deploy/image.sh ocm-edge-agent 0.1.0 dist/images \
#     linux/amd64=dist/x86_64/ocm-edge-agent linux/arm64=dist/aarch64/ocm-edge-agent
#
# writes OUT_DIR/NAME/ (an OCI image layout whose index.json tags a multi-arch index VERSION) and
# OUT_DIR/NAME-VERSION.oci.tar (that layout as an OCI archive, what `k3s ctr images import` and
# skopeo's oci-archive: take), and prints the index's digest.
#
# Each image is one gzip layer: the binary in /usr/local/bin (named as BINARY is, the entrypoint), Debian's CA bundle (for brokers with
# a public CA), /etc/passwd and /etc/group with the user nonroot (65532:65532) the image runs as,
# /tmp, and /var/lib/ocm-edge owned by nonroot (the data directory, OCM_EDGE_DATA_DIR; the charts
# mount a volume there). Written with tar, gzip, sha256sum and jq rather than umoci: every byte
# comes from the inputs (fixed order, owners and mtimes, gzip without a name or time, JSON with
# sorted keys), so the same binaries, CA bundle and SOURCE_DATE_EPOCH give the same digests,
# and umoci cannot write a multi-arch index anyway.
#
# Environment: SOURCE_DATE_EPOCH (mtimes and `created`; default the last commit's time),
# OCM_EDGE_CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt, from Debian's ca-certificates).
set -euo pipefail

if [ $# -lt 4 ]; then
  echo "usage: $0 NAME VERSION OUT_DIR PLATFORM=BINARY... (PLATFORM: linux/amd64, linux/arm64, linux/arm/v7)" >&2
  exit 2
fi
name=$1 version=$2 out=$3
shift 3
for tool in tar gzip sha256sum jq; do
  command -v "$tool" >/dev/null || { echo "error: $tool is needed (apt-get install $tool)" >&2; exit 1; }
done
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")" log -1 --format=%ct)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
ca_bundle=${OCM_EDGE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$ca_bundle" ] || { echo "error: no CA bundle at $ca_bundle: apt-get install ca-certificates, or set OCM_EDGE_CA_BUNDLE" >&2; exit 1; }

layout="$out/$name"
rm -rf "$layout"
mkdir -p "$layout/blobs/sha256"
work=$(mktemp -d "${TMPDIR:-/tmp}/ocm-edge-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# blob FILE: moves FILE into the layout's blobs, prints "DIGEST SIZE".
blob() {
  local digest size
  digest=sha256:$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mv "$1" "$layout/blobs/sha256/${digest#sha256:}"
  echo "$digest $size"
}

# The tar flags that make a layer depend on the files' contents and modes only.
tar_fixed=(--format=gnu --mtime="@$epoch" --numeric-owner --no-recursion)

manifests=()
for arg in "$@"; do
  platform=${arg%%=*} binary=${arg#*=}
  entry=/usr/local/bin/$(basename "$binary")
  [ -x "$binary" ] || { echo "error: $binary (for $platform) is not an executable file" >&2; exit 1; }
  case $platform in
    linux/amd64) arch=amd64 variant= ;;
    linux/arm64) arch=arm64 variant=v8 ;;
    linux/arm/v7) arch=arm variant=v7 ;;
    *) echo "error: platform $platform: use linux/amd64, linux/arm64 or linux/arm/v7" >&2; exit 1 ;;
  esac

  root="$work/root-$arch"
  mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/usr/local/bin" "$root/var/lib/ocm-edge"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/var/lib/ocm-edge:/sbin/nologin\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
  cp "$ca_bundle" "$root/etc/ssl/certs/ca-certificates.crt"
  cp "$binary" "$root$entry"
  (cd "$root" && find . -type d -exec chmod 0755 {} + && find . -type f -exec chmod 0644 {} +)
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/var/lib/ocm-edge"
  chmod 0755 "$root$entry"
  # Owned by root but the data directory, which is nonroot's; listed in sorted order.
  (cd "$root" && tar --create --file="$work/layer.tar" "${tar_fixed[@]}" --owner=0 --group=0 \
    etc etc/group etc/passwd etc/ssl etc/ssl/certs etc/ssl/certs/ca-certificates.crt tmp \
    usr usr/local usr/local/bin "${entry#/}" var var/lib)
  (cd "$root" && tar --append --file="$work/layer.tar" "${tar_fixed[@]}" --owner=65532 --group=65532 \
    var/lib/ocm-edge)
  diff_id=sha256:$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  gzip -9 -n -c "$work/layer.tar" > "$work/layer.tar.gz"
  read -r layer_digest layer_size < <(blob "$work/layer.tar.gz")

  jq -cnS --arg arch "$arch" --arg variant "$variant" --arg created "$created" \
    --arg entry "$entry" --arg diff_id "$diff_id" --arg name "$name" --arg version "$version" '{
      architecture: $arch, os: "linux", created: $created,
      config: {
        User: "65532:65532",
        Entrypoint: [$entry],
        Env: ["PATH=/usr/local/bin", "OCM_EDGE_DATA_DIR=/var/lib/ocm-edge"],
        Labels: {"org.opencontainers.image.title": $name, "org.opencontainers.image.version": $version,
                 "org.opencontainers.image.licenses": "Apache-2.0"}
      },
      rootfs: {type: "layers", diff_ids: [$diff_id]},
      history: [{created: $created, created_by: "deploy/image.sh"}]
    } + (if $variant == "" then {} else {variant: $variant} end)' > "$work/config.json"
  read -r config_digest config_size < <(blob "$work/config.json")

  jq -cnS --arg cd "$config_digest" --argjson cs "$config_size" --arg ld "$layer_digest" --argjson ls "$layer_size" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $ld, size: $ls}]
    }' > "$work/manifest.json"
  read -r manifest_digest manifest_size < <(blob "$work/manifest.json")
  manifests+=("$(jq -cnS --arg d "$manifest_digest" --argjson s "$manifest_size" --arg arch "$arch" --arg variant "$variant" '{
      mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d, size: $s,
      platform: ({architecture: $arch, os: "linux"} + (if $variant == "" then {} else {variant: $variant} end))
    }')")
  echo "$name $platform: layer $layer_digest, $layer_size bytes compressed" >&2
done

printf '%s\n' "${manifests[@]}" | jq -cS --slurp '{
    schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: .
  }' > "$work/index.json"
read -r index_digest index_size < <(blob "$work/index.json")
# The tag for skopeo (oci:DIR:VERSION) and the full name containerd's import gives the image, which
# is what a pod's `image: NAME:VERSION` means.
jq -cnS --arg d "$index_digest" --argjson s "$index_size" --arg ref "docker.io/library/$name:$version" --arg tag "$version" '{
    schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [{mediaType: "application/vnd.oci.image.index.v1+json", digest: $d, size: $s,
                 annotations: {"io.containerd.image.name": $ref, "org.opencontainers.image.ref.name": $tag}}]
  }' > "$layout/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$layout/oci-layout"

# The archive: the layout's files in sorted order, with fixed modes, owned by root, at the fixed time.
chmod 0755 "$layout" "$layout/blobs" "$layout/blobs/sha256"
chmod 0644 "$layout/oci-layout" "$layout/index.json" "$layout"/blobs/sha256/*
(cd "$layout" && find oci-layout index.json blobs -print0 | LC_ALL=C sort -z |
  tar --create --file="$work/archive.tar" "${tar_fixed[@]}" --owner=0 --group=0 --null --files-from=-)
mv "$work/archive.tar" "$out/$name-$version.oci.tar"
echo "$index_digest"
