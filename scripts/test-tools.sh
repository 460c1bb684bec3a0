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
