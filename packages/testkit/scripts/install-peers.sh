#!/usr/bin/env bash
# Installs the peers the testkit's integration tests use, and is safe to run again:
#   - kcat (librdkafka's CLI) from the distribution's packages, if missing;
#   - confluent-kafka 2.16.1 from PyPI (its wheel bundles librdkafka 2.16) for $PYTHON or python3;
#   - Apache Kafka's jars (broker + Java tools) and Kafka Streams' jars (kafka-streams, rocksdbjni) from
#     Maven Central via kafka-peer.sh, cached.
#   - Kafka Connect's runtime jars (connect-runtime) the same way, for the Connect worker peer.
# A Java 17+ JDK (javac compiles the testkit's own Java peers) and Maven must be on the machine; they are
# installed from the distribution if missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

as_root() {
  if [ "$(id -u)" = "0" ]; then "$@"; else sudo "$@"; fi
}

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
python="${PYTHON:-python3}"
if ! command -v "${python}" >/dev/null 2>&1; then
  missing+=(python3 python3-pip)
  python=python3
fi
if [ "${#missing[@]}" -gt 0 ]; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

confluent_kafka_version=2.16.1
if ! "${python}" -c "import confluent_kafka, sys; sys.exit(confluent_kafka.__version__ != '${confluent_kafka_version}')" 2>/dev/null; then
  "${python}" -m pip install -q "confluent-kafka==${confluent_kafka_version}" ||
    "${python}" -m pip install -q --break-system-packages "confluent-kafka==${confluent_kafka_version}"
fi

kcat -V | head -n 1
"${python}" -c "import confluent_kafka as c; print('confluent-kafka', c.__version__, 'librdkafka', c.libversion()[0])"
java -version 2>&1 | head -n 1
javac -version 2>&1 | head -n 1
libs="$(bash "${here}/kafka-peer.sh")"
echo "Apache Kafka jars: ${libs}"
streams_libs="$(bash "${here}/kafka-peer.sh" "${KAFKA_VERSION:-}" streams)"
echo "Kafka Streams jars: ${streams_libs}"
connect_libs="$(bash "${here}/kafka-peer.sh" "" connect)"
echo "Kafka Connect jars: ${connect_libs}"
