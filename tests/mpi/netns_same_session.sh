#!/bin/sh
# Every rank that scripts/netns_cluster.sh starts on its simulated hosts
# runs in the caller's session: a session of its own would be a scheduling
# group of its own under the kernel's autogroup, where ranks polling and
# yielding starved the other host's ranks of the shared cores (docs/ci.md,
# "Simulated hosts share one scheduling group"). Exit 77 (skip) where
# namespaces are not permitted.
set -eu
script_dir=$(cd "$(dirname "$0")" && pwd)
netns_cluster=$script_dir/../../scripts/netns_cluster.sh
"$netns_cluster" --check || exit $?
caller=$(ps -o sid= -p $$ | tr -d ' ')
sessions=$("$netns_cluster" --hosts 2 --ranks-per-host 2 -- sh -c 'ps -o sid= -p $$')
count=0
for sid in $sessions; do
  count=$((count + 1))
  if [ "$sid" != "$caller" ]; then
    echo "netns_same_session: FAIL: a rank runs in session $sid, the caller in $caller" >&2
    exit 1
  fi
done
if [ "$count" -ne 4 ]; then
  echo "netns_same_session: FAIL: $count sessions reported for 4 ranks: $sessions" >&2
  exit 1
fi
echo "netns_same_session: the 4 ranks of 2 hosts run in the caller's session $caller"
