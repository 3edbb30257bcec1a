#!/bin/sh
# Sets up a checkout: checks Node, installs dependencies with pnpm (through npx, so no global
# install is needed), builds every package, and installs the system tools the tests use when
# they are missing and apt-get is at hand (redis-server for the distributed tests, promtool to
# lint /metrics, chromium for the dashboard's browser test; playwright-core drives it and never
# downloads a browser; ss, of iproute2, to read a listening socket's backlog; bwrap, of bubblewrap, for
# the sandbox every run_command runs in, API.md v1.3; iptables (and ip, nsenter) for the partition
# tests of test/distributed/partition-*, which cut a process's network namespace off from Redis). Safe to run again.
set -eu
cd "$(dirname "$0")/.."
# engines in package.json: ^20.19.0 || >=22.12.0 (docs/operations.md "Node versions").
ok=$(node -p 'const [a, b] = process.versions.node.split(".").map(Number); (a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22' 2>/dev/null || echo false)
if [ "$ok" != true ]; then
  echo "setup: Node 20.19+, 22.12+ or 24 is needed (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
PNPM="npx -y pnpm@12.4.2"
echo "setup: installing dependencies (pnpm)"
$PNPM install --frozen-lockfile --reporter=append-only 2>&1 | tail -n 3
echo "setup: building packages"
$PNPM run build >/dev/null
need=""
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
command -v promtool >/dev/null 2>&1 || need="$need prometheus"
[ -x /usr/bin/chromium ] || need="$need chromium"
command -v ss >/dev/null 2>&1 || need="$need iproute2"
[ -x /usr/bin/bwrap ] || need="$need bubblewrap"
command -v iptables >/dev/null 2>&1 || need="$need iptables"
command -v nsenter >/dev/null 2>&1 || need="$need util-linux"
if [ -n "$need" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing$need (apt-get)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need) >/dev/null 2>&1 \
      || echo "setup: could not install$need; the distributed, metrics, browser, sandbox and partition tests need them (without bwrap run_command ends sandbox_unavailable)" >&2
  else
    echo "setup: missing$need (needed by the distributed, metrics, browser, sandbox and partition tests; install them, or set REDIS_URL; without bwrap run_command ends sandbox_unavailable)" >&2
  fi
fi
echo "setup: done"
