#!/usr/bin/env bash
# devdb: the project-local development Postgres that `make run` and `make test`
# fall back to, so a fresh clone works on a machine with no database server.
#
#   scripts/devdb.sh env run   print `export ONCELEDGER_DATABASE_URL=…` for `make run`
#   scripts/devdb.sh env test  print `export ONCELEDGER_TEST_DATABASE_URL=…` for `make test`
#   scripts/devdb.sh start     create (first time) or start the cluster; print where it lives
#   scripts/devdb.sh status    is it running, where, how to connect
#   scripts/devdb.sh stop      stop it (make db-stop)
#   scripts/devdb.sh reset     stop it and delete its data (make db-reset)
#
# `env` changes nothing when the variable is already set, or when a server
# answers on the default address (127.0.0.1:5432): that is the behaviour from
# before this script existed. Only otherwise does it start the cluster: initdb
# into a git-ignored directory (.devdb/ at the top of the clone), trust auth
# for the superuser `postgres`, listening on 127.0.0.1 only, on a free port,
# with its socket in the data directory (no system paths). The first run
# creates it; later runs reuse it (and its port, when still free).
#
# Root: Postgres refuses to run as root, so initdb and the server run as the
# `postgres` OS user (else `nobody`); when that user cannot reach .devdb/ the
# cluster lives under /var/tmp instead and .devdb is a symlink to it.
# Binaries: `pg_config --bindir`, /usr/lib/postgresql/*/bin, then PATH. When
# none are found they are installed from Debian/Ubuntu packages if we are
# root with apt-get; otherwise the script prints the install command and the
# docker compose alternative, and fails.
#
# Settings (environment): ONCELEDGER_DEVDB_DIR (where the cluster lives;
# default <repo>/.devdb), ONCELEDGER_DEVDB_DEFAULT_ADDR (the address probed for
# an existing server; default 127.0.0.1:5432; the first-run test points it at
# an unused port), ONCELEDGER_DEVDB_PG_BIN (directory of initdb and pg_ctl).
# Messages go to stderr; stdout carries only the `export` lines of `env`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${ONCELEDGER_DEVDB_DIR:-$root/.devdb}
default_addr=${ONCELEDGER_DEVDB_DEFAULT_ADDR:-127.0.0.1:5432}
default_host=${default_addr%:*}
default_port=${default_addr##*:}

say() { printf 'devdb: %s\n' "$*" >&2; }
# redact prints a database URL without its password.
redact() { printf '%s' "$1" | sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#'; }
die() { say "$*"; exit 1; }

# answers HOST PORT: something accepts TCP connections there. pg_isready
# would also do, but it may be missing before the binaries are installed.
answers() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

install_hint() {
  local cmd
  if command -v apt-get >/dev/null 2>&1; then
    cmd="sudo apt-get install -y postgresql"
  elif command -v dnf >/dev/null 2>&1; then
    cmd="sudo dnf install -y postgresql-server"
  elif command -v brew >/dev/null 2>&1; then
    cmd="brew install postgresql@16"
  elif command -v apk >/dev/null 2>&1; then
    cmd="sudo apk add postgresql"
  else
    cmd="install the PostgreSQL server package of your OS (it provides initdb and pg_ctl)"
  fi
  cat >&2 <<EOF
devdb: the PostgreSQL server binaries (initdb, pg_ctl) are not installed.
  Install them:   $cmd
  and run the command again; or run Postgres in Docker instead:
    docker compose up -d postgres
    export ONCELEDGER_DATABASE_URL='postgres://postgres:onceledger@127.0.0.1:5433/onceledger?sslmode=disable'
    export ONCELEDGER_TEST_DATABASE_URL='postgres://postgres:onceledger@127.0.0.1:5433/postgres?sslmode=disable'
  or point ONCELEDGER_DATABASE_URL / ONCELEDGER_TEST_DATABASE_URL at a server you have.
EOF
}

bindir=""
find_bindir() {
  local d candidates=()
  [ -n "${ONCELEDGER_DEVDB_PG_BIN:-}" ] && candidates+=("$ONCELEDGER_DEVDB_PG_BIN")
  if command -v pg_config >/dev/null 2>&1; then
    candidates+=("$(pg_config --bindir 2>/dev/null || true)")
  fi
  # Debian/Ubuntu keep the server binaries off PATH, one directory per major
  # version: take the newest.
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -V -r); do
    candidates+=("$d")
  done
  if command -v initdb >/dev/null 2>&1; then
    candidates+=("$(dirname "$(command -v initdb)")")
  fi
  for d in "${candidates[@]}"; do
    if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      bindir=$d
      return 0
    fi
  done
  return 1
}

ensure_binaries() {
  find_bindir && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "PostgreSQL server binaries missing: installing them (apt-get install -y postgresql)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # Only the binaries: no system cluster on 5432 (the package would create
    # one with password auth, which the next run would find and try to use).
    apt-get install -y -qq postgresql-common >&2
    if [ -f /etc/postgresql-common/createcluster.conf ]; then
      sed -i 's/^#\?\s*create_main_cluster.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf
    fi
    apt-get install -y -qq postgresql >&2
    find_bindir && return 0
  fi
  install_hint
  exit 1
}

# As root, every Postgres command runs as an unprivileged OS user.
runas=""
pick_user() {
  [ "$(id -u)" = 0 ] || return 0
  if id postgres >/dev/null 2>&1; then runas=postgres; else runas=nobody; fi
}
as_pg() {
  if [ -z "$runas" ]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    (cd / && runuser -u "$runas" -- "$@") # from a directory the user may enter
  else
    (cd / && su -s /bin/sh "$runas" -c "$(printf '%q ' "$@")")
  fi
}

# data: the cluster's data directory (dir/data), made reachable by the user
# the server runs as.
data=""
prepare_dir() {
  if [ -n "$runas" ] && [ ! -e "$dir" ]; then
    mkdir -p "$dir"
    chown "$runas" "$dir"
    if ! runuser -u "$runas" -- test -w "$dir" 2>/dev/null; then
      # A parent directory is closed to $runas (a clone under /root, say):
      # keep the cluster under /var/tmp and point .devdb at it.
      rmdir "$dir"
      local elsewhere
      elsewhere=/var/tmp/onceledger-devdb-$(printf '%s' "$root" | cksum | cut -d' ' -f1)
      mkdir -p "$elsewhere"
      chown "$runas" "$elsewhere"
      ln -s "$elsewhere" "$dir"
      say "$runas cannot reach $root: the cluster lives in $elsewhere ($dir links to it)"
    fi
  fi
  mkdir -p "$dir"
  resolve_dir
}

# resolve_dir follows a .devdb symlink: the server's user may not be allowed
# through the directory the link sits in.
resolve_dir() {
  if [ -e "$dir" ]; then dir=$(cd "$dir" && pwd -P); fi
  data=$dir/data
}

# running_port prints the port of the running cluster, if it runs.
running_port() {
  [ -f "$data/postmaster.pid" ] || return 1
  as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1 || return 1
  sed -n 4p "$data/postmaster.pid"
}

# Ports below Linux's ephemeral range (32768-60999 by default): a port in
# that range can be taken at any moment by an outgoing connection's local
# end (a busy test run opens thousands), and the server would then fail to
# bind it. `start` also moves on to the next port if the bind fails anyway.
first_port=25432
last_port=25531
free_port() { # $1: a port not to use (it just failed)
  local p
  if [ -f "$dir/port" ]; then
    p=$(cat "$dir/port")
    if [ -n "$p" ] && [ "$p" != "${1:-}" ] && ! answers 127.0.0.1 "$p"; then echo "$p"; return 0; fi
  fi
  for p in $(seq "$first_port" "$last_port"); do
    [ "$p" != "${1:-}" ] || continue
    answers 127.0.0.1 "$p" || { echo "$p"; return 0; }
  done
  die "no free port between $first_port and $last_port on 127.0.0.1"
}

port=""
start() {
  ensure_binaries
  pick_user
  prepare_dir
  if port=$(running_port); then
    return 0
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    say "creating a development cluster in $data ($bindir)"
    [ -z "$runas" ] || chown "$runas" "$dir"
    as_pg "$bindir/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; die "initdb failed (log above, also in $dir/initdb.log)"; }
  fi
  [ -z "$runas" ] || { touch "$dir/postgres.log"; chown "$runas" "$dir/postgres.log"; }
  local tries=0 failed=""
  while :; do
    port=$(free_port "$failed")
    echo "$port" >"$dir/port"
    # Loopback only; the socket in the data directory, so no system path is
    # needed. max_connections as on the CI server: the test suite opens many
    # pools at once.
    if as_pg "$bindir/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 60 \
      -o "-p $port -c listen_addresses=127.0.0.1 -k $data -c max_connections=400" \
      start >/dev/null; then
      return 0
    fi
    tries=$((tries + 1))
    if [ "$tries" -ge 3 ] || ! tail -n 20 "$dir/postgres.log" | grep -q 'Address already in use'; then
      tail -n 20 "$dir/postgres.log" >&2
      die "the cluster did not start (log above, also in $dir/postgres.log)"
    fi
    say "port $port was taken meanwhile; trying another"
    failed=$port
  done
}

where() {
  cat >&2 <<EOF
devdb: development Postgres $("$bindir/postgres" --version 2>/dev/null | awk '{print $3}') at 127.0.0.1:$port
devdb:   data     $data   (log: $dir/postgres.log)
devdb:   connect  psql 'postgres://postgres@127.0.0.1:$port/onceledger?sslmode=disable'
devdb:   stop     make db-stop    (remove it: make db-reset)
EOF
}

stop() {
  find_bindir || { say "no PostgreSQL binaries: nothing runs"; return 0; }
  pick_user
  resolve_dir
  if running_port >/dev/null; then
    as_pg "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    say "stopped the development cluster in $data"
  else
    say "the development cluster in $data is not running"
  fi
}

cmd=${1:-status}
case "$cmd" in
env)
  what=${2:-}
  case "$what" in
  run) var=ONCELEDGER_DATABASE_URL db=onceledger ;;
  test) var=ONCELEDGER_TEST_DATABASE_URL db=postgres ;;
  *) die "usage: $0 env run|test" ;;
  esac
  if [ -n "${!var:-}" ]; then
    say "using $var as set: $(redact "${!var}")"
    exit 0 # the user's choice stands
  fi
  if answers "$default_host" "$default_port"; then
    # A server on the default address: what happened before devdb existed
    # (serve's default URL; the Makefile's default test URL). A server that
    # wants a password (a distribution's package, say) still gets used, as
    # before, but say why it will fail and what to do.
    if command -v psql >/dev/null 2>&1 &&
      ! err=$(PGCONNECT_TIMEOUT=5 psql -X -w -q -At "postgres://postgres@$default_addr/postgres?sslmode=disable" -c 'SELECT 1' 2>&1 >/dev/null); then
      say "a server answers on $default_addr, but user postgres cannot log in without a password: $(printf '%s' "$err" | head -n1)"
      say "  set $var, allow trust for 127.0.0.1 in its pg_hba.conf, or stop it (then the project's own cluster is used)"
    fi
    say "a server answers on $default_addr: using it (postgres://postgres@$default_addr/$db), not the development cluster"
    if [ "$what" = test ] || [ "$default_addr" != 127.0.0.1:5432 ]; then
      echo "export $var='postgres://postgres@$default_addr/$db?sslmode=disable'"
    fi
    exit 0
  fi
  say "no $var and nothing on $default_addr: using the project's development cluster"
  start
  where
  echo "export $var='postgres://postgres@127.0.0.1:$port/$db?sslmode=disable'"
  ;;
start)
  start
  where
  ;;
status)
  # Which database `make run` and `make test` use, and whether the
  # cluster runs. Exit 0 either way: a cluster that is not running is an
  # answer, not a failure (3 only when it exists, is needed, and is down).
  if ! find_bindir; then
    if answers "$default_host" "$default_port"; then
      say "no development cluster (no PostgreSQL binaries); a server answers on $default_addr: make run and make test use it"
      exit 0
    fi
    install_hint
    exit 1
  fi
  pick_user
  resolve_dir
  if port=$(running_port); then
    where
  elif answers "$default_host" "$default_port"; then
    if [ -f "$data/PG_VERSION" ]; then
      say "the development cluster in $data is not running; a server answers on $default_addr: make run and make test use it"
    else
      say "no development cluster; a server answers on $default_addr: make run and make test use it"
    fi
  elif [ -f "$data/PG_VERSION" ]; then
    say "not running (data: $data); make run starts it (or: scripts/devdb.sh start)"
  else
    say "no development cluster yet and nothing on $default_addr: make run creates one in $data"
  fi
  ;;
stop) stop ;;
reset)
  link=$dir
  stop
  rm -rf "$dir" "$link"
  say "removed $dir"
  ;;
*) die "usage: $0 env run|test | start | status | stop | reset" ;;
esac
