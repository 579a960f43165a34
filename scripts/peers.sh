#!/usr/bin/env bash
# Installs the real Kafka peers the integration tests use: kcat (librdkafka) from Debian's packages,
# and Apache Kafka's broker and Java tools from Maven Central (cached).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packages/testkit/scripts/install-peers.sh
