#!/usr/bin/env bash
# Resolves Apache Kafka (broker + Java tools) from Maven Central into one folder of jars and prints
# that folder. The folder is cached: a second run with the same version only prints it.
#
#   kafka-peer.sh [version]                   version defaults to $KAFKA_VERSION or the pinned one below
#   kafka-peer.sh <version> connect-mirror    MirrorMaker 2 instead: connect-mirror and connect-runtime
#                                             of that version, in <root>/kafka-<version>-connect-mirror/libs
#   kafka-peer.sh <version> streams           Kafka Streams instead: kafka-streams (with kafka-clients and
#                                             rocksdbjni) of that version, in <root>/kafka-<version>-streams/libs
#   kafka-peer.sh <version> connect           Kafka Connect's runtime alone (connect-runtime and its
#                                             dependencies), in <root>/kafka-<version>-connect/libs
#
# Environment:
#   KAFKA_VERSION               Kafka version to resolve (4.x)
#   CLUSTERMIRROR_KAFKA_CACHE   cache root (default ~/.cache/clustermirror); jars land in <root>/kafka-<version>/libs
#
# Maven keeps its own copy in ~/.m2, so CI that caches ~/.m2 resolves offline on later runs.
set -euo pipefail

# The newest 4.x release checked to resolve and run a KRaft node with Java 17 here.
default_version="4.4.0"
version="${1:-${KAFKA_VERSION:-$default_version}}"
flavour="${2:-}"
case "$flavour" in
  "") suffix="" ; artifacts=(kafka_2.13 kafka-tools) ;;
  connect-mirror) suffix="-connect-mirror" ; artifacts=(connect-mirror connect-runtime) ;;
  streams) suffix="-streams" ; artifacts=(kafka-streams kafka-clients) ;;
  connect) suffix="-connect" ; artifacts=(connect-runtime) ;;
  *) echo "kafka-peer: unknown flavour \"${flavour}\" (known: connect-mirror, streams, connect)" >&2; exit 1 ;;
esac
log4j_version="2.24.3"
slf4j_version="2.0.17"
dependency_plugin_version="2.8"
cache_root="${CLUSTERMIRROR_KAFKA_CACHE:-${HOME}/.cache/clustermirror}"
dest="${cache_root}/kafka-${version}${suffix}"
libs="${dest}/libs"
marker="${dest}/.complete"

if [ -f "$marker" ] && [ -d "$libs" ]; then
  echo "$libs"
  exit 0
fi

command -v mvn >/dev/null 2>&1 || { echo "kafka-peer: mvn (Maven) is required" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "kafka-peer: java (17+) is required" >&2; exit 1; }

mkdir -p "$cache_root"
# Resolve into a private scratch dir and move it into place at the end, so concurrent runs and
# interrupted runs never leave a half-filled libs folder that looks complete.
work=$(mktemp -d "${cache_root}/.kafka-${version}${suffix}.XXXXXX")
trap 'rm -rf "$work"' EXIT

kafka_dependencies=""
for a in "${artifacts[@]}"; do
  kafka_dependencies+="    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>${a}</artifactId>
      <version>${version}</version>
    </dependency>
"
done

cat >"${work}/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>clustermirror.testkit</groupId>
  <artifactId>kafka-peer${suffix}</artifactId>
  <version>${version}</version>
  <packaging>pom</packaging>
  <dependencies>
${kafka_dependencies}    <!-- Kafka's artifacts only depend on the slf4j API (its poms name 1.7, its distribution ships 2.0);
         the broker's log output needs a binding, and the log4j2 binding needs the 2.0 API. -->
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-api</artifactId>
      <version>${slf4j_version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j2-impl</artifactId>
      <version>${log4j_version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>${log4j_version}</version>
    </dependency>
  </dependencies>
</project>
POM

# The plugin version is pinned so that every Maven resolves the same way.
if ! mvn -q -B -f "${work}/pom.xml" "org.apache.maven.plugins:maven-dependency-plugin:${dependency_plugin_version}:copy-dependencies" \
  -DincludeScope=runtime -DoutputDirectory="${work}/libs" >"${work}/mvn.log" 2>&1; then
  echo "kafka-peer: resolving Apache Kafka ${version} failed:" >&2
  tail -n 40 "${work}/mvn.log" >&2
  exit 1
fi

for a in "${artifacts[@]}"; do ls "${work}/libs/${a}-${version}.jar" >/dev/null; done
rm -f "${work}/mvn.log"
touch "${work}/.complete"
if [ -f "$marker" ]; then
  # Another run finished first; its folder is equivalent.
  echo "$libs"
  exit 0
fi
rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
echo "$libs"
