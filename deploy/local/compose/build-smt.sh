#!/usr/bin/env bash
# docker-compose's one-shot build of the connector's record router (deploy/local/java/smt), the
# same source `npm run stack -- up` compiles: fetches the Kafka Connect API of the pinned release
# through Maven, compiles against it and writes the jar, with its ServiceLoader entry, into the
# volume that the connect service mounts under its plugin path. Idempotent.
set -euo pipefail

: "${KAFKA_VERSION:?}" "${SMT_SOURCE:?}" "${SMT_OUT:?}"

cp=/tmp/sched-smt-cp
for artifact in connect-api kafka-clients; do
  mvn -q dependency:copy -Dartifact="org.apache.kafka:$artifact:$KAFKA_VERSION" -DoutputDirectory="$cp"
done
classes=/tmp/sched-smt-classes
mkdir -p "$classes/META-INF/services"
echo sched.connect.LogicalMessageRouter >"$classes/META-INF/services/org.apache.kafka.connect.transforms.Transformation"
javac --release 17 -cp "$cp/*" -d "$classes" "$SMT_SOURCE"
mkdir -p "$SMT_OUT"
jar --create --file "$SMT_OUT/sched-connect-smt.jar" -C "$classes" .
echo "built $SMT_OUT/sched-connect-smt.jar"
