#!/usr/bin/env bash
# docker-compose's one-shot init step (runs in the Debezium Connect image, which has
# kafka-topics.sh and curl): creates the topics listed in SCHED_TOPICS, then registers the
# connector from the same file `npm run stack -- up` uses, deploy/local/connectors/sched-outbox.json,
# filling its ${SCHED_DB_*} placeholders from the environment. Idempotent.
set -euo pipefail

: "${SCHED_TOPICS:?}" "${KAFKA_BOOTSTRAP:?}" "${CONNECT_URL:?}" "${CONNECTOR_FILE:?}"

for spec in $SCHED_TOPICS; do
  /kafka/bin/kafka-topics.sh --bootstrap-server "$KAFKA_BOOTSTRAP" --create --if-not-exists \
    --topic "${spec%%:*}" --partitions "${spec##*:}" --replication-factor 1
done

config=$(cat "$CONNECTOR_FILE")
for name in SCHED_DB_HOST SCHED_DB_PORT SCHED_DB_NAME SCHED_DB_USER SCHED_DB_PASSWORD; do
  value=${!name:?"$name is not set"}
  config=${config//"\${$name}"/"$value"}
done
name=$(sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' "$CONNECTOR_FILE" | head -n 1)

for _ in $(seq 1 90); do curl -fs "$CONNECT_URL/" >/dev/null && break; sleep 2; done
printf '%s' "$config" | curl -fsS -X PUT -H 'content-type: application/json' --data-binary @- \
  "$CONNECT_URL/connectors/$name/config"
echo
for _ in $(seq 1 60); do
  status=$(curl -fs "$CONNECT_URL/connectors/$name/status" || true)
  if [[ $status == *'"connector":{"state":"RUNNING"'* && $status == *'"tasks":[{"id":0,"state":"RUNNING"'* ]]; then
    echo "connector $name RUNNING"
    exit 0
  fi
  sleep 2
done
echo "connector $name did not reach RUNNING: $status" >&2
exit 1
