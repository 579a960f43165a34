#!/usr/bin/env bash
# Installs the real Kafka peers the integration tests use: kcat (librdkafka) from Debian's packages.
set -euo pipefail
if ! command -v kcat >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq kcat >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq kcat >/dev/null; fi
fi
kcat -V | head -n 1
